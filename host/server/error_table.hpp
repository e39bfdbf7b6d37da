// The one table from a run's end (or a run that could not start) to an HTTP error, used by every
// route: /v1/chat/completions, /api/chat, approve / reject / resume. Statuses follow OpenAI's own API
// (401, 404 model_not_found, 400 context_length_exceeded, 429 with Retry-After, 5xx only for upstream
// outages after the host's own retries). `should_retry` is false wherever a retry would start a second
// agent run: those responses carry `x-should-retry: false`, which the official openai clients obey.
#pragma once

#include "agent/turn_runner.hpp"
#include "common/result.hpp"

#include <string>

namespace agenthost::server {

struct HttpError {
    int status = 500;
    std::string type;           // OpenAI error type: invalid_request_error, authentication_error, rate_limit_error, server_error …
    std::string code;           // stable, lower case: provider_auth, model_not_found, context_length_exceeded …
    int retry_after_s = 0;      // > 0: a Retry-After header
    bool should_retry = false;  // false: x-should-retry: false (a retry would run the agent again)
};

namespace detail {

struct Row {
    const char* reason;  // stop_reason (or start error code)
    const char* error_code;  // TurnOutcome::error_code it comes with (informative)
    int status;
    const char* type;
    const char* code;
    int retry_after_s;
};

// stop_reason → HTTP. Unknown reasons: 500 agent_failure.
inline constexpr Row kRows[] = {
    // The upstream provider refused the host's key: 401, but named as the provider's, not the client's.
    {"auth", "PROVIDER_AUTH", 401, "authentication_error", "provider_auth", 0},
    {"rate_limit", "RATE_LIMITED", 429, "rate_limit_error", "rate_limit_exceeded", 30},
    {"model_unavailable", "MODEL_UNAVAILABLE", 404, "invalid_request_error", "model_not_found", 0},
    {"context_too_large", "CONTEXT_TOO_LARGE", 400, "invalid_request_error", "context_length_exceeded", 0},
    {"token_budget", "BUDGET_EXCEEDED", 400, "invalid_request_error", "budget_exceeded", 0},
    {"tool_call_budget", "BUDGET_EXCEEDED", 400, "invalid_request_error", "budget_exceeded", 0},
    {"bad_request", "AGENT_FAILURE", 502, "server_error", "provider_rejected_request", 0},
    // Upstream outages, after the LLM queue's own retries with backoff.
    {"transient", "AGENT_FAILURE", 502, "server_error", "provider_unavailable", 0},
    {"timeout", "AGENT_FAILURE", 504, "server_error", "provider_timeout", 0},
    {"provider_failure", "PLUGIN_FAILURE", 502, "server_error", "provider_failure", 0},
    {"provider_unavailable", "AGENT_FAILURE", 503, "server_error", "provider_not_loaded", 0},
    {"approval_pending", "", 409, "invalid_request_error", "approval_pending", 0},
    {"cancelled", "CANCELLED", 409, "invalid_request_error", "run_cancelled", 0},
    {"interrupted", "INTERRUPTED", 503, "server_error", "run_interrupted", 5},
    {"store_failure", "AGENT_FAILURE", 500, "server_error", "store_failure", 0},
    // Start errors: no run was started, so a retry is harmless.
    {"conversation_busy", "", 409, "invalid_request_error", "conversation_busy", 0},
    {"shutting_down", "", 503, "server_error", "shutting_down", 5},
    {"server_busy", "", 429, "rate_limit_error", "too_many_runs", 1},
};

}  // namespace detail

// A run that ended without an answer. A provider timeout is reported as a transient error whose
// message says it timed out: that one is a 504.
inline HttpError error_for_outcome(const agent::TurnOutcome& outcome) {
    std::string reason = outcome.stop_reason;
    if (reason == "transient" && outcome.error.find("timed out") != std::string::npos) reason = "timeout";
    for (const auto& row : detail::kRows)
        if (reason == row.reason) return {row.status, row.type, row.code, row.retry_after_s, false};
    return {500, "server_error", "agent_failure", 0, false};
}

// A run that could not start (RunHub::start / continue_run errors). Only the start errors where no
// run exists may be retried; a run that started and failed at once maps like an outcome.
inline HttpError error_for_start(const Error& e) {
    for (const auto& row : detail::kRows)
        if (e.code == row.reason) {
            bool no_run = e.code == "conversation_busy" || e.code == "shutting_down" || e.code == "server_busy";
            return {row.status, row.type, row.code, row.retry_after_s, no_run};
        }
    return {500, "server_error", e.code.empty() ? "agent_failure" : e.code, 0, false};
}

}  // namespace agenthost::server
