// The end of a turn: the run's end in the store (its status from the stop-reason table), then the
// front end's last events.
#include "agent/turn.hpp"

#include "common/bounded_json.hpp"

#include <spdlog/spdlog.h>

namespace agenthost::agent {
namespace {

using nlohmann::json;
using store::MessageKind;

using json_io::dump;

// The events finish() emits after the run's end is stored: an error (for failures) and finished.
// A run's last checkpoint counts them, so a resumed run numbers its events after them.
constexpr uint64_t kEndEvents = 2;

}  // namespace

bool Turn::stopping() const { return controls_.stop_requested && controls_.stop_requested->load(); }

// A cancel that comes with a shutdown interrupts the run (resumable) rather than cancelling it.
bool Turn::cancelled() const { return controls_.cancel && controls_.cancel->cancelled() && !stopping(); }

TurnStop Turn::answer(const std::string& text, StopReason reason) {
    final_message_ = text;
    return stop(reason, text, "");
}

TurnOutcome Turn::stop(StopReason reason, const std::string& answer, const std::string& error) {
    if (reason != StopReason::approval_pending && reason != StopReason::ask_user)
        (void)deps_.memory.set_pending_question(st_.conversation, "");  // answered by this turn
    TurnOutcome out;
    out.stop_reason = reason;
    out.answer = answer;
    out.error = error;
    return finish(out);
}

// Ends the run in the store (its answer appended, a paused or interrupted run's state saved), then
// tells the front end.
TurnOutcome Turn::finish(TurnOutcome out) {
    out.iterations = st_.iteration;
    out.tool_calls = st_.tool_calls;
    out.tokens = st_.tokens();
    out.run = st_.run;
    const StopInfo& info = stop_info(out.stop_reason);
    store::RunEnd end;
    end.stop_reason = out.stop_reason;
    if (held_) {  // a held step is written with the end, before the answer
        committed_state_ = held_->state;
        end.messages = take_held_messages();
    }
    if (info.status == RunStatus::paused || info.status == RunStatus::interrupted) {
        end.state_json = dump(checkpoint_state(kEndEvents));
    } else if (info.resumable && committed_state_.is_object()) {
        // A failure that may pass: the run resumes from its last step, whose state is kept as it
        // was committed (the current state may have taken a call off the pending list that never
        // finished); only its event number moves past the events of this ending.
        json state = committed_state_;
        state["seq"] = st_.seq + kEndEvents;
        end.state_json = dump(state);
    }
    if (!end.state_json.empty()) end.inputs_json = inputs_to_store();  // only a run that may go on reads them
    end.error = out.error;
    end.answer = out.answer;
    end.counters = counters();
    if (final_message_)
        end.messages.push_back({MessageKind::answer, dump({{"role", "assistant"}, {"content", *final_message_}})});
    lease_.reset();  // no heartbeat may race the end of the run
    if (auto st = deps_.store.end_run(st_.run, end); !st) {
        spdlog::error("turn {} of {}: could not record the end of run {}: {}", st_.turn, st_.conversation, st_.run,
                      st.error().message);
        if (info.status == RunStatus::paused) {
            out.stop_reason = StopReason::store_failure;
            out.error = "could not save the paused run: " + st.error().message;
        }
    }
    if (!out.ok() && out.stop_reason != StopReason::approval_pending && out.stop_reason != StopReason::iteration_limit)
        emit({.kind = TurnEvent::Kind::error,
              .text = out.error,
              .json = dump({{"code", out.error_code()}, {"stop_reason", out.stop_reason_name()}})});
    emit({.kind = TurnEvent::Kind::finished,
          .text = out.answer,
          .json = dump({{"stop_reason", out.stop_reason_name()},
                        {"ok", out.ok()},
                        {"error", out.error},
                        {"error_code", out.error_code()},
                        {"run", st_.run}})});
    return out;
}

TurnOutcome Turn::store_failed(const Error& e) {
    return stop(StopReason::store_failure, "", "could not save the turn: " + e.message);
}

TurnOutcome Turn::refused(StopReason reason, std::string error, int64_t run) {
    TurnOutcome out;
    out.stop_reason = reason;
    out.error = std::move(error);
    out.run = run;
    return out;
}

// A run that could not even start: nothing in the store to end.
TurnOutcome Turn::failed_before_start(const Error& e) {
    const bool busy = e.code == "conversation_busy";
    TurnOutcome out = refused(busy ? StopReason::conversation_busy : StopReason::store_failure,
                              busy ? e.message : "could not start the run: " + e.message);
    emit({.kind = TurnEvent::Kind::error,
          .text = out.error,
          .json = dump({{"code", out.error_code()}, {"stop_reason", out.stop_reason_name()}})});
    return out;
}

}  // namespace agenthost::agent
