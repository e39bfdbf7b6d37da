// Cancel requests on PostgreSQL (table run_cancels), addressed through the run's lease owner.
#pragma once

#include "postgres/pg_connection.hpp"
#include "store/run_cancels.hpp"

#include <string>

namespace agenthost::postgres {

class PgRunCancels final : public store::RunCancels {
public:
    // `owner`: this process as a lease owner (the run journal's).
    PgRunCancels(Session& session, std::string owner) : session_(session), owner_(std::move(owner)) {}
    Status request(int64_t run) override;
    std::vector<int64_t> take_mine() override;

private:
    Session& session_;
    std::string owner_;
};

}  // namespace agenthost::postgres
