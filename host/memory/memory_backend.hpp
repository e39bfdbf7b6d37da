// Where agent memory is kept, as an interface: JSON documents per conversation (session memory)
// or under the empty conversation (long-term memory), facts, and events posted for a
// conversation's next turn. sqlite/sqlite_memory and postgres/pg_memory implement it; what the documents mean
// (AgentMemory: session, plan, task stack …) is built on this interface alone, so a second
// backend (PostgreSQL, #24) or a test's in-memory one plugs in underneath. Implementations are
// safe to call from several threads.
#pragma once

#include "common/result.hpp"
#include "store/flush.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agenthost::memory {

struct PostedEvent {
    int64_t id;
    std::string plugin;
    std::string body;  // JSON object
};

struct Fact {
    int64_t id = 0;
    std::string text;
};

// One memory entry as stored (key → JSON text), for showing keys the host does not interpret.
struct Entry {
    std::string key;
    std::string value_json;
};

// What a turn reads of memory: its conversation's entries (by key) and every fact (newest first).
struct TurnMemory {
    std::vector<Entry> entries;
    std::vector<Fact> facts;
};

class MemoryBackend {
public:
    virtual ~MemoryBackend() = default;

    // The entry's JSON text, nullopt when there is none, an Error when the store could not be read
    // (so a failed read is never taken for an empty entry and written over).
    virtual Result<std::optional<std::string>> get(std::string_view conversation, std::string_view key) = 0;
    // An empty value deletes the entry. `flush` says when the write is on disk (store/flush.hpp):
    // Flush::with_next_write holds the value, read back from here at once, for the transaction of
    // the store's next journal write (the step being written: kept or lost with it). A delete is
    // written at once. (A class implementing it says `using MemoryBackend::set;`.)
    virtual Status set(std::string_view conversation, std::string_view key, std::string_view value_json, store::Flush flush) = 0;
    // Written at once (Flush::now).
    Status set(std::string_view conversation, std::string_view key, std::string_view value_json) {
        return set(conversation, key, value_json, store::Flush::now);
    }
    // Every entry of a conversation, ordered by key (byte order); an Error when the store could not be read.
    virtual Result<std::vector<Entry>> read_entries(std::string_view conversation) = 0;
    // The same for a reader that shows what it can: a failed read is empty.
    std::vector<Entry> entries(std::string_view conversation) {
        auto read = read_entries(conversation);
        return read ? std::move(*read) : std::vector<Entry>{};
    }
    // Deletes every entry of a conversation (long-term entries, under "", only when asked for "");
    // returns how many there were.
    virtual Result<int64_t> clear(std::string_view conversation) = 0;

    virtual Status post_event(std::string_view conversation, std::string_view plugin, std::string_view body_json) = 0;
    // Returns the undelivered events of `conversation` (and those posted for any conversation, ""),
    // oldest first, and marks them delivered so each is shown once.
    virtual std::vector<PostedEvent> take_events(std::string_view conversation) = 0;
    // The same events without marking them: what the next turn of `conversation` will be shown.
    virtual std::vector<PostedEvent> pending_events(std::string_view conversation) = 0;

    // Stores a fact; one already known (the same text) returns its id.
    virtual Result<int64_t> add_fact(std::string_view text) = 0;
    // Every fact, newest first; an Error when the store could not be read.
    virtual Result<std::vector<Fact>> read_facts() = 0;
    // The same for a reader that shows what it can: a failed read is empty.
    std::vector<Fact> facts() {
        auto read = read_facts();
        return read ? std::move(*read) : std::vector<Fact>{};
    }
    // False when there was no such fact, an Error when the store failed.
    virtual Result<bool> remove_fact(int64_t id) = 0;

    // read_entries and read_facts together, in one round trip where the backend can.
    virtual Result<TurnMemory> read_turn(std::string_view conversation) {
        auto entries = read_entries(conversation);
        if (!entries) return entries.error();
        auto facts = read_facts();
        if (!facts) return facts.error();
        return TurnMemory{std::move(*entries), std::move(*facts)};
    }
};

}  // namespace agenthost::memory
