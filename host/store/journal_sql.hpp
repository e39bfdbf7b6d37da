// The run journal's SQL that SQLite and PostgreSQL agree on, written once: how a run is opened, how
// an abandoned one is found and marked interrupted, how a run is claimed, which runs wait for a
// takeover, what compaction drops and what the statistics count. Both journals run these over their
// store::SqlConnection, inside the transactions they open; a statement the dialects disagree on
// stays in its backend. Every status and stop-reason word is bound from its table, never typed into
// the SQL.
#pragma once

#include "store/run_journal.hpp"
#include "store/run_owner.hpp"
#include "store/sql.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <span>
#include <vector>

namespace agenthost::store {

// What begin_run writes: the run's row, leased to `owner`, and its prompt as the turn's first message.
struct RunOpening {
    std::string_view conversation;
    Mode mode = Mode::execute;
    std::string_view provider;
    std::string_view prompt;       // as the run lists it
    std::string_view prompt_body;  // the prompt message's stored body
    std::string_view inputs_json;  // "" for none
    RunStart start;
    std::string_view owner;
    int lease_seconds = 0;
};

// Opens a run in `tx`, a write transaction that serialises openings per conversation (SQLite's
// immediate transaction; in PostgreSQL the first statement locks the conversation's row). Refused
// with conversation_busy, idempotency_key_used, or store_conflict when a unique index refused the
// row (two hosts at once: opening_conflict says which, once the transaction is rolled back).
Result<RunRecord> open_run(SqlConnection& tx, const RunOpening& opening);
// What begin_run answers when open_run failed with store_conflict, read again outside the transaction.
Error opening_conflict(RunJournal& journal, const RunOpening& opening);

// Appends one message to a turn: its id.
Result<int64_t> insert_message(SqlConnection& tx, std::string_view conversation, int64_t turn, int64_t run, const NewMessage& m);

// Records a call about to run as `started` in the tool journal (a retried start keeps its row, a
// finished one stays done).
Status insert_intent(SqlConnection& tx, int64_t run, const ToolIntent& intent);

// A step's writes in `tx`: its messages (their ids, in order), the result of the call it finished,
// the intent of the next, and the run's row (counters, lease until `lease_until`, checkpoint,
// inputs, mode). Refused, writing nothing, unless `owner` may write to the run (store::may_write).
Result<std::vector<int64_t>> write_step(SqlConnection& tx, int64_t run, std::string_view owner, const StepWrite& step,
                                        double lease_until);
// Records a call about to run, as insert_intent, once `owner` is found to hold the run: a process
// that lost the run records no intent, so it never starts the call.
Status write_intent(SqlConnection& tx, int64_t run, std::string_view owner, const ToolIntent& intent);
// A run's last writes in `tx`: its messages, its row, and its end (record_run_end). Refused as write_step.
Status write_run_end(SqlConnection& tx, int64_t run, std::string_view owner, const RunEnd& end);

// Records the result of the call `step` finished (its journal_call_id) in the tool journal.
Status record_call_result(SqlConnection& tx, int64_t run, const StepWrite& step);
// Writes a run's end as its stop reason says (status, error code, error, answer) and gives up its
// lease; a paused run has no end time.
Status record_run_end(SqlConnection& tx, int64_t run, const RunEnd& end);

// A `running` run recovery takes from its holder, as it was read.
struct AbandonedRun {
    int64_t id = 0;
    std::string holder;  // "" for none
    double lease_until = 0;
    Abandonment why = Abandonment::none;
};
// The `running` runs that `self` takes from their holders now (store::abandonment decides).
Result<std::vector<AbandonedRun>> abandoned_runs(SqlConnection& db, const std::string& self);
// Marks `run` interrupted if it is still as abandoned_runs() read it (another process may have
// recovered, renewed or claimed it since): whether it did.
Result<bool> mark_interrupted(SqlConnection& tx, const AbandonedRun& run);
// One recovery pass: the `running` runs found with their process gone, and whether marking them
// interrupted worked (a full disk refuses it: claim() then says so instead of "running in another
// process").
struct Recovery {
    std::vector<int64_t> dead;
    Status marked = Ok{};
    int taken = 0;  // marked by this pass (another process may have taken some first)
};
// claim()'s refusal when recovery found `run`'s process gone but could not mark the run; nullopt
// otherwise.
std::optional<Error> unrecovered(const Recovery& recovery, int64_t run);

// Takes run `run` for `owner` if claimable_sql() allows it, clearing its result: whether it did.
Result<bool> claim_run(SqlConnection& tx, int64_t run, std::string_view owner, int lease_seconds);
// claim's refusal when claim_run took nothing: no such run, or why it cannot be resumed.
Error claim_refusal(RunJournal& journal, int64_t run);
// Extends `owner`'s lease of a running run.
Status renew_lease(SqlConnection& tx, int64_t run, std::string_view owner, int lease_seconds);

// The runs a takeover resumes: interrupted, or failed because the store failed, and the last of
// their conversation; oldest first.
Result<std::vector<RunRecord>> waiting_runs(SqlConnection& db, int limit, std::optional<RunOrigin> origin);

// The newest paused run of `conversation` (the one an approval resumes).
Result<std::optional<RunRecord>> paused_run(SqlConnection& db, std::string_view conversation);
// A call's tool journal entry; the run's checkpoint; the run's messages from `from_id` on. Each an
// Error when the store could not be read, never taken for "none".
Result<std::optional<JournalEntry>> journal_entry(SqlConnection& db, int64_t run, std::string_view call_id);
Result<std::optional<Checkpoint>> last_checkpoint(SqlConnection& db, int64_t run);
Result<std::vector<StoredMessage>> run_messages(SqlConnection& db, int64_t run, int64_t from_id);
// The prompts and answers of the `turns` turns before `before_turn`, in order: what a turn pins.
Result<std::vector<StoredMessage>> exchanges(SqlConnection& db, std::string_view conversation, int64_t before_turn, int turns);

// The reads behind RunJournal's run(), runs(), run_inputs(), all(), conversations() and
// conversation(), as that contract states them. Each an
// Error when the store could not be read, never taken for "none".
// The run started with Idempotency-Key `key` in the last IdempotencyKeys::kTtlSeconds.
Result<std::optional<KeyedRun>> keyed_run(SqlConnection& db, std::string_view key);
Result<std::optional<RunRecord>> run_by_id(SqlConnection& db, int64_t id);
Result<std::vector<RunRecord>> newest_runs(SqlConnection& db, std::string_view conversation, int limit);
Result<std::string> run_inputs(SqlConnection& db, int64_t run);
Result<std::vector<StoredMessage>> conversation_messages(SqlConnection& db, std::string_view conversation);
Result<std::vector<ConversationSummary>> conversation_summaries(SqlConnection& db, int limit);
Result<std::optional<ConversationSummary>> conversation_summary(SqlConnection& db, std::string_view id);

// Names a conversation (RunJournal::rename_conversation): whether it exists.
Result<bool> rename_conversation(SqlConnection& tx, std::string_view conversation, std::string_view title);
// Deletes a conversation in `tx` with every row of it: its runs and the rows of `run_tables` that
// name one of them (the tool journal, and a backend's own tables keyed by run), its messages,
// memory and posted events. Whether it existed.
Result<bool> delete_conversation(SqlConnection& tx, std::string_view conversation, std::span<const std::string_view> run_tables);

// Drops the checkpoints, inputs and tool journal of ended runs beyond the newest `keep_runs` of
// each conversation or older than `keep_days`: the rows it changed.
Result<int64_t> compact_runs(SqlConnection& tx, int keep_runs, int keep_days);
// Runs by status, the totals, and the tool calls by outcome.
Result<JournalStats> journal_stats(SqlConnection& db);

}  // namespace agenthost::store
