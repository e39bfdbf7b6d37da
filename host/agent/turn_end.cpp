// The end of a turn: the run's end in the store (its status from the stop-reason table), then the
// front end's last events.
#include "agent/turn.hpp"

#include "common/bounded_json.hpp"
#include "store/store_error.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace agenthost::agent {
namespace {

using nlohmann::json;
using store::MessageKind;

using json_io::dump;

}  // namespace

bool Turn::stopping() const { return stop_requested(controls_); }

bool Turn::cancelled() const { return cancel_requested(controls_); }

StepResult Turn::ended(const CallResult& call) {
    switch (call.kind) {
        case CallResult::Kind::go_on: return StepResult::go_on();
        case CallResult::Kind::answer: return answer(call.text, call.reason);
        case CallResult::Kind::stop: return stop(call.reason, "", call.text);
        case CallResult::Kind::store_failed: return store_failed(call.text);
    }
    return StepResult::go_on();
}

StepResult Turn::answer(const std::string& text, StopReason reason) {
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
    end.messages = writer_.take_held_for_end();  // a held step is written with the end, before the answer
    if (info.status == RunStatus::paused || info.status == RunStatus::interrupted) {
        end.state_json = dump(writer_.checkpoint_state(kEndingEvents));
    } else if (info.resumable && writer_.committed_state().is_object()) {
        // A failure that may pass: the run resumes from its last step, whose state is kept as it
        // was committed (the current state may have taken a call off the pending list that never
        // finished); only its event number moves past the events of this ending.
        json state = writer_.committed_state();
        state["seq"] = st_.seq + kEndingEvents;
        end.state_json = dump(state);
    }
    if (!end.state_json.empty()) end.inputs_json = writer_.inputs_to_store();  // only a run that may go on reads them
    end.error = out.error;
    end.answer = out.answer;
    end.counters = writer_.counters();
    end.mode = st_.mode;
    if (final_message_)
        end.messages.push_back({MessageKind::answer, dump({{"role", "assistant"}, {"content", *final_message_}})});
    lease_.reset();  // no heartbeat may race the end of the run
    if (auto st = record_end(end); !st) {
        spdlog::error("turn {} of {}: could not record the end of run {}: {}", st_.turn, st_.conversation, st_.run,
                      st.error().message);
        // An end that is not stored is not the run's end: its answer is not given as if it were
        // (the run stays with this host's lease, which lapses, and it is resumed from its last
        // step), and `run` exits non-zero.
        if (!store::is(st.error(), store::StoreFault::lease_lost)) {
            out.stop_reason = StopReason::store_failure;
            out.error = "the end of run " + std::to_string(st_.run) + " could not be recorded: " + st.error().message +
                        (info.status == RunStatus::paused ? "" : "; it will be resumed from its last step once the store works");
        } else {
            out.stop_reason = StopReason::store_failure;
            out.error = st.error().message;
        }
        out.answer.clear();
    }
    if (!out.ok() && out.stop_reason != StopReason::approval_pending && out.stop_reason != StopReason::iteration_limit)
        emit(events::Failed{out.error, out.stop_reason});
    emit(events::Finished{out.answer, out.stop_reason, out.error, st_.run, st_.conversation});
    return out;
}

// The run's end, written again while the store refuses it for a while (a database restart, a
// disk that fills and empties), for up to a third of the lease: past that the lease lapses and the
// run is recovered as interrupted. A lease another process holds now is never retried.
Status Turn::record_end(const store::RunEnd& end) {
    using Clock = std::chrono::steady_clock;
    const auto give_up = Clock::now() + std::chrono::milliseconds(std::max(1, deps_.config.store.lease_seconds) * 1000 / 3);
    auto pause = std::chrono::milliseconds(50);
    for (;;) {
        Status st = deps_.journal.end_run(st_.run, end);
        if (st || store::is(st.error(), store::StoreFault::lease_lost) || store::is(st.error(), store::StoreFault::not_found) ||
            Clock::now() + pause > give_up)
            return st;
        spdlog::warn("turn {} of {}: the end of run {} could not be recorded, trying again: reason=\"{}\"", st_.turn,
                     st_.conversation, st_.run, st.error().message);
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(2000));
    }
}

TurnOutcome Turn::store_failed(const std::string& why) {
    return stop(StopReason::store_failure, "", "could not save the turn: " + why);
}

TurnOutcome Turn::refused(StopReason reason, std::string error, int64_t run) {
    TurnOutcome out;
    out.stop_reason = reason;
    out.error = std::move(error);
    out.run = run;
    return out;
}

StopReason store_refusal(const Error& e, StopReason otherwise) {
    static constexpr std::pair<store::StoreFault, StopReason> kRefusals[] = {
        {store::StoreFault::conversation_busy, StopReason::conversation_busy},
        {store::StoreFault::approval_pending, StopReason::approval_pending},
        {store::StoreFault::idempotency_key_used, StopReason::idempotency_key_used},
        {store::StoreFault::not_found, StopReason::run_not_found},
        {store::StoreFault::run_not_resumable, StopReason::run_not_resumable},
    };
    auto fault = store::store_fault(e);
    for (const auto& [refused, reason] : kRefusals)
        if (fault == refused) return reason;
    return otherwise;
}

// A run that could not even start: nothing in the store to end, so whatever refused it, a retry
// cannot run anything twice.
TurnOutcome Turn::failed_before_start(const Error& e, std::string_view conversation) {
    const StopReason reason = store_refusal(e, StopReason::store_unavailable);
    std::string why = reason == StopReason::store_unavailable ? "could not start the run: " + e.message : e.message;
    if (reason == StopReason::approval_pending)  // the refusal names the call, when it can be read
        if (auto waiting = pending_approval(deps_.journal, conversation); waiting && *waiting)
            why = "conversation " + std::string(conversation) + " has a run waiting for approval of " + (*waiting)->tool +
                  "; approve or reject it first";
    TurnOutcome out = refused(reason, std::move(why));
    emit(events::Failed{out.error, out.stop_reason});
    return out;
}

}  // namespace agenthost::agent
