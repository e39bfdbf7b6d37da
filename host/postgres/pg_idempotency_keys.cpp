#include "postgres/pg_idempotency_keys.hpp"

#include "store/run_owner.hpp"

#include <spdlog/spdlog.h>

namespace agenthost::postgres {

namespace {
std::string id_of(const std::string& route, const std::string& key) { return store::IdempotencyKeys::scoped(route, key); }
// The fingerprint as PostgreSQL's signed BIGINT holds it.
int64_t stored(uint64_t print) { return static_cast<int64_t>(print); }
}  // namespace

store::IdempotencyKeys::Lookup PgIdempotencyKeys::begin(const std::string& route, const std::string& key, uint64_t print) {
    Lookup out{Found::fresh};
    Status s = session_.with([&](Connection& db) -> Status {
        double t = store::now_seconds();
        if (auto old = db.exec("DELETE FROM idempotency_keys WHERE created_at < $1::double precision", {param(t - kTtlSeconds)});
            !old)
            return old.error();
        // A first use, or a first request that never started its run (its host died): ours now.
        auto mine = db.exec(
            "INSERT INTO idempotency_keys (id, print, run, created_at) VALUES ($1, $2::bigint, NULL, $3::double precision)"
            " ON CONFLICT (id) DO UPDATE SET print = excluded.print, created_at = excluded.created_at"
            " WHERE idempotency_keys.run IS NULL AND idempotency_keys.created_at < $4::double precision"
            " AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.idempotency_key = $1) RETURNING id",
            {param(id_of(route, key)), param(stored(print)), param(t), param(t - abandoned_after_)});
        if (!mine) return mine.error();
        if (!mine->empty()) return Ok{};
        auto row = db.exec("SELECT print, COALESCE(run, 0) FROM idempotency_keys WHERE id = $1", {param(id_of(route, key))});
        if (!row) return row.error();
        if (row->empty()) return Ok{};  // expired between the two statements: fresh
        if (row->integer(0, 0) != stored(print))
            out = {Found::mismatch};
        else if (int64_t run = row->integer(0, 1))
            out = {Found::run, run};
        else
            out = {Found::in_progress};
        return Ok{};
    });
    if (!s) {  // fail closed: a key that cannot be checked starts nothing
        spdlog::warn("idempotency key not checked, request refused: reason=\"{}\"", s.error().message);
        return {Found::unavailable};
    }
    return out;
}

void PgIdempotencyKeys::started(const std::string& route, const std::string& key, int64_t run) {
    Status s = session_.with([&](Connection& db) -> Status {
        auto done = db.exec("UPDATE idempotency_keys SET run = $2::bigint WHERE id = $1", {param(id_of(route, key)), param(run)});
        if (!done) return done.error();
        return Ok{};
    });
    if (!s) spdlog::warn("idempotency key not recorded: run={} reason=\"{}\"", run, s.error().message);
}

void PgIdempotencyKeys::forget(const std::string& route, const std::string& key) {
    Status s = session_.with([&](Connection& db) -> Status {
        auto done = db.exec("DELETE FROM idempotency_keys WHERE id = $1 AND run IS NULL", {param(id_of(route, key))});
        if (!done) return done.error();
        return Ok{};
    });
    if (!s) spdlog::warn("idempotency key not released: reason=\"{}\"", s.error().message);
}

}  // namespace agenthost::postgres
