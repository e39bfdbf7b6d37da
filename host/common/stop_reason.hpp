// Why a run stopped, and everything that follows from it, in one table: the run's status in the
// store, the stable error code, whether the run may be resumed, the OpenAI finish_reason and the
// HTTP error a front end answers with. Every caller reads this table; none maps on its own.
#pragma once

#include "common/run_status.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace agenthost {

enum class StopReason {
    // The turn ended as it should.
    answered,  // the model answered in text
    done,      // a tool's "done" marker ended the turn with its summary
    ask_user,  // the model asked the user a question
    // Paused: the run waits for the user's approval of a call.
    approval_pending,
    // The loop's own limits and guards.
    iteration_limit,   // the mode's cap was reached (the answer is a summary)
    token_budget,      // [limits] token_budget
    tool_call_budget,  // [limits] tool_call_budget
    loop_detected,     // the model kept repeating a call after being told to stop
    output_truncated,  // a tool call cut off by max_tokens twice
    malformed_output,  // unreadable tool calls several times in a row
    tool_unavailable,  // an approved call's tool disappeared while the run was paused
    // Stopped from outside, or by the host.
    cancelled,       // the user cancelled
    interrupted,     // a shutdown or crash; resumable
    store_failure,   // the store could not save a step
    internal_error,  // an exception the host caught
    // The provider's typed errors (after the LLM queue's retries).
    auth,
    rate_limit,
    model_unavailable,
    context_too_large,
    bad_request,
    transient,
    timeout,
    output_limit,
    provider_failure,      // the plugin crashed or sent malformed events
    provider_unavailable,  // no such provider is configured or loaded
    // Refusals before a run could start or continue: no run changed.
    conversation_busy,
    shutting_down,
    server_busy,
    not_paused,
    run_not_found,
    run_not_resumable,
    store_unavailable,     // the store could not be read or written to start the run: nothing started
    idempotency_key_used,  // a run was already started with the request's Idempotency-Key
    client_gone,           // the client left while its run waited for a slot: it never started
};

// How a stop reason is reported over HTTP, modelled on OpenAI's own API (401, 404 model_not_found,
// 400 context_length_exceeded, 429 with Retry-After, 5xx only for upstream outages after the
// host's own retries).
struct HttpMapping {
    int status = 500;
    const char* type = "server_error";   // OpenAI error type: invalid_request_error, authentication_error …
    const char* code = "agent_failure";  // stable, lower case
    int retry_after_s = 0;               // > 0: a Retry-After header
};

struct StopInfo {
    StopReason reason;
    const char* name;  // as stored (runs.stop_reason) and sent (events, JSON output)
    bool ok;           // the turn ended as it should
    // Where a run that stops this way is left. Refusals leave the run as it was (status unused).
    RunStatus status;
    const char* error_code;  // stable upper-case code; "" for ok and paused
    bool resumable;          // a failed run that may be resumed (the cause can go away)
    // Refused before any run started: a client's retry cannot start a second run, so it may retry.
    bool no_run;
    const char* finish_reason;  // OpenAI finish_reason when the run gives an answer; "" when it gives none
    HttpMapping http;           // when the run gives no answer
};

const StopInfo& stop_info(StopReason reason);
std::span<const StopInfo> all_stop_reasons();
inline std::string_view stop_reason_name(StopReason reason) { return stop_info(reason).name; }
std::optional<StopReason> parse_stop_reason(std::string_view name);

// The stop reason of a failed model call: the provider's typed error ("auth", "transient",
// "timeout" …) or the LLM queue's own ("cancelled", "output_limit" …). "store_unavailable" (the
// provider could not use the host's store) is a store failure; a type this table does not know is
// a provider failure. Read once, where the LLM queue ends a call; the reason travels typed from there.
StopReason provider_stop_reason(std::string_view error_type);

// Whether a model call that failed this way is tried again (after a backoff) by the LLM queue.
bool retried_by_queue(StopReason reason);

// The stop reason named `name` when it is one a model call can end with (auth, transient …), for
// settings that name them ([provider] fallback_on); its names, for the error that lists them.
std::optional<StopReason> model_call_stop_reason(std::string_view name);
std::string model_call_stop_reason_names();
// Whether a model call that failed this way goes on with the next provider of a fallback chain
// without being configured to: the provider is down, overloaded or without the model, not wrong.
bool falls_back_by_default(StopReason reason);

// Whether the stop comes from the provider's setup that `agenthost doctor` checks: its key, its
// server at base_url, its model.
bool doctor_checks(StopReason reason);

}  // namespace agenthost
