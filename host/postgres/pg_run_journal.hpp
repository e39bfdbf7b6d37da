// The run journal on PostgreSQL, for several hosts sharing one database: the shared SQL journal
// (store/sql_run_journal) on a Session, checked by the same conformance tests as SQLite's. One
// running run per conversation is a unique index, so two hosts cannot both start one; a run's
// lease names its owner process ("host:pid:start"), so any host can tell an abandoned run by its
// expired lease.
#pragma once

#include "postgres/pg_connection.hpp"
#include "store/sql_run_journal.hpp"

namespace agenthost::postgres {

class PgRunJournal final : public store::SqlRunJournal {
public:
    // `session` must outlive the journal; its database is migrated by open_backend (pg_backend.hpp).
    PgRunJournal(Session& session, int lease_seconds, std::string owner);

    Status claim(int64_t run) override;
    // Ends the run; one left interrupted for a host to take over is told to every host's listener.
    Status end_run(int64_t run, const store::RunEnd& end) override;

private:
    Status with_read(const SqlBody& body) override;
    Status with_write(const SqlBody& body, store::Flush flush) override;
    store::Recovery recover() override;

    Session& session_;
};

}  // namespace agenthost::postgres
