// The LLM queue: every model request of every session goes through it. One lane per provider
// instance serves requests in fair order (round-robin across conversations) with the provider's
// concurrency (default 1: serialised, as local models need). Transient and rate_limit errors are
// retried with exponential backoff and jitter, honouring retry_after; a rate limit pauses the whole
// lane. Waiting, backoff and streaming are all cancellable.
#pragma once

#include "config/config.hpp"
#include "plugins/registry.hpp"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace agenthost::llm {

struct RetryNotice {
    int attempt;        // the attempt that failed (1-based)
    int max_attempts;
    std::string type;   // transient | rate_limit
    std::string message;
    double delay_s;     // wait before the next attempt
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
    std::string error_type;  // typed provider error, or cancelled / provider_failure / provider_unavailable
    std::string error_message;
    int attempts = 0;
    int64_t input_tokens = 0;
    int64_t output_tokens = 0;
    bool usage_estimated = false;  // the server sent no usage: estimated from text length (4 bytes a token)
};

struct Readiness {
    bool ready = false;
    std::string code;     // "" | PROVIDER_UNAVAILABLE | MODEL_LIST_FAILED | MODEL_UNAVAILABLE
    std::string message;
    std::vector<std::string> models;  // what the provider serves, when it could say
};

// Counters for /metrics.
struct LaneStats {
    std::string provider;
    size_t waiting = 0;
    int active = 0;
    std::vector<double> bucket_bounds;      // seconds
    std::vector<uint64_t> bucket_counts;    // cumulative, like Prometheus, one per bound
    uint64_t count = 0;                     // model calls finished
    double sum_s = 0;                       // their total duration
    uint64_t failures = 0;
};

class LlmQueue {
public:
    LlmQueue(plugins::Registry& registry, const config::Config& config);
    ~LlmQueue();
    LlmQueue(const LlmQueue&) = delete;
    LlmQueue& operator=(const LlmQueue&) = delete;

    // Runs one chat request on a provider instance (a name from Registry::provider_names()).
    ChatOutcome chat(std::string_view provider, const plugins::CallInput& call, const ChatCallbacks& callbacks);

    std::vector<LaneStats> stats();

    // Whether the provider answers and serves its configured model.
    Readiness check(std::string_view provider, const ah_cancel* cancel = nullptr);

private:
    struct Lane;
    Lane& lane(std::string_view provider);

    plugins::Registry& registry_;
    const config::Config& config_;
    std::mutex mutex_;
    std::map<std::string, std::unique_ptr<Lane>, std::less<>> lanes_;
};

}  // namespace agenthost::llm
