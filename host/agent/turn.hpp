// One turn in progress: its typed loop state and the loop that advances it. Internal to agent/:
// turn_loop.cpp starts, resumes and runs the loop and calls the model; turn_tools.cpp settles the
// model's tool calls; turn_end.cpp ends the run in the store and tells the front end.
#pragma once

#include "agent/loop_state.hpp"
#include "agent/toolcall_extractor.hpp"
#include "agent/turn_runner.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace agenthost::agent {

struct Reply;  // one provider reply being collected (turn_loop.cpp)

// A model call's result: the reply, or why there is none (typed from the LLM queue on) and the
// words for the user.
struct ModelCall {
    std::unique_ptr<Reply> reply;
    StopReason failure = StopReason::answered;  // meaningful without a reply
    std::string message;
};

// Set when the turn has ended: every step returns one, and the loop stops at the first.
using TurnStop = std::optional<TurnOutcome>;

// The first turn of the conversation's current session (0: the whole conversation).
int64_t session_start_turn(memory::AgentMemory& memory, std::string_view conversation);
inline constexpr const char* kSessionStartKey = "session_start_turn";

class Turn {
public:
    Turn(const TurnDeps& deps, const RunControls& controls, store::LeaseKeeper& leases);
    ~Turn();

    TurnOutcome start(TurnRequest request);
    // The first steps of a stored run: its state, the plugins' context, the first checkpoint. Also
    // how a run that was stopped before its first checkpoint starts again. `history`: the client's
    // earlier messages; `inputs_stored`: they and the request context are stored with the run.
    TurnOutcome begin(TurnRequest request, const store::RunRecord& run, const std::string& provider, nlohmann::json history,
                      bool inputs_stored);
    // Continues a paused or interrupted run from its last checkpoint.
    TurnOutcome resume(const store::RunRecord& run, const ResumeOptions& options);

    // The call a paused run's checkpoint waits on, if any.
    static std::optional<ApprovalRequest> waiting(const LoopState& saved);

    // A run that could not start or continue: nothing in the store to end.
    static TurnOutcome refused(StopReason reason, std::string error, int64_t run = 0);

private:
    // ---- the loop (turn_loop.cpp) ----
    std::string choose_provider(const TurnRequest& request);
    void pin();
    // The prompt's message as JSON text; written into each model request, never kept apart.
    static std::string prompt_message(std::string_view prompt);
    static void append_prompt_message(std::string& out, std::string_view prompt);
    TurnOutcome loop();
    TurnStop step();
    TurnStop malformed(const Reply& reply, const Extraction& found, int max_tokens);
    // One model call, offering the mode's tools or none.
    ModelCall call_model(bool offer_tools, int max_tokens);
    TurnOutcome final_summary();
    const nlohmann::json& offered_tools();
    void note_family_use(const tools::Tool& tool);  // tools/tool_families.hpp
    const std::string& offered_tools_text();        // offered_tools() serialised, cached with it
    const ToolSet& known_tools();
    void refresh_tool_caches();
    // The chat request as JSON text, built by appending: every message is serialised once, when it
    // joins the context. Byte for byte what serialising the request object would give.
    std::string request_text(const std::string& tools_text, int max_tokens);
    void add_working(std::string message_json, int64_t id);
    void prune();
    int cap() const;
    // Commits a step: its messages (added to the model's working context), the journal result of a
    // call that ran (`call_id`: the result stored with the last message; `result`: for its error
    // code), and the checkpoint after it, in one transaction. `events_after`: events the caller
    // emits once the step is stored (their numbers are in the checkpoint).
    TurnStop commit(std::vector<store::NewMessage> messages, const std::string& call_id = "",
                    const nlohmann::json& result = nullptr, uint64_t events_after = 0);
    // Holds a step back to ride with the next write, so a step costs one commit: the first
    // checkpoint, and a reply whose calls are still to be settled. Every call of such a reply ends in
    // a write (its intent, its result, or the run's end), which carries the held step first. A crash
    // before that write loses nothing that happened: no call of the reply has started, and the run
    // resumes from the step before (or from its prompt).
    void hold(std::vector<store::NewMessage> messages);
    // Records that `call` of `tool` is about to run, durable before it starts: with the held step
    // when there is one (one commit), else on its own.
    TurnStop commit_intent(const ToolCall& call, const tools::Tool& tool);
    // Writes the held step as it was held (its checkpoint still lists its calls as pending), with
    // `intent` when a call is about to run.
    TurnStop write_held(std::optional<store::ToolIntent> intent = std::nullopt, store::Flush flush = store::Flush::now);
    // Writes a step and takes its messages into the model's working context.
    // The run's inputs are stored with its first write (or its end, when that comes first).
    TurnStop write(store::StepWrite step, nlohmann::json state);
    // The run's inputs to store with a write, once; "" once they are stored.
    std::string inputs_to_store() const;
    // The held step's messages (taken: it is no longer held), or none.
    std::vector<store::NewMessage> take_held_messages();
    store::RunCounters counters() const;
    nlohmann::json checkpoint_state(uint64_t events_after = 0);
    // A block of SSE ids per recovery of the run (RunRecord::recoveries): more events than one
    // stretch between checkpoints can send (a reply is capped at 32 MiB of tokens), few enough
    // that ids stay exact in JavaScript (2^53) for millions of recoveries.
    static constexpr uint64_t kEventsPerRecovery = 1'000'000'000;
    uint64_t first_event_after(const store::RunRecord& run, uint64_t checkpointed) const;
    Status record_end(const store::RunEnd& end);
    void log(const std::string& level, const std::string& message);
    void emit(TurnEvent event);

    // ---- tool calls (turn_tools.cpp) ----
    struct SettledCall {
        nlohmann::json result;
        bool completes_journal = false;  // the journal entry of the interrupted call is completed by it
    };
    tools::CallSite call_site(bool approved) const;
    TurnStop handle_call(const ToolCall& call);
    std::optional<SettledCall> settle_interrupted(const ToolCall& call, const std::optional<tools::Tool>& tool);
    TurnStop ask_approval(const ToolCall& call, const std::string& reason);
    TurnStop decide(const ToolCall& call, const ApprovalDecision& decision);
    TurnStop run_call(const ToolCall& call, const tools::Tool& tool, bool approved);
    // The plugins' context hooks for this turn: at its start, and again (`refresh`) after a plugin
    // tool changed something, so the model's next request describes what is there now.
    void read_plugin_context(bool refresh);
    TurnStop record(const ToolCall& call, const nlohmann::json& result, bool journaled = false);
    TurnEvent shown_result(const ToolCall& call, const nlohmann::json& result, std::string_view content, bool is_error,
                           std::string small_json) const;
    void adopt_plan(const std::string& tool, const nlohmann::json& result);
    void emit_tasks();

    // ---- ending (turn_end.cpp) ----
    TurnStop answer(const std::string& text, StopReason reason);
    TurnOutcome stop(StopReason reason, const std::string& answer, const std::string& error);
    TurnOutcome finish(TurnOutcome out);
    TurnOutcome store_failed(const Error& e);
    TurnOutcome failed_before_start(const Error& e);
    bool stopping() const;
    bool cancelled() const;

    TurnDeps deps_;
    const RunControls& controls_;
    store::LeaseKeeper& leases_;
    LoopState st_;                    // saved in every checkpoint
    nlohmann::json committed_state_;  // the last checkpoint written (or resumed from)
    bool inputs_stored_ = false;      // the run's inputs are in the store
    struct HeldStep {
        store::StepWrite step;
        nlohmann::json state;  // its checkpoint, as step.state_json holds it
    };
    std::optional<HeldStep> held_;  // a step waiting to ride with the next write
    struct ContextMessage {
        std::string json;          // the message as the model is sent it
        bool tool_result = false;  // role "tool": pruning keeps it with the call before it
    };
    std::vector<std::string> pinned_;      // earlier exchanges and the client's history, serialised: never pruned
    std::vector<ContextMessage> working_;  // this run's messages since the last prune …
    std::vector<int64_t> working_ids_;     // … and their ids in the transcript
    std::set<std::string> unsure_;         // calls pending when a resumed run had stopped
    std::set<std::string> used_ids_;       // every tool-call id of the run so far
    std::optional<std::string> final_message_;
    std::optional<store::RunLease> lease_;
    std::optional<nlohmann::json> offered_cache_;
    std::optional<std::string> offered_text_cache_;
    std::string on_demand_text_;           // the families not offered yet, for the system prompt (built with offered_cache_) …
    std::set<std::string> held_families_;  // … and their names
    std::optional<ToolSet> known_cache_;
    std::shared_ptr<const std::vector<plugins::ToolInfo>> cached_snapshot_;  // what the caches were built from
};

}  // namespace agenthost::agent
