// Why a store operation failed, as its callers branch on it. Each fault travels as Error::code, a
// stable word that logs and clients also see; store_error() makes one and is() reads it back, so
// no caller compares code strings (where a typo would fail silently).
#pragma once

#include "common/choices.hpp"
#include "common/result.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace agenthost::store {

enum class StoreFault {
    open,
    sql,
    conflict,
    not_found,
    lease_lost,
    conversation_busy,
    approval_pending,
    idempotency_key_used,
    run_not_resumable
};  // meanings in the table below

// Each fault's Error::code word and what it means.
inline constexpr Choice<StoreFault> kStoreFaults[] = {
    {StoreFault::open, "store_open", "the database could not be opened or reached"},
    {StoreFault::sql, "store_sql", "a statement failed (disk full, I/O error, broken table …)"},
    {StoreFault::conflict, "store_conflict", "a unique index refused the write: another writer won the race"},
    {StoreFault::not_found, "store_not_found", "the run (or row) asked for does not exist"},
    {StoreFault::lease_lost, "lease_lost", "another process holds the run now, or it has ended"},
    {StoreFault::conversation_busy, "conversation_busy", "the conversation has a run in progress"},
    {StoreFault::approval_pending, "approval_pending", "the conversation has a run waiting for approval"},
    {StoreFault::idempotency_key_used, "idempotency_key_used", "the Idempotency-Key names another run"},
    {StoreFault::run_not_resumable, "run_not_resumable", "the run is in a state no resume can continue"},
};

inline std::string_view store_code(StoreFault fault) { return choice_name<StoreFault>(kStoreFaults, fault); }

inline Error store_error(StoreFault fault, std::string message) {
    return Error{std::string(store_code(fault)), std::move(message)};
}

// The fault an error names, if it is a store fault.
inline std::optional<StoreFault> store_fault(const Error& e) { return choice_from<StoreFault>(kStoreFaults, e.code); }

inline bool is(const Error& e, StoreFault fault) { return e.code == store_code(fault); }

}  // namespace agenthost::store
