// The LLM queue: every model request of every session goes through it. One lane per provider
// instance serves requests in fair order (round-robin across conversations) with the provider's
// concurrency (default 1: serialised, as local models need). Transient and rate_limit errors are
// retried with exponential backoff and jitter, honouring retry_after; a rate limit pauses the whole
// lane. Waiting, backoff and streaming are all cancellable.
#pragma once

#include "common/choices.hpp"
#include "config/config.hpp"
#include "llm/model_client.hpp"
#include "plugins/registry.hpp"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace agenthost::llm {

// Why a provider cannot answer yet, each with the stable code /readyz and doctor show.
enum class NotReady { none, provider_unavailable, model_list_failed, model_not_set, model_unavailable };
inline constexpr Choice<NotReady> kNotReadyCodes[] = {
    {NotReady::none, "", "ready"},
    {NotReady::provider_unavailable, "PROVIDER_UNAVAILABLE", "its plugin did not start, or its server does not answer"},
    {NotReady::model_list_failed, "MODEL_LIST_FAILED", "its server did not list its models"},
    {NotReady::model_not_set, "MODEL_NOT_SET", "no model is configured and the server names no default"},
    {NotReady::model_unavailable, "MODEL_UNAVAILABLE", "the server does not serve the configured model"},
};

struct Readiness {
    bool ready = false;
    NotReady problem = NotReady::none;
    const char* code() const { return choice_name<NotReady>(kNotReadyCodes, problem); }
    std::string message;
    std::vector<std::string> models;  // what the provider serves, when it could say
    // Whether `model` is among `models` (Ollama's "NAME" also matches its "NAME:latest").
    bool serves(std::string_view model) const;
};

// Counters for /metrics.
struct LaneStats {
    std::string provider;
    size_t waiting = 0;
    int active = 0;
    std::vector<double> bucket_bounds;    // seconds
    std::vector<uint64_t> bucket_counts;  // cumulative, like Prometheus, one per bound
    uint64_t count = 0;                   // model calls finished
    double sum_s = 0;                     // their total duration
    uint64_t failures = 0;
    uint64_t fallbacks = 0;           // calls it failed that went on with the next provider of a chain
    int64_t input_tokens = 0;         // prompt tokens of its answered calls, as it counted them
    int64_t cached_input_tokens = 0;  // the part its prompt cache served
};

class LlmQueue final : public ModelClient {
public:
    LlmQueue(plugins::Registry& registry, const config::Config& config);
    ~LlmQueue();
    LlmQueue(const LlmQueue&) = delete;
    LlmQueue& operator=(const LlmQueue&) = delete;

    // Runs one chat request on a provider instance (a name from Registry::provider_names()).
    ChatOutcome chat(std::string_view provider, const plugins::CallInput& call, const ChatCallbacks& callbacks) override;

    std::vector<LaneStats> stats();
    void note_fallback(std::string_view provider) override;

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
