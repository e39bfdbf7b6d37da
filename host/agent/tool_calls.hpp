// The model's tool calls in a turn: the loop guard, the policy's verdict, approvals, the tool
// journal, and each result as the model and the user see it. A part of the Turn (agent/turn.hpp),
// beside the context window, the step writer and the tool offer; internal to agent/.
#pragma once

#include "agent/loop_state.hpp"
#include "agent/step_writer.hpp"
#include "agent/tool_offer.hpp"
#include "agent/turn_runner.hpp"
#include "common/cancel.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <set>
#include <string>

namespace agenthost::agent {

// The server is shutting down: the run stops at its next step boundary, resumable.
inline bool stop_requested(const RunControls& c) { return c.stop_requested && c.stop_requested->load(); }
// The user cancelled the turn. A cancel that comes with a shutdown interrupts the run (resumable)
// rather than cancelling it.
inline bool cancel_requested(const RunControls& c) { return c.cancel && c.cancel->cancelled() && !stop_requested(c); }

// What the tool calls need from the turn that owns them.
class TurnVoice {
public:
    virtual void emit(TurnEventBody event) = 0;
    virtual void log(EventLevel level, const std::string& message) = 0;
    // A plugin tool changed something: the plugins' context is read again for the next request.
    virtual void refresh_plugin_context() = 0;

protected:
    ~TurnVoice() = default;
};

// How a call leaves the turn: it goes on, or the turn ends with an answer, a stop or a store
// failure. The turn ends the run; a call only says how.
struct CallResult {
    enum class Kind { go_on, answer, stop, store_failed };
    Kind kind = Kind::go_on;
    StopReason reason = StopReason::answered;
    std::string text;  // answer: the answer; stop and store_failed: the error

    static CallResult go_on() { return {}; }
    static CallResult answer(std::string text, StopReason reason) { return {Kind::answer, reason, std::move(text)}; }
    static CallResult stop(StopReason reason, std::string error) { return {Kind::stop, reason, std::move(error)}; }
    static CallResult store_failed(const Error& e) { return {Kind::store_failed, StopReason::store_failure, e.message}; }
    bool ended() const { return kind != Kind::go_on; }
};

class ToolCalls {
public:
    ToolCalls(const TurnDeps& deps, const RunControls& controls, LoopState& state, StepWriter& writer, ToolOffer& offer,
              TurnVoice& voice)
        : deps_(deps), controls_(controls), st_(state), writer_(writer), offer_(offer), voice_(voice) {}

    // Runs (or refuses, or holds for approval) one call of the model's reply.
    CallResult handle(const ToolCall& call);
    // The user's decision on a call that waited for approval.
    CallResult decide(const ToolCall& call, const ApprovalDecision& decision);

    // A call that was pending when the process stopped: the journal says whether it started.
    void mark_unsure(const std::string& call_id) { unsure_.insert(call_id); }
    // Ids key the journal, so they are unique in the run: `proposed` (a provider's own id) when it
    // is, else one made from the run, the iteration and `index`.
    std::string unique_id(const std::string& proposed, size_t index);
    // An id the run used before (read back on resume).
    void note_used(const std::string& call_id) { used_ids_.insert(call_id); }

private:
    struct SettledCall {
        nlohmann::json result;
        bool completes_journal = false;  // the journal entry of the interrupted call is completed by it
    };
    tools::CallSite call_site(bool approved) const;
    Result<std::optional<SettledCall>> settle_interrupted(const ToolCall& call, const std::optional<tools::Tool>& tool);
    CallResult ask_approval(const ToolCall& call, const std::string& reason);
    CallResult run_call(const ToolCall& call, const tools::Tool& tool, bool approved);
    PersonCall person_call(const tools::Tool& tool, const std::string& call_id);
    CallResult record(const ToolCall& call, const nlohmann::json& result, bool journaled = false);
    events::ToolResult shown_result(const ToolCall& call, const nlohmann::json& result, std::string_view content, bool is_error,
                                    std::string small_json) const;
    void adopt_plan(const std::string& tool, const nlohmann::json& result);
    void emit_tasks();

    const TurnDeps& deps_;
    const RunControls& controls_;
    LoopState& st_;
    StepWriter& writer_;
    ToolOffer& offer_;
    TurnVoice& voice_;
    std::set<std::string> unsure_;    // calls pending when a resumed run had stopped
    std::set<std::string> used_ids_;  // every tool-call id of the run so far
};

}  // namespace agenthost::agent
