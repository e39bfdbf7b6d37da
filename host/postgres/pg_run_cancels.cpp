#include "postgres/pg_run_cancels.hpp"

#include "postgres/pg_listener.hpp"
#include "store/run_owner.hpp"

namespace agenthost::postgres {
namespace {

Param running() { return param(std::string_view(run_status_name(RunStatus::running))); }

}  // namespace

Status PgRunCancels::request(int64_t run) {
    return session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            auto done = tx.exec(
                "INSERT INTO run_cancels (run, requested_at) SELECT id, $2::double precision FROM runs WHERE id = $1::bigint"
                " AND status = $3 ON CONFLICT (run) DO NOTHING",
                {param(run), param(store::now_seconds()), running()});
            if (!done) return done.error();
            // The host executing it looks at once instead of at its next look.
            return done->affected() > 0 ? notify(tx, store::Change::cancel_requested, {run}) : Status(Ok{});
        });
    });
}

std::vector<int64_t> PgRunCancels::take_mine() {
    return session_.with([&](Connection& db) {
        std::vector<int64_t> out;
        // Requests for runs no longer running are dropped on the way: nothing is left to cancel.
        (void)db.exec("DELETE FROM run_cancels c USING runs r WHERE c.run = r.id AND r.status <> $1", {running()});
        auto rows = db.exec(
            "DELETE FROM run_cancels c USING runs r WHERE c.run = r.id AND r.status = $2 AND r.lease_owner = $1"
            " RETURNING c.run",
            {param(owner_), running()});
        if (rows)
            for (int i = 0; i < rows->size(); ++i) out.push_back(rows->integer(i, 0));
        return out;
    });
}

}  // namespace agenthost::postgres
