// Who holds a run and how its messages are named in a store: shared by every run journal, so the
// SQLite and PostgreSQL journals read an owner, and spell a message kind, the same way.
#pragma once

#include "store/run_journal.hpp"

#include <string>

namespace agenthost::store {

// "prompt" | "answer" | "step", as stored.
const char* message_kind_name(MessageKind kind);
MessageKind message_kind_from(const std::string& name);

// This process as a lease owner: "host:pid:start-time", which names one process for good (a pid
// alone is reused).
std::string this_process_owner();

// What this host can tell of the process an owner id names.
enum class OwnerState { gone, alive, unknown /* another host: only its lease speaks for it */ };
OwnerState owner_state(const std::string& owner);

// begin_run's refusal when the conversation has a run going: `run` is its id, or 0 when the
// store only knows that there is one.
Error conversation_busy(std::string_view conversation, int64_t run);
// begin_run's refusal when run `run` (0: unknown) was started with the same Idempotency-Key.
Error idempotency_key_used(int64_t run);

// The stop reasons whose failed runs claim() takes, as an SQL list ("'provider_error', 'timeout'"),
// from the stop-reason table: the same rule as resumable(), for the journals' claim statements.
std::string resumable_stop_reasons_sql();

// Seconds since the epoch, as the journals store times.
double now_seconds();

}  // namespace agenthost::store
