// Agent memory as plugins and the host see it: JSON documents per conversation (session memory)
// or under the empty conversation (long-term memory), and events posted for the next turn.
#pragma once

#include "store/database.hpp"

namespace agenthost::memory {

struct PostedEvent {
    int64_t id;
    std::string plugin;
    std::string body;  // JSON object
};

class MemoryStore {
public:
    explicit MemoryStore(store::Database& db) : db_(db) {}

    std::optional<std::string> get(std::string_view conversation, std::string_view key);
    // An empty value deletes the entry.
    Status set(std::string_view conversation, std::string_view key, std::string_view value_json);

    // Deletes every entry of a conversation (long-term entries, under "", only when asked for "").
    Result<int64_t> clear(std::string_view conversation);

    Status post_event(std::string_view conversation, std::string_view plugin, std::string_view body_json);
    // Returns the undelivered events of `conversation` (and those posted for any conversation),
    // oldest first, and marks them delivered so each is shown once.
    std::vector<PostedEvent> take_events(std::string_view conversation);

private:
    store::Database& db_;
};

}  // namespace agenthost::memory
