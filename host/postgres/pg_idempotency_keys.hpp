// Idempotency keys on PostgreSQL (table idempotency_keys): a client's retry finds the key whichever
// host it reaches. The first request to insert a key wins; the database decides, not a host.
#pragma once

#include "postgres/pg_connection.hpp"
#include "store/idempotency_keys.hpp"

namespace agenthost::postgres {

class PgIdempotencyKeys final : public store::IdempotencyKeys {
public:
    explicit PgIdempotencyKeys(Session& session) : session_(session) {}
    // When the database cannot be reached, a key counts as fresh: the request goes on (and fails on
    // the store itself, as any request would) rather than being refused for its key.
    Lookup begin(const std::string& route, const std::string& key, uint64_t print) override;
    void started(const std::string& route, const std::string& key, int64_t run) override;
    void forget(const std::string& route, const std::string& key) override;

private:
    Session& session_;
};

}  // namespace agenthost::postgres
