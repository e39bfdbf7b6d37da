// The run journal: conversations, one run per user turn, the append-only transcript, one small
// checkpoint per completed step and the tool journal. A step's messages, its journal result and its
// checkpoint commit at once, and nothing earlier is ever rewritten, so a step costs the same at step
// 500 as at step 5. Runs hold a lease renewed by a heartbeat, so a process can tell a run whose
// process died (interrupted) from one still running elsewhere.
#pragma once

#include "common/choices.hpp"
#include "common/result.hpp"
#include "common/run_status.hpp"
#include "common/stop_reason.hpp"
#include "store/flush.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agenthost::store {

// Why `id` cannot name a conversation, or nullopt when it can: 1 to 128 characters of letters,
// digits and . _ : @ - (ids reach terminals, logs and URLs, so no spaces, quotes or control bytes).
std::optional<std::string> conversation_id_problem(std::string_view id);

// The longest conversation title, in characters (Unicode code points).
inline constexpr size_t kMaxTitleCharacters = 200;
// A conversation title as it is kept: `title` (valid UTF-8) without surrounding blanks, or why it
// cannot be one: longer than kMaxTitleCharacters, or holding a control character (titles reach
// terminals and the panel, so no line breaks or escapes). Empty is allowed: it clears the title.
Result<std::string> conversation_title(std::string_view title);
// A new conversation is titled with the first words of its first prompt, at most this many
// characters (then "…"); a person renames it at will.
inline constexpr size_t kTitleFromPromptCharacters = 60;
std::string title_from_prompt(std::string_view prompt);

// What a message is to the conversation: the user's prompt and the final answer form an exchange
// (pinned into later turns); steps are the tool calls, results and notes in between.
enum class MessageKind { prompt, answer, step };

struct StoredMessage {
    int64_t id;
    int64_t turn;
    int64_t run;
    MessageKind kind;
    std::string body;    // the message as the model saw it: {"role", "content", "tool_calls"?, …}
    std::string result;  // tool messages: the full result object (the model may have seen it cut)
};

struct RunCounters {
    int iterations = 0;
    int tool_calls = 0;
    int64_t input_tokens = 0;
    int64_t output_tokens = 0;
};

struct RunRecord {
    int64_t id = 0;
    std::string conversation;
    int64_t turn = 0;
    RunStatus status = RunStatus::running;
    Mode mode = Mode::execute;
    std::string provider, prompt;
    std::optional<StopReason> stop_reason;  // unset while the run goes on (and for a word this build does not know)
    std::string error_code, error, answer;
    RunCounters counters;
    int64_t messages = 0;  // messages the run added to its conversation (the prompt, replies, tool results)
    // Times the run was found abandoned by the process executing it (recover_interrupted): that
    // process may have sent events its last checkpoint does not count, so a resumed run numbers
    // its events past them (agent/turn_loop.cpp, kEventsPerRecovery).
    int64_t recoveries = 0;
    RunOrigin origin = RunOrigin::cli;
    double started_at = 0, updated_at = 0, ended_at = 0;
    std::string model;       // the model asked for, as the run began ("" when it was not recorded)
    int64_t after_turn = 0;  // the turn whose exchange this run follows (0: the first); a branch when not turn - 1
};

// The Idempotency-Key a run is started with (scoped to its route: "ROUTE\nKEY") and a digest of
// the request's body. It is kept with the run, written in the transaction that starts it, so a
// retry finds the run after a restart or on another host, and the store refuses a second run for
// one key (error idempotency_key_used) whatever any cache says.
struct RunKey {
    std::string key;  // "" when the request had none
    uint64_t print = 0;
};
// How a run starts: its key, who started it (a server resumes its own runs by itself), its model
// and the turn it follows.
struct RunStart {
    RunKey key = {};
    RunOrigin origin = RunOrigin::cli;
    std::string model = {};  // the model asked for, recorded with the run
    // The turn whose exchange the run follows: a run after an earlier turn than the newest starts a
    // branch (an edited prompt, a regenerated answer), and its model sees that branch's exchanges
    // only. Unset: the newest turn. The caller checks it is 0 … the newest turn.
    std::optional<int64_t> after_turn = {};
};

// What begin_run hands back once the run is written, the same from every backend (the conformance
// suite compares it with the run read back): running, its prompt its one message so far, and no
// prompt (it may be megabytes; the store has it).
inline void fill_begun_run(RunRecord& r, std::string_view conversation, Mode mode, std::string_view provider,
                           const RunStart& start) {
    r.conversation = conversation;
    r.status = RunStatus::running;
    r.mode = mode;
    r.provider = provider;
    r.messages = 1;
    r.origin = start.origin;
    r.model = start.model;
    r.after_turn = start.after_turn.value_or(r.turn - 1);
}

struct Checkpoint {
    int64_t step = 0;
    int64_t last_message = 0;
    std::string state_json;        // the loop state: iteration, mode, pending calls, approval, counters …
    std::string inputs_json = {};  // the run's inputs (agent/loop_state.hpp); "" when never stored
};

struct NewMessage {
    MessageKind kind;
    std::string body;
    std::string result = {};
};

// A tool call about to run: recorded `started` in the tool journal before the call starts.
struct ToolIntent {
    std::string call_id, tool, arguments_json;
};

// Everything one completed step commits at once.
struct StepWrite {
    std::vector<NewMessage> messages;
    std::optional<ToolIntent> intent = {};  // the step's first call, about to run (its intent rides with the step)
    std::string journal_call_id = {};       // a tool call finished in this step, with journal_result()
    std::string journal_error_code = {};
    RunCounters counters;
    std::optional<Mode> mode = {};  // the mode the run goes on in (a resume may change it); unset keeps it
    std::string state_json;         // the checkpoint after the step
    std::string inputs_json = {};   // the run's inputs, written once (with its first write); "" keeps them
    Flush flush = Flush::now;       // with_next: a step a power cut may lose, because the run redoes it

    // The finished call's result object: the result stored with the step's last message, its tool
    // message (one copy in RAM for both, not two of a large result).
    std::string_view journal_result() const {
        return messages.empty() ? std::string_view() : std::string_view(messages.back().result);
    }
};

// How a run ended: its status and error code follow from the stop reason (common/stop_reason.hpp).
struct RunEnd {
    StopReason stop_reason = StopReason::internal_error;
    std::string error, answer;
    RunCounters counters;
    std::optional<Mode> mode = {};     // the mode the run ended in; unset keeps the one recorded
    std::vector<NewMessage> messages;  // appended with the end, in order: a step not yet written, the answer
    std::string state_json = {};       // a last checkpoint (a paused run's waiting call)
    std::string inputs_json = {};      // the run's inputs, when no write stored them yet
};

// A tool call's entry in the run's journal: written before the call runs, completed with its result.
enum class CallStatus { started, done };
inline constexpr Choice<CallStatus> kCallStatuses[] = {
    {CallStatus::started, "started", "the call began and may have had effects"},
    {CallStatus::done, "done", "the call finished; its result is kept"},
};
struct JournalEntry {
    CallStatus status = CallStatus::started;  // a word this build does not know reads as started
    std::string result;                       // when done
};

// A listing shows this many characters of a conversation's latest prompt: a prompt may be
// megabytes, and a list of them would be as large.
inline constexpr int kPromptPreviewChars = 200;

// One conversation in the journal's listing.
struct ConversationSummary {
    std::string id;
    double created_at, updated_at;
    int64_t runs;
    std::string last_prompt;  // the latest run's prompt, its first kPromptPreviewChars characters
    std::string title = {};   // empty: never named
};

// What /metrics reports of the journal: totals over every run it holds.
struct JournalStats {
    std::vector<std::pair<std::string, int64_t>> runs_by_status;  // status name → runs
    int64_t iterations = 0, input_tokens = 0, output_tokens = 0;
    struct ToolCalls {
        std::string tool;
        std::string outcome;  // ok | error | unfinished (started, never finished)
        int64_t count = 0;
    };
    std::vector<ToolCalls> tool_calls;
};

// A run found by its key.
struct KeyedRun {
    int64_t run = 0;
    uint64_t print = 0;
};

// Where runs are kept: the run journal every front end and the agent loop use. The SQLite backend
// (sqlite/sqlite_run_journal) is the embedded one, PostgreSQL (postgres/pg_run_journal) the shared
// one; both implement this contract and pass the same conformance tests. Every read answers an
// Error when the store could not be read: none takes a failed read for "none" or "empty", so no
// caller acts on an absence that was an outage.
class RunJournal {
public:
    virtual ~RunJournal() = default;

    // Starts a run: the conversation (created if new), the run (running, leased by this process),
    // its prompt message, its inputs (agent/loop_state.hpp; "" when it has none), its key (none
    // when start.key.key is empty) and its origin, in one transaction. Returns the run; its turn is the next number.
    // The returned record's prompt is left empty: the caller has it (a prompt may be megabytes).
    // Errors: conversation_busy; idempotency_key_used when a run started with the same key in the
    // last IdempotencyKeys::kTtlSeconds exists (after that the key is free again).
    virtual Result<RunRecord> begin_run(std::string_view conversation, Mode mode, std::string_view provider,
                                        std::string_view prompt, std::string_view prompt_body, std::string_view inputs_json,
                                        const RunStart& start) = 0;
    // A terminal's run without a key. (A class implementing the journal says `using RunJournal::begin_run;`.)
    Result<RunRecord> begin_run(std::string_view conversation, Mode mode, std::string_view provider, std::string_view prompt,
                                std::string_view prompt_body, std::string_view inputs_json) {
        return begin_run(conversation, mode, provider, prompt, prompt_body, inputs_json, RunStart{});
    }
    // A run with no inputs and no key.
    Result<RunRecord> begin_run(std::string_view conversation, Mode mode, std::string_view provider, std::string_view prompt,
                                std::string_view prompt_body) {
        return begin_run(conversation, mode, provider, prompt, prompt_body, {}, RunStart{});
    }
    // The run started with `key` in the last IdempotencyKeys::kTtlSeconds, nullopt when there is
    // none; an Error when the store cannot say (a caller guarding against a second run refuses then).
    virtual Result<std::optional<KeyedRun>> run_for_key(std::string_view key) = 0;
    // The inputs stored with a run ("" when it has none, or compact cleared them): what a run
    // started again from its prompt needs.
    virtual Result<std::string> run_inputs(int64_t run) = 0;
    // Commits a step; returns the ids of its messages, in order.
    virtual Result<std::vector<int64_t>> write_step(int64_t run, const StepWrite& step) = 0;
    // Records that a tool call is about to run (durable before the call starts, as `flush` says). A
    // step's first call rides with the step instead (StepWrite::intent): one commit, not two.
    virtual Status journal_intent(int64_t run, const ToolIntent& intent, Flush flush) = 0;
    // A call's entry in the tool journal, nullopt when it never started; an Error when the store
    // could not be read (a caller then must not take the call for never started and run it again).
    virtual Result<std::optional<JournalEntry>> journal(int64_t run, std::string_view call_id) = 0;
    virtual Status end_run(int64_t run, const RunEnd& end) = 0;

    // The run, nullopt when there is none.
    virtual Result<std::optional<RunRecord>> run(int64_t id) = 0;
    // Newest first; an empty conversation lists every conversation's runs.
    virtual Result<std::vector<RunRecord>> runs(std::string_view conversation, int limit) = 0;
    // The conversation's paused run, nullopt when none is; an Error when the store could not say.
    virtual Result<std::optional<RunRecord>> paused_run(std::string_view conversation) = 0;
    // Interrupted runs, and runs failed because the store refused a step, that are still their
    // conversation's newest (so resuming them is allowed), longest-waiting first: what a host
    // taking over a stopped host's work resumes. `origin`: only runs started there (nullopt: any).
    virtual Result<std::vector<RunRecord>> interrupted_runs(int limit, std::optional<RunOrigin> origin) = 0;
    // The run's checkpoint, nullopt when it never took a step; an Error when the store could not be
    // read (a resume must not then start the run over and write over its checkpoint).
    virtual Result<std::optional<Checkpoint>> last_checkpoint(int64_t run) = 0;
    // The run's messages with id >= from_id (its prompt included), in order; an Error as above.
    virtual Result<std::vector<StoredMessage>> run_messages(int64_t run, int64_t from_id) = 0;

    // The prompts and answers of the `turns` turns the run at `before_turn` follows, oldest first:
    // its branch, walked back through each run's after_turn (a turn with no run yet follows the
    // newest turn before it).
    virtual Result<std::vector<StoredMessage>> exchanges(std::string_view conversation, int64_t before_turn, int turns) = 0;
    // Every message of the conversation, in order.
    virtual Result<std::vector<StoredMessage>> all(std::string_view conversation) = 0;

    // Newest first (by updated_at: when its last run started).
    virtual Result<std::vector<ConversationSummary>> conversations(int limit) = 0;
    // One conversation's summary; nullopt when it does not exist.
    virtual Result<std::optional<ConversationSummary>> conversation(std::string_view id) = 0;
    // Names a conversation (an empty title clears the name); false when it does not exist. Renaming
    // is not activity: updated_at, and so the listing's order, stay as they were. The title is
    // kept as given: callers check it with conversation_title().
    virtual Result<bool> rename_conversation(std::string_view conversation, std::string_view title) = 0;
    // Removes a conversation's messages, runs, checkpoints, journal and session memory (not facts).
    // Returns false when it did not exist.
    virtual Result<bool> delete_conversation(std::string_view conversation) = 0;

    // Takes a run over for this process (to resume it): it must be paused or interrupted, or have
    // failed for a cause that may pass (the provider, a timeout, the store, an output limit).
    virtual Status claim(int64_t run) = 0;
    virtual Status renew(int64_t run) = 0;
    // Marks `running` runs whose process is gone (lease expired, or the owner process on this host
    // has exited) as interrupted. Returns how many.
    virtual Result<int> recover_interrupted() = 0;

    // Drops checkpoints and journal rows of finished runs beyond the newest `keep_runs` per
    // conversation or older than `keep_days` days; messages are kept. Returns rows deleted.
    virtual Result<int64_t> compact(int keep_runs, int keep_days) = 0;

    virtual Result<JournalStats> stats() = 0;
};

// Whether claim() takes a run in this state: paused, interrupted, or failed for a cause that may
// pass (provider, rate limit, timeout, store …: the stop-reason table's `resumable`). The one rule,
// for every journal and its callers.
bool resumable(const RunRecord& run);
// Why claim() refuses a run that is not resumable, in words.
std::string not_resumable_reason(const RunRecord& run);

}  // namespace agenthost::store
