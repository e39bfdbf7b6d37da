#include "postgres/pg_run_events.hpp"

#include "postgres/pg_listener.hpp"
#include "store/run_owner.hpp"

namespace agenthost::postgres {

namespace {
// Rows per INSERT: a batch of events is written with few round trips.
constexpr size_t kRowsPerStatement = 200;
}  // namespace

Status PgRunEvents::append(const std::vector<store::RunEvent>& events) {
    if (events.empty()) return Ok{};
    return session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            double t = store::now_seconds();
            for (size_t from = 0; from < events.size(); from += kRowsPerStatement) {
                size_t to = std::min(events.size(), from + kRowsPerStatement);
                std::string sql = "INSERT INTO run_events (run, seq, name, data, at) VALUES ";
                std::vector<Param> params;
                for (size_t i = from; i < to; ++i) {
                    size_t n = params.size();
                    sql += (i == from ? "" : ", ");
                    sql += "($" + std::to_string(n + 1) + "::bigint, $" + std::to_string(n + 2) + "::bigint, $" +
                           std::to_string(n + 3) + ", $" + std::to_string(n + 4) + ", $" + std::to_string(n + 5) +
                           "::double precision)";
                    params.insert(params.end(), {param(events[i].run), param(static_cast<int64_t>(events[i].seq)),
                                                 param(events[i].name), param(events[i].data), param(t)});
                }
                sql += " ON CONFLICT (run, seq) DO UPDATE SET name = excluded.name, data = excluded.data, at = excluded.at";
                if (auto done = tx.exec(sql, params); !done) return done.error();
            }
            std::vector<int64_t> runs;
            runs.reserve(events.size());
            for (const auto& e : events) runs.push_back(e.run);
            return notify(tx, store::Change::run_events, runs);  // followers on other hosts read them at once
        });
    });
}

std::vector<store::RunEvent> PgRunEvents::after(int64_t run, uint64_t seq, int limit) {
    return session_.with([&](Connection& db) {
        std::vector<store::RunEvent> out;
        auto rows = db.exec(
            "SELECT seq, name, data FROM run_events WHERE run = $1::bigint AND seq > $2::bigint ORDER BY seq"
            " LIMIT $3::bigint",
            {param(run), param(static_cast<int64_t>(seq)), param(int64_t{limit})});
        if (!rows) return out;
        for (int i = 0; i < rows->size(); ++i)
            out.push_back({run, static_cast<uint64_t>(rows->integer(i, 0)), rows->text(i, 1), rows->text(i, 2)});
        return out;
    });
}

uint64_t PgRunEvents::last_seq(int64_t run) {
    return session_.with([&](Connection& db) -> uint64_t {
        auto rows = db.exec("SELECT COALESCE(MAX(seq), 0) FROM run_events WHERE run = $1::bigint", {param(run)});
        return rows ? static_cast<uint64_t>(rows->integer(0, 0)) : 0;
    });
}

Result<int64_t> PgRunEvents::prune(double seconds) {
    return session_.with([&](Connection& db) -> Result<int64_t> {
        auto done = db.exec(
            "DELETE FROM run_events e USING runs r WHERE e.run = r.id AND r.status <> $2 AND r.ended_at IS NOT NULL"
            " AND r.ended_at < $1::double precision",
            {param(store::now_seconds() - seconds), param(std::string_view(run_status_name(RunStatus::running)))});
        if (!done) return done.error();
        return done->affected();
    });
}

}  // namespace agenthost::postgres
