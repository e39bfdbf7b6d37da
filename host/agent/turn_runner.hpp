// One agent turn: the user's prompt, then model calls and tool calls until the model answers, a
// marker ends the turn, a limit is reached or a call waits for the user's approval. Front ends watch
// it through one ordered stream of TurnEvents and decide approvals through an Approver.
#pragma once

#include "agent/person_channel.hpp"
#include "agent/turn_event.hpp"
#include "common/stop_reason.hpp"
#include "config/config.hpp"
#include "llm/model_client.hpp"
#include "memory/agent_memory.hpp"
#include "memory/cached_memory.hpp"
#include "plugins/registry.hpp"
#include "store/run_journal.hpp"
#include "store/run_lease.hpp"
#include "tools/invoker.hpp"
#include "tools/policy.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace agenthost::agent {

// explore: read-only tools; plan: read-only tools plus planning; execute: every enabled tool.
using tools::Mode;
using tools::mode_name;
using tools::parse_mode;

struct ApprovalRequest {
    std::string conversation_id;
    std::string call_id;
    std::string tool;
    std::string arguments_json;
    std::string reason;  // why approval is needed
};

struct ApprovalDecision {
    enum class Kind { approve, reject, later };
    Kind kind = Kind::later;
    std::string reason = {};  // for reject: fed back to the model
};
// Decides now (approve / reject) or lets the run pause (later) until resume() brings the decision.
// The stop reason of a store's refusal to start or claim a run (conversation_busy,
// idempotency_key_used, store_not_found, run_not_resumable); `otherwise` for any other error.
StopReason store_refusal(const Error& e, StopReason otherwise);

using Approver = std::function<ApprovalDecision(const ApprovalRequest&)>;

struct TurnRequest {
    std::string prompt;
    std::string conversation_id;
    Mode mode = Mode::execute;
    std::string request_context_json = "{}";  // passed to tools and shown to the model
    // A provider instance name; empty: the conversation's last choice, else the default provider.
    std::string provider = {};
    std::string model = {};  // empty: the provider's configured model
    // Earlier messages the client sent with the prompt (OpenAI-style history), as a JSON array of
    // {"role", "content"}; pinned before the prompt.
    std::string history_json = {};
    // The Idempotency-Key the request came with (scoped to its route), kept with the run.
    store::RunKey key = {};
    RunOrigin origin = RunOrigin::cli;  // a server's runs are resumed by the server after a crash
    // The turn the prompt follows (store::RunStart::after_turn): an earlier one than the newest
    // starts a branch (an edited prompt, a regenerated answer). Unset: the newest.
    std::optional<int64_t> after_turn = {};
};

// The events a run's ending emits after its end is stored: an error (for failures) and finished.
// A continuation numbers its events past them: the ids just before its first are its last
// ending's, which a reader following the continuation does not need.
inline constexpr uint64_t kEndingEvents = 2;

struct TurnOutcome {
    StopReason stop_reason = StopReason::internal_error;  // what follows from it: common/stop_reason.hpp
    std::string answer;  // also set for iteration_limit (a summary) and a budget reached mid-answer
    std::string error;   // one line naming the cause when !ok()
    int64_t run = 0;     // the run in the store (0: none was started)
    int iterations = 0;
    int tool_calls = 0;
    int64_t tokens = 0;

    bool ok() const { return stop_info(stop_reason).ok; }
    // The stable code of a failure (AGENT_FAILURE, MODEL_UNAVAILABLE, ITERATION_LIMIT …); "" when
    // ok() or paused.
    std::string_view error_code() const { return stop_info(stop_reason).error_code; }
    std::string_view stop_reason_name() const { return stop_info(stop_reason).name; }
};

// How to continue a stored run.
struct ResumeOptions {
    std::optional<Mode> mode;        // unset: the mode it ran in
    std::string provider = {};       // empty: the provider it ran with
    std::string model = {};          // empty: the model it ran with
    ApprovalDecision decision = {};  // for a run paused for approval: approve / reject (later: ask again)
    bool claimed = false;            // the caller has claimed this interrupted run already (a host taking it over)
};

struct RunControls {
    EventSink on_event;
    Approver approve;  // unset: every approval pauses the run
    // Asks the person what a plugin asks during a call (elicitation, consent to sampling); unset:
    // nobody can be asked, and those requests are refused with words that say so.
    AskPerson ask_person;
    const ah_cancel* cancel = nullptr;
    // Set by a shutting-down server: the run stops at its next step boundary (and, if the cancel
    // token fires as well, at once) and is left `interrupted`, to be resumed later.
    const std::atomic<bool>* stop_requested = nullptr;
    // Told the run's id as soon as it exists in the store.
    std::function<void(int64_t run)> on_started;
    // A resumed run numbers its events after this one: events another host announced before it
    // stopped keep their numbers, so a client's Last-Event-ID never skips or repeats one.
    uint64_t events_after = 0;
};

// What a turn works with. The runner holds one set; every turn borrows it.
struct TurnDeps {
    plugins::Registry& registry;
    tools::Catalogue& catalogue;
    tools::Invoker& invoker;
    llm::ModelClient& model;
    memory::AgentMemory& memory;
    store::RunJournal& journal;
    const config::Config& config;
    // When `memory`'s store is this cache, a turn holds its conversation there: memory is read once per turn.
    memory::CachedMemory* memory_cache = nullptr;
};

class TurnRunner {
public:
    explicit TurnRunner(const TurnDeps& deps)
        : deps_(deps), leases_(std::make_unique<store::LeaseKeeper>(deps.journal, deps.config.store.lease_seconds)) {}

    // `request` is taken (moved in by callers that hold a large prompt only for this call).
    TurnOutcome run(TurnRequest request, const RunControls& controls);
    // Continues a run paused for approval with the user's decision on the waiting call.
    TurnOutcome resume(std::string_view conversation_id, const ApprovalDecision& decision, const RunControls& controls);
    // Continues a paused or interrupted run from its last checkpoint (in another mode or with
    // another provider if asked). A call that finished is never run again; one that was running when
    // the process stopped runs again only if its tool is read-only or idempotent.
    TurnOutcome resume_run(int64_t run_id, const ResumeOptions& options, const RunControls& controls);
    // Starts a new session in the conversation: its session memory is cleared and the model is no
    // longer sent the exchanges before it (the transcript keeps them). Returns the entries cleared.
    Result<int64_t> clear_session(std::string_view conversation_id);
    // The call a paused run of this conversation waits on, if any; an Error when the store could
    // not say (a new turn is then refused: it could slip past a paused run).
    Result<std::optional<ApprovalRequest>> pending_approval(std::string_view conversation_id);

private:
    memory::CachedMemory::TurnHold hold_memory(std::string_view conversation);

    TurnDeps deps_;
    std::unique_ptr<store::LeaseKeeper> leases_;  // the leases of the runs executing here
};

}  // namespace agenthost::agent
