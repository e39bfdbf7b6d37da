#include "memory/memory_tables.hpp"

#include <algorithm>

namespace agenthost::memory {

namespace {

// Entries in byte order of their keys, whatever the database's collation sorts by (PostgreSQL's
// may be a locale's, in which "tasks" comes before "task_stack"): readers search them by key.
void by_key(std::vector<Entry>& entries) {
    auto before = [](const Entry& a, const Entry& b) { return a.key < b.key; };
    if (!std::is_sorted(entries.begin(), entries.end(), before)) std::sort(entries.begin(), entries.end(), before);
}

}  // namespace

void overlay_held(std::vector<Entry>& entries, const std::vector<std::pair<std::string, std::string>>& held) {
    for (const auto& [key, value] : held) {
        auto at =
            std::lower_bound(entries.begin(), entries.end(), key, [](const Entry& e, const std::string& k) { return e.key < k; });
        if (at != entries.end() && at->key == key)
            at->value_json = value;
        else
            entries.insert(at, Entry{key, value});
    }
}

Status MemoryTables::set(store::SqlConnection& db, std::string_view conversation, std::string_view key,
                         std::string_view value) const {
    return value.empty() ? entries_.erase(db, conversation, key) : entries_.set(db, conversation, key, value);
}

Result<std::vector<Entry>> MemoryTables::entries(store::SqlConnection& db, std::string_view conversation) const {
    auto all = entries_.all(db, conversation);
    if (!all) return all.error();
    std::vector<Entry> out;
    out.reserve(all->size());
    for (auto& [key, value] : *all) out.push_back({std::move(key), std::move(value)});
    by_key(out);
    return out;
}

Status MemoryTables::post_event(store::SqlConnection& db, std::string_view conversation, std::string_view plugin,
                                std::string_view body_json) const {
    auto done =
        db.execute("INSERT INTO events (conversation, plugin, body) VALUES (?1, ?2, ?3)", {conversation, plugin, body_json});
    if (!done) return done.error();
    return Ok{};
}

Result<std::vector<PostedEvent>> MemoryTables::pending_events(store::SqlConnection& db, std::string_view conversation) const {
    std::vector<PostedEvent> out;
    Status read = db.query("SELECT id, plugin, body FROM events WHERE NOT delivered AND conversation IN (?1, '') ORDER BY id",
                           {conversation}, [&](const store::SqlRow& row) {
                               out.push_back({row.integer(0), row.text(1), row.text(2)});
                           });
    if (!read) return read.error();
    return out;
}

Result<std::vector<Fact>> MemoryTables::facts(store::SqlConnection& db) const {
    std::vector<Fact> out;
    Status read = db.query("SELECT id, text FROM facts ORDER BY id DESC", {}, [&](const store::SqlRow& row) {
        out.push_back({row.integer(0), row.text(1)});
    });
    if (!read) return read.error();
    return out;
}

Result<TurnMemory> MemoryTables::turn(store::SqlConnection& db, std::string_view conversation) const {
    TurnMemory out;
    // Ordered as entries() and facts() order them: the entries by key, then the facts newest first.
    Status read = db.query(
        "SELECT 0 AS part, key AS k, value AS v, 0 AS id FROM memory WHERE conversation = ?1"
        " UNION ALL SELECT 1, '', text, id FROM facts ORDER BY part, k, id DESC",
        {conversation}, [&](const store::SqlRow& row) {
            if (row.integer(0) == 0)
                out.entries.push_back({row.text(1), row.text(2)});
            else
                out.facts.push_back({row.integer(3), row.text(2)});
        });
    if (!read) return read.error();
    by_key(out.entries);
    return out;
}

Result<bool> MemoryTables::remove_fact(store::SqlConnection& db, int64_t id) const {
    auto removed = db.execute("DELETE FROM facts WHERE id = ?1", {id});
    if (!removed) return removed.error();
    return *removed > 0;
}

}  // namespace agenthost::memory
