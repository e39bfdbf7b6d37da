// Who holds a run, when a holder has lost it, and how messages are named in a store: the rules
// every run journal follows, written once so the SQLite and PostgreSQL journals cannot drift.
#pragma once

#include "store/run_journal.hpp"

#include <string>

namespace agenthost::store {

// "prompt" | "answer" | "step", as stored; a word this build does not know reads as a step.
inline constexpr Choice<MessageKind> kMessageKinds[] = {
    {MessageKind::prompt, "prompt", "the user's prompt that starts a turn"},
    {MessageKind::answer, "answer", "the turn's final answer"},
    {MessageKind::step, "step", "a model reply or a tool result within the turn"},
};
inline const char* message_kind_name(MessageKind kind) { return choice_name<MessageKind>(kMessageKinds, kind); }
inline MessageKind message_kind_from(std::string_view name) {
    return choice_from<MessageKind>(kMessageKinds, name).value_or(MessageKind::step);
}

// This process as a lease owner: "host:pid:start-time", which names one process for good (a pid
// alone is reused).
std::string this_process_owner();

// What this host can tell of the process an owner id names.
enum class OwnerState { gone, alive, unknown /* another host: only its lease speaks for it */ };
OwnerState owner_state(const std::string& owner);

// Whether process `self` may still write to run `run`, whose row names `holder` ("" for none) and
// `status` (as stored): Ok, store_not_found when `found` is false, or lease_lost when the run is no
// longer this process's (another process claimed it, or it was recovered as interrupted after this
// process's lease lapsed): its late writes are refused, never applied beside the new holder's.
Status may_write(int64_t run, bool found, std::string_view holder, std::string_view status, std::string_view self);

// Why a `running` run is taken from its holder by recovery, if it is.
enum class Abandonment {
    none,              // its holder is alive, or its lease has not lapsed where its holder cannot be seen
    own_lease_lapsed,  // this process's own run whose lease lapsed: the store refused its writes for that long
    holder_gone,       // its holder was a process on this host that has exited
    lease_lapsed,      // its holder is on another host and stopped renewing the lease
};
// `lease_expired`: the run's lease_until is in the past. A live holder on this host keeps its run
// however late its lease (stopped with Ctrl-Z, in a debugger): taking it over would run its steps twice.
Abandonment abandonment(const std::string& holder, bool lease_expired, const std::string& self);
// The error stored with a run recovered for `why` (not Abandonment::none).
const char* abandonment_text(Abandonment why);
// begin_run's refusal when the conversation has a run going: `run` is its id, or 0 when the
// store only knows that there is one.
Error conversation_busy(std::string_view conversation, int64_t run);
// begin_run's refusal when the conversation has run `run` paused, waiting for a call's approval:
// no turn goes on past it until it is approved or rejected.
Error approval_pending(std::string_view conversation, int64_t run);
// begin_run's refusal when run `run` (0: unknown) was started with the same Idempotency-Key.
Error idempotency_key_used(int64_t run);

// The runs claim() may take, as an SQL condition on the runs table's status and stop_reason
// columns: the same rule as resumable(), from the stop-reason table, for every journal's claim.
std::string claimable_sql();

// Seconds since the epoch, as the journals store times.
double now_seconds();

}  // namespace agenthost::store
