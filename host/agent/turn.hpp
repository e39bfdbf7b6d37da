// One turn in progress: its typed loop state and the loop that advances it, over four parts it
// owns — the context window (what the model is sent), the step writer (what reaches the run
// journal), the tool offer (what the model may call) and the tool calls (how each call of a reply
// is settled). Internal to agent/: turn_loop.cpp starts, resumes and runs the loop and calls the
// model; turn_end.cpp ends the run in the store and tells the front end.
#pragma once

#include "agent/context_window.hpp"
#include "agent/loop_state.hpp"
#include "agent/step_writer.hpp"
#include "agent/tool_calls.hpp"
#include "agent/tool_offer.hpp"
#include "toolcalls/extractor.hpp"
#include "agent/turn_runner.hpp"
#include "llm/fallback_chain.hpp"
#include "llm/model_client.hpp"
#include "plugins/run_kv.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace agenthost::agent {

// The tool-call parser's types, as the loop reads replies with them.
using toolcalls::Extraction;
using toolcalls::ToolCallStream;
using toolcalls::VisibleDelta;

struct Reply;  // one provider reply being collected (turn_loop.cpp)

// A model call's result: the reply, or why there is none (typed from the LLM queue on) and the
// words for the user.
struct ModelCall {
    std::unique_ptr<Reply> reply;
    StopReason failure = StopReason::answered;  // meaningful without a reply
    std::string message;
};

// What a step of the loop leaves: the turn goes on, or it has ended with its outcome. Every step
// returns one, and the loop stops at the first that ended.
class StepResult {
public:
    static StepResult go_on() { return StepResult(); }
    // Implicit, so a step ends the turn with `return finish(…)` / `return stop(…)`.
    StepResult(TurnOutcome ended) : ended_(std::move(ended)) {}  // NOLINT(google-explicit-constructor)
    bool ended() const { return ended_.has_value(); }
    // `if (auto next = step()) return next;` passes an ended turn up.
    explicit operator bool() const { return ended(); }
    TurnOutcome take() { return std::move(*ended_); }

private:
    StepResult() = default;
    std::optional<TurnOutcome> ended_;
};

// The first turn of the conversation's current session (0: the whole conversation).
int64_t session_start_turn(memory::AgentMemory& memory, std::string_view conversation);
inline constexpr const char* kSessionStartKey = "session_start_turn";

class Turn : private TurnVoice {
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
    // The call a paused run of `conversation` waits on, if any; an Error when the store could not say.
    static Result<std::optional<ApprovalRequest>> pending_approval(store::RunJournal& journal, std::string_view conversation);

    // A run that could not start or continue: nothing in the store to end.
    static TurnOutcome refused(StopReason reason, std::string error, int64_t run = 0);

private:
    // ---- the loop (turn_loop.cpp) ----
    // A resumed run that never took a step: started again from its prompt and `saved` inputs.
    TurnOutcome start_over(const store::RunRecord& run, const ResumeOptions& options, LoopState saved, bool has_inputs);
    // Takes a checkpoint's state for the run `run` is, with what `options` change.
    void adopt(LoopState saved, const store::RunRecord& run, const ResumeOptions& options);
    std::string requested_model(const TurnRequest& request, const std::string& provider) const;
    Result<std::string> choose_provider(const TurnRequest& request);
    // The conversation's earlier exchanges and the client's history, pinned in the window.
    Status pin();
    TurnOutcome loop();
    StepResult step();
    StepResult malformed(const Reply& reply, const Extraction& found, int max_tokens);
    // One model call, offering the mode's tools or none.
    ModelCall call_model(bool offer_tools, int max_tokens);
    // Asks the provider of the moment, and the next of the run's fallback chain while one fails
    // in a way that falls back (llm/fallback_chain.hpp); each switch is an event.
    llm::ChatOutcome ask_chain(plugins::CallInput& call, const llm::ChatCallbacks& callbacks, Reply& reply,
                               const std::string& tools_text, int max_tokens);
    llm::ChatOutcome ask(const std::string& provider, const plugins::CallInput& call, const llm::ChatCallbacks& callbacks);
    TurnOutcome final_summary();
    // The chat request as JSON text: the system prompt built now, over the context window.
    // `model`: the run's own for its provider, "" (the provider's configured one) for a fallback.
    std::string request_text(const std::string& tools_text, int max_tokens, const std::string& model);
    void prune();
    int cap() const;
    // A write's status as the loop's: go on, or end the run as a store failure.
    StepResult stored(const Status& written);
    // A block of SSE ids per recovery of the run (RunRecord::recoveries): more events than one
    // stretch between checkpoints can send (a reply is capped at 32 MiB of tokens), few enough
    // that ids stay exact in JavaScript (2^53) for millions of recoveries.
    static constexpr uint64_t kEventsPerRecovery = 1'000'000'000;
    uint64_t first_event_after(const store::RunRecord& run, uint64_t checkpointed) const;
    Status record_end(const store::RunEnd& end);
    void log(EventLevel level, const std::string& message) override;
    void emit(TurnEventBody event) override;

    // The plugins' context hooks for this turn: at its start, and again (`refresh`) after a plugin
    // tool changed something, so the model's next request describes what is there now.
    void read_plugin_context(bool refresh);
    void refresh_plugin_context() override { read_plugin_context(true); }
    // How a tool call left the turn, as the loop's step result.
    StepResult ended(const CallResult& call);

    // ---- ending (turn_end.cpp) ----
    StepResult answer(const std::string& text, StopReason reason);
    TurnOutcome stop(StopReason reason, const std::string& answer, const std::string& error);
    TurnOutcome finish(TurnOutcome out);
    TurnOutcome store_failed(const std::string& why);
    TurnOutcome hand_back(const store::RunRecord& run, StopReason refusal, const std::string& why);
    TurnOutcome failed_before_start(const Error& e, std::string_view conversation);
    bool stopping() const;
    bool cancelled() const;

    TurnDeps deps_;
    const RunControls& controls_;
    store::LeaseKeeper& leases_;
    LoopState st_;  // saved in every checkpoint
    ContextWindow window_;
    StepWriter writer_{deps_.journal, st_, window_};
    ToolOffer offer_;
    ToolCalls calls_{deps_, controls_, st_, writer_, offer_, *this};
    std::optional<std::string> final_message_;
    std::optional<llm::FallbackChain> chain_;  // made at the first model call, for st_.provider
    std::string answering_;                    // the provider that answered the last model call
    std::optional<store::RunLease> lease_;
    // What the run's provider wrote in its key-value store, read back without the store.
    plugins::RunKv run_kv_{deps_.registry.services().run_kv()};
};

}  // namespace agenthost::agent
