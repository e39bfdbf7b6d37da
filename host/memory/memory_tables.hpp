// Agent memory's SQL that SQLite and PostgreSQL agree on, written once: the memory entries, posted
// events and facts as every backend reads and writes them, over the backend's store::SqlConnection
// (inside whatever transaction it opened). What the dialects do differently stays in the backend:
// taking events once across hosts (PostgreSQL's SKIP LOCKED) and storing a fact once (a unique
// index in PostgreSQL, the write lock in SQLite).
#pragma once

#include "memory/memory_backend.hpp"
#include "store/keyed_value_table.hpp"

namespace agenthost::memory {

// `entries` (ordered by key) as they are once `held` (key, value pairs ordered by key, none empty)
// are written: what a read answers while a store still holds values for its next write.
void overlay_held(std::vector<Entry>& entries, const std::vector<std::pair<std::string, std::string>>& held);

class MemoryTables {
public:
    MemoryTables() : entries_("memory", "conversation") {}

    Result<std::optional<std::string>> get(store::SqlConnection& db, std::string_view conversation, std::string_view key) const {
        return entries_.get(db, conversation, key);
    }
    // An empty value deletes the entry.
    Status set(store::SqlConnection& db, std::string_view conversation, std::string_view key, std::string_view value) const;
    Result<std::vector<Entry>> entries(store::SqlConnection& db, std::string_view conversation) const;
    Result<int64_t> clear(store::SqlConnection& db, std::string_view conversation) const {
        return entries_.erase_all(db, conversation);
    }

    Status post_event(store::SqlConnection& db, std::string_view conversation, std::string_view plugin,
                      std::string_view body_json) const;
    // The undelivered events of `conversation` and of every conversation (""), oldest first.
    Result<std::vector<PostedEvent>> pending_events(store::SqlConnection& db, std::string_view conversation) const;

    Result<std::vector<Fact>> facts(store::SqlConnection& db) const;  // newest first
    // The conversation's entries and the facts in one statement.
    Result<TurnMemory> turn(store::SqlConnection& db, std::string_view conversation) const;
    Result<bool> remove_fact(store::SqlConnection& db, int64_t id) const;

    // The entries' table, for a store that holds values to write with its next write.
    const store::KeyedValueTable& entries_table() const { return entries_; }

private:
    store::KeyedValueTable entries_;
};

}  // namespace agenthost::memory
