// A run's end (or a run that could not start) as an HTTP error, used by every route:
// /v1/chat/completions, /api/chat, approve / reject / resume. The mapping itself is a column of the
// one stop-reason table (common/stop_reason.hpp). `should_retry` is false wherever a retry would
// start a second agent run: those responses carry `x-should-retry: false`, which the official openai
// clients obey.
#pragma once

#include "agent/turn_runner.hpp"
#include "server/refusal.hpp"

#include <string>

namespace agenthost::server {

struct HttpError {
    int status = 500;
    std::string type;       // OpenAI error type: invalid_request_error, authentication_error, rate_limit_error, server_error …
    std::string code;       // stable, lower case: provider_auth, model_not_found, context_length_exceeded …
    int retry_after_s = 0;  // > 0: a Retry-After header
    bool should_retry = false;  // false: x-should-retry: false (a retry would run the agent again)
};

// A run that ended without an answer.
inline HttpError error_for_outcome(const agent::TurnOutcome& outcome) {
    const HttpMapping& http = stop_info(outcome.stop_reason).http;
    return {http.status, http.type, http.code, http.retry_after_s, false};
}

// A run that could not start or continue (RunHub's refusals). Only refusals where no run exists
// may be retried.
inline HttpError error_for_start(const Refusal& refusal) {
    const StopInfo& info = stop_info(refusal.reason);
    return {info.http.status, info.http.type, info.http.code, info.http.retry_after_s, info.no_run};
}

}  // namespace agenthost::server
