#include "postgres/pg_run_journal.hpp"

#include "postgres/pg_listener.hpp"
#include "postgres/pg_sql.hpp"
#include "store/store_error.hpp"

#include <spdlog/spdlog.h>

namespace agenthost::postgres {

// Every row that names one of a deleted conversation's runs goes with them: the tool journal, the
// events hosts stream, cancel requests and the Idempotency-Keys that would name a run no more.
PgRunJournal::PgRunJournal(Session& session, int lease_seconds, std::string owner)
    : SqlRunJournal({"tool_journal", "run_events", "run_cancels", "idempotency_keys"}, std::move(owner), lease_seconds),
      session_(session) {}

Status PgRunJournal::with_read(const SqlBody& body) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return body(sql);
    });
}

Status PgRunJournal::with_write(const SqlBody& body, store::Flush flush) {
    // A step's write carries the provider state held for it (store::Flush::with_next_write).
    return session_.with([&](Connection& db) {
        return session_.write_carrying_joined(db, [&](Connection& tx) -> Status {
            if (auto st = defer_flush(tx, flush); !st) return st;
            PgSql sql(tx);
            return body(sql);
        });
    });
}

Status PgRunJournal::claim(int64_t run) {
    if (auto refusal = store::unrecovered(recover(), run)) return *refusal;
    auto claimed = reading<bool>([&](store::SqlConnection& sql) -> Result<bool> {
        auto took = store::claim_run(sql, run, owner(), lease_seconds());
        if (took || !store::is(took.error(), store::StoreFault::conflict)) return took;
        // Another run of its conversation is running: the unique index one_running_run refuses a second.
        std::string conversation;
        (void)sql.query("SELECT conversation FROM runs WHERE id = ?1", {run},
                        [&](const store::SqlRow& row) { conversation = row.text(0); });
        return store::conversation_busy(conversation, 0);
    });
    if (!claimed) return claimed.error();
    if (*claimed) return Ok{};
    return store::claim_refusal(*this, run);
}

Status PgRunJournal::end_run(int64_t run, const store::RunEnd& end) {
    Status ended = SqlRunJournal::end_run(run, end);
    if (ended && end.stop_reason == StopReason::interrupted)
        if (Status told = session_.with([&](Connection& db) { return notify(db, store::Change::run_waiting, {run}); }); !told)
            spdlog::warn("store: could not tell other hosts that run {} waits to be taken over: {}", run, told.error().message);
    return ended;
}

store::Recovery PgRunJournal::recover() {
    store::Recovery found;
    Status reached = with_read([&](store::SqlConnection& sql) -> Status {
        auto dead = store::abandoned_runs(sql, owner());
        if (!dead) return dead.error();
        for (const store::AbandonedRun& run : *dead) {
            found.dead.push_back(run.id);
            // Recovered, so a host takes it over; the turn still holding it, if any, has its next
            // write refused (lease_lost). Each run is marked on its own: one refused leaves the others.
            auto marked = store::mark_interrupted(sql, run);
            if (!marked)
                found.marked = marked.error();
            else if (*marked)
                ++found.taken;
        }
        return Ok{};
    });
    if (!reached) return {std::move(found.dead), reached.error(), 0};  // unreadable, or out of reach
    return found;
}

}  // namespace agenthost::postgres
