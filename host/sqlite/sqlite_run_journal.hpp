// The SQLite run journal (the embedded default): the shared SQL journal (store/sql_run_journal)
// on a Database, with SQLite's own recovery and claim.
#pragma once

#include "sqlite/database.hpp"
#include "store/sql_run_journal.hpp"

namespace agenthost::sqlite {

class SqliteRunJournal final : public store::SqlRunJournal {
public:
    // `lease_seconds`: how long a run stays claimed without a heartbeat.
    SqliteRunJournal(Database& db, int lease_seconds);

    Status claim(int64_t run) override;

private:
    Status with_read(const SqlBody& body) override;
    Status with_write(const SqlBody& body, store::Flush flush) override;
    store::Recovery recover() override;

    Database& db_;
};

}  // namespace agenthost::sqlite
