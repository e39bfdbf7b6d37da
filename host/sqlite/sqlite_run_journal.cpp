#include "sqlite/sqlite_run_journal.hpp"

#include "sqlite/sqlite_sql.hpp"
#include "store/run_owner.hpp"

namespace agenthost::sqlite {
using namespace store;  // the journal's record types

SqliteRunJournal::SqliteRunJournal(Database& db, int lease_seconds)
    : SqlRunJournal({"tool_journal"}, this_process_owner(), lease_seconds), db_(db) {}

Status SqliteRunJournal::with_read(const SqlBody& body) {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return body(sql);
    });
}

Status SqliteRunJournal::with_write(const SqlBody& body, Flush flush) {
    return db_.write(
        [&](Database& db) {
            SqliteSql sql(db);
            return body(sql);
        },
        flush);
}

Status SqliteRunJournal::claim(int64_t run) {
    if (auto refusal = unrecovered(recover(), run)) return *refusal;
    auto claimed = writing<bool>([&](SqlConnection& sql) { return claim_run(sql, run, owner(), lease_seconds()); });
    if (!claimed) return claimed.error();
    if (*claimed) return Ok{};
    return claim_refusal(*this, run);
}

Recovery SqliteRunJournal::recover() {
    // Read first on a reading connection, so a host with nothing to recover takes no write lock.
    auto dead = reading<std::vector<AbandonedRun>>([&](SqlConnection& sql) { return abandoned_runs(sql, owner()); });
    if (!dead) return {{}, dead.error(), 0};
    if (dead->empty()) return {};
    auto taken = writing<int>([&](SqlConnection& sql) -> Result<int> {
        int marked_now = 0;
        for (const AbandonedRun& run : *dead) {
            auto marked = mark_interrupted(sql, run);
            if (!marked) return marked.error();
            marked_now += *marked ? 1 : 0;
        }
        return marked_now;
    });
    std::vector<int64_t> ids;
    ids.reserve(dead->size());
    for (const AbandonedRun& run : *dead) ids.push_back(run.id);
    if (!taken) return {std::move(ids), taken.error(), 0};
    return {std::move(ids), Ok{}, *taken};
}

}  // namespace agenthost::sqlite
