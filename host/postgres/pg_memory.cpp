#include "postgres/pg_memory.hpp"

#include "postgres/pg_sql.hpp"

#include <algorithm>

namespace agenthost::postgres {

Result<std::optional<std::string>> PgMemory::get(std::string_view conversation, std::string_view key) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return tables_.get(sql, conversation, key);
    });
}

Status PgMemory::set(std::string_view conversation, std::string_view key, std::string_view value_json) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return tables_.set(sql, conversation, key, value_json);
    });
}

Result<std::vector<memory::Entry>> PgMemory::read_entries(std::string_view conversation) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return tables_.entries(sql, conversation);
    });
}

Result<int64_t> PgMemory::clear(std::string_view conversation) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return tables_.clear(sql, conversation);
    });
}

Status PgMemory::post_event(std::string_view conversation, std::string_view plugin, std::string_view body_json) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return tables_.post_event(sql, conversation, plugin, body_json);
    });
}

std::vector<memory::PostedEvent> PgMemory::pending_events(std::string_view conversation) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        auto events = tables_.pending_events(sql, conversation);
        return events ? std::move(*events) : std::vector<memory::PostedEvent>{};
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
        // A known fact returns its id (the no-op update makes RETURNING answer for it too); the
        // unique index on text keeps two hosts from storing it twice.
        auto row =
            db.exec("INSERT INTO facts (text) VALUES ($1) ON CONFLICT (text) DO UPDATE SET text = excluded.text RETURNING id",
                    {param(text)});
        if (!row) return row.error();
        return row->integer(0, 0);
    });
}

Result<std::vector<memory::Fact>> PgMemory::read_facts() {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return tables_.facts(sql);
    });
}

Result<bool> PgMemory::remove_fact(int64_t id) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return tables_.remove_fact(sql, id);
    });
}

}  // namespace agenthost::postgres
