#include "sqlite/sqlite_run_journal.hpp"

#include "sqlite/sqlite_sql.hpp"
#include "store/idempotency_keys.hpp"
#include "store/journal_sql.hpp"
#include "store/run_owner.hpp"
#include "store/run_rows.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>

namespace agenthost::sqlite {
using namespace store;  // the journal's record types

namespace {

const std::string kRunColumns =
    run_columns("(SELECT COUNT(*) FROM messages m WHERE m.conversation = runs.conversation AND m.turn = runs.turn)");

}  // namespace

SqliteRunJournal::SqliteRunJournal(Database& db, int lease_seconds)
    : db_(db), lease_seconds_(lease_seconds), owner_(this_process_owner()) {}

Result<RunRecord> SqliteRunJournal::begin_run(std::string_view conversation, Mode mode, std::string_view provider,
                                              std::string_view prompt, std::string_view prompt_body, std::string_view inputs_json,
                                              const RunStart& start) {
    // A run left `running` by a dead process does not hold its conversation. Should marking it
    // fail, it still does, and begin_run says the conversation is busy.
    (void)recover_interrupted();
    const RunOpening opening{conversation, mode, provider, prompt, prompt_body, inputs_json, start, owner_, lease_seconds_};
    Result<RunRecord> opened = db_.write_returning([&](Database& db) {
        SqliteSql sql(db);
        return open_run(sql, opening);
    });
    if (!opened && opened.error().code == "store_conflict") return opening_conflict(*this, opening);
    return opened;
}

Result<std::optional<KeyedRun>> SqliteRunJournal::run_for_key(std::string_view key) {
    std::optional<KeyedRun> found;
    Status s = db_.read([&](Database& db) -> Status {
        auto stmt = db.prepare("SELECT id, idempotency_print FROM runs WHERE idempotency_key = ?1 AND started_at >= ?2");
        if (!stmt) return stmt.error();
        stmt->bind(1, key).bind_real(2, now_seconds() - IdempotencyKeys::kTtlSeconds);
        if (stmt->step()) found = KeyedRun{stmt->integer(0), static_cast<uint64_t>(stmt->integer(1))};
        return stmt->run();
    });
    if (!s) return s.error();
    return found;
}

Result<std::string> SqliteRunJournal::run_inputs(int64_t run) {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return store::run_inputs(sql, run);
    });
}

Result<std::vector<int64_t>> SqliteRunJournal::write_step(int64_t run, const StepWrite& step) {
    return db_.write_returning(
        [&](Database& db) {
            SqliteSql sql(db);
            return store::write_step(sql, run, owner_, step, now_seconds() + lease_seconds_);
        },
        step.flush);
}

Status SqliteRunJournal::journal_intent(int64_t run, const ToolIntent& intent, Flush flush) {
    return db_.write(
        [&](Database& db) -> Status {
            SqliteSql sql(db);
            return write_intent(sql, run, owner_, intent);
        },
        flush);
}

Result<std::optional<JournalEntry>> SqliteRunJournal::journal(int64_t run, std::string_view call_id) {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return journal_entry(sql, run, call_id);
    });
}

Status SqliteRunJournal::end_run(int64_t run, const RunEnd& end) {
    return db_.write([&](Database& db) -> Status {
        SqliteSql sql(db);
        return write_run_end(sql, run, owner_, end);
    });
}

Result<std::optional<RunRecord>> SqliteRunJournal::run(int64_t id) {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return run_by_id(sql, kRunColumns, id);
    });
}

Result<std::vector<RunRecord>> SqliteRunJournal::runs(std::string_view conversation, int limit) {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return newest_runs(sql, kRunColumns, conversation, limit);
    });
}

Result<std::vector<RunRecord>> SqliteRunJournal::interrupted_runs(int limit, std::optional<RunOrigin> origin) {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return waiting_runs(sql, kRunColumns, limit, origin);
    });
}

Result<std::optional<RunRecord>> SqliteRunJournal::paused_run(std::string_view conversation) {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return store::paused_run(sql, kRunColumns, conversation);
    });
}

Result<std::optional<Checkpoint>> SqliteRunJournal::last_checkpoint(int64_t run) {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return store::last_checkpoint(sql, run);
    });
}

Result<std::vector<StoredMessage>> SqliteRunJournal::run_messages(int64_t run, int64_t from_id) {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return store::run_messages(sql, run, from_id);
    });
}

Result<std::vector<StoredMessage>> SqliteRunJournal::exchanges(std::string_view conversation, int64_t before_turn, int turns) {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return store::exchanges(sql, conversation, before_turn, turns);
    });
}

Result<std::vector<StoredMessage>> SqliteRunJournal::all(std::string_view conversation) {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return conversation_messages(sql, conversation);
    });
}

Result<std::vector<ConversationSummary>> SqliteRunJournal::conversations(int limit) {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return conversation_summaries(sql, limit);
    });
}

Result<std::optional<ConversationSummary>> SqliteRunJournal::conversation(std::string_view id) {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return conversation_summary(sql, id);
    });
}

Result<bool> SqliteRunJournal::rename_conversation(std::string_view conversation, std::string_view title) {
    return db_.write_returning([&](Database& db) {
        SqliteSql sql(db);
        return store::rename_conversation(sql, conversation, title);
    });
}

Result<bool> SqliteRunJournal::delete_conversation(std::string_view conversation) {
    static constexpr std::string_view kRunTables[] = {"tool_journal"};
    return db_.write_returning([&](Database& db) {
        SqliteSql sql(db);
        return store::delete_conversation(sql, conversation, kRunTables);
    });
}

Status SqliteRunJournal::claim(int64_t run) {
    if (auto refusal = unrecovered(recover(), run)) return *refusal;
    auto claimed = db_.write_returning([&](Database& db) {
        SqliteSql sql(db);
        return claim_run(sql, run, owner_, lease_seconds_);
    });
    if (!claimed) return claimed.error();
    if (*claimed) return Ok{};
    return claim_refusal(*this, run);
}

Status SqliteRunJournal::renew(int64_t run) {
    return db_.write([&](Database& db) -> Status {
        SqliteSql sql(db);
        return renew_lease(sql, run, owner_, lease_seconds_);
    });
}

Result<int> SqliteRunJournal::recover_interrupted() {
    Recovery found = recover();
    if (!found.marked) return found.marked.error();
    return found.taken;
}

Recovery SqliteRunJournal::recover() {
    // Read first on a reading connection, so a host with nothing to recover takes no write lock.
    auto dead = db_.read([&](Database& db) {
        SqliteSql sql(db);
        return abandoned_runs(sql, owner_);
    });
    if (!dead) return {{}, dead.error(), 0};
    if (dead->empty()) return {};
    auto taken = db_.write_returning([&](Database& db) -> Result<int> {
        SqliteSql sql(db);
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

Result<int64_t> SqliteRunJournal::compact(int keep_runs, int keep_days) {
    return db_.write_returning([&](Database& db) {
        SqliteSql sql(db);
        return compact_runs(sql, keep_runs, keep_days);
    });
}

Result<JournalStats> SqliteRunJournal::stats() {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return journal_stats(sql);
    });
}

}  // namespace agenthost::sqlite
