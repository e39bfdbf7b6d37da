#include "sqlite/sqlite_memory.hpp"

namespace agenthost::sqlite {

using memory::Entry;
using memory::Fact;
using memory::PostedEvent;

Result<std::optional<std::string>> SqliteMemory::get(std::string_view conversation, std::string_view key) {
    return entries_.read(conversation, key);
}

Status SqliteMemory::set(std::string_view conversation, std::string_view key, std::string_view value_json) {
    return value_json.empty() ? entries_.erase(conversation, key) : entries_.set(conversation, key, value_json);
}

Result<int64_t> SqliteMemory::clear(std::string_view conversation) { return entries_.erase_all(conversation); }

std::vector<Entry> SqliteMemory::entries(std::string_view conversation) {
    std::vector<Entry> out;
    for (auto& [key, value] : entries_.all(conversation)) out.push_back({std::move(key), std::move(value)});
    return out;
}

Status SqliteMemory::post_event(std::string_view conversation, std::string_view plugin, std::string_view body_json) {
    return db_.write([&](Database& db) -> Status {
        auto stmt = db.prepare("INSERT INTO events (conversation, plugin, body) VALUES (?1, ?2, ?3)");
        if (!stmt) return stmt.error();
        return stmt->bind(1, conversation).bind(2, plugin).bind(3, body_json).run();
    });
}

std::vector<PostedEvent> SqliteMemory::pending_events(std::string_view conversation) {
    return db_.read([&](Database& db) {
        std::vector<PostedEvent> events;
        auto stmt =
            db.prepare("SELECT id, plugin, body FROM events WHERE delivered = 0 AND conversation IN (?1, '') ORDER BY id");
        if (!stmt) return events;
        stmt->bind(1, conversation);
        while (stmt->step()) events.push_back({stmt->integer(0), stmt->text(1), stmt->text(2)});
        return events;
    });
}

std::vector<PostedEvent> SqliteMemory::take_events(std::string_view conversation) {
    std::vector<PostedEvent> events;
    // Most turns find none: a read answers that without a write (and its commit).
    bool any = db_.read([&](Database& db) {
        auto stmt = db.prepare("SELECT 1 FROM events WHERE delivered = 0 AND conversation IN (?1, '') LIMIT 1");
        return !stmt || (stmt->bind(1, conversation), stmt->step());
    });
    if (!any) return events;
    Status s = db_.write([&](Database& db) -> Status {
        auto select =
            db.prepare("SELECT id, plugin, body FROM events WHERE delivered = 0 AND conversation IN (?1, '') ORDER BY id");
        if (!select) return select.error();
        select->bind(1, conversation);
        while (select->step()) events.push_back({select->integer(0), select->text(1), select->text(2)});
        auto mark = db.prepare("UPDATE events SET delivered = 1 WHERE delivered = 0 AND conversation IN (?1, '') AND id <= ?2");
        if (!mark) return mark.error();
        return mark->bind(1, conversation).bind(2, events.empty() ? 0 : events.back().id).run();
    });
    if (!s) events.clear();
    return events;
}

Result<int64_t> SqliteMemory::add_fact(std::string_view text) {
    int64_t id = 0;
    Status s = db_.write([&](Database& db) -> Status {
        auto existing = db.prepare("SELECT id FROM facts WHERE text = ?1");
        if (!existing) return existing.error();
        existing->bind(1, text);
        if (existing->step()) {
            id = existing->integer(0);
            return Ok{};
        }
        auto insert = db.prepare("INSERT INTO facts (text) VALUES (?1) RETURNING id");
        if (!insert) return insert.error();
        insert->bind(1, text);
        if (!insert->step()) return Error{"store_sql", "could not store the fact: " + db.last_error()};
        id = insert->integer(0);
        return Ok{};
    });
    if (!s) return s.error();
    return id;
}

std::vector<Fact> SqliteMemory::facts() {
    return db_.read([&](Database& db) {
        std::vector<Fact> facts;
        auto stmt = db.prepare("SELECT id, text FROM facts ORDER BY id DESC");
        if (!stmt) return facts;
        while (stmt->step()) facts.push_back({stmt->integer(0), stmt->text(1)});
        return facts;
    });
}

Result<bool> SqliteMemory::remove_fact(int64_t id) {
    bool removed = false;
    Status s = db_.write([&](Database& db) -> Status {
        auto stmt = db.prepare("DELETE FROM facts WHERE id = ?1 RETURNING id");
        if (!stmt) return stmt.error();
        stmt->bind(1, id);
        removed = stmt->step();
        return stmt->run();
    });
    if (!s) return s.error();
    return removed;
}

}  // namespace agenthost::sqlite
