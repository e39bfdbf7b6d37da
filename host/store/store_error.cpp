#include "store/store_error.hpp"

#include <utility>

namespace agenthost::store {

namespace {

constexpr std::pair<StoreFault, std::string_view> kCodes[] = {
    {StoreFault::open, "store_open"},
    {StoreFault::sql, "store_sql"},
    {StoreFault::conflict, "store_conflict"},
    {StoreFault::not_found, "store_not_found"},
    {StoreFault::lease_lost, "lease_lost"},
    {StoreFault::conversation_busy, "conversation_busy"},
    {StoreFault::idempotency_key_used, "idempotency_key_used"},
    {StoreFault::run_not_resumable, "run_not_resumable"},
};

}  // namespace

std::string_view store_code(StoreFault fault) {
    for (const auto& [f, code] : kCodes)
        if (f == fault) return code;
    return "store_sql";
}

std::optional<StoreFault> store_fault(const Error& e) {
    for (const auto& [f, code] : kCodes)
        if (e.code == code) return f;
    return std::nullopt;
}

}  // namespace agenthost::store
