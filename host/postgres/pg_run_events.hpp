// The run events on PostgreSQL (table run_events), on a connection of their own so a stream of
// token events never waits behind the run journal's writes.
#pragma once

#include "postgres/pg_connection.hpp"
#include "store/run_events.hpp"

namespace agenthost::postgres {

class PgRunEvents final : public store::RunEventLog {
public:
    explicit PgRunEvents(std::string url) : session_(std::move(url)) {}
    Status append(const std::vector<store::RunEvent>& events) override;
    std::vector<store::RunEvent> after(int64_t run, uint64_t seq, int limit) override;
    uint64_t last_seq(int64_t run) override;
    Result<int64_t> prune(double seconds) override;

private:
    Session session_;
};

}  // namespace agenthost::postgres
