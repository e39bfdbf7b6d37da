#include "postgres/pg_memory.hpp"

#include "postgres/pg_listener.hpp"
#include "postgres/pg_sql.hpp"

#include <algorithm>

namespace agenthost::postgres {

Result<std::optional<std::string>> PgMemory::get(std::string_view conversation, std::string_view key) {
    if (auto held = held_.find(conversation, key)) return held;
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return tables_.get(sql, conversation, key);
    });
}

Status PgMemory::set(std::string_view conversation, std::string_view key, std::string_view value_json, store::Flush flush) {
    if (flush == store::Flush::with_next_write && !value_json.empty()) {  // a delete is written at once
        if (Status held = held_.hold(conversation, key, value_json); !held) return held;
        session_.join_next_write({&held_, &tables_.entries_table()});
        return Ok{};
    }
    held_.drop(conversation, key);
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return tables_.set(sql, conversation, key, value_json);
    });
}

Result<std::vector<memory::Entry>> PgMemory::read_entries(std::string_view conversation) {
    auto held = held_.of_owner(conversation);  // looked at first: a value written meanwhile is read from the table
    auto read = session_.with([&](Connection& db) {
        PgSql sql(db);
        return tables_.entries(sql, conversation);
    });
    if (read) memory::overlay_held(*read, held);
    return read;
}

Result<int64_t> PgMemory::clear(std::string_view conversation) {
    held_.drop_owner(conversation);
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return tables_.clear(sql, conversation);
    });
}

Status PgMemory::post_event(std::string_view conversation, std::string_view plugin, std::string_view body_json) {
    return session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            PgSql sql(tx);
            if (Status posted = tables_.post_event(sql, conversation, plugin, body_json); !posted) return posted;
            return notify(tx, store::Change::events_posted, {0});  // every host looks at its next turn
        });
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
    const uint64_t seen = signals_.count(store::Change::events_posted);
    if (signals_.live() && none_left_at_.load() == seen) return {};  // nothing posted since none was left
    return session_.with([&](Connection& db) {
        std::vector<memory::PostedEvent> out;
        // Marked delivered in the statement that reads them: each event reaches one turn, on one host.
        // Its last row (id 0) says whether any undelivered event is left, of any conversation.
        auto rows = db.exec(
            "WITH taken AS (UPDATE events SET delivered = true WHERE id IN (SELECT id FROM events WHERE NOT delivered AND"
            " (conversation = $1 OR conversation = '') ORDER BY id FOR UPDATE SKIP LOCKED) RETURNING id, plugin, body)"
            " SELECT id, plugin, body, false FROM taken UNION ALL SELECT 0, '', '', NOT EXISTS (SELECT 1 FROM events"
            " WHERE NOT delivered AND id NOT IN (SELECT id FROM taken))",
            {param(conversation)});
        if (!rows) return out;
        for (int i = 0; i < rows->size(); ++i) {
            if (rows->integer(i, 0) != 0) {
                out.push_back({rows->integer(i, 0), rows->text(i, 1), rows->text(i, 2)});
            } else if (rows->text(i, 3) == "t") {
                none_left_at_ = seen;
            }
        }
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

Result<memory::TurnMemory> PgMemory::read_turn(std::string_view conversation) {
    auto held = held_.of_owner(conversation);
    auto read = session_.with([&](Connection& db) {
        PgSql sql(db);
        return tables_.turn(sql, conversation);
    });
    if (read) memory::overlay_held(read->entries, held);
    return read;
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
