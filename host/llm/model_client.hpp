// How the agent loop asks a model: one streamed chat request to a provider instance, with its
// events, retries and queueing reported through callbacks. The LLM queue is the real one; tests of
// the loop use an in-memory fake.
#pragma once

#include "common/stop_reason.hpp"
#include "llm/fallback_chain.hpp"
#include "plugins/registry.hpp"

#include <functional>
#include <string>
#include <string_view>

namespace agenthost::llm {

struct RetryNotice {
    int attempt;  // the attempt that failed (1-based)
    int max_attempts;
    std::string type;  // transient | rate_limit
    std::string message;
    double delay_s;  // wait before the next attempt
};

struct ChatCallbacks {
    // Provider events of the current attempt, except USAGE and ERROR (the queue handles those).
    std::function<ah_status(int32_t type, std::string_view payload)> on_event;
    // A failed attempt will be retried: drop what it streamed.
    std::function<void(const RetryNotice&)> on_retry;
    // Waiting for a free slot: how many requests are ahead (called when it changes).
    std::function<void(size_t ahead)> on_queued;
    // Polled while the request waits (for a slot or to retry): true ends the wait, as a cancel
    // does. A shutting-down host uses it so a request not yet started is never started.
    std::function<bool()> give_up_waiting;
};

struct ChatOutcome {
    bool ok = false;
    std::string error_type;  // the provider's own word (or the queue's: cancelled, provider_failure …)
    std::string error_message;
    // Why the call failed, read once from error_type (provider_stop_reason): what the turn stops with.
    StopReason stop_reason = StopReason::answered;
    int attempts = 0;
    int64_t input_tokens = 0;
    int64_t output_tokens = 0;
    int64_t cached_input_tokens = 0;  // the part of input_tokens the provider's prompt cache served
    bool usage_estimated = false;     // the server sent no usage: estimated from text length (4 bytes a token)
};

class ModelClient {
public:
    virtual ~ModelClient() = default;
    // Runs one chat request on a provider instance (a name from Registry::provider_names()).
    virtual ChatOutcome chat(std::string_view provider, const plugins::CallInput& call, const ChatCallbacks& callbacks) = 0;
    // A call that `provider` failed went on with the next provider of a fallback chain (/metrics).
    virtual void note_fallback(std::string_view /*provider*/) {}
    // Which providers every run of this process passes over for now (fallback chains).
    Cooldowns& cooldowns() { return cooldowns_; }

private:
    Cooldowns cooldowns_;
};

}  // namespace agenthost::llm
