// The scripted provider: replays a cassette instead of calling a model. It is the offline default
// and the test double that speaks the real provider ABI (typed errors, streamed deltas, tool calls).
#include "cassette.hpp"
#include "request_reader.hpp"

#include <agenthost/plugin.hpp>

#include <array>
#include <atomic>
#include <functional>
#include <chrono>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

namespace {

using agenthost::sdk::Call;
using agenthost::sdk::Emitter;
using agenthost::sdk::Host;
using nlohmann::json;

// Length of the longest prefix of `text` not longer than `max` bytes that ends on a UTF-8 boundary.
size_t utf8_prefix(std::string_view text, size_t max) {
    if (text.size() <= max) return text.size();
    size_t n = max;
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
    return n == 0 ? max : n;
}

std::string random_tag() {
    std::random_device random;
    std::string tag;
    for (int i = 0; i < 6; ++i) tag += "0123456789abcdef"[random() % 16];
    return tag;
}

class ScriptedProvider : public agenthost::sdk::ProviderPlugin {
public:
    explicit ScriptedProvider(Host host) : ProviderPlugin(host) {
        json cfg = host.config();
        delta_chars_ = std::max<size_t>(1, cfg.value("delta_chars", 6));
        delta_delay_ms_ = cfg.value("delta_delay_ms", 0);
        request_log_ = cfg.value("request_log", "");
        std::string path = cfg.value("cassette", "");
        if (path.empty()) return;  // loads; each chat then says how to configure a cassette
        std::string error;
        cassette_ = scripted::Cassette::load(path, error);
        if (!cassette_) throw std::runtime_error(error);
        host.info("cassette loaded", {{"cassette", path}, {"contents", cassette_->contents()}});
    }

    // chat() reads what it needs from the request's text (request_reader.hpp), not call.arguments.
    bool reads_arguments_json() const override { return true; }

    void chat(const Call& call, Emitter& out) override {
        if (!cassette_) {
            out.error("bad_request",
                      "the scripted provider has no cassette: set [plugins.scripted] cassette = "
                      "\"path/to/cassette.json\" in agenthost.toml");
            return;
        }
        if (!request_log_.empty()) log_request(call.arguments_json);
        scripted::RequestFacts facts;
        std::string unreadable;
        if (!requests_.read(call.arguments_json, facts, unreadable)) {
            out.error("bad_request", unreadable);
            return;
        }
        // The host names each model call of a run (its id); a resumed run asks the same call again.
        std::string print = call.id.empty() ? std::string() : std::string(call.id) + ":" + std::to_string(facts.messages_print);
        bool store_down = false;
        std::optional<json> reply =
            next_reply(std::string(call.conversation), print, facts.last_user, facts.last_message, store_down);
        if (store_down) {  // the run stops as a store failure and resumes by itself; nothing is replayed twice
            out.error("store_unavailable",
                      "the scripted provider's progress could not be read or saved (the host's store is unavailable)");
            return;
        }
        if (!reply) {
            out.error("bad_request", "cassette " + cassette_->path() + " has no reply left for conversation '" +
                                         std::string(call.conversation) + "'; add replies or a \"fallback\" reply");
            return;
        }
        play(*reply, call, out);
    }

    // Without a cassette there is nothing to answer with: not ready, saying how to fix it (so
    // readiness and doctor's cassette check agree).
    json models(const Call&) override {
        if (!cassette_)
            return {{"error",
                     "no cassette: set [plugins.scripted] cassette = \"path/to/cassette.json\", or choose a real provider "
                     "([provider] use = …; agenthost init writes one)"}};
        if (!cassette_->placeholder().empty()) return {{"error", cassette_->placeholder()}};
        return json::array({{{"id", "scripted"}, {"default", true}}});  // answers whatever model is asked for
    }

    // doctor: a cassette is configured (it was read at start, or the plugin would not have loaded).
    std::vector<json> health(const Call&) override {
        if (cassette_ && !cassette_->placeholder().empty())
            return {agenthost::sdk::health_check("model", false, cassette_->placeholder())};
        if (cassette_) return {agenthost::sdk::health_check("cassette", true, cassette_->contents())};
        return {agenthost::sdk::health_check(
            "cassette", false, "none configured: set [plugins.scripted] cassette = \"path/to/cassette.json\" in agenthost.toml")};
    }

private:
    // Sleeps in small steps so a cancel is noticed quickly.
    bool wait(int64_t ms, const Call& call) {
        auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
        while (std::chrono::steady_clock::now() < until) {
            if (host().cancelled(call.cancel)) return false;
            std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(10),
                                                                                      until - std::chrono::steady_clock::now()));
        }
        return !host().cancelled(call.cancel);
    }

    bool stream(std::string_view text, bool reasoning, const Call& call, Emitter& out) {
        while (!text.empty()) {
            size_t n = utf8_prefix(text, delta_chars_);
            if (!(reasoning ? out.reasoning(text.substr(0, n)) : out.text(text.substr(0, n)))) return false;
            text.remove_prefix(n);
            if (delta_delay_ms_ > 0 && !text.empty() && !wait(delta_delay_ms_, call)) return false;
        }
        return true;
    }

    void play(const json& reply, const Call& call, Emitter& out) {
        if (reply.contains("delay_ms") && !wait(reply["delay_ms"].get<int64_t>(), call)) return;
        if (reply.contains("error")) {
            const json& e = reply["error"];
            std::optional<double> retry_after;
            if (e.contains("retry_after")) retry_after = e["retry_after"].get<double>();
            out.error(e["type"].get<std::string>(), e.value("message", "replayed " + e["type"].get<std::string>() + " error"),
                      retry_after);
            return;
        }
        if (reply.contains("reasoning") && !stream(reply["reasoning"].get<std::string>(), true, call, out)) return;
        std::string text = reply.value("text", "");
        if (!stream(text, false, call, out)) return;
        size_t index = 0;
        for (const json& c : reply.value("tool_calls", json::array())) {
            std::string id = c.value("id", "call_" + session_ + "_" + std::to_string(++calls_) + "_" + std::to_string(index++));
            if (!out.tool_call(id, c["name"].get<std::string>(), c.value("arguments", json::object()))) return;
        }
        if (reply.contains("usage")) {
            out.usage(reply["usage"].value("input_tokens", 0LL), reply["usage"].value("output_tokens", 0LL));
        } else {  // estimates (4 bytes a token) when the cassette records no usage
            out.usage(static_cast<long long>(call.arguments_json.size() / 4), static_cast<long long>(text.size() / 4));
        }
        out.stop(reply.value("stop", reply.contains("tool_calls") ? "tool_calls" : "end"));
    }

    // Progress is kept per conversation in the plugin's key-value store, so many clients can replay
    // one cassette at once and a conversation continued by another process (a resumed run) goes on
    // where it stopped. A model call asked again — the same call id and messages, as when a run is
    // resumed after the host died during that call — gets the reply it got before, as a real model
    // asked the same thing would answer it again, instead of using up the next one. Error replies are
    // not kept: the host's retry of a failed request must get the next reply. Calls without an id
    // (direct plugin use) always move on.
    // `store_down` is set (and nothing chosen) when the progress cannot be read or saved: taking an
    // unreadable progress for none would start the cassette over.
    std::optional<json> next_reply(const std::string& conversation, const std::string& print, std::string_view last_user,
                                   std::string_view last_message, bool& store_down) {
        constexpr size_t kRemembered = 16;
        std::lock_guard lock(progress_lock(conversation));
        const std::string key = "progress/" + conversation;
        json progress = json::object();
        std::string saved;
        ah_status read = host().kv_get(key, saved);
        if (read == AH_OK)
            progress = known_progress(conversation, saved);
        else if (read != AH_ERR_NOT_FOUND && read != AH_ERR_UNSUPPORTED)
            return store_down = true, std::nullopt;
        if (!progress.is_object()) progress = json::object();
        if (!print.empty() && progress.contains("answered") && progress["answered"].is_array())
            for (const json& a : progress["answered"])
                if (a.is_array() && a.size() == 2 && a[0] == print) {
                    json again = a[1];
                    remember_progress(conversation, std::move(saved), std::move(progress));
                    return again;
                }
        json answered =
            progress.contains("answered") && progress["answered"].is_array() ? std::move(progress["answered"]) : json::array();
        progress.erase("answered");
        std::optional<json> reply = cassette_->next(progress, last_user, last_message);
        if (reply && !print.empty() && !reply->contains("error")) {  // an error is asked again on purpose (a retry): it moves on
            answered.push_back(json::array({print, *reply}));
            if (answered.size() > kRemembered) answered.erase(answered.begin());
        }
        progress["answered"] = std::move(answered);
        std::string text = progress.dump();
        if (host().kv_set(key, text) == AH_ERR_IO) return store_down = true, std::nullopt;
        remember_progress(conversation, std::move(text), std::move(progress));
        return reply;
    }

    // The progress as stored, parsed: taken from what this process wrote last when the store still
    // holds exactly that (the usual case), else parsed (another process went on meanwhile).
    // Called under the conversation's progress lock.
    json known_progress(const std::string& conversation, const std::string& saved) {
        {
            std::lock_guard lock(known_mutex_);
            auto known = known_.find(conversation);
            if (known != known_.end() && known->second.text == saved) {
                json progress = std::move(known->second.parsed);
                known_.erase(known);
                return progress;
            }
        }
        return json::parse(saved, nullptr, false);
    }
    void remember_progress(const std::string& conversation, std::string text, json progress) {
        constexpr size_t kKnownConversations = 256;  // a bound, not a cache policy: past it, parse again
        std::lock_guard lock(known_mutex_);
        if (known_.size() >= kKnownConversations) known_.clear();
        known_[conversation] = KnownProgress{std::move(text), std::move(progress)};
    }

    // Appends the request as one JSON line, so tests and users can see exactly what the model was sent.
    void log_request(std::string_view request) {
        std::lock_guard lock(log_mutex_);
        std::ofstream(request_log_, std::ios::app) << request << "\n";
    }

    std::unique_ptr<scripted::Cassette> cassette_;
    scripted::RequestReader requests_;
    size_t delta_chars_ = 6;
    int64_t delta_delay_ms_ = 0;
    std::atomic<uint64_t> calls_{0};
    const std::string session_ = random_tag();  // ids differ between processes, as a server's would
    std::string request_log_;
    // A conversation's progress is read and written under its lock; conversations that share none
    // go on at once (so their progress writes share commits), with a bounded number of locks.
    std::mutex& progress_lock(const std::string& conversation) {
        return progress_locks_[std::hash<std::string>{}(conversation) % progress_locks_.size()];
    }

    struct KnownProgress {
        std::string text;  // as written to the store
        json parsed;
    };
    std::mutex known_mutex_;
    std::unordered_map<std::string, KnownProgress> known_;
    std::mutex log_mutex_;
    std::array<std::mutex, 64> progress_locks_;
};

}  // namespace

// Thread-safe: replies are picked under a lock, so a server can replay to many clients at once.
AGENTHOST_PLUGIN(ScriptedProvider, "scripted", "1.0.0", AH_PLUGIN_THREAD_SAFE)
