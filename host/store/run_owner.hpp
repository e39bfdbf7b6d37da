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

// Seconds since the epoch, as the journals store times.
double now_seconds();

}  // namespace agenthost::store
