#include "agent/turn_runner.hpp"

#include "agent/turn.hpp"

namespace agenthost::agent {

memory::CachedMemory::TurnHold TurnRunner::hold_memory(std::string_view conversation) {
    return deps_.memory_cache ? deps_.memory_cache->hold(conversation) : memory::CachedMemory::TurnHold();
}

// A paused run holds its conversation: begin_run refuses a new turn in the transaction that would
// start it (approval_pending), so no turn slips past a paused one and none pays a read to check.
TurnOutcome TurnRunner::run(TurnRequest request, const RunControls& controls) {
    const memory::CachedMemory::TurnHold held = hold_memory(request.conversation_id);
    Turn turn(deps_, controls, *leases_);
    return turn.start(std::move(request));
}

TurnOutcome TurnRunner::resume(std::string_view conversation_id, const ApprovalDecision& decision, const RunControls& controls) {
    auto found = deps_.journal.paused_run(conversation_id);
    if (!found)
        return Turn::refused(StopReason::store_unavailable, "could not read which run of conversation " +
                                                                std::string(conversation_id) +
                                                                " waits for approval: " + found.error().message);
    const std::optional<store::RunRecord>& paused = *found;
    if (!paused) {
        std::string why = "conversation " + std::string(conversation_id) + " has no run waiting for approval";
        // A process stopped while it asked leaves the run interrupted, not paused: resuming it asks again.
        auto latest = deps_.journal.runs(conversation_id, 1);  // unreadable: the refusal goes without the hint
        if (latest && !latest->empty() && latest->front().status == RunStatus::interrupted)
            why += "; its latest run (" + std::to_string(latest->front().id) +
                   ") was interrupted: resume that run, and a call still waiting for approval is asked again";
        return Turn::refused(StopReason::not_paused, why);
    }
    ResumeOptions options;
    options.decision = decision;
    return resume_run(paused->id, options, controls);
}

TurnOutcome TurnRunner::resume_run(int64_t run_id, const ResumeOptions& options, const RunControls& controls) {
    if (!options.provider.empty() && !deps_.config.provider_named(options.provider))
        return Turn::refused(StopReason::provider_unavailable, "provider '" + options.provider + "' is not configured", run_id);
    // Unreadable now: refused. A run the caller claimed stays leased to this process until the lease
    // lapses; recovery then marks it interrupted for the next takeover.
    auto read = deps_.journal.run(run_id);
    if (!read)
        return Turn::refused(StopReason::store_unavailable,
                             "run " + std::to_string(run_id) + " cannot be read now: " + read.error().message, run_id);
    std::optional<store::RunRecord>& record = *read;
    if (!record)
        return Turn::refused(StopReason::run_not_found,
                             "there is no run " + std::to_string(run_id) + " (agenthost runs lists them)", run_id);
    if (options.claimed) record->status = RunStatus::interrupted;  // as it was when the caller claimed it
    // A later turn of the conversation went on without this run: its steps would land after that
    // turn's answer, so it stays as it is.
    auto newest = deps_.journal.runs(record->conversation, 1);
    if (!newest)
        return Turn::refused(
            StopReason::store_unavailable,
            "could not read whether a later run followed run " + std::to_string(run_id) + ": " + newest.error().message, run_id);
    if (!newest->empty() && newest->front().id != run_id)
        return Turn::refused(StopReason::run_not_resumable,
                             "run " + std::to_string(run_id) + " was followed by run " + std::to_string(newest->front().id) +
                                 " in conversation " + record->conversation +
                                 "; a later turn went on without it, so it cannot be resumed (continue the conversation instead)",
                             run_id);
    if (auto claimed = options.claimed ? Status(Ok{}) : deps_.journal.claim(run_id); !claimed) {
        return Turn::refused(store_refusal(claimed.error(), StopReason::store_failure), claimed.error().message, run_id);
    }
    const memory::CachedMemory::TurnHold held = hold_memory(record->conversation);
    Turn turn(deps_, controls, *leases_);
    return turn.resume(*record, options);  // as read before the claim: its status is what the run was
}

Result<int64_t> TurnRunner::clear_session(std::string_view conversation_id) {
    // Read before anything is cleared: a store that cannot say where the session starts clears nothing.
    auto newest = deps_.journal.runs(conversation_id, 1);
    if (!newest) return newest.error();
    const int64_t next_turn = newest->empty() ? 1 : newest->front().turn + 1;
    auto cleared = deps_.memory.store().clear(conversation_id);
    if (!cleared) return cleared.error();
    if (auto st = deps_.memory.store().set(conversation_id, kSessionStartKey, std::to_string(next_turn)); !st) return st.error();
    return *cleared;
}

Result<std::optional<ApprovalRequest>> TurnRunner::pending_approval(std::string_view conversation_id) {
    return Turn::pending_approval(deps_.journal, conversation_id);
}

Result<std::optional<ApprovalRequest>> Turn::pending_approval(store::RunJournal& journal, std::string_view conversation_id) {
    auto paused = journal.paused_run(conversation_id);
    if (!paused) return paused.error();
    if (!*paused) return std::optional<ApprovalRequest>();
    auto cp = journal.last_checkpoint((*paused)->id);
    if (!cp) return cp.error();
    if (!*cp) return std::optional<ApprovalRequest>();
    // An unreadable checkpoint still holds the conversation: approving or rejecting says why it
    // cannot continue, and no new run slips past the paused one.
    auto saved = loop_state_from_json(nlohmann::json::parse((*cp)->state_json, nullptr, false), (*cp)->inputs_json);
    if (!saved)
        return std::optional<ApprovalRequest>(
            ApprovalRequest{std::string(conversation_id), "", "(unreadable checkpoint)", "{}", saved.error().message});
    return Turn::waiting(*saved);
}

}  // namespace agenthost::agent
