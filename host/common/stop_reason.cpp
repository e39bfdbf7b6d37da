#include "common/stop_reason.hpp"

#include <algorithm>
#include <iterator>

namespace agenthost {
namespace {

using S = StopReason;
using R = RunStatus;

// The OpenAI answer for runs that end without one and have no HTTP row of their own.
constexpr HttpMapping kAgentFailure{500, "server_error", "agent_failure", 0};

// One row per reason, in enum order (checked below), aligned so the columns read as a table.
// clang-format off
constexpr StopInfo kTable[] = {
    //  reason                 name                   ok     status          error_code          resumable no_run finish    http
    {S::answered,          "answered",          true,  R::completed,   "",                  false, false, "stop",   kAgentFailure},
    {S::done,              "done",              true,  R::completed,   "",                  false, false, "stop",   kAgentFailure},
    {S::ask_user,          "ask_user",          true,  R::completed,   "",                  false, false, "stop",   kAgentFailure},
    {S::approval_pending,  "approval_pending",  false, R::paused,      "",                  false, false, "",       {409, "invalid_request_error", "approval_pending", 0}},
    {S::iteration_limit,   "iteration_limit",   false, R::failed,      "ITERATION_LIMIT",   false, false, "length", kAgentFailure},
    {S::token_budget,      "token_budget",      false, R::failed,      "BUDGET_EXCEEDED",   false, false, "length", {400, "invalid_request_error", "budget_exceeded", 0}},
    {S::tool_call_budget,  "tool_call_budget",  false, R::failed,      "BUDGET_EXCEEDED",   false, false, "length", {400, "invalid_request_error", "budget_exceeded", 0}},
    {S::loop_detected,     "loop_detected",     false, R::failed,      "AGENT_FAILURE",     false, false, "length", kAgentFailure},
    {S::output_truncated,  "output_truncated",  false, R::failed,      "AGENT_FAILURE",     false, false, "length", kAgentFailure},
    {S::malformed_output,  "malformed_output",  false, R::failed,      "AGENT_FAILURE",     false, false, "length", kAgentFailure},
    {S::tool_unavailable,  "tool_unavailable",  false, R::failed,      "TOOL_UNAVAILABLE",  false, false, "length", kAgentFailure},
    {S::cancelled,         "cancelled",         false, R::cancelled,   "CANCELLED",         false, false, "length", {409, "invalid_request_error", "run_cancelled", 0}},
    {S::interrupted,       "interrupted",       false, R::interrupted, "INTERRUPTED",       false, false, "length", {503, "server_error", "run_interrupted", 5}},
    {S::store_failure,     "store_failure",     false, R::failed,      "AGENT_FAILURE",     true,  false, "length", {500, "server_error", "store_failure", 0}},
    {S::internal_error,    "internal_error",    false, R::failed,      "AGENT_FAILURE",     false, false, "length", kAgentFailure},
    // The upstream provider refused the host's key: 401, but named as the provider's, not the client's.
    {S::auth,              "auth",              false, R::failed,      "PROVIDER_AUTH",     true,  false, "length", {401, "authentication_error", "provider_auth", 0}},
    {S::rate_limit,        "rate_limit",        false, R::failed,      "RATE_LIMITED",      true,  false, "length", {429, "rate_limit_error", "rate_limit_exceeded", 30}},
    {S::model_unavailable, "model_unavailable", false, R::failed,      "MODEL_UNAVAILABLE", true,  false, "length", {404, "invalid_request_error", "model_not_found", 0}},
    {S::context_too_large, "context_too_large", false, R::failed,      "CONTEXT_TOO_LARGE", false, false, "length", {400, "invalid_request_error", "context_length_exceeded", 0}},
    {S::bad_request,       "bad_request",       false, R::failed,      "AGENT_FAILURE",     false, false, "length", {502, "server_error", "provider_rejected_request", 0}},
    // Upstream outages, after the LLM queue's own retries with backoff.
    {S::transient,         "transient",         false, R::failed,      "AGENT_FAILURE",     true,  false, "length", {502, "server_error", "provider_unavailable", 0}},
    {S::timeout,           "timeout",           false, R::failed,      "AGENT_FAILURE",     true,  false, "length", {504, "server_error", "provider_timeout", 0}},
    {S::output_limit,      "output_limit",      false, R::failed,      "OUTPUT_LIMIT",      true,  false, "length", kAgentFailure},
    {S::provider_failure,  "provider_failure",  false, R::failed,      "PLUGIN_FAILURE",    true,  false, "length", {502, "server_error", "provider_failure", 0}},
    {S::provider_unavailable, "provider_unavailable", false, R::failed, "AGENT_FAILURE",    true,  false, "length", {503, "server_error", "provider_not_loaded", 0}},
    // Refusals: no run changed.
    {S::conversation_busy, "conversation_busy", false, R::failed,      "CONVERSATION_BUSY", false, true,  "",       {409, "invalid_request_error", "conversation_busy", 0}},
    {S::shutting_down,     "shutting_down",     false, R::failed,      "SHUTTING_DOWN",     false, true,  "",       {503, "server_error", "shutting_down", 5}},
    {S::server_busy,       "server_busy",       false, R::failed,      "SERVER_BUSY",       false, true,  "",       {429, "rate_limit_error", "too_many_runs", 1}},
    {S::not_paused,        "not_paused",        false, R::failed,      "NOT_PAUSED",        false, false, "",       {409, "invalid_request_error", "not_paused", 0}},
    {S::run_not_found,     "run_not_found",     false, R::failed,      "NOT_FOUND",         false, false, "",       {404, "invalid_request_error", "run_not_found", 0}},
    {S::run_not_resumable, "run_not_resumable", false, R::failed,      "NOT_RESUMABLE",     false, false, "",       {409, "invalid_request_error", "run_not_resumable", 0}},
    // Nothing started, so a retry is safe: it starts the run, or (with its key) finds it.
    {S::store_unavailable, "store_unavailable", false, R::failed,      "STORE_UNAVAILABLE", false, true,  "",       {503, "server_error", "store_unavailable", 2}},
    {S::idempotency_key_used, "idempotency_key_used", false, R::failed, "IDEMPOTENCY_KEY_IN_PROGRESS", false, true, "", {409, "invalid_request_error", "idempotency_key_in_progress", 1}},
    {S::client_gone,       "client_gone",       false, R::failed,      "CLIENT_GONE",       false, true,  "",       {400, "invalid_request_error", "client_closed_request", 0}},
};
// clang-format on

constexpr bool table_in_enum_order() {
    for (size_t i = 0; i < std::size(kTable); ++i)
        if (static_cast<size_t>(kTable[i].reason) != i) return false;
    return std::size(kTable) == static_cast<size_t>(S::client_gone) + 1;
}
static_assert(table_in_enum_order(), "kTable must list every StopReason once, in enum order");

}  // namespace

const StopInfo& stop_info(StopReason reason) { return kTable[static_cast<size_t>(reason)]; }

std::span<const StopInfo> all_stop_reasons() { return kTable; }

std::optional<StopReason> parse_stop_reason(std::string_view name) {
    auto it = std::find_if(std::begin(kTable), std::end(kTable), [&](const StopInfo& row) { return name == row.name; });
    if (it == std::end(kTable)) return std::nullopt;
    return it->reason;
}

namespace {

constexpr StopReason kFromModelCalls[] = {
    S::auth,    S::rate_limit,   S::model_unavailable, S::context_too_large,    S::bad_request, S::transient,
    S::timeout, S::output_limit, S::provider_failure,  S::provider_unavailable, S::cancelled};

}  // namespace

std::optional<StopReason> model_call_stop_reason(std::string_view name) {
    auto reason = parse_stop_reason(name);
    if (!reason || std::find(std::begin(kFromModelCalls), std::end(kFromModelCalls), *reason) == std::end(kFromModelCalls))
        return std::nullopt;
    return reason;
}

std::string model_call_stop_reason_names() {
    std::string names;
    for (StopReason reason : kFromModelCalls) names += (names.empty() ? "" : ", ") + std::string(stop_reason_name(reason));
    return names;
}

bool falls_back_by_default(StopReason reason) {
    static constexpr StopReason kDown[] = {S::transient, S::timeout, S::rate_limit, S::model_unavailable,
                                           S::provider_unavailable};
    return std::find(std::begin(kDown), std::end(kDown), reason) != std::end(kDown);
}

StopReason provider_stop_reason(std::string_view error_type) {
    // A provider that could not use the host's store (kv_get / kv_set said AH_ERR_IO): the run stops
    // as the host's own store failures do, resumable and resumed by itself.
    if (error_type == "store_unavailable") return S::store_failure;
    auto reason = parse_stop_reason(error_type);
    if (!reason || std::find(std::begin(kFromModelCalls), std::end(kFromModelCalls), *reason) == std::end(kFromModelCalls))
        return S::provider_failure;
    return *reason;
}

bool retried_by_queue(StopReason reason) { return reason == S::transient || reason == S::timeout || reason == S::rate_limit; }

bool doctor_checks(StopReason reason) {
    static constexpr StopReason kSetup[] = {S::auth, S::model_unavailable, S::transient, S::timeout, S::provider_unavailable};
    return std::find(std::begin(kSetup), std::end(kSetup), reason) != std::end(kSetup);
}

}  // namespace agenthost
