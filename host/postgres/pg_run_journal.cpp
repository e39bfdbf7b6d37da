#include "postgres/pg_run_journal.hpp"

#include "store/idempotency_keys.hpp"
#include "store/run_owner.hpp"
#include "store/run_rows.hpp"

namespace agenthost::postgres {
using store::MessageKind;
using store::NewMessage;
using store::RunRecord;
using store::StoredMessage;

namespace {

const std::string kRunColumns = store::run_columns("(SELECT COUNT(*) FROM messages m WHERE m.run = runs.id)");

Result<int64_t> insert_message(Connection& db, std::string_view conversation, int64_t turn, int64_t run, const NewMessage& m) {
    auto id = db.exec(
        "INSERT INTO messages (conversation, turn, run, kind, body, result) VALUES ($1, $2::bigint, $3::bigint, $4, $5, $6)"
        " RETURNING id",
        {param(conversation), param(turn), param(run), param(store::message_kind_name(m.kind)), param(m.body),
         m.result.empty() ? Param() : param(m.result)});
    if (!id) return id.error();
    return id->integer(0, 0);
}

// A write that may wait for a later one to reach the disk (store::Flush::with_next) does not wait
// for its own WAL flush: PostgreSQL flushes the log in order, so the next flushed commit carries it.
Status defer_flush(Connection& tx, store::Flush flush) {
    if (flush == store::Flush::now) return Ok{};
    auto set = tx.exec("SET LOCAL synchronous_commit TO OFF");
    if (!set) return set.error();
    return Ok{};
}

// A call about to run, `started` in the tool journal (a retried start keeps its row, a finished one stays done).
Status insert_intent(Connection& db, int64_t run, const store::ToolIntent& intent) {
    auto done = db.exec(
        "INSERT INTO tool_journal (run, call_id, tool, arguments, status, started_at) VALUES ($1::bigint, $2, $3, $4,"
        " 'started', $5::double precision) ON CONFLICT (run, call_id) DO UPDATE SET started_at = excluded.started_at"
        " WHERE tool_journal.status = 'started'",
        {param(run), param(intent.call_id), param(intent.tool), param(intent.arguments_json), param(store::now_seconds())});
    if (!done) return done.error();
    return Ok{};
}

// What a write leaves in the run's row: its counters, its lease, its inputs (when given), and (when `state_json` is not
// empty) its checkpoint, replacing the one before (resume reads only the latest) and covering the
// messages up to the last of `appended` (or the run's newest, when it appended none).
Status update_run(Connection& db, int64_t run, const std::vector<int64_t>& appended, const store::RunCounters& c,
                  std::optional<Mode> mode, std::optional<double> lease_until, const std::string& state_json,
                  const std::string& inputs_json) {
    auto done = db.exec(
        "UPDATE runs SET iterations = $2::bigint, tool_calls = $3::bigint, input_tokens = $4::bigint,"
        " output_tokens = $5::bigint, updated_at = $6::double precision, lease_until = $7::double precision,"
        " checkpoint = COALESCE($8::text, checkpoint), checkpoint_step = checkpoint_step + CASE WHEN $8::text IS NULL THEN 0"
        " ELSE 1 END, checkpoint_message = CASE WHEN $8::text IS NULL THEN checkpoint_message ELSE COALESCE($9::bigint,"
        " (SELECT COALESCE(MAX(id), 0) FROM messages WHERE run = $1::bigint)) END, inputs = COALESCE($10::text, inputs),"
        " mode = COALESCE($11::text, mode) WHERE id = $1::bigint",
        {param(run), param(int64_t{c.iterations}), param(int64_t{c.tool_calls}), param(c.input_tokens), param(c.output_tokens),
         param(store::now_seconds()), lease_until ? param(*lease_until) : Param(),
         state_json.empty() ? Param() : param(state_json), appended.empty() ? Param() : param(appended.back()),
         inputs_json.empty() ? Param() : param(inputs_json), mode ? param(mode_name(*mode)) : Param()});
    if (!done) return done.error();
    return Ok{};
}

// The conversation and turn of a run this process may write to (store::may_write), locked for the
// transaction.
Result<std::pair<std::string, int64_t>> writable_run(Connection& db, int64_t run, const std::string& owner) {
    auto row = db.exec("SELECT conversation, turn, COALESCE(lease_owner, ''), status FROM runs WHERE id = $1::bigint FOR UPDATE",
                       {param(run)});
    if (!row) return row.error();
    const bool found = !row->empty();
    if (Status st = store::may_write(run, found, found ? row->text(0, 2) : "", found ? row->text(0, 3) : "", owner); !st)
        return st.error();
    return std::make_pair(row->text(0, 0), row->integer(0, 1));
}

}  // namespace

PgRunJournal::PgRunJournal(Session& session, int lease_seconds, std::string owner)
    : session_(session), lease_seconds_(lease_seconds), owner_(std::move(owner)) {}

Result<RunRecord> PgRunJournal::begin_run(std::string_view conversation, Mode mode, std::string_view provider,
                                          std::string_view prompt, std::string_view prompt_body, std::string_view inputs_json,
                                          const store::RunStart& start) {
    const store::RunKey& key = start.key;
    recover_interrupted();  // a run left `running` by a dead process does not hold its conversation
    RunRecord r;
    bool violated = false;
    Status s = session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            double t = store::now_seconds();
            // The conversation's row is locked for the transaction: turns are numbered one at a time.
            auto conv = tx.exec(
                "INSERT INTO conversations (id, created_at, updated_at) VALUES ($1, $2::double precision, $2::double precision)"
                " ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at",
                {param(conversation), param(t)});
            if (!conv) return conv.error();
            // One run per conversation at a time, across hosts: checked here under the row lock for
            // a clear message, and guaranteed by the unique index one_running_run.
            auto busy = tx.exec("SELECT id FROM runs WHERE conversation = $1 AND status = 'running'", {param(conversation)});
            if (!busy) return busy.error();
            if (!busy->empty()) return store::conversation_busy(conversation, busy->integer(0, 0));
            auto turn = tx.exec("SELECT COALESCE(MAX(turn), 0) + 1 FROM messages WHERE conversation = $1", {param(conversation)});
            if (!turn) return turn.error();
            r.turn = turn->integer(0, 0);
            if (!key.key.empty()) {
                // A key older than its time to live is free again; a younger one names its run.
                auto freed = tx.exec(
                    "UPDATE runs SET idempotency_key = NULL WHERE idempotency_key = $1 AND started_at <"
                    " $2::double precision",
                    {param(key.key), param(t - store::IdempotencyKeys::kTtlSeconds)});
                if (!freed) return freed.error();
                auto held = tx.exec("SELECT id FROM runs WHERE idempotency_key = $1", {param(key.key)});
                if (!held) return held.error();
                if (!held->empty()) return store::idempotency_key_used(held->integer(0, 0));
            }
            auto run = tx.exec(
                "INSERT INTO runs (conversation, turn, status, mode, provider, prompt, started_at, updated_at, lease_owner,"
                " lease_until, inputs, idempotency_key, idempotency_print, origin) VALUES ($1, $2::bigint, 'running', $3, $4,"
                " $5, $6::double precision, $6::double precision, $7, $8::double precision, $9::text, $10::text, $11::bigint,"
                " $12) RETURNING id",
                {param(conversation), param(r.turn), param(mode_name(mode)), param(provider), param(prompt), param(t),
                 param(owner_), param(t + lease_seconds_), inputs_json.empty() ? Param() : param(inputs_json),
                 key.key.empty() ? Param() : param(key.key), key.key.empty() ? Param() : param(static_cast<int64_t>(key.print)),
                 param(run_origin_name(start.origin))});
            if (!run && tx.sqlstate() == kUniqueViolation) violated = true;
            if (!run) return violated ? store::conversation_busy(conversation, 0) : run.error();
            r.id = run->integer(0, 0);
            auto message = insert_message(tx, conversation, r.turn, r.id, {MessageKind::prompt, std::string(prompt_body)});
            if (!message) return message.error();
            return Ok{};
        });
    });
    if (!s) {
        // Two hosts starting at once: the unique indexes refused the second. Which one, read again.
        if (violated && !key.key.empty())
            if (auto found = run_for_key(key.key); found && *found) return store::idempotency_key_used((*found)->run);
        return s.error();
    }
    store::fill_begun_run(r, conversation, mode, provider, start.origin);
    return r;
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
            auto owner = writable_run(tx, run, owner_);
            if (!owner) return owner.error();
            for (const auto& m : step.messages) {
                auto id = insert_message(tx, owner->first, owner->second, run, m);
                if (!id) return id.error();
                ids.push_back(*id);
            }
            if (!step.journal_call_id.empty()) {
                auto done = tx.exec(
                    "UPDATE tool_journal SET status = 'done', result = $3, error_code = $4, finished_at = $5::double precision"
                    " WHERE run = $1::bigint AND call_id = $2",
                    {param(run), param(step.journal_call_id), param(step.journal_result()), param(step.journal_error_code),
                     param(store::now_seconds())});
                if (!done) return done.error();
            }
            if (step.intent)
                if (auto st = insert_intent(tx, run, *step.intent); !st) return st;
            return update_run(tx, run, ids, step.counters, step.mode, store::now_seconds() + lease_seconds_, step.state_json,
                              step.inputs_json);
        });
    });
    if (!s) return s.error();
    return ids;
}

Status PgRunJournal::journal_intent(int64_t run, const store::ToolIntent& intent, store::Flush flush) {
    return session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            if (auto st = defer_flush(tx, flush); !st) return st;
            // A host that lost the run records no intent, so it never starts the call.
            if (auto owner = writable_run(tx, run, owner_); !owner) return owner.error();
            return insert_intent(tx, run, intent);
        });
    });
}

std::optional<store::JournalEntry> PgRunJournal::journal(int64_t run, std::string_view call_id) {
    return session_.with([&](Connection& db) -> std::optional<store::JournalEntry> {
        auto row = db.exec("SELECT status, COALESCE(result, '') FROM tool_journal WHERE run = $1::bigint AND call_id = $2",
                           {param(run), param(call_id)});
        if (!row || row->empty()) return std::nullopt;
        return store::JournalEntry{
            choice_from<store::CallStatus>(store::kCallStatuses, row->text(0, 0)).value_or(store::CallStatus::started),
            row->text(0, 1)};
    });
}

Status PgRunJournal::end_run(int64_t run, const store::RunEnd& end) {
    return session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            auto owner = writable_run(tx, run, owner_);
            if (!owner) return owner.error();
            std::vector<int64_t> ids;
            for (const auto& m : end.messages) {
                auto id = insert_message(tx, owner->first, owner->second, run, m);
                if (!id) return id.error();
                ids.push_back(*id);
            }
            if (auto st = update_run(tx, run, ids, end.counters, end.mode, std::nullopt, end.state_json, end.inputs_json); !st)
                return st;
            const StopInfo& info = stop_info(end.stop_reason);
            auto done = tx.exec(
                "UPDATE runs SET status = $2, stop_reason = $3, error_code = NULLIF($4, ''), error = NULLIF($5, ''),"
                " answer = $6, ended_at = CASE WHEN $2 = 'paused' THEN NULL ELSE $7::double precision END,"
                " lease_owner = NULL, lease_until = NULL WHERE id = $1::bigint",
                {param(run), param(run_status_name(info.status)), param(info.name), param(info.error_code), param(end.error),
                 param(end.answer), param(store::now_seconds())});
            if (!done) return done.error();
            return Ok{};
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
    const std::string where =
        std::string("WHERE (status = 'interrupted' OR (status = 'failed' AND stop_reason = 'store_failure'))") +
        (origin ? " AND origin = $2" : "") +
        " AND NOT EXISTS (SELECT 1 FROM runs later WHERE later.conversation = runs.conversation AND later.id > runs.id)"
        " ORDER BY updated_at, id LIMIT $1::bigint";
    if (origin) return select_runs(where, {param(int64_t{limit}), param(run_origin_name(*origin))});
    return select_runs(where, {param(int64_t{limit})});
}

std::optional<RunRecord> PgRunJournal::paused_run(std::string_view conversation) {
    auto found = select_runs("WHERE conversation = $1 AND status = 'paused' ORDER BY id DESC LIMIT 1", {param(conversation)});
    return found.empty() ? std::nullopt : std::optional<RunRecord>(found.front());
}

std::optional<store::Checkpoint> PgRunJournal::last_checkpoint(int64_t run) {
    return session_.with([&](Connection& db) -> std::optional<store::Checkpoint> {
        auto row = db.exec(
            "SELECT checkpoint_step, checkpoint_message, checkpoint, COALESCE(inputs, '') FROM runs WHERE id = $1::bigint AND"
            " checkpoint IS NOT NULL",
            {param(run)});
        if (!row || row->empty()) return std::nullopt;
        return store::Checkpoint{row->integer(0, 0), row->integer(0, 1), row->text(0, 2), row->text(0, 3)};
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

std::vector<StoredMessage> PgRunJournal::run_messages(int64_t run, int64_t from_id) {
    return select_messages("WHERE run = $1::bigint AND id >= $2::bigint ORDER BY id", {param(run), param(from_id)});
}

std::vector<StoredMessage> PgRunJournal::exchanges(std::string_view conversation, int64_t before_turn, int turns) {
    return select_messages(
        "WHERE conversation = $1 AND kind IN ('prompt', 'answer') AND turn < $2::bigint AND turn >= $2::bigint - $3::bigint"
        " ORDER BY turn, id",
        {param(conversation), param(before_turn), param(int64_t{turns})});
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
    bool existed = false;
    Status s = session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            auto found = tx.exec("SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE", {param(conversation)});
            if (!found) return found.error();
            existed = !found->empty();
            for (const char* sql : {"DELETE FROM tool_journal WHERE run IN (SELECT id FROM runs WHERE conversation = $1)",
                                    "DELETE FROM runs WHERE conversation = $1", "DELETE FROM messages WHERE conversation = $1",
                                    "DELETE FROM memory WHERE conversation = $1", "DELETE FROM events WHERE conversation = $1",
                                    "DELETE FROM conversations WHERE id = $1"})
                if (auto done = tx.exec(sql, {param(conversation)}); !done) return done.error();
            return Ok{};
        });
    });
    if (!s) return s.error();
    return existed;
}

Status PgRunJournal::claim(int64_t run) {
    recover_interrupted();
    // A claimed run shows no result until it has a new one.
    static const std::string sql =
        "UPDATE runs SET status = 'running', lease_owner = $2, lease_until = $3::double precision, updated_at = $4::double "
        "precision,"
        " ended_at = NULL, stop_reason = NULL, error_code = NULL, error = NULL WHERE id = $1::bigint AND " +
        store::claimable_sql() + " RETURNING id";
    bool claimed = false;
    Status s = session_.with([&](Connection& db) -> Status {
        double t = store::now_seconds();
        auto rows = db.exec(sql, {param(run), param(owner_), param(t + lease_seconds_), param(t)});
        if (!rows) {
            // Another run of its conversation is running: the unique index refuses a second.
            if (db.sqlstate() == kUniqueViolation) {
                auto owner = db.exec("SELECT conversation FROM runs WHERE id = $1::bigint", {param(run)});
                return store::conversation_busy(owner && !owner->empty() ? owner->text(0, 0) : "", 0);
            }
            return rows.error();
        }
        claimed = !rows->empty();
        return Ok{};
    });
    if (!s) return s;
    if (claimed) return Ok{};
    auto r = this->run(run);
    if (!r) return Error{"store_not_found", "there is no run " + std::to_string(run) + " (agenthost runs lists them)"};
    return Error{"run_not_resumable", store::not_resumable_reason(*r)};
}

Status PgRunJournal::renew(int64_t run) {
    return session_.with([&](Connection& db) -> Status {
        auto done = db.exec(
            "UPDATE runs SET lease_until = $3::double precision WHERE id = $1::bigint AND lease_owner = $2 AND status = "
            "'running'",
            {param(run), param(owner_), param(store::now_seconds() + lease_seconds_)});
        if (!done) return done.error();
        return Ok{};
    });
}

int PgRunJournal::recover_interrupted() {
    return session_.with([&](Connection& db) {
        auto rows = db.exec("SELECT id, COALESCE(lease_owner, ''), COALESCE(lease_until, 0) FROM runs WHERE status = 'running'");
        if (!rows) return 0;
        double t = store::now_seconds();
        int recovered = 0;
        for (int i = 0; i < rows->size(); ++i) {
            std::string owner = rows->text(i, 1);
            // Ours with a lapsed lease: its heartbeat could not reach the database (an outage), or
            // the run ended while its end could not be written. Recovered, so a host takes it over;
            // the turn still holding it, if any, has its next write refused (lease_lost).
            const store::Abandonment why = store::abandonment(owner, rows->real(i, 2) < t, owner_);
            if (why == store::Abandonment::none) continue;
            // Only if it is still as seen: another host may have recovered or renewed it meanwhile.
            auto done = db.exec(
                "UPDATE runs SET status = 'interrupted', stop_reason = 'interrupted', error_code = 'INTERRUPTED',"
                " error = $4, lease_owner = NULL, recoveries = recoveries + 1,"
                " lease_until = NULL WHERE id = $1::bigint AND status = 'running' AND lease_owner IS NOT DISTINCT FROM $2::text"
                " AND COALESCE(lease_until, 0) <= $3::double precision",
                {param(rows->integer(i, 0)), owner.empty() ? Param() : param(owner),
                 param(why == store::Abandonment::holder_gone ? 1e300 : t), param(store::abandonment_text(why))});
            if (done) recovered += static_cast<int>(done->affected());
        }
        return recovered;
    });
}

Result<int64_t> PgRunJournal::compact(int keep_runs, int keep_days) {
    int64_t deleted = 0;
    Status s = session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            const std::string old_runs =
                "SELECT id FROM (SELECT id, ended_at, ROW_NUMBER() OVER (PARTITION BY conversation ORDER BY id DESC) AS rank"
                " FROM runs WHERE status IN ('completed', 'failed', 'cancelled')) AS ranked WHERE rank > $1::bigint OR ended_at "
                "< $2::double precision";
            const std::string statements[] = {
                "UPDATE runs SET checkpoint = NULL, inputs = NULL WHERE (checkpoint IS NOT NULL OR inputs IS NOT NULL) AND id IN "
                "(" +
                    old_runs + ")",
                "DELETE FROM tool_journal WHERE run IN (" + old_runs + ")"};
            for (const std::string& sql : statements) {
                auto done = tx.exec(sql, {param(int64_t{keep_runs}), param(store::now_seconds() - keep_days * 86400.0)});
                if (!done) return done.error();
                deleted += done->affected();
            }
            return Ok{};
        });
    });
    if (!s) return s.error();
    return deleted;
}

store::JournalStats PgRunJournal::stats() {
    return session_.with([&](Connection& db) {
        store::JournalStats out;
        if (auto rows = db.exec("SELECT status, COUNT(*) FROM runs GROUP BY status ORDER BY status"))
            for (int i = 0; i < rows->size(); ++i) out.runs_by_status.emplace_back(rows->text(i, 0), rows->integer(i, 1));
        if (auto rows = db.exec(
                "SELECT COALESCE(SUM(iterations), 0), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0) FROM runs");
            rows && !rows->empty()) {
            out.iterations = rows->integer(0, 0);
            out.input_tokens = rows->integer(0, 1);
            out.output_tokens = rows->integer(0, 2);
        }
        if (auto rows =
                db.exec("SELECT tool, CASE WHEN status = 'started' THEN 'unfinished' WHEN error_code IS NULL OR error_code = ''"
                        " THEN 'ok' ELSE 'error' END AS outcome, COUNT(*) FROM tool_journal GROUP BY tool, outcome ORDER BY "
                        "tool, outcome"))
            for (int i = 0; i < rows->size(); ++i)
                out.tool_calls.push_back({rows->text(i, 0), rows->text(i, 1), rows->integer(i, 2)});
        return out;
    });
}

}  // namespace agenthost::postgres
