#include "agent/step_writer.hpp"

#include "common/bounded_json.hpp"

#include <iterator>

namespace agenthost::agent {

using json_io::dump;
using nlohmann::json;

void StepWriter::begin_with(json committed, bool inputs_stored) {
    committed_ = std::move(committed);
    inputs_stored_ = inputs_stored;
}

store::RunCounters StepWriter::counters() const {
    return {state_.iteration, state_.tool_calls, state_.input_tokens, state_.output_tokens};
}

json StepWriter::checkpoint_state(uint64_t events_after) const {
    json state = to_json(state_);
    state["seq"] = state_.seq + events_after;
    return state;
}

std::string StepWriter::inputs_to_store() const { return inputs_stored_ ? std::string() : dump(inputs_to_json(state_)); }

Status StepWriter::commit(std::vector<store::NewMessage> messages, const std::string& call_id, const json& result,
                          uint64_t events_after) {
    store::StepWrite step;
    step.messages = take_held_messages();  // a held step's messages come first
    step.messages.insert(step.messages.end(), std::make_move_iterator(messages.begin()), std::make_move_iterator(messages.end()));
    step.journal_call_id = call_id;  // its result is the last message's (the caller puts it there)
    if (!call_id.empty()) {
        if (json_io::get_bool(result, "is_error", false))  // stable codes; the tool's own code stays in the result
            step.journal_error_code =
                json_io::get_string(result, "error_code") == "plugin_failure" ? "PLUGIN_FAILURE" : "TOOL_FAILURE";
    }
    step.counters = counters();
    step.mode = state_.mode;
    json state = checkpoint_state(events_after);
    step.state_json = dump(state);
    return write(std::move(step), std::move(state));
}

void StepWriter::hold(std::vector<store::NewMessage> messages) {
    HeldStep held;
    held.step.messages = take_held_messages();
    held.step.messages.insert(held.step.messages.end(), std::make_move_iterator(messages.begin()),
                              std::make_move_iterator(messages.end()));
    held.step.counters = counters();
    held.step.mode = state_.mode;
    held.state = checkpoint_state();
    held.step.state_json = dump(held.state);
    held_ = std::move(held);
}

std::vector<store::NewMessage> StepWriter::take_held_messages() {
    std::vector<store::NewMessage> messages = held_ ? std::move(held_->step.messages) : std::vector<store::NewMessage>{};
    held_.reset();
    return messages;
}

std::vector<store::NewMessage> StepWriter::take_held_for_end() {
    if (held_) committed_ = held_->state;
    return take_held_messages();
}

Status StepWriter::write_held(std::optional<store::ToolIntent> intent, store::Flush flush) {
    HeldStep held = std::move(*held_);
    held_.reset();
    held.step.intent = std::move(intent);
    held.step.flush = flush;
    return write(std::move(held.step), std::move(held.state));
}

Status StepWriter::commit_intent(const ToolCall& call, const tools::Tool& tool) {
    store::ToolIntent intent{call.id, tool.name, dump(call.arguments)};
    // The intent of a call that may run twice (read-only or idempotent) need not reach the disk
    // before the call: a power cut that loses it loses the result too (syncing the result syncs
    // it), and the run redoes both. A killed process loses neither. A call that changes things
    // waits for the disk, so that after any stop its outcome is known to be unknown.
    const store::Flush flush = tool.repeatable() ? store::Flush::with_next : store::Flush::now;
    // With the held reply, whose checkpoint still lists this call as pending: a crash during the
    // call resumes to it, and the journal says it started.
    if (held_) return write_held(std::move(intent), flush);
    return journal_.journal_intent(state_.run, intent, flush);
}

Status StepWriter::write(store::StepWrite step, json state) {
    step.inputs_json = inputs_to_store();
    auto ids = journal_.write_step(state_.run, step);
    if (!ids) return ids.error();
    inputs_stored_ = true;
    committed_ = std::move(state);
    for (size_t i = 0; i < step.messages.size(); ++i) window_.add(step.messages[i].body, (*ids)[i]);
    return Ok{};
}

}  // namespace agenthost::agent
