#include "sqlite/sqlite_memory.hpp"

#include "sqlite/sqlite_sql.hpp"
#include "store/store_error.hpp"

namespace agenthost::sqlite {

using memory::Entry;
using memory::Fact;
using memory::PostedEvent;

Result<std::optional<std::string>> SqliteMemory::get(std::string_view conversation, std::string_view key) {
    return entries_.read(conversation, key);
}

Status SqliteMemory::set(std::string_view conversation, std::string_view key, std::string_view value_json, store::Flush flush) {
    if (value_json.empty()) return entries_.erase(conversation, key);  // an empty value deletes, at once
    return entries_.set(conversation, key, value_json, flush);
}

Result<int64_t> SqliteMemory::clear(std::string_view conversation) {
    entries_.drop_held(conversation);
    return db_.write_returning([&](Database& db) {
        SqliteSql sql(db);
        return tables_.clear(sql, conversation);
    });
}

Result<std::vector<Entry>> SqliteMemory::read_entries(std::string_view conversation) {
    auto held = entries_.held_of(conversation);  // looked at first: a value written meanwhile is read from the table
    auto read = db_.read([&](Database& db) {
        SqliteSql sql(db);
        return tables_.entries(sql, conversation);
    });
    if (read) memory::overlay_held(*read, held);
    return read;
}

Status SqliteMemory::post_event(std::string_view conversation, std::string_view plugin, std::string_view body_json) {
    return db_.write([&](Database& db) {
        SqliteSql sql(db);
        return tables_.post_event(sql, conversation, plugin, body_json);
    });
}

std::vector<PostedEvent> SqliteMemory::pending_events(std::string_view conversation) {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        auto events = tables_.pending_events(sql, conversation);
        return events ? std::move(*events) : std::vector<PostedEvent>{};
    });
}

std::vector<PostedEvent> SqliteMemory::take_events(std::string_view conversation) {
    // Most turns find none: a read answers that without a write (and its commit).
    if (pending_events(conversation).empty()) return {};
    std::vector<PostedEvent> events;
    Status s = db_.write([&](Database& db) -> Status {
        SqliteSql sql(db);
        auto pending = tables_.pending_events(sql, conversation);
        if (!pending) return pending.error();
        events = std::move(*pending);
        // The write transaction holds the database: no other process takes these in between.
        auto marked = sql.execute("UPDATE events SET delivered = 1 WHERE NOT delivered AND conversation IN (?1, '') AND id <= ?2",
                                  {conversation, events.empty() ? int64_t{0} : events.back().id});
        if (!marked) return marked.error();
        return Ok{};
    });
    if (!s) events.clear();  // not marked: shown by the next turn instead
    return events;
}

Result<int64_t> SqliteMemory::add_fact(std::string_view text) {
    // The write transaction holds the database, so looking first stores a fact once (the table has
    // no unique index on text, which PostgreSQL's upsert relies on).
    return db_.write_returning([&](Database& db) -> Result<int64_t> {
        SqliteSql sql(db);
        auto known = sql.first_integer("SELECT id FROM facts WHERE text = ?1", {text});
        if (!known) return known.error();
        if (!*known) known = sql.first_integer("INSERT INTO facts (text) VALUES (?1) RETURNING id", {text});
        if (!known) return known.error();
        if (!*known) return store::store_error(store::StoreFault::sql, "the store kept the fact but returned no id for it");
        return **known;
    });
}

Result<memory::TurnMemory> SqliteMemory::read_turn(std::string_view conversation) {
    auto held = entries_.held_of(conversation);
    auto read = db_.read([&](Database& db) {
        SqliteSql sql(db);
        return tables_.turn(sql, conversation);
    });
    if (read) memory::overlay_held(read->entries, held);
    return read;
}

Result<std::vector<Fact>> SqliteMemory::read_facts() {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return tables_.facts(sql);
    });
}

Result<bool> SqliteMemory::remove_fact(int64_t id) {
    return db_.write_returning([&](Database& db) {
        SqliteSql sql(db);
        return tables_.remove_fact(sql, id);
    });
}

}  // namespace agenthost::sqlite
