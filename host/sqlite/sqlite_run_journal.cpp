#include "sqlite/sqlite_run_journal.hpp"

#include "store/idempotency_keys.hpp"
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

Result<int64_t> insert_message(Database& db, std::string_view conversation, int64_t turn, int64_t run, const NewMessage& m) {
    auto stmt = db.prepare(
        "INSERT INTO messages (conversation, turn, run, kind, body, result) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id");
    if (!stmt) return stmt.error();
    stmt->bind(1, conversation).bind(2, turn).bind(3, run).bind(4, message_kind_name(m.kind)).bind_borrowed(5, m.body);
    if (m.result.empty())
        stmt->bind_null(6);
    else
        stmt->bind_borrowed(6, m.result);
    if (!stmt->step()) return Error{"store_sql", "could not append a message: " + db.last_error()};
    int64_t id = stmt->integer(0);
    if (auto s = stmt->run(); !s) return s.error();
    return id;
}

// A run's place in the transcript: its conversation and turn (a turn has one run, so these find its messages).
struct RunPlace {
    std::string conversation;
    int64_t turn = 0;
};

// The place of a run this process may write to (store::may_write).
Result<RunPlace> writable_run(Database& db, int64_t run, const std::string& owner) {
    auto row = db.prepare("SELECT conversation, turn, COALESCE(lease_owner, ''), status FROM runs WHERE id = ?1");
    if (!row) return row.error();
    row->bind(1, run);
    const bool found = row->step();
    if (Status st = may_write(run, found, found ? row->text(2) : "", found ? row->text(3) : "", owner); !st) return st.error();
    return RunPlace{row->text(0), row->integer(1)};
}

// Appends `messages` to the run's turn; returns their ids, in order.
Result<std::vector<int64_t>> append_messages(Database& db, int64_t run, const RunPlace& place,
                                             const std::vector<NewMessage>& messages) {
    std::vector<int64_t> ids;
    for (const auto& m : messages) {
        auto id = insert_message(db, place.conversation, place.turn, run, m);
        if (!id) return id.error();
        ids.push_back(*id);
    }
    return ids;
}

// The newest message of the run's turn: what a checkpoint written without new messages covers.
Result<int64_t> last_message_of(Database& db, const RunPlace& place) {
    auto stmt = db.prepare("SELECT COALESCE(MAX(id), 0) FROM messages WHERE conversation = ?1 AND turn = ?2");
    if (!stmt) return stmt.error();
    stmt->bind(1, place.conversation).bind(2, place.turn);
    return stmt->step() ? stmt->integer(0) : 0;
}

// A call about to run, `started` in the tool journal (a retried start keeps its row, a finished one stays done).
Status insert_intent(Database& db, int64_t run, const ToolIntent& intent) {
    auto stmt = db.prepare(
        "INSERT INTO tool_journal (run, call_id, tool, arguments, status, started_at) VALUES (?1, ?2, ?3, ?4, 'started', ?5)"
        " ON CONFLICT (run, call_id) DO UPDATE SET started_at = excluded.started_at WHERE status = 'started'");
    if (!stmt) return stmt.error();
    return stmt->bind(1, run)
        .bind(2, intent.call_id)
        .bind(3, intent.tool)
        .bind(4, intent.arguments_json)
        .bind_real(5, now_seconds())
        .run();
}

// What a write leaves in the run's row: its counters, its lease, its inputs (when given), and
// (when `state_json` is not empty) its checkpoint, replacing the one before (resume reads only the
// latest) and covering the messages up to the last of `appended` (or the turn's newest, when it
// appended none). One UPDATE of one row: the checkpoint costs no page of its own.
Status update_run(Database& db, int64_t run, const RunPlace& place, const std::vector<int64_t>& appended, const RunCounters& c,
                  std::optional<Mode> mode, double lease_until, const std::string& state_json, const std::string& inputs_json) {
    int64_t last_message = 0;
    if (!state_json.empty()) {
        auto last = appended.empty() ? last_message_of(db, place) : Result<int64_t>(appended.back());
        if (!last) return last.error();
        last_message = *last;
    }
    auto stmt = db.prepare(
        "UPDATE runs SET iterations = ?2, tool_calls = ?3, input_tokens = ?4, output_tokens = ?5, updated_at = ?6,"
        " lease_until = ?7, checkpoint = COALESCE(?8, checkpoint), checkpoint_step = checkpoint_step + (?8 IS NOT NULL),"
        " checkpoint_message = COALESCE(?9, checkpoint_message), inputs = COALESCE(?10, inputs), mode = COALESCE(?11, mode)"
        " WHERE id = ?1");
    if (!stmt) return stmt.error();
    stmt->bind(1, run)
        .bind(2, static_cast<int64_t>(c.iterations))
        .bind(3, static_cast<int64_t>(c.tool_calls))
        .bind(4, c.input_tokens)
        .bind(5, c.output_tokens)
        .bind_real(6, now_seconds())
        .bind_real(7, lease_until);
    if (state_json.empty())
        stmt->bind_null(8).bind_null(9);
    else
        stmt->bind(8, state_json).bind(9, last_message);
    if (inputs_json.empty())
        stmt->bind_null(10);
    else
        stmt->bind(10, inputs_json);
    if (mode)
        stmt->bind(11, mode_name(*mode));
    else
        stmt->bind_null(11);
    return stmt->run();
}

}  // namespace

SqliteRunJournal::SqliteRunJournal(Database& db, int lease_seconds)
    : db_(db), lease_seconds_(lease_seconds), owner_(this_process_owner()) {}

Result<RunRecord> SqliteRunJournal::begin_run(std::string_view conversation, Mode mode, std::string_view provider,
                                              std::string_view prompt, std::string_view prompt_body, std::string_view inputs_json,
                                              const RunStart& start) {
    const RunKey& key = start.key;
    RunRecord r;
    recover_interrupted();  // a run left `running` by a dead process does not hold its conversation
    Status s = db_.write([&](Database& db) -> Status {
        double t = now_seconds();
        // One run per conversation at a time, across processes (the write transaction is immediate).
        auto busy = db.prepare("SELECT id FROM runs WHERE conversation = ?1 AND status = 'running' LIMIT 1");
        if (!busy) return busy.error();
        busy->bind(1, conversation);
        if (busy->step()) return conversation_busy(conversation, busy->integer(0));
        auto conv = db.prepare(
            "INSERT INTO conversations (id, created_at, updated_at) VALUES (?1, ?2, ?2)"
            " ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at");
        if (!conv) return conv.error();
        if (auto st = conv->bind(1, conversation).bind_real(2, t).run(); !st) return st;
        auto turn = db.prepare("SELECT COALESCE(MAX(turn), 0) + 1 FROM messages WHERE conversation = ?1");
        if (!turn) return turn.error();
        turn->bind(1, conversation);
        r.turn = turn->step() ? turn->integer(0) : 1;
        if (!key.key.empty()) {
            // A key older than its time to live is free again; a younger one names its run.
            auto taken =
                db.prepare("UPDATE runs SET idempotency_key = NULL WHERE idempotency_key = ?1 AND started_at < ?2 RETURNING id");
            if (!taken) return taken.error();
            taken->bind(1, key.key).bind_real(2, t - IdempotencyKeys::kTtlSeconds);
            if (auto st = taken->run(); !st) return st;
            auto held = db.prepare("SELECT id FROM runs WHERE idempotency_key = ?1");
            if (!held) return held.error();
            held->bind(1, key.key);
            if (held->step()) return idempotency_key_used(held->integer(0));
        }
        auto run = db.prepare(
            "INSERT INTO runs (conversation, turn, status, mode, provider, prompt, started_at, updated_at, lease_owner,"
            " lease_until, inputs, idempotency_key, idempotency_print, origin) VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?6,"
            " ?7, ?8, ?9, ?10, ?11, ?12) RETURNING id");
        if (!run) return run.error();
        run->bind(1, conversation)
            .bind(2, r.turn)
            .bind(3, mode_name(mode))
            .bind(4, provider)
            .bind_borrowed(5, prompt)
            .bind_real(6, t);
        run->bind(7, owner_).bind_real(8, t + lease_seconds_);
        if (inputs_json.empty())
            run->bind_null(9);
        else
            run->bind(9, inputs_json);
        if (key.key.empty())
            run->bind_null(10).bind_null(11);
        else
            run->bind(10, key.key).bind(11, static_cast<int64_t>(key.print));
        run->bind(12, run_origin_name(start.origin));
        if (!run->step()) return Error{"store_sql", "could not start a run: " + db.last_error()};
        r.id = run->integer(0);
        if (auto st = run->run(); !st) return st;
        auto message = insert_message(db, conversation, r.turn, r.id, {MessageKind::prompt, std::string(prompt_body)});
        if (!message) return message.error();
        return Ok{};
    });
    if (!s) return s.error();
    fill_begun_run(r, conversation, mode, provider, start.origin);
    return r;
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
            auto place = writable_run(db, run, owner_);
            if (!place) return place.error();
            auto appended = append_messages(db, run, *place, step.messages);
            if (!appended) return appended.error();
            ids = std::move(*appended);
            if (!step.journal_call_id.empty()) {
                auto done = db.prepare(
                    "UPDATE tool_journal SET status = 'done', result = ?3, error_code = ?4, finished_at = ?5"
                    " WHERE run = ?1 AND call_id = ?2");
                if (!done) return done.error();
                done->bind(1, run)
                    .bind(2, step.journal_call_id)
                    .bind_borrowed(3, step.journal_result())
                    .bind(4, step.journal_error_code);
                if (auto st = done->bind_real(5, now_seconds()).run(); !st) return st;
            }
            if (step.intent)
                if (auto st = insert_intent(db, run, *step.intent); !st) return st;
            return update_run(db, run, *place, ids, step.counters, step.mode, now_seconds() + lease_seconds_, step.state_json,
                              step.inputs_json);
        },
        step.flush);
    if (!s) return s.error();
    return ids;
}

Status SqliteRunJournal::journal_intent(int64_t run, const ToolIntent& intent, Flush flush) {
    return db_.write(
        [&](Database& db) -> Status {
            // A process that lost the run records no intent, so it never starts the call.
            if (auto place = writable_run(db, run, owner_); !place) return place.error();
            return insert_intent(db, run, intent);
        },
        flush);
}

std::optional<JournalEntry> SqliteRunJournal::journal(int64_t run, std::string_view call_id) {
    return db_.read([&](Database& db) -> std::optional<JournalEntry> {
        auto stmt = db.prepare("SELECT status, COALESCE(result, '') FROM tool_journal WHERE run = ?1 AND call_id = ?2");
        if (!stmt) return std::nullopt;
        stmt->bind(1, run).bind(2, call_id);
        if (!stmt->step()) return std::nullopt;
        return JournalEntry{choice_from<CallStatus>(kCallStatuses, stmt->text(0)).value_or(CallStatus::started), stmt->text(1)};
    });
}

Status SqliteRunJournal::end_run(int64_t run, const RunEnd& end) {
    return db_.write([&](Database& db) -> Status {
        auto place = writable_run(db, run, owner_);
        if (!place) return place.error();
        auto ids = append_messages(db, run, *place, end.messages);
        if (!ids) return ids.error();
        if (auto st = update_run(db, run, *place, *ids, end.counters, end.mode, 0, end.state_json, end.inputs_json); !st)
            return st;
        auto stmt = db.prepare(
            "UPDATE runs SET status = ?2, stop_reason = ?3, error_code = NULLIF(?4, ''), error = NULLIF(?5, ''),"
            " answer = ?6, ended_at = CASE WHEN ?2 = 'paused' THEN NULL ELSE ?7 END, lease_owner = NULL, lease_until = NULL"
            " WHERE id = ?1");
        if (!stmt) return stmt.error();
        const StopInfo& info = stop_info(end.stop_reason);
        return stmt->bind(1, run)
            .bind(2, run_status_name(info.status))
            .bind(3, info.name)
            .bind(4, info.error_code)
            .bind(5, end.error)
            .bind(6, end.answer)
            .bind_real(7, now_seconds())
            .run();
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
        std::vector<RunRecord> out;
        // Each term is read from the index runs_waiting, so a row is read only once it matches.
        auto stmt =
            db.prepare("SELECT " + kRunColumns +
                       " FROM runs WHERE (status = 'interrupted' OR (status = 'failed' AND stop_reason = 'store_failure'))" +
                       (origin ? " AND origin = ?2" : "") +
                       " AND NOT EXISTS (SELECT 1 FROM runs later WHERE"
                       " later.conversation = runs.conversation AND later.id > runs.id) ORDER BY updated_at, id LIMIT ?1");
        if (!stmt) return out;
        stmt->bind(1, static_cast<int64_t>(limit));
        if (origin) stmt->bind(2, run_origin_name(*origin));
        while (stmt->step()) out.push_back(read_run(*stmt));
        return out;
    });
}

std::optional<RunRecord> SqliteRunJournal::paused_run(std::string_view conversation) {
    return db_.read([&](Database& db) -> std::optional<RunRecord> {
        auto stmt = db.prepare("SELECT " + kRunColumns +
                               " FROM runs WHERE conversation = ?1 AND status = 'paused' ORDER BY id DESC LIMIT 1");
        if (!stmt) return std::nullopt;
        stmt->bind(1, conversation);
        if (!stmt->step()) return std::nullopt;
        return read_run(*stmt);
    });
}

std::optional<Checkpoint> SqliteRunJournal::last_checkpoint(int64_t run) {
    return db_.read([&](Database& db) -> std::optional<Checkpoint> {
        auto stmt = db.prepare(
            "SELECT checkpoint_step, checkpoint_message, checkpoint, COALESCE(inputs, '') FROM runs WHERE id = ?1 AND checkpoint "
            "IS NOT NULL");
        if (!stmt) return std::nullopt;
        stmt->bind(1, run);
        if (!stmt->step()) return std::nullopt;
        return Checkpoint{stmt->integer(0), stmt->integer(1), stmt->text(2), stmt->text(3)};
    });
}

std::vector<StoredMessage> SqliteRunJournal::run_messages(int64_t run, int64_t from_id) {
    return db_.read([&](Database& db) {
        auto stmt = db.prepare(
            // read_message's columns (kMessageColumns), qualified for the join
            "SELECT m.id, m.turn, COALESCE(m.run, 0), m.kind, m.body, COALESCE(m.result, '') FROM runs r JOIN messages m"
            " ON m.conversation = r.conversation AND m.turn = r.turn WHERE r.id = ?1 AND m.id >= ?2 ORDER BY m.id");
        if (!stmt) return std::vector<StoredMessage>{};
        stmt->bind(1, run).bind(2, from_id);
        return read_messages(*stmt);
    });
}

std::vector<StoredMessage> SqliteRunJournal::exchanges(std::string_view conversation, int64_t before_turn, int turns) {
    return db_.read([&](Database& db) {
        auto stmt = db.prepare(std::string("SELECT ") + kMessageColumns +
                               " FROM messages WHERE conversation = ?1 AND kind IN ('prompt', 'answer') AND turn < ?2 AND turn "
                               ">= ?2 - ?3 ORDER BY turn, id");
        if (!stmt) return std::vector<StoredMessage>{};
        stmt->bind(1, conversation).bind(2, before_turn).bind(3, static_cast<int64_t>(turns));
        return read_messages(*stmt);
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
    bool existed = false;
    Status s = db_.write([&](Database& db) -> Status {
        auto found = db.prepare("SELECT 1 FROM conversations WHERE id = ?1");
        if (!found) return found.error();
        found->bind(1, conversation);
        existed = found->step();
        const char* statements[] = {"DELETE FROM tool_journal WHERE run IN (SELECT id FROM runs WHERE conversation = ?1)",
                                    "DELETE FROM runs WHERE conversation = ?1",
                                    "DELETE FROM messages WHERE conversation = ?1",
                                    "DELETE FROM memory WHERE conversation = ?1",
                                    "DELETE FROM events WHERE conversation = ?1",
                                    "DELETE FROM conversations WHERE id = ?1"};
        for (const char* sql : statements) {
            auto stmt = db.prepare(sql);
            if (!stmt) return stmt.error();
            if (auto st = stmt->bind(1, conversation).run(); !st) return st;
        }
        return Ok{};
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
        // A claimed run shows no result until it has a new one.
        static const std::string sql =
            "UPDATE runs SET status = 'running', lease_owner = ?2, lease_until = ?3, updated_at = ?4, ended_at = NULL,"
            " stop_reason = NULL, error_code = NULL, error = NULL WHERE id = ?1 AND " +
            claimable_sql() + " RETURNING id";
        auto stmt = db.prepare(sql);
        if (!stmt) return stmt.error();
        double t = now_seconds();
        stmt->bind(1, run).bind(2, owner_).bind_real(3, t + lease_seconds_).bind_real(4, t);
        claimed = stmt->step();
        return stmt->run();
    });
    if (!s) return s;
    if (claimed) return Ok{};
    auto r = this->run(run);
    if (!r) return Error{"store_not_found", "there is no run " + std::to_string(run) + " (agenthost runs lists them)"};
    return Error{"run_not_resumable", not_resumable_reason(*r)};
}

Status SqliteRunJournal::renew(int64_t run) {
    return db_.write([&](Database& db) -> Status {
        auto stmt = db.prepare("UPDATE runs SET lease_until = ?3 WHERE id = ?1 AND lease_owner = ?2 AND status = 'running'");
        if (!stmt) return stmt.error();
        return stmt->bind(1, run).bind(2, owner_).bind_real(3, now_seconds() + lease_seconds_).run();
    });
}

int SqliteRunJournal::recover_interrupted() {
    Recovery found = recover();
    return found.marked ? static_cast<int>(found.dead.size()) : 0;
}

SqliteRunJournal::Recovery SqliteRunJournal::recover() {
    std::vector<std::pair<int64_t, Abandonment>> dead;
    db_.read([&](Database& db) {
        auto stmt =
            db.prepare("SELECT id, COALESCE(lease_owner, ''), COALESCE(lease_until, 0) FROM runs WHERE status = 'running'");
        if (!stmt) return 0;
        double t = now_seconds();
        while (stmt->step()) {
            // Ours with a lapsed lease: no turn of this process renews it (a run executing here
            // renews it every third of the lease), so its end could not be written (a full disk).
            // Recovered, so it can be resumed; a turn still holding it has its next write refused.
            if (Abandonment why = abandonment(stmt->text(1), stmt->real(2) < t, owner_); why != Abandonment::none)
                dead.emplace_back(stmt->integer(0), why);
        }
        return 0;
    });
    if (dead.empty()) return {};
    Status s = db_.write([&](Database& db) -> Status {
        for (const auto& [id, why] : dead) {
            auto stmt = db.prepare(
                "UPDATE runs SET status = 'interrupted', stop_reason = 'interrupted', error_code = 'INTERRUPTED',"
                " error = ?2, lease_owner = NULL, lease_until = NULL, recoveries = recoveries + 1 WHERE id = ?1 AND status = "
                "'running'");
            if (!stmt) return stmt.error();
            stmt->bind(1, id).bind(2, abandonment_text(why));
            if (auto st = stmt->run(); !st) return st;
        }
        return Ok{};
    });
    std::vector<int64_t> ids;
    ids.reserve(dead.size());
    for (const auto& [id, why] : dead) ids.push_back(id);
    return {std::move(ids), s};
}

Result<int64_t> SqliteRunJournal::compact(int keep_runs, int keep_days) {
    int64_t deleted = 0;
    Status s = db_.write([&](Database& db) -> Status {
        const char* old_runs =
            "SELECT id FROM (SELECT id, ended_at, ROW_NUMBER() OVER (PARTITION BY conversation ORDER BY id DESC) AS rank"
            " FROM runs WHERE status IN ('completed', 'failed', 'cancelled')) WHERE rank > ?1 OR ended_at < ?2";
        const std::string old_rows = std::string(" IN (") + old_runs + ")";
        const std::string statements[] = {
            "UPDATE runs SET checkpoint = NULL, inputs = NULL WHERE (checkpoint IS NOT NULL OR inputs IS NOT NULL) AND id" +
                old_rows,
            "DELETE FROM tool_journal WHERE run" + old_rows};
        for (const std::string& sql : statements) {
            auto stmt = db.prepare(sql);
            if (!stmt) return stmt.error();
            if (auto st = stmt->bind(1, static_cast<int64_t>(keep_runs)).bind_real(2, now_seconds() - keep_days * 86400.0).run();
                !st)
                return st;
            deleted += db.changes();
        }
        return Ok{};
    });
    if (!s) return s.error();
    return deleted;
}

JournalStats SqliteRunJournal::stats() {
    JournalStats out;
    db_.read([&](Database& db) {
        if (auto s = db.prepare("SELECT status, COUNT(*) FROM runs GROUP BY status ORDER BY status"))
            while (s->step()) out.runs_by_status.emplace_back(s->text(0), s->integer(1));
        if (auto s = db.prepare("SELECT COALESCE(SUM(iterations), 0), COALESCE(SUM(input_tokens), 0),"
                                " COALESCE(SUM(output_tokens), 0) FROM runs");
            s && s->step()) {
            out.iterations = s->integer(0);
            out.input_tokens = s->integer(1);
            out.output_tokens = s->integer(2);
        }
        if (auto s = db.prepare("SELECT tool, CASE WHEN status = 'started' THEN 'unfinished'"
                                " WHEN error_code IS NULL OR error_code = '' THEN 'ok' ELSE 'error' END AS outcome, COUNT(*)"
                                " FROM tool_journal GROUP BY tool, outcome ORDER BY tool, outcome"))
            while (s->step()) out.tool_calls.push_back({s->text(0), s->text(1), s->integer(2)});
        return 0;
    });
    return out;
}

}  // namespace agenthost::sqlite
