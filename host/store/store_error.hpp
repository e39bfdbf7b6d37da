// Why a store operation failed, as its callers branch on it. Each fault travels as Error::code, a
// stable word that logs and clients also see; store_error() makes one and is() reads it back, so
// no caller compares code strings (where a typo would fail silently).
#pragma once

#include "common/result.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace agenthost::store {

enum class StoreFault {
    open,                  // the database could not be opened or reached
    sql,                   // a statement failed (disk full, I/O error, broken table …)
    conflict,              // a unique index refused the write: another writer won the race
    not_found,             // the run (or row) asked for does not exist
    lease_lost,            // another process holds the run now, or it has ended
    conversation_busy,     // the conversation has a run in progress
    idempotency_key_used,  // the Idempotency-Key names another run
    run_not_resumable,     // the run is in a state no resume can continue
};

// The fault's Error::code: "store_open", "store_sql", "store_conflict", "store_not_found",
// "lease_lost", "conversation_busy", "idempotency_key_used", "run_not_resumable".
std::string_view store_code(StoreFault fault);

inline Error store_error(StoreFault fault, std::string message) {
    return Error{std::string(store_code(fault)), std::move(message)};
}

// The fault an error names, if it is a store fault.
std::optional<StoreFault> store_fault(const Error& e);

inline bool is(const Error& e, StoreFault fault) { return e.code == store_code(fault); }

}  // namespace agenthost::store
