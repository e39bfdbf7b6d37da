#include "llm/llm_queue.hpp"

#include "common/spelling.hpp"
#include "plugins/plugin_fault.hpp"
#include "plugins/status_words.hpp"

#include "common/bounded_json.hpp"
#include "common/cancel.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <iterator>
#include <list>
#include <random>
#include <thread>
#include <utility>

namespace agenthost::llm {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr auto kPoll = std::chrono::milliseconds(20);  // how often a waiter looks at its cancel token

bool cancelled(const ah_cancel* cancel) { return cancel && cancel->cancelled(); }

// Sleeps until `until`, waking early on cancel. Returns false when cancelled.
bool sleep_until(Clock::time_point until, const std::function<bool()>& stop) {
    while (Clock::now() < until) {
        if (stop()) return false;
        std::this_thread::sleep_for(std::min<Clock::duration>(kPoll, until - Clock::now()));
    }
    return !stop();
}

}  // namespace

// One provider instance's line: who is waiting, how many run, and a pause after a rate limit.
struct LlmQueue::Lane {
    struct Waiter {
        uint64_t round;   // fair order: a conversation's n-th queued request waits for round n
        uint64_t ticket;  // arrival order within a round
    };

    int concurrency = 1;
    int retry_attempts = 4;
    int retry_base_ms = 500;
    int retry_cap_ms = 30000;

    std::mutex mutex;
    std::condition_variable changed;
    int active = 0;
    uint64_t next_ticket = 0;
    uint64_t started_round = 0;
    std::map<std::string, uint64_t> last_round;  // per conversation
    std::list<Waiter> waiting;                   // sorted by (round, ticket)
    Clock::time_point paused_until{};
    std::mt19937 random{std::random_device{}()};
    // Latency of finished attempts (slot held to done), for /metrics.
    static constexpr double kBounds[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
    uint64_t buckets[std::size(kBounds)] = {};
    uint64_t finished = 0, failed = 0, fallbacks = 0;
    double total_s = 0;
    int64_t input_tokens = 0, cached_input_tokens = 0;  // as the provider counted them

    void observe(double seconds, bool ok) {
        std::lock_guard lock(mutex);
        for (size_t i = 0; i < std::size(kBounds); ++i)
            if (seconds <= kBounds[i]) ++buckets[i];
        ++finished;
        failed += !ok;
        total_s += seconds;
    }

    void count_tokens(const ChatOutcome& answered) {
        if (answered.usage_estimated) return;
        std::lock_guard lock(mutex);
        input_tokens += answered.input_tokens;
        cached_input_tokens += answered.cached_input_tokens;
    }

    // Waits for a slot; false when cancelled while waiting.
    bool acquire(const std::string& conversation, const std::function<bool()>& stop,
                 const std::function<void(size_t)>& on_queued) {
        std::unique_lock lock(mutex);
        uint64_t round = std::max(started_round, last_round[conversation]) + 1;
        last_round[conversation] = round;
        Waiter me{round, next_ticket++};
        auto at = std::find_if(waiting.begin(), waiting.end(), [&](const Waiter& w) {
            return w.round > me.round || (w.round == me.round && w.ticket > me.ticket);
        });
        auto mine = waiting.insert(at, me);
        size_t reported = SIZE_MAX;
        while (true) {
            if (stop()) {  // before taking a slot: a waiter told to stop never starts
                waiting.erase(mine);
                changed.notify_all();
                return false;
            }
            bool first = mine == waiting.begin();
            if (first && active < concurrency && Clock::now() >= paused_until) break;
            size_t ahead = static_cast<size_t>(std::distance(waiting.begin(), mine)) + static_cast<size_t>(active);
            if (on_queued && ahead != reported) {
                reported = ahead;
                lock.unlock();
                on_queued(ahead);
                lock.lock();
            }
            changed.wait_for(lock, kPoll);
        }
        waiting.erase(mine);
        started_round = std::max(started_round, round);
        ++active;
        changed.notify_all();  // the next in line may start too when concurrency allows
        return true;
    }

    void release() {
        std::lock_guard lock(mutex);
        --active;
        changed.notify_all();
    }

    // Exponential backoff with jitter (between half and all of the step), capped.
    double backoff_s(int attempt) {
        double step = std::min<double>(retry_cap_ms, retry_base_ms * std::pow(2.0, attempt - 1));
        std::uniform_real_distribution<double> jitter(0.5, 1.0);
        std::lock_guard lock(mutex);
        return step * jitter(random) / 1000.0;
    }

    void pause_for(double seconds) {
        std::lock_guard lock(mutex);
        auto until = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
        paused_until = std::max(paused_until, until);
    }
};

LlmQueue::LlmQueue(plugins::Registry& registry, const config::Config& config) : registry_(registry), config_(config) {}
LlmQueue::~LlmQueue() = default;

LlmQueue::Lane& LlmQueue::lane(std::string_view provider) {
    std::lock_guard lock(mutex_);
    auto it = lanes_.find(provider);
    if (it != lanes_.end()) return *it->second;
    auto lane = std::make_unique<Lane>();
    if (const config::ProviderSettings* settings = config_.provider_named(provider)) {
        lane->concurrency = settings->concurrency;
        lane->retry_attempts = settings->retry_attempts;
        lane->retry_base_ms = settings->retry_base_ms;
        lane->retry_cap_ms = settings->retry_cap_ms;
    }
    return *lanes_.emplace(std::string(provider), std::move(lane)).first->second;
}

namespace {

// A call that ends without a reply: the word it failed with, and the stop reason read from it once.
void fail(ChatOutcome& out, std::string type, std::string message) {
    out.stop_reason = provider_stop_reason(type);
    out.error_type = std::move(type);
    out.error_message = std::move(message);
}

// A provider's own count of one reply's tokens (AH_EVENT_USAGE).
struct Tokens {
    int64_t input = 0, output = 0, cached_input = 0;
};

// What one attempt streamed: its typed error event if any, its usage, and the bytes of its reply,
// stopped past max_bytes. Events are outside data: bounded, repaired, read with typed getters.
struct AttemptStream {
    AttemptStream(std::string_view provider_name, const ChatCallbacks& on, size_t max)
        : provider(provider_name), callbacks(on), max_bytes(max) {}
    std::string_view provider;
    const ChatCallbacks& callbacks;
    size_t max_bytes;
    json error = nullptr;
    std::optional<Tokens> usage;
    size_t streamed_bytes = 0;
    bool over_limit = false;  // the reply passed max_bytes: stopped, not retried
    bool ended = false;       // a STOP or an ERROR came: the exchange is over
    bool said_late = false;   // an event after the end was logged
    std::string malformed;    // the event the host could not read, in words

    ah_event_sink sink() { return {sizeof(ah_event_sink), this, on_event}; }

    static ah_status on_event(void* ctx, int32_t type, ah_str payload) {
        auto* s = static_cast<AttemptStream*>(ctx);
        std::string_view data(payload.data ? payload.data : "", payload.len);
        try {
            // One exchange, one end: whatever follows a STOP or an ERROR is not part of the answer.
            if (s->ended) {
                if (!std::exchange(s->said_late, true))
                    spdlog::warn(
                        "provider event ignored: provider={} sent {} after its STOP or ERROR (a plugin bug: an "
                        "exchange ends with exactly one)",
                        s->provider, event_words(type));
                return AH_ERR_CANCELLED;  // the host wants no more of this answer
            }
            if (type == AH_EVENT_STOP || type == AH_EVENT_ERROR) s->ended = true;
            if (type == AH_EVENT_ERROR) {
                auto e = json_io::parse(data, {1 << 20, 32}, json_io::Utf8::repair);
                s->error =
                    e && e->is_object() ? std::move(*e) : json{{"type", "transient"}, {"message", "an unreadable error event"}};
                return AH_OK;
            }
            if (type == AH_EVENT_USAGE) {
                auto u = json_io::parse(data, {1 << 16, 8});
                if (u)
                    s->usage = Tokens{json_io::get_int(*u, "input_tokens", 0), json_io::get_int(*u, "output_tokens", 0),
                                      json_io::get_int(*u, "cached_input_tokens", 0)};
                return AH_OK;
            }
            if (s->streamed_bytes + data.size() > s->max_bytes) {
                s->over_limit = true;
                return AH_ERR_NO_MEMORY;  // the provider stops streaming
            }
            s->streamed_bytes += data.size();
            ah_status taken = s->callbacks.on_event ? s->callbacks.on_event(type, data) : AH_OK;
            if (taken == AH_ERR_INVALID_ARGUMENT && s->malformed.empty())
                s->malformed = event_words(type) + " the host cannot read: " + json_io::repair_utf8(data.substr(0, 200));
            return taken;
        } catch (const std::exception&) {
            if (s->malformed.empty()) s->malformed = event_words(type) + " the host cannot read";
            return AH_ERR_INVALID_ARGUMENT;
        }
    }

    // "a TOOL_CALL event", for the words of a warning or a failure.
    static std::string event_words(int32_t type) {
        static const std::pair<int32_t, const char*> kNames[] = {
            {AH_EVENT_TEXT, "TEXT"},   {AH_EVENT_REASONING, "REASONING"}, {AH_EVENT_TOOL_CALL, "TOOL_CALL"},
            {AH_EVENT_USAGE, "USAGE"}, {AH_EVENT_STOP, "STOP"},           {AH_EVENT_ERROR, "ERROR"}};
        for (const auto& [value, name] : kNames)
            if (value == type) return std::string("a ") + name + " event";
        return "an event of type " + std::to_string(type);
    }
};

struct Failure {
    std::string type, message;
};

// How an attempt that sent no typed error ended the call: a failure no retry can mend, or nothing
// (it answered, or its error event is for the retry policy to judge).
std::optional<Failure> final_failure(std::string_view provider, Result<ah_status>& status, const AttemptStream& s,
                                     const ah_cancel* cancel) {
    if (!status) return Failure{status.error().code, status.error().message};
    if (s.over_limit)
        return Failure{"output_limit", "the model's reply passed " + std::to_string(s.max_bytes) +
                                           " bytes and was stopped; raise [agent] max_reply_bytes if such replies are expected"};
    if (cancelled(cancel)) return Failure{"cancelled", "the request was cancelled"};
    // The provider's own fault, whatever it returned after it (a provider told to stop returns
    // AH_ERR_CANCELLED, which is not the user's cancel).
    if (!s.malformed.empty()) return Failure{"provider_failure", "provider '" + std::string(provider) + "' sent " + s.malformed};
    // Told to stop after its end (it talked past its STOP), a provider returns AH_ERR_CANCELLED:
    // the answer it ended is whole.
    const bool stopped_past_end = s.ended && *status == AH_ERR_CANCELLED;
    if (*status == AH_ERR_CANCELLED && !stopped_past_end) return Failure{"cancelled", "the request was cancelled"};
    if (s.error.is_null() && *status != AH_OK && !stopped_past_end)
        return Failure{"provider_failure", "provider '" + std::string(provider) + "' broke: " + plugins::status_words(*status)};
    if (s.error.is_null() && !s.ended)
        return Failure{"provider_failure", "provider '" + std::string(provider) +
                                               "' ended its answer without a STOP or ERROR event (a plugin bug: every "
                                               "exchange ends with exactly one; docs/providers.md)"};
    return std::nullopt;
}

// A reply's tokens: as the provider counted them, else estimated from the bytes (4 per token).
void take_usage(ChatOutcome& out, const AttemptStream& s, const plugins::CallInput& call) {
    out.ok = true;
    if (s.usage) {
        out.input_tokens = s.usage->input;
        out.output_tokens = s.usage->output;
        out.cached_input_tokens = std::clamp<int64_t>(s.usage->cached_input, 0, std::max<int64_t>(s.usage->input, 0));
        return;
    }
    out.usage_estimated = true;
    out.input_tokens = static_cast<int64_t>(call.arguments_json.size() / 4);
    out.output_tokens = static_cast<int64_t>(s.streamed_bytes / 4);
}

}  // namespace

ChatOutcome LlmQueue::chat(std::string_view provider, const plugins::CallInput& call, const ChatCallbacks& callbacks) {
    Lane& l = lane(provider);
    ChatOutcome out;
    if (const config::ProviderSettings* settings = config_.provider_named(provider)) {
        if (auto missing = config::missing_api_key(*settings)) {  // sent, it could only be refused
            fail(out, "auth", "provider '" + std::string(provider) + "' cannot be asked: " + *missing);
            return out;
        }
    }
    auto stop_waiting = [&] { return cancelled(call.cancel) || (callbacks.give_up_waiting && callbacks.give_up_waiting()); };
    for (int attempt = 1;; ++attempt) {
        out.attempts = attempt;
        if (!l.acquire(call.conversation_id, stop_waiting, callbacks.on_queued)) {
            fail(out, "cancelled", "the request was cancelled while waiting for the model");
            return out;
        }
        AttemptStream state{provider, callbacks, static_cast<size_t>(config_.agent.max_reply_bytes)};
        auto attempt_started = Clock::now();
        auto status = registry_.chat(provider, call, state.sink());
        l.release();
        l.observe(std::chrono::duration<double>(Clock::now() - attempt_started).count(),
                  status && *status == AH_OK && state.error.is_null());
        if (auto failed = final_failure(provider, status, state, call.cancel)) {
            fail(out, std::move(failed->type), std::move(failed->message));
            return out;
        }
        if (state.error.is_null()) {
            take_usage(out, state, call);
            l.count_tokens(out);
            return out;
        }
        // The provider's typed error: retried with backoff when it may pass, else the call's end.
        std::string type = json_io::get_string(state.error, "type", "transient");
        std::string message = json_io::get_string(state.error, "message");
        std::optional<double> retry_after;
        if (state.error.is_object() && state.error.contains("retry_after") && state.error["retry_after"].is_number())
            retry_after = state.error["retry_after"].get<double>();
        bool retryable = retried_by_queue(provider_stop_reason(type));
        if (!retryable || attempt >= l.retry_attempts) {
            std::string why = "provider '" + std::string(provider) + "' failed: ";
            why.append(type).append(": ").append(message);
            if (retryable) why += " (after " + spelling::counted(attempt, "attempt", "attempts") + ")";
            fail(out, type, std::move(why));
            return out;
        }
        double delay = retry_after ? *retry_after : l.backoff_s(attempt);
        if (type == "rate_limit") l.pause_for(delay);  // one limiter for every session of this provider
        // info: the turn reports each retry to its user once (a warning line per retry).
        spdlog::info("model request retried: provider={} attempt={}/{} type={} delay_s={:.2f} {}", provider, attempt,
                     l.retry_attempts, type, delay, message);
        if (callbacks.on_retry) callbacks.on_retry({attempt, l.retry_attempts, type, message, delay});
        if (!sleep_until(Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(delay * 1000)), stop_waiting)) {
            fail(out, "cancelled", "the request was cancelled while waiting to retry");
            return out;
        }
    }
}

std::vector<LaneStats> LlmQueue::stats() {
    std::vector<LaneStats> out;
    std::lock_guard lock(mutex_);
    for (auto& [name, lane] : lanes_) {
        std::lock_guard lane_lock(lane->mutex);
        LaneStats s;
        s.provider = name;
        s.waiting = lane->waiting.size();
        s.active = lane->active;
        s.bucket_bounds.assign(std::begin(Lane::kBounds), std::end(Lane::kBounds));
        s.bucket_counts.assign(std::begin(lane->buckets), std::end(lane->buckets));
        s.count = lane->finished;
        s.sum_s = lane->total_s;
        s.failures = lane->failed;
        s.fallbacks = lane->fallbacks;
        s.input_tokens = lane->input_tokens;
        s.cached_input_tokens = lane->cached_input_tokens;
        out.push_back(std::move(s));
    }
    return out;
}

void LlmQueue::note_fallback(std::string_view provider) {
    Lane& l = lane(provider);
    std::lock_guard lock(l.mutex);
    ++l.fallbacks;
}

bool Readiness::serves(std::string_view model) const {
    return std::any_of(models.begin(), models.end(),
                       [&](const std::string& id) { return id == model || id == std::string(model) + ":latest"; });
}

Readiness LlmQueue::check(std::string_view provider, const ah_cancel* cancel) {
    Readiness r;
    plugins::CallInput call;
    call.call_id = "readiness";
    call.cancel = cancel;
    auto listed = registry_.models(provider, call);
    if (!listed && plugins::is(listed.error(), plugins::PluginFault::unsupported)) {
        // It cannot list what it serves (an Azure deployment serves the one model its URL names):
        // nothing to check before the first call, which says it if the model is wrong.
        r.ready = true;
        r.message = listed.error().message;
        return r;
    }
    if (!listed) {
        r.problem = plugins::is(listed.error(), plugins::PluginFault::provider_unavailable) ? NotReady::provider_unavailable
                                                                                            : NotReady::model_list_failed;
        r.message = listed.error().message;
        return r;
    }
    bool has_default = false;  // a model the provider uses when none is configured
    for (const auto& m : json::parse(*listed))
        if (m.is_object() && m.contains("id") && m["id"].is_string()) {
            r.models.push_back(m["id"]);
            has_default = has_default || json_io::get_bool(m, "default", false);
        }
    const config::ProviderSettings* settings = config_.provider_named(provider);
    std::string model = settings ? settings->model : "";
    const std::string list = r.models.empty() ? "" : spelling::join_names(r.models);
    const std::string table =
        !settings || settings == &config_.provider ? "[provider]" : "[providers." + std::string(provider) + "]";
    const std::string file = config_.source.empty() ? std::string("agenthost.toml") : config_.source.string();
    if (model.empty() && !has_default) {  // the request would name no model: a server can only refuse it
        r.problem = NotReady::model_not_set;
        r.message = "provider '" + std::string(provider) + "' has no model set: add model = \"" +
                    (r.models.empty() ? std::string("…") : r.models.front()) + "\" to " + table + " in " + file +
                    (list.empty() ? "" : " (it serves: " + list + ")");
        return r;
    }
    if (!model.empty() && !r.serves(model)) {
        r.problem = NotReady::model_unavailable;
        r.message = "provider '" + std::string(provider) + "' does not serve model '" + model + "'" +
                    (list.empty() ? "" : " (it serves: " + list + ")") + "; fix model in " + table + " of " + file;
        return r;
    }
    r.ready = true;
    return r;
}

}  // namespace agenthost::llm
