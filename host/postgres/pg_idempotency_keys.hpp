// Idempotency keys on PostgreSQL (table idempotency_keys): a client's retry finds the key whichever
// host it reaches. The first request to insert a key wins; the database decides, not a host.
#pragma once

#include "postgres/pg_connection.hpp"
#include "store/idempotency_keys.hpp"

namespace agenthost::postgres {

class PgIdempotencyKeys final : public store::IdempotencyKeys {
public:
    // A first request that has not started its run `abandoned_after` seconds after noting its key
    // (two leases) is taken to have died with its host: a retry may start the run. Were it only
    // slow, the runs table's unique key still refuses it a second run.
    PgIdempotencyKeys(Session& session, double abandoned_after) : session_(session), abandoned_after_(abandoned_after) {}
    // When the database cannot be reached: `unavailable`, and nothing starts (fail closed).
    Lookup begin(const std::string& route, const std::string& key, uint64_t print) override;
    void started(const std::string& route, const std::string& key, int64_t run) override;
    void forget(const std::string& route, const std::string& key) override;

private:
    Session& session_;
    const double abandoned_after_;
};

}  // namespace agenthost::postgres
