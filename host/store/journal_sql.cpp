#include "store/journal_sql.hpp"

#include "store/idempotency_keys.hpp"
#include "store/run_rows.hpp"
#include "store/store_error.hpp"

#include <algorithm>

namespace agenthost::store {

namespace {

std::string_view word(RunStatus status) { return run_status_name(status); }

// A run's place in the transcript: its conversation and turn (a turn has one run, so these find its messages).
struct RunPlace {
    std::string conversation;
    int64_t turn = 0;
};

// The place of a run `owner` may write to (store::may_write), its row held for the transaction.
Result<RunPlace> writable_run(SqlConnection& tx, int64_t run, std::string_view owner) {
    std::optional<RunPlace> place;
    std::string holder, status;
    Status read = tx.query(
        "SELECT conversation, turn, COALESCE(lease_owner, ''), status FROM runs WHERE id = ?1" + std::string(tx.row_lock()),
        {run}, [&](const SqlRow& row) {
            place = RunPlace{row.text(0), row.integer(1)};
            holder = row.text(2);
            status = row.text(3);
        });
    if (!read) return read.error();
    if (Status st = may_write(run, place.has_value(), holder, status, owner); !st) return st.error();
    return std::move(*place);
}

// Appends `messages` to the run's turn; returns their ids, in order.
Result<std::vector<int64_t>> append_messages(SqlConnection& tx, int64_t run, const RunPlace& place,
                                             const std::vector<NewMessage>& messages) {
    std::vector<int64_t> ids;
    ids.reserve(messages.size());
    for (const auto& m : messages) {
        auto id = insert_message(tx, place.conversation, place.turn, run, m);
        if (!id) return id.error();
        ids.push_back(*id);
    }
    return ids;
}

// What a write leaves in the run's row: its counters, its lease, its inputs (when given), and
// (when `state_json` is not empty) its checkpoint, replacing the one before (resume reads only the
// latest) and covering the messages up to the last of `appended` (or the turn's newest, when it
// appended none). One UPDATE of one row: the checkpoint costs no page of its own. (The CAST names
// ?9's type where PostgreSQL cannot infer it: IS NULL says nothing about it.)
Status update_run(SqlConnection& tx, int64_t run, const RunPlace& place, const std::vector<int64_t>& appended,
                  const RunCounters& c, std::optional<Mode> mode, std::optional<double> lease_until,
                  const std::string& state_json, const std::string& inputs_json) {
    std::optional<int64_t> last_message;
    if (!state_json.empty() && !appended.empty()) last_message = appended.back();
    if (!state_json.empty() && appended.empty()) {
        auto newest = tx.first_integer("SELECT COALESCE(MAX(id), 0) FROM messages WHERE conversation = ?1 AND turn = ?2",
                                       {place.conversation, place.turn});
        if (!newest) return newest.error();
        last_message = newest->value_or(0);
    }
    auto optional_text = [](const std::string& text) { return text.empty() ? SqlValue{} : SqlValue{std::string_view(text)}; };
    auto done = tx.execute(
        "UPDATE runs SET iterations = ?2, tool_calls = ?3, input_tokens = ?4, output_tokens = ?5, updated_at = ?6,"
        " lease_until = ?7, checkpoint = COALESCE(?8, checkpoint),"
        " checkpoint_step = checkpoint_step + CASE WHEN CAST(?9 AS BIGINT) IS NULL THEN 0 ELSE 1 END,"
        " checkpoint_message = COALESCE(?9, checkpoint_message), inputs = COALESCE(?10, inputs), mode = COALESCE(?11, mode)"
        " WHERE id = ?1",
        {run, static_cast<int64_t>(c.iterations), static_cast<int64_t>(c.tool_calls), c.input_tokens, c.output_tokens,
         now_seconds(), lease_until ? SqlValue{*lease_until} : SqlValue{}, optional_text(state_json),
         last_message ? SqlValue{*last_message} : SqlValue{}, optional_text(inputs_json),
         mode ? SqlValue{std::string_view(mode_name(*mode))} : SqlValue{}});
    if (!done) return done.error();
    return Ok{};
}

}  // namespace

Result<std::vector<int64_t>> write_step(SqlConnection& tx, int64_t run, std::string_view owner, const StepWrite& step,
                                        double lease_until) {
    auto place = writable_run(tx, run, owner);
    if (!place) return place.error();
    auto ids = append_messages(tx, run, *place, step.messages);
    if (!ids) return ids.error();
    if (!step.journal_call_id.empty())
        if (auto st = record_call_result(tx, run, step); !st) return st.error();
    if (step.intent)
        if (auto st = insert_intent(tx, run, *step.intent); !st) return st.error();
    if (auto st = update_run(tx, run, *place, *ids, step.counters, step.mode, lease_until, step.state_json, step.inputs_json);
        !st)
        return st.error();
    return ids;
}

Status write_intent(SqlConnection& tx, int64_t run, std::string_view owner, const ToolIntent& intent) {
    if (auto place = writable_run(tx, run, owner); !place) return place.error();
    return insert_intent(tx, run, intent);
}

Status write_run_end(SqlConnection& tx, int64_t run, std::string_view owner, const RunEnd& end) {
    auto place = writable_run(tx, run, owner);
    if (!place) return place.error();
    auto ids = append_messages(tx, run, *place, end.messages);
    if (!ids) return ids.error();
    if (auto st = update_run(tx, run, *place, *ids, end.counters, end.mode, std::nullopt, end.state_json, end.inputs_json); !st)
        return st;
    return record_run_end(tx, run, end);
}

Result<RunRecord> open_run(SqlConnection& tx, const RunOpening& o) {
    const RunKey& key = o.start.key;
    const double t = now_seconds();
    RunRecord r;
    // Written first, so PostgreSQL holds the conversation's row for the transaction: turns are
    // numbered one at a time.
    // A new conversation is titled with its first prompt's first words (title_from_prompt).
    const std::string title = title_from_prompt(o.prompt);
    auto touched = tx.execute(
        "INSERT INTO conversations (id, created_at, updated_at, title) VALUES (?1, ?2, ?2, ?3)"
        " ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at",
        {o.conversation, t, std::string_view(title)});
    if (!touched) return touched.error();
    // One run per conversation at a time, across processes and hosts: checked here for a clear
    // message; the unique index one_running_run (PostgreSQL) or the immediate transaction (SQLite)
    // guarantees it. A paused run holds the conversation too, until its call is approved or rejected.
    std::optional<std::pair<int64_t, std::optional<RunStatus>>> holder;
    Status looked =
        tx.query("SELECT id, status FROM runs WHERE conversation = ?1 AND status IN (?2, ?3) ORDER BY id DESC LIMIT 1",
                 {o.conversation, word(RunStatus::running), word(RunStatus::paused)},
                 [&](const SqlRow& row) { holder.emplace(row.integer(0), parse_run_status(row.text(1))); });
    if (!looked) return looked.error();
    if (holder)
        return holder->second == RunStatus::paused ? approval_pending(o.conversation, holder->first)
                                                   : conversation_busy(o.conversation, holder->first);
    auto turn = tx.first_integer("SELECT COALESCE(MAX(turn), 0) + 1 FROM messages WHERE conversation = ?1", {o.conversation});
    if (!turn) return turn.error();
    r.turn = turn->value_or(1);
    if (!key.key.empty()) {
        // A key older than its time to live is free again; a younger one names its run.
        auto freed = tx.execute("UPDATE runs SET idempotency_key = NULL WHERE idempotency_key = ?1 AND started_at < ?2",
                                {key.key, t - IdempotencyKeys::kTtlSeconds});
        if (!freed) return freed.error();
        auto held = tx.first_integer("SELECT id FROM runs WHERE idempotency_key = ?1", {key.key});
        if (!held) return held.error();
        if (*held) return idempotency_key_used(**held);
    }
    auto id = tx.first_integer(
        "INSERT INTO runs (conversation, turn, status, mode, provider, prompt, started_at, updated_at, lease_owner, lease_until,"
        " inputs, idempotency_key, idempotency_print, origin, model, after_turn)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15) RETURNING id",
        {o.conversation, r.turn, word(RunStatus::running), mode_name(o.mode), o.provider, o.prompt, t, o.owner,
         t + o.lease_seconds, o.inputs_json.empty() ? SqlValue{} : SqlValue{o.inputs_json},
         key.key.empty() ? SqlValue{} : SqlValue{std::string_view(key.key)},
         key.key.empty() ? SqlValue{} : SqlValue{static_cast<int64_t>(key.print)}, run_origin_name(o.start.origin),
         std::string_view(o.start.model), o.start.after_turn ? SqlValue{std::min(*o.start.after_turn, r.turn - 1)} : SqlValue{}});
    if (!id) return id.error();
    if (!*id)
        return Error{"store_sql",
                     "the store started a run in conversation '" + std::string(o.conversation) + "' but returned no id for it"};
    r.id = **id;
    auto message = insert_message(tx, o.conversation, r.turn, r.id, {MessageKind::prompt, std::string(o.prompt_body)});
    if (!message) return message.error();
    fill_begun_run(r, o.conversation, o.mode, o.provider, o.start);
    return r;
}

Error opening_conflict(RunJournal& journal, const RunOpening& o) {
    // Two hosts started at once and a unique index refused the second: which one, read again.
    if (!o.start.key.key.empty())
        if (auto found = journal.run_for_key(o.start.key.key); found && *found) return idempotency_key_used((*found)->run);
    return conversation_busy(o.conversation, 0);
}

Result<int64_t> insert_message(SqlConnection& tx, std::string_view conversation, int64_t turn, int64_t run, const NewMessage& m) {
    auto id = tx.first_integer(
        "INSERT INTO messages (conversation, turn, run, kind, body, result) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id",
        {conversation, turn, run, message_kind_name(m.kind), std::string_view(m.body),
         m.result.empty() ? SqlValue{} : SqlValue{std::string_view(m.result)}});
    if (!id) return id.error();
    if (!*id)
        return store_error(StoreFault::sql, "the store appended a message to conversation '" + std::string(conversation) +
                                                "' but returned no id for it");
    return **id;
}

Status insert_intent(SqlConnection& tx, int64_t run, const ToolIntent& intent) {
    auto done = tx.execute(
        "INSERT INTO tool_journal (run, call_id, tool, arguments, status, started_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
        " ON CONFLICT (run, call_id) DO UPDATE SET started_at = excluded.started_at WHERE tool_journal.status = ?5",
        {run, std::string_view(intent.call_id), std::string_view(intent.tool), std::string_view(intent.arguments_json),
         choice_name<CallStatus>(kCallStatuses, CallStatus::started), now_seconds()});
    if (!done) return done.error();
    return Ok{};
}

Status record_call_result(SqlConnection& tx, int64_t run, const StepWrite& step) {
    auto done = tx.execute(
        "UPDATE tool_journal SET status = ?3, result = ?4, error_code = ?5, finished_at = ?6 WHERE run = ?1 AND call_id = ?2",
        {run, std::string_view(step.journal_call_id), choice_name<CallStatus>(kCallStatuses, CallStatus::done),
         step.journal_result(), std::string_view(step.journal_error_code), now_seconds()});
    if (!done) return done.error();
    return Ok{};
}

Status record_run_end(SqlConnection& tx, int64_t run, const RunEnd& end) {
    const StopInfo& info = stop_info(end.stop_reason);
    auto text_or_null = [](std::string_view text) { return text.empty() ? SqlValue{} : SqlValue{text}; };
    auto done = tx.execute(
        "UPDATE runs SET status = ?2, stop_reason = ?3, error_code = ?4, error = ?5, answer = ?6, ended_at = ?7,"
        " lease_owner = NULL, lease_until = NULL WHERE id = ?1",
        {run, word(info.status), info.name, text_or_null(info.error_code), text_or_null(end.error), std::string_view(end.answer),
         info.status == RunStatus::paused ? SqlValue{} : SqlValue{now_seconds()}});
    if (!done) return done.error();
    return Ok{};
}

Result<std::vector<AbandonedRun>> abandoned_runs(SqlConnection& db, const std::string& self) {
    std::vector<AbandonedRun> out;
    const double t = now_seconds();
    Status s = db.query("SELECT id, COALESCE(lease_owner, ''), COALESCE(lease_until, 0) FROM runs WHERE status = ?1",
                        std::initializer_list<SqlValue>{word(RunStatus::running)}, [&](const SqlRow& row) {
                            AbandonedRun run{row.integer(0), row.text(1), row.real(2)};
                            run.why = abandonment(run.holder, run.lease_until < t, self);
                            if (run.why != Abandonment::none) out.push_back(std::move(run));
                        });
    if (!s) return s.error();
    return out;
}

Result<bool> mark_interrupted(SqlConnection& tx, const AbandonedRun& run) {
    const StopInfo& stop = stop_info(StopReason::interrupted);
    // Only if still as read: the same holder, and (unless the holder is gone) a lease still lapsed.
    auto changed = tx.execute(
        "UPDATE runs SET status = ?4, stop_reason = ?5, error_code = ?6, error = ?7, lease_owner = NULL, lease_until = NULL,"
        " recoveries = recoveries + 1 WHERE id = ?1 AND status = ?8 AND lease_owner IS NOT DISTINCT FROM ?2"
        " AND COALESCE(lease_until, 0) <= ?3",
        {run.id, run.holder.empty() ? SqlValue{} : SqlValue{std::string_view(run.holder)},
         run.why == Abandonment::holder_gone ? 1e300 : now_seconds(), word(RunStatus::interrupted), stop.name, stop.error_code,
         abandonment_text(run.why), word(RunStatus::running)});
    if (!changed) return changed.error();
    return *changed > 0;
}

std::optional<Error> unrecovered(const Recovery& recovery, int64_t run) {
    if (recovery.marked || std::count(recovery.dead.begin(), recovery.dead.end(), run) == 0) return std::nullopt;
    return Error{recovery.marked.error().code, "the process that ran run " + std::to_string(run) +
                                                   " is gone, but the run could not be marked interrupted so it can be"
                                                   " resumed: " +
                                                   recovery.marked.error().message +
                                                   "; fix that (a full disk: free space) and resume it again"};
}

Result<bool> claim_run(SqlConnection& tx, int64_t run, std::string_view owner, int lease_seconds) {
    // A claimed run shows no result until it has a new one. One run per conversation runs at a time:
    // a run is not claimed while another of its conversation runs (SQLite has no index that would
    // refuse it; PostgreSQL's one_running_run would, as store_conflict).
    static const std::string sql =
        "UPDATE runs SET status = ?5, lease_owner = ?2, lease_until = ?3, updated_at = ?4, ended_at = NULL, stop_reason = NULL,"
        " error_code = NULL, error = NULL WHERE id = ?1 AND " +
        claimable_sql() +
        " AND NOT EXISTS (SELECT 1 FROM runs other WHERE other.conversation = runs.conversation AND other.status = ?5)"
        " RETURNING id";
    const double t = now_seconds();
    auto claimed = tx.first_integer(sql, {run, owner, t + lease_seconds, t, word(RunStatus::running)});
    if (!claimed) return claimed.error();
    return claimed->has_value();
}

Error claim_refusal(RunJournal& journal, int64_t run) {
    auto found = journal.run(run);
    if (!found) return found.error();
    const std::optional<RunRecord>& r = *found;
    if (!r) return store_error(StoreFault::not_found, "there is no run " + std::to_string(run) + " (agenthost runs lists them)");
    if (resumable(*r)) {  // so it was refused for the run its conversation has going
        auto others = journal.runs(r->conversation, 50);
        if (!others) return others.error();
        for (const RunRecord& other : *others)
            if (other.status == RunStatus::running) return conversation_busy(r->conversation, other.id);
    }
    return store_error(StoreFault::run_not_resumable, not_resumable_reason(*r));
}

Status renew_lease(SqlConnection& tx, int64_t run, std::string_view owner, int lease_seconds) {
    auto renewed = tx.execute("UPDATE runs SET lease_until = ?3 WHERE id = ?1 AND lease_owner = ?2 AND status = ?4",
                              {run, owner, now_seconds() + lease_seconds, word(RunStatus::running)});
    if (!renewed) return renewed.error();
    return Ok{};
}

Result<std::vector<RunRecord>> waiting_runs(SqlConnection& db, int limit, std::optional<RunOrigin> origin) {
    std::vector<RunRecord> out;
    // Each term is read from the index runs_waiting, so a row is read only once it matches.
    const std::string sql = std::string("SELECT ") + kRunColumns +
                            " FROM runs WHERE (status = ?2 OR (status = ?3 AND stop_reason = ?4))" +
                            (origin ? " AND origin = ?5" : "") +
                            " AND NOT EXISTS (SELECT 1 FROM runs later WHERE later.conversation = runs.conversation AND"
                            " later.id > runs.id) ORDER BY updated_at, id LIMIT ?1";
    const SqlValue all[] = {int64_t{limit}, word(RunStatus::interrupted), word(RunStatus::failed),
                            stop_reason_name(StopReason::store_failure),
                            origin ? std::string_view(run_origin_name(*origin)) : std::string_view()};
    const std::span<const SqlValue> params(all, origin ? 5 : 4);
    Status read = db.query(sql, params, [&](const SqlRow& row) { out.push_back(read_run(row)); });
    if (!read) return read.error();
    return out;
}

Result<std::optional<RunRecord>> paused_run(SqlConnection& db, std::string_view conversation) {
    std::optional<RunRecord> found;
    Status read = db.query(
        std::string("SELECT ") + kRunColumns + " FROM runs WHERE conversation = ?1 AND status = ?2 ORDER BY id DESC LIMIT 1",
        {conversation, word(RunStatus::paused)}, [&](const SqlRow& row) { found = read_run(row); });
    if (!read) return read.error();
    return found;
}

Result<std::optional<JournalEntry>> journal_entry(SqlConnection& db, int64_t run, std::string_view call_id) {
    std::optional<JournalEntry> found;
    Status read = db.query(
        "SELECT status, COALESCE(result, '') FROM tool_journal WHERE run = ?1 AND call_id = ?2", {run, call_id},
        [&](const SqlRow& row) {
            found = JournalEntry{choice_from<CallStatus>(kCallStatuses, row.text(0)).value_or(CallStatus::started), row.text(1)};
        });
    if (!read) return read.error();
    return found;
}

Result<std::optional<Checkpoint>> last_checkpoint(SqlConnection& db, int64_t run) {
    std::optional<Checkpoint> found;
    Status read = db.query(
        "SELECT checkpoint_step, checkpoint_message, checkpoint, COALESCE(inputs, '') FROM runs WHERE id = ?1 AND"
        " checkpoint IS NOT NULL",
        {run}, [&](const SqlRow& row) {
            found = Checkpoint{row.integer(0), row.integer(1), row.text(2), row.text(3)};
        });
    if (!read) return read.error();
    return found;
}

Result<std::vector<StoredMessage>> run_messages(SqlConnection& db, int64_t run, int64_t from_id) {
    std::vector<StoredMessage> out;
    // By the run's conversation and turn (a turn has one run): rows written before messages named
    // their run are found too.
    Status read = db.query(
        // read_message's columns (kMessageColumns), qualified for the join
        "SELECT m.id, m.turn, COALESCE(m.run, 0), m.kind, m.body, COALESCE(m.result, '') FROM runs r JOIN messages m"
        " ON m.conversation = r.conversation AND m.turn = r.turn WHERE r.id = ?1 AND m.id >= ?2 ORDER BY m.id",
        {run, from_id}, [&](const SqlRow& row) { out.push_back(read_message(row)); });
    if (!read) return read.error();
    return out;
}

Result<std::vector<StoredMessage>> exchanges(SqlConnection& db, std::string_view conversation, int64_t before_turn, int turns) {
    std::vector<StoredMessage> out;
    // The branch: from the turn the run at before_turn follows, back through each run's
    // after_turn (NULL, and a turn without a run, follow the turn before), `turns` turns at most.
    static const std::string sql =
        "WITH RECURSIVE branch (turn, depth) AS ("
        " SELECT COALESCE((SELECT COALESCE(after_turn, turn - 1) FROM runs WHERE conversation = ?1 AND turn = ?2),"
        " CAST(?2 AS BIGINT) - 1), 1 WHERE ?3 > 0"
        " UNION ALL SELECT COALESCE((SELECT COALESCE(r.after_turn, r.turn - 1) FROM runs r WHERE r.conversation = ?1"
        " AND r.turn = branch.turn), branch.turn - 1), branch.depth + 1 FROM branch WHERE branch.depth < ?3 AND branch.turn > 1)"
        " SELECT " +
        std::string(kMessageColumns) +
        " FROM messages WHERE conversation = ?1 AND kind IN (?4, ?5) AND turn IN (SELECT turn FROM branch WHERE turn > 0)"
        " ORDER BY turn, id";
    Status read = db.query(sql,
                           {conversation, before_turn, int64_t{turns}, std::string_view(message_kind_name(MessageKind::prompt)),
                            std::string_view(message_kind_name(MessageKind::answer))},
                           [&](const SqlRow& row) { out.push_back(read_message(row)); });
    if (!read) return read.error();
    return out;
}

Result<std::optional<KeyedRun>> keyed_run(SqlConnection& db, std::string_view key) {
    std::optional<KeyedRun> found;
    Status read = db.query("SELECT id, COALESCE(idempotency_print, 0) FROM runs WHERE idempotency_key = ?1 AND started_at >= ?2",
                           {key, now_seconds() - IdempotencyKeys::kTtlSeconds}, [&](const SqlRow& row) {
                               found = KeyedRun{row.integer(0), static_cast<uint64_t>(row.integer(1))};
                           });
    if (!read) return read.error();
    return found;
}

Result<std::optional<RunRecord>> run_by_id(SqlConnection& db, int64_t id) {
    std::optional<RunRecord> found;
    Status read = db.query(std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?1", {id},
                           [&](const SqlRow& row) { found = read_run(row); });
    if (!read) return read.error();
    return found;
}

Result<std::vector<RunRecord>> newest_runs(SqlConnection& db, std::string_view conversation, int limit) {
    std::vector<RunRecord> out;
    Status read =
        db.query(std::string("SELECT ") + kRunColumns + " FROM runs WHERE ?1 = '' OR conversation = ?1 ORDER BY id DESC LIMIT ?2",
                 {conversation, int64_t{limit}}, [&](const SqlRow& row) { out.push_back(read_run(row)); });
    if (!read) return read.error();
    return out;
}

Result<std::string> run_inputs(SqlConnection& db, int64_t run) {
    std::string inputs;
    Status read =
        db.query("SELECT COALESCE(inputs, '') FROM runs WHERE id = ?1", {run}, [&](const SqlRow& row) { inputs = row.text(0); });
    if (!read) return read.error();
    return inputs;
}

Result<std::vector<StoredMessage>> conversation_messages(SqlConnection& db, std::string_view conversation) {
    std::vector<StoredMessage> out;
    Status read = db.query(std::string("SELECT ") + kMessageColumns + " FROM messages WHERE conversation = ?1 ORDER BY id",
                           {conversation}, [&](const SqlRow& row) { out.push_back(read_message(row)); });
    if (!read) return read.error();
    return out;
}

Result<std::vector<ConversationSummary>> conversation_summaries(SqlConnection& db, int limit) {
    std::vector<ConversationSummary> out;
    Status read = db.query(std::string(kSummarySelect) + "ORDER BY c.updated_at DESC LIMIT ?1", {int64_t{limit}},
                           [&](const SqlRow& row) { out.push_back(read_summary(row)); });
    if (!read) return read.error();
    return out;
}

Result<std::optional<ConversationSummary>> conversation_summary(SqlConnection& db, std::string_view id) {
    std::optional<ConversationSummary> found;
    Status read =
        db.query(std::string(kSummarySelect) + "WHERE c.id = ?1", {id}, [&](const SqlRow& row) { found = read_summary(row); });
    if (!read) return read.error();
    return found;
}

Result<bool> rename_conversation(SqlConnection& tx, std::string_view conversation, std::string_view title) {
    // updated_at stays: renaming is not activity.
    auto changed = tx.execute("UPDATE conversations SET title = ?2 WHERE id = ?1", {conversation, title});
    if (!changed) return changed.error();
    return *changed > 0;
}

Result<bool> delete_conversation(SqlConnection& tx, std::string_view conversation, std::span<const std::string_view> run_tables) {
    auto found = tx.first_integer("SELECT 1 FROM conversations WHERE id = ?1" + std::string(tx.row_lock()), {conversation});
    if (!found) return found.error();
    std::vector<std::string> statements;
    for (std::string_view table : run_tables)
        statements.push_back("DELETE FROM " + std::string(table) + " WHERE run IN (SELECT id FROM runs WHERE conversation = ?1)");
    for (const char* sql : {"DELETE FROM runs WHERE conversation = ?1", "DELETE FROM messages WHERE conversation = ?1",
                            "DELETE FROM memory WHERE conversation = ?1", "DELETE FROM events WHERE conversation = ?1",
                            "DELETE FROM conversations WHERE id = ?1"})
        statements.emplace_back(sql);
    for (const std::string& sql : statements)
        if (auto done = tx.execute(sql, {conversation}); !done) return done.error();
    return found->has_value();
}

Result<int64_t> compact_runs(SqlConnection& tx, int keep_runs, int keep_days) {
    const std::string old_runs =
        " IN (SELECT id FROM (SELECT id, ended_at, ROW_NUMBER() OVER (PARTITION BY conversation ORDER BY id DESC) AS rank"
        " FROM runs WHERE status IN (?3, ?4, ?5)) AS ranked WHERE rank > ?1 OR ended_at < ?2)";
    const std::string statements[] = {
        "UPDATE runs SET checkpoint = NULL, inputs = NULL WHERE (checkpoint IS NOT NULL OR inputs IS NOT NULL) AND id" + old_runs,
        "DELETE FROM tool_journal WHERE run" + old_runs};
    int64_t changed = 0;
    for (const std::string& sql : statements) {
        auto done = tx.execute(sql, {int64_t{keep_runs}, now_seconds() - keep_days * 86400.0, word(RunStatus::completed),
                                     word(RunStatus::failed), word(RunStatus::cancelled)});
        if (!done) return done.error();
        changed += *done;
    }
    return changed;
}

Result<JournalStats> journal_stats(SqlConnection& db) {
    JournalStats out;
    const std::initializer_list<SqlValue> none = {};
    Status read = db.query("SELECT status, COUNT(*) FROM runs GROUP BY status ORDER BY status", none,
                           [&](const SqlRow& row) { out.runs_by_status.emplace_back(row.text(0), row.integer(1)); });
    if (read)
        read = db.query(
            "SELECT COALESCE(SUM(iterations), 0), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0) FROM runs",
            none, [&](const SqlRow& row) {
                out.iterations = row.integer(0);
                out.input_tokens = row.integer(1);
                out.output_tokens = row.integer(2);
            });
    if (read)
        read = db.query(
            "SELECT tool, CASE WHEN status = ?1 THEN 'unfinished' WHEN error_code IS NULL OR error_code = '' THEN 'ok'"
            " ELSE 'error' END AS outcome, COUNT(*) FROM tool_journal GROUP BY tool, outcome ORDER BY tool, outcome",
            std::initializer_list<SqlValue>{choice_name<CallStatus>(kCallStatuses, CallStatus::started)}, [&](const SqlRow& row) {
                out.tool_calls.push_back({row.text(0), row.text(1), row.integer(2)});
            });
    if (!read) return read.error();
    return out;
}

}  // namespace agenthost::store
