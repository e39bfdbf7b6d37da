// How a turn's steps reach the run journal. A step — its messages, the journal result of a call
// that ran, and the checkpoint after it — is one transaction; what it wrote joins the context
// window. A step can be held back to ride with the next write, so a reply costs one commit, and a
// call's intent is made durable before the call starts. The run's inputs go with its first write.
#pragma once

#include "agent/context_window.hpp"
#include "agent/loop_state.hpp"
#include "store/run_journal.hpp"
#include "tools/catalogue.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace agenthost::agent {

class StepWriter {
public:
    // `state` is read at every write (the run, its counters, the checkpoint); both it and `window`
    // must outlive the writer.
    StepWriter(store::RunJournal& journal, const LoopState& state, ContextWindow& window)
        : journal_(journal), state_(state), window_(window) {}

    // Where the run's writing starts: the checkpoint already committed (null: none yet; a resumed
    // run's last), and whether the run's inputs are stored already.
    void begin_with(nlohmann::json committed, bool inputs_stored);

    // Commits a step: a held step's messages first, then `messages`; the journal result of the call
    // that ran (`call_id`: its result is the last message's; `result`: for its error code); and the
    // checkpoint after it. `events_after`: events the caller emits once the step is stored (their
    // numbers are in the checkpoint).
    Status commit(std::vector<store::NewMessage> messages, const std::string& call_id = "",
                  const nlohmann::json& result = nullptr, uint64_t events_after = 0);
    // Holds a step back to ride with the next write: the first checkpoint, and a reply whose calls
    // are still to be settled. Every call of such a reply ends in a write (its intent, its result,
    // or the run's end), which carries the held step first. A crash before that write loses nothing
    // that happened: no call of the reply has started, and the run resumes from the step before.
    void hold(std::vector<store::NewMessage> messages);
    bool holding() const { return held_.has_value(); }
    // Writes the held step as it was held (its checkpoint still lists its calls as pending), with
    // `intent` when a call is about to run.
    Status write_held(std::optional<store::ToolIntent> intent = std::nullopt, store::Flush flush = store::Flush::now);
    // Records that `call` of `tool` is about to run, durable before it starts: with the held step
    // when there is one (one commit), else on its own.
    Status commit_intent(const ToolCall& call, const tools::Tool& tool);

    // For the run's end: the held step's messages (taken: its checkpoint becomes the committed one).
    std::vector<store::NewMessage> take_held_for_end();
    // The last checkpoint written or resumed from (null before the first).
    const nlohmann::json& committed_state() const { return committed_; }
    // The run's inputs to store with a write, once; "" once they are stored.
    std::string inputs_to_store() const;
    store::RunCounters counters() const;
    // The checkpoint of the state now; it counts `events_after` events the caller emits once it is
    // stored, so a resumed run numbers its events after them.
    nlohmann::json checkpoint_state(uint64_t events_after = 0) const;

private:
    Status write(store::StepWrite step, nlohmann::json state);
    std::vector<store::NewMessage> take_held_messages();

    store::RunJournal& journal_;
    const LoopState& state_;
    ContextWindow& window_;
    nlohmann::json committed_;    // the last checkpoint written (or resumed from)
    bool inputs_stored_ = false;  // the run's inputs are in the store
    struct HeldStep {
        store::StepWrite step;
        nlohmann::json state;  // its checkpoint, as step.state_json holds it
    };
    std::optional<HeldStep> held_;
};

}  // namespace agenthost::agent
