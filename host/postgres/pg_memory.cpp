#include "postgres/pg_memory.hpp"

#include <algorithm>

namespace agenthost::postgres {
namespace {

Status done(const Result<Rows>& rows) {
    if (!rows) return rows.error();
    return Ok{};
}

}  // namespace

Result<std::optional<std::string>> PgMemory::get(std::string_view conversation, std::string_view key) {
    return session_.with([&](Connection& db) -> Result<std::optional<std::string>> {
        auto row = db.exec("SELECT value FROM memory WHERE conversation = $1 AND key = $2", {param(conversation), param(key)});
        if (!row) return row.error();
        if (row->empty()) return std::optional<std::string>();
        return std::optional<std::string>(row->text(0, 0));
    });
}

Status PgMemory::set(std::string_view conversation, std::string_view key, std::string_view value_json) {
    return session_.with([&](Connection& db) {
        if (value_json.empty())
            return done(db.exec("DELETE FROM memory WHERE conversation = $1 AND key = $2", {param(conversation), param(key)}));
        return done(
            db.exec("INSERT INTO memory (conversation, key, value, updated_at) VALUES ($1, $2, $3, extract(epoch FROM now()))"
                    " ON CONFLICT (conversation, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                    {param(conversation), param(key), param(value_json)}));
    });
}

std::vector<memory::Entry> PgMemory::entries(std::string_view conversation) {
    return session_.with([&](Connection& db) {
        std::vector<memory::Entry> out;
        auto rows = db.exec("SELECT key, value FROM memory WHERE conversation = $1 ORDER BY key", {param(conversation)});
        if (rows)
            for (int i = 0; i < rows->size(); ++i) out.push_back({rows->text(i, 0), rows->text(i, 1)});
        return out;
    });
}

Result<int64_t> PgMemory::clear(std::string_view conversation) {
    return session_.with([&](Connection& db) -> Result<int64_t> {
        auto rows = db.exec("DELETE FROM memory WHERE conversation = $1", {param(conversation)});
        if (!rows) return rows.error();
        return rows->affected();
    });
}

Status PgMemory::post_event(std::string_view conversation, std::string_view plugin, std::string_view body_json) {
    return session_.with([&](Connection& db) {
        return done(db.exec("INSERT INTO events (conversation, plugin, body) VALUES ($1, $2, $3)",
                            {param(conversation), param(plugin), param(body_json)}));
    });
}

std::vector<memory::PostedEvent> PgMemory::pending_events(std::string_view conversation) {
    return session_.with([&](Connection& db) {
        std::vector<memory::PostedEvent> out;
        auto rows = db.exec(
            "SELECT id, plugin, body FROM events WHERE NOT delivered AND (conversation = $1 OR conversation = '') ORDER BY id",
            {param(conversation)});
        if (rows)
            for (int i = 0; i < rows->size(); ++i) out.push_back({rows->integer(i, 0), rows->text(i, 1), rows->text(i, 2)});
        return out;
    });
}

std::vector<memory::PostedEvent> PgMemory::take_events(std::string_view conversation) {
    return session_.with([&](Connection& db) {
        std::vector<memory::PostedEvent> out;
        // Marked delivered in the statement that reads them: each event reaches one turn, on one host.
        auto rows = db.exec(
            "UPDATE events SET delivered = true WHERE id IN (SELECT id FROM events WHERE NOT delivered AND"
            " (conversation = $1 OR conversation = '') ORDER BY id FOR UPDATE SKIP LOCKED) RETURNING id, plugin, body",
            {param(conversation)});
        if (rows)
            for (int i = 0; i < rows->size(); ++i) out.push_back({rows->integer(i, 0), rows->text(i, 1), rows->text(i, 2)});
        std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });  // RETURNING has no order
        return out;
    });
}

Result<int64_t> PgMemory::add_fact(std::string_view text) {
    return session_.with([&](Connection& db) -> Result<int64_t> {
        // A known fact returns its id (the no-op update makes RETURNING answer for it too).
        auto row =
            db.exec("INSERT INTO facts (text) VALUES ($1) ON CONFLICT (text) DO UPDATE SET text = excluded.text RETURNING id",
                    {param(text)});
        if (!row) return row.error();
        return row->integer(0, 0);
    });
}

std::vector<memory::Fact> PgMemory::facts() {
    return session_.with([&](Connection& db) {
        std::vector<memory::Fact> out;
        auto rows = db.exec("SELECT id, text FROM facts ORDER BY id DESC");
        if (rows)
            for (int i = 0; i < rows->size(); ++i) out.push_back({rows->integer(i, 0), rows->text(i, 1)});
        return out;
    });
}

Result<bool> PgMemory::remove_fact(int64_t id) {
    return session_.with([&](Connection& db) -> Result<bool> {
        auto rows = db.exec("DELETE FROM facts WHERE id = $1::bigint", {param(id)});
        if (!rows) return rows.error();
        return rows->affected() > 0;
    });
}

}  // namespace agenthost::postgres
