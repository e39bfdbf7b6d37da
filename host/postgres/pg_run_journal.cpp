#include "postgres/pg_run_journal.hpp"

#include "postgres/pg_sql.hpp"
#include "store/idempotency_keys.hpp"
#include "store/journal_sql.hpp"
#include "store/run_owner.hpp"
#include "store/run_rows.hpp"

namespace agenthost::postgres {
using store::RunRecord;
using store::StoredMessage;

namespace {

const std::string kRunColumns = store::run_columns("(SELECT COUNT(*) FROM messages m WHERE m.run = runs.id)");

}  // namespace

PgRunJournal::PgRunJournal(Session& session, int lease_seconds, std::string owner)
    : session_(session), lease_seconds_(lease_seconds), owner_(std::move(owner)) {}

Result<RunRecord> PgRunJournal::begin_run(std::string_view conversation, Mode mode, std::string_view provider,
                                          std::string_view prompt, std::string_view prompt_body, std::string_view inputs_json,
                                          const store::RunStart& start) {
    recover_interrupted();  // a run left `running` by a dead process does not hold its conversation
    const store::RunOpening opening{conversation, mode,  provider, prompt,        prompt_body,
                                    inputs_json,  start, owner_,   lease_seconds_};
    Result<RunRecord> opened = Error{};
    Status s = session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            PgSql sql(tx);
            opened = store::open_run(sql, opening);
            return opened ? Status(Ok{}) : Status(opened.error());
        });
    });
    if (!s) return s.error().code == "store_conflict" ? store::opening_conflict(*this, opening) : s.error();
    return opened;
}

Result<std::optional<store::KeyedRun>> PgRunJournal::run_for_key(std::string_view key) {
    std::optional<store::KeyedRun> found;
    Status s = session_.with([&](Connection& db) -> Status {
        auto row = db.exec(
            "SELECT id, COALESCE(idempotency_print, 0) FROM runs WHERE idempotency_key = $1 AND started_at >="
            " $2::double precision",
            {param(key), param(store::now_seconds() - store::IdempotencyKeys::kTtlSeconds)});
        if (!row) return row.error();
        if (!row->empty()) found = store::KeyedRun{row->integer(0, 0), static_cast<uint64_t>(row->integer(0, 1))};
        return Ok{};
    });
    if (!s) return s.error();
    return found;
}

std::string PgRunJournal::run_inputs(int64_t run) {
    return session_.with([&](Connection& db) -> std::string {
        auto row = db.exec("SELECT COALESCE(inputs, '') FROM runs WHERE id = $1::bigint", {param(run)});
        if (!row || row->empty()) return {};
        return row->text(0, 0);
    });
}

Result<std::vector<int64_t>> PgRunJournal::write_step(int64_t run, const store::StepWrite& step) {
    std::vector<int64_t> ids;
    Status s = session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            if (auto st = defer_flush(tx, step.flush); !st) return st;
            PgSql sql(tx);
            auto written = store::write_step(sql, run, owner_, step, store::now_seconds() + lease_seconds_);
            if (!written) return written.error();
            ids = std::move(*written);
            return Ok{};
        });
    });
    if (!s) return s.error();
    return ids;
}

Status PgRunJournal::journal_intent(int64_t run, const store::ToolIntent& intent, store::Flush flush) {
    return session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            if (auto st = defer_flush(tx, flush); !st) return st;
            PgSql sql(tx);
            return store::write_intent(sql, run, owner_, intent);
        });
    });
}

Result<std::optional<store::JournalEntry>> PgRunJournal::journal(int64_t run, std::string_view call_id) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::journal_entry(sql, run, call_id);
    });
}

Status PgRunJournal::end_run(int64_t run, const store::RunEnd& end) {
    return session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            PgSql sql(tx);
            return store::write_run_end(sql, run, owner_, end);
        });
    });
}

std::vector<RunRecord> PgRunJournal::select_runs(const std::string& where, const std::vector<Param>& params) {
    return session_.with([&](Connection& db) {
        std::vector<RunRecord> out;
        auto rows = db.exec("SELECT " + kRunColumns + " FROM runs " + where, params);
        if (rows)
            for (int i = 0; i < rows->size(); ++i) out.push_back(store::read_run(rows->row(i)));
        return out;
    });
}

std::optional<RunRecord> PgRunJournal::run(int64_t id) {
    auto found = select_runs("WHERE id = $1::bigint", {param(id)});
    return found.empty() ? std::nullopt : std::optional<RunRecord>(found.front());
}

std::vector<RunRecord> PgRunJournal::runs(std::string_view conversation, int limit) {
    return select_runs("WHERE $1 = '' OR conversation = $1 ORDER BY id DESC LIMIT $2::bigint",
                       {param(conversation), param(int64_t{limit})});
}

std::vector<RunRecord> PgRunJournal::interrupted_runs(int limit, std::optional<RunOrigin> origin) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::waiting_runs(sql, kRunColumns, limit, origin);
    });
}

Result<std::optional<RunRecord>> PgRunJournal::paused_run(std::string_view conversation) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::paused_run(sql, kRunColumns, conversation);
    });
}

Result<std::optional<store::Checkpoint>> PgRunJournal::last_checkpoint(int64_t run) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::last_checkpoint(sql, run);
    });
}

std::vector<StoredMessage> PgRunJournal::select_messages(const std::string& where, const std::vector<Param>& params) {
    return session_.with([&](Connection& db) {
        std::vector<StoredMessage> out;
        auto rows = db.exec(std::string("SELECT ") + store::kMessageColumns + " FROM messages " + where, params);
        if (rows)
            for (int i = 0; i < rows->size(); ++i) out.push_back(store::read_message(rows->row(i)));
        return out;
    });
}

Result<std::vector<StoredMessage>> PgRunJournal::run_messages(int64_t run, int64_t from_id) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::run_messages(sql, run, from_id);
    });
}

std::vector<StoredMessage> PgRunJournal::exchanges(std::string_view conversation, int64_t before_turn, int turns) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::exchanges(sql, conversation, before_turn, turns);
    });
}

std::vector<StoredMessage> PgRunJournal::all(std::string_view conversation) {
    return select_messages("WHERE conversation = $1 ORDER BY id", {param(conversation)});
}

std::vector<store::ConversationSummary> PgRunJournal::conversations(int limit) {
    return session_.with([&](Connection& db) {
        std::vector<store::ConversationSummary> out;
        auto rows =
            db.exec(std::string(store::kSummarySelect) + "ORDER BY c.updated_at DESC LIMIT $1::bigint", {param(int64_t{limit})});
        if (rows)
            for (int i = 0; i < rows->size(); ++i) out.push_back(store::read_summary(rows->row(i)));
        return out;
    });
}

std::optional<store::ConversationSummary> PgRunJournal::conversation(std::string_view id) {
    return session_.with([&](Connection& db) -> std::optional<store::ConversationSummary> {
        auto rows = db.exec(std::string(store::kSummarySelect) + "WHERE c.id = $1", {param(id)});
        if (!rows || rows->empty()) return std::nullopt;
        return store::read_summary(rows->row(0));
    });
}

Result<bool> PgRunJournal::rename_conversation(std::string_view conversation, std::string_view title) {
    return session_.with([&](Connection& db) -> Result<bool> {
        // updated_at stays: renaming is not activity.
        auto done = db.exec("UPDATE conversations SET title = $2 WHERE id = $1", {param(conversation), param(title)});
        if (!done) return done.error();
        return done->affected() > 0;
    });
}

Result<bool> PgRunJournal::delete_conversation(std::string_view conversation) {
    // Every row that names one of its runs goes with them: the tool journal, the events hosts
    // stream, cancel requests and the Idempotency-Keys that would name a run no more.
    static constexpr std::string_view kRunTables[] = {"tool_journal", "run_events", "run_cancels", "idempotency_keys"};
    Result<bool> existed = false;
    Status s = session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            PgSql sql(tx);
            existed = store::delete_conversation(sql, conversation, kRunTables);
            return existed ? Status(Ok{}) : Status(existed.error());
        });
    });
    if (!s) return s.error();
    return existed;
}

Status PgRunJournal::claim(int64_t run) {
    recover_interrupted();
    Result<bool> claimed = false;
    Status s = session_.with([&](Connection& db) -> Status {
        PgSql sql(db);
        claimed = store::claim_run(sql, run, owner_, lease_seconds_);
        if (claimed || claimed.error().code != "store_conflict") return Ok{};
        // Another run of its conversation is running: the unique index one_running_run refuses a second.
        auto owner = db.exec("SELECT conversation FROM runs WHERE id = $1::bigint", {param(run)});
        return store::conversation_busy(owner && !owner->empty() ? owner->text(0, 0) : "", 0);
    });
    if (!s) return s;
    if (!claimed) return claimed.error();
    if (*claimed) return Ok{};
    return store::claim_refusal(*this, run);
}

Status PgRunJournal::renew(int64_t run) {
    return session_.with([&](Connection& db) -> Status {
        PgSql sql(db);
        return store::renew_lease(sql, run, owner_, lease_seconds_);
    });
}

int PgRunJournal::recover_interrupted() {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        auto dead = store::abandoned_runs(sql, owner_);
        int recovered = 0;
        if (dead)
            for (const store::AbandonedRun& run : *dead)
                // Recovered, so a host takes it over; the turn still holding it, if any, has its
                // next write refused (lease_lost).
                if (auto marked = store::mark_interrupted(sql, run); marked && *marked) ++recovered;
        return recovered;
    });
}

Result<int64_t> PgRunJournal::compact(int keep_runs, int keep_days) {
    Result<int64_t> changed = int64_t{0};
    Status s = session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            PgSql sql(tx);
            changed = store::compact_runs(sql, keep_runs, keep_days);
            return changed ? Status(Ok{}) : Status(changed.error());
        });
    });
    if (!s) return s.error();
    return changed;
}

store::JournalStats PgRunJournal::stats() {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return store::journal_stats(sql);
    });
}

}  // namespace agenthost::postgres
