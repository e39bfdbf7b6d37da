// The conversation transcript: every message of every turn, appended one row at a time and never
// rewritten (tool results in full, even when the model was shown a cut version).
#pragma once

#include "store/database.hpp"

namespace agenthost::store {

// What a message is to the conversation: the user's prompt and the final answer form an exchange
// (pinned into later turns); steps are the tool calls and results in between.
enum class MessageKind { prompt, answer, step };

struct StoredMessage {
    int64_t id;
    int64_t turn;
    MessageKind kind;
    std::string body;  // the message as JSON: {"role", "content", "tool_calls"?, "tool_call_id"?, "name"?}
};

class Transcript {
public:
    explicit Transcript(Database& db) : db_(db) {}

    // The number the next turn of `conversation` gets (1 for a new conversation).
    int64_t next_turn(std::string_view conversation);
    Status append(std::string_view conversation, int64_t turn, MessageKind kind, std::string_view body_json);
    // The prompts and answers of the last `turns` turns before `before_turn`, oldest first.
    std::vector<StoredMessage> exchanges(std::string_view conversation, int64_t before_turn, int turns);
    std::vector<StoredMessage> all(std::string_view conversation);

private:
    Database& db_;
};

}  // namespace agenthost::store
