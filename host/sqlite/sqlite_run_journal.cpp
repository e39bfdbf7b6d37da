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

std::vector<StoredMessage> read_messages(Statement& s) {
    std::vector<StoredMessage> out;
    while (s.step()) out.push_back(read_message(s));
    return out;
}

}  // namespace

SqliteRunJournal::SqliteRunJournal(Database& db, int lease_seconds)
    : db_(db), lease_seconds_(lease_seconds), owner_(this_process_owner()) {}

Result<RunRecord> SqliteRunJournal::begin_run(std::string_view conversation, Mode mode, std::string_view provider,
                                              std::string_view prompt, std::string_view prompt_body, std::string_view inputs_json,
                                              const RunStart& start) {
    recover_interrupted();  // a run left `running` by a dead process does not hold its conversation
    const RunOpening opening{conversation, mode, provider, prompt, prompt_body, inputs_json, start, owner_, lease_seconds_};
    Result<RunRecord> opened = Error{};
    Status s = db_.write([&](Database& db) -> Status {
        SqliteSql sql(db);
        opened = open_run(sql, opening);
        return opened ? Status(Ok{}) : Status(opened.error());
    });
    if (!s) return s.error().code == "store_conflict" ? opening_conflict(*this, opening) : s.error();
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

std::string SqliteRunJournal::run_inputs(int64_t run) {
    return db_.read([&](Database& db) -> std::string {
        auto stmt = db.prepare("SELECT COALESCE(inputs, '') FROM runs WHERE id = ?1");
        if (!stmt) return {};
        stmt->bind(1, run);
        return stmt->step() ? stmt->text(0) : std::string();
    });
}

Result<std::vector<int64_t>> SqliteRunJournal::write_step(int64_t run, const StepWrite& step) {
    std::vector<int64_t> ids;
    Status s = db_.write(
        [&](Database& db) -> Status {
            SqliteSql sql(db);
            auto written = store::write_step(sql, run, owner_, step, now_seconds() + lease_seconds_);
            if (!written) return written.error();
            ids = std::move(*written);
            return Ok{};
        },
        step.flush);
    if (!s) return s.error();
    return ids;
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

std::optional<RunRecord> SqliteRunJournal::run(int64_t id) {
    return db_.read([&](Database& db) -> std::optional<RunRecord> {
        auto stmt = db.prepare("SELECT " + kRunColumns + " FROM runs WHERE id = ?1");
        if (!stmt) return std::nullopt;
        stmt->bind(1, id);
        if (!stmt->step()) return std::nullopt;
        return read_run(*stmt);
    });
}

std::vector<RunRecord> SqliteRunJournal::runs(std::string_view conversation, int limit) {
    return db_.read([&](Database& db) {
        std::vector<RunRecord> out;
        auto stmt =
            db.prepare("SELECT " + kRunColumns + " FROM runs WHERE ?1 = '' OR conversation = ?1 ORDER BY id DESC LIMIT ?2");
        if (!stmt) return out;
        stmt->bind(1, conversation).bind(2, static_cast<int64_t>(limit));
        while (stmt->step()) out.push_back(read_run(*stmt));
        return out;
    });
}

std::vector<RunRecord> SqliteRunJournal::interrupted_runs(int limit, std::optional<RunOrigin> origin) {
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

std::vector<StoredMessage> SqliteRunJournal::exchanges(std::string_view conversation, int64_t before_turn, int turns) {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return store::exchanges(sql, conversation, before_turn, turns);
    });
}

std::vector<StoredMessage> SqliteRunJournal::all(std::string_view conversation) {
    return db_.read([&](Database& db) {
        auto stmt = db.prepare(std::string("SELECT ") + kMessageColumns + " FROM messages WHERE conversation = ?1 ORDER BY id");
        if (!stmt) return std::vector<StoredMessage>{};
        stmt->bind(1, conversation);
        return read_messages(*stmt);
    });
}

std::vector<ConversationSummary> SqliteRunJournal::conversations(int limit) {
    return db_.read([&](Database& db) {
        std::vector<ConversationSummary> out;
        auto stmt = db.prepare(std::string(kSummarySelect) + "ORDER BY c.updated_at DESC LIMIT ?1");
        if (!stmt) return out;
        stmt->bind(1, static_cast<int64_t>(limit));
        while (stmt->step()) out.push_back(read_summary(*stmt));
        return out;
    });
}

std::optional<ConversationSummary> SqliteRunJournal::conversation(std::string_view id) {
    return db_.read([&](Database& db) -> std::optional<ConversationSummary> {
        auto stmt = db.prepare(std::string(kSummarySelect) + "WHERE c.id = ?1");
        if (!stmt) return std::nullopt;
        stmt->bind(1, id);
        if (!stmt->step()) return std::nullopt;
        return read_summary(*stmt);
    });
}

Result<bool> SqliteRunJournal::rename_conversation(std::string_view conversation, std::string_view title) {
    bool found = false;
    Status s = db_.write([&](Database& db) -> Status {
        auto stmt = db.prepare("UPDATE conversations SET title = ?2 WHERE id = ?1");  // updated_at stays: not activity
        if (!stmt) return stmt.error();
        if (auto st = stmt->bind(1, conversation).bind(2, title).run(); !st) return st;
        found = db.changes() > 0;
        return Ok{};
    });
    if (!s) return s.error();
    return found;
}

Result<bool> SqliteRunJournal::delete_conversation(std::string_view conversation) {
    static constexpr std::string_view kRunTables[] = {"tool_journal"};
    Result<bool> existed = false;
    Status s = db_.write([&](Database& db) -> Status {
        SqliteSql sql(db);
        existed = store::delete_conversation(sql, conversation, kRunTables);
        return existed ? Status(Ok{}) : Status(existed.error());
    });
    if (!s) return s.error();
    return existed;
}

Status SqliteRunJournal::claim(int64_t run) {
    if (Recovery found = recover(); !found.marked && std::count(found.dead.begin(), found.dead.end(), run))
        return Error{found.marked.error().code,
                     "the process that ran run " + std::to_string(run) +
                         " is gone, but the run could not be marked interrupted so it can be resumed: " +
                         found.marked.error().message + "; fix that (a full disk: free space) and resume it again"};
    bool claimed = false;
    Status s = db_.write([&](Database& db) -> Status {
        SqliteSql sql(db);
        auto took = claim_run(sql, run, owner_, lease_seconds_);
        if (!took) return took.error();
        claimed = *took;
        return Ok{};
    });
    if (!s) return s;
    if (claimed) return Ok{};
    return claim_refusal(*this, run);
}

Status SqliteRunJournal::renew(int64_t run) {
    return db_.write([&](Database& db) -> Status {
        SqliteSql sql(db);
        return renew_lease(sql, run, owner_, lease_seconds_);
    });
}

int SqliteRunJournal::recover_interrupted() {
    Recovery found = recover();
    return found.taken;
}

SqliteRunJournal::Recovery SqliteRunJournal::recover() {
    // Read first on a reading connection, so a host with nothing to recover takes no write lock.
    auto dead = db_.read([&](Database& db) {
        SqliteSql sql(db);
        return abandoned_runs(sql, owner_);
    });
    if (!dead || dead->empty()) return {};
    int taken = 0;
    Status s = db_.write([&](Database& db) -> Status {
        SqliteSql sql(db);
        taken = 0;  // a write may be run again after its group failed
        for (const AbandonedRun& run : *dead) {
            auto marked = mark_interrupted(sql, run);
            if (!marked) return marked.error();
            taken += *marked ? 1 : 0;
        }
        return Ok{};
    });
    std::vector<int64_t> ids;
    ids.reserve(dead->size());
    for (const AbandonedRun& run : *dead) ids.push_back(run.id);
    return {std::move(ids), s, s ? taken : 0};
}

Result<int64_t> SqliteRunJournal::compact(int keep_runs, int keep_days) {
    Result<int64_t> changed = int64_t{0};
    Status s = db_.write([&](Database& db) -> Status {
        SqliteSql sql(db);
        changed = compact_runs(sql, keep_runs, keep_days);
        return changed ? Status(Ok{}) : Status(changed.error());
    });
    if (!s) return s.error();
    return changed;
}

JournalStats SqliteRunJournal::stats() {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return journal_stats(sql);
    });
}

}  // namespace agenthost::sqlite
