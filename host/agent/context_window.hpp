// What the model is sent of a turn: the pinned messages (the conversation's earlier exchanges and
// the client's history; never pruned), the prompt, and this run's working messages since the last
// prune. A chat request is written by appending: each message is serialised once, when it joins,
// and the request comes out byte for byte as serialising the request object would give.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace agenthost::agent {

class ContextWindow {
public:
    // A message that stays for the whole turn, as JSON text.
    void pin(std::string message_json) { pinned_.push_back(std::move(message_json)); }
    // One of this run's messages, as JSON text, with its id in the transcript.
    void add(std::string message_json, int64_t id);
    // The agent's state as the model is to see it from the next request on (its text; empty:
    // nothing to say). As a user message marked "agenthost_state" (every vendor takes a user
    // message there; some refuse a later system one), it joins the working messages when it
    // differs from the last state that joined, or when that one was pruned, and stays where it
    // joined: requests only ever grow at their end between prunes, which prompt caches serve.
    void note_state(std::string_view state);
    // Keeps the last `keep` working messages, widened so that no tool result loses the call before
    // it. Returns how many were dropped; working_from() is then where the window starts.
    size_t prune(size_t keep);
    // The transcript id of the first working message (0 when there is none).
    int64_t working_from() const { return working_ids_.empty() ? 0 : working_ids_.front(); }

    // The chat request's JSON text: `system_json` (the system message), the pinned messages, the
    // prompt, the working messages (states among them), and the model, tools and token limit.
    std::string request_text(std::string_view system_json, std::string_view prompt, std::string_view model,
                             std::string_view tools_text, int max_tokens) const;

    // The prompt's message as dump() writes {"role": "user", "content": prompt} (keys sorted).
    static std::string prompt_message(std::string_view prompt);

private:
    static void append_prompt_message(std::string& out, std::string_view prompt);

    struct Message {
        std::string json;          // the message as the model is sent it
        bool tool_result = false;  // role "tool": pruning keeps it with the call before it
        bool state = false;        // the agent's state (note_state), not in the transcript
    };
    std::vector<std::string> pinned_;
    std::vector<Message> working_;
    std::vector<int64_t> working_ids_;  // the working messages' ids in the transcript (a state: the one before)
    std::string state_;                 // the last state that joined, while it is in the window
};

}  // namespace agenthost::agent
