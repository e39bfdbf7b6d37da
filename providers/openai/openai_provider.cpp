// The OpenAI Chat Completions adapter, for OpenAI and every compatible server (DeepSeek, vLLM,
// llama.cpp server, LM Studio, Ollama's /v1, Azure OpenAI): streamed (SSE) or not, native tool
// calls assembled from deltas by index, usage, and reasoning_content where the server sends it.
#include "../common/exchange.hpp"
#include "../common/openai_auth.hpp"

#include <map>

namespace {

using agenthost::providers::Endpoint;
using agenthost::sdk::Call;
using agenthost::sdk::Emitter;
using agenthost::sdk::Host;
using nlohmann::json;
namespace wire = agenthost::providers;

std::string stop_reason(const std::string& finish, bool has_calls) {
    if (finish == "length") return "max_tokens";
    if (finish == "content_filter") return "content_filter";
    if (finish == "tool_calls" || finish == "function_call" || has_calls) return "tool_calls";
    return "end";
}

class OpenAiProvider : public agenthost::sdk::ProviderPlugin {
public:
    explicit OpenAiProvider(Host host) : ProviderPlugin(host) {
        json cfg = host.config();
        endpoint_ = wire::read_endpoint(cfg, "https://api.openai.com/v1");
        include_usage_ = cfg.value("stream_usage", true);
        max_tokens_field_ = cfg.value("max_tokens_field", "max_tokens");
        auth_ = wire::OpenAiAuth::read(cfg, endpoint_.base_url);
    }

    void chat(const Call& call, Emitter& out) override {
        const json& request = call.arguments;
        bool stream = request.value("stream", true);
        json body = wire_request(request, stream);
        const std::string url = wire::join_url(endpoint_.base_url, "/chat/completions") + auth_.query;
        auto http = wire::post_json(endpoint_, url, body, headers(stream));

        Reply reply;
        wire::ChatBody answer(stream);
        auto ex = wire::exchange(host(), http, call.cancel, [&](std::string_view chunk) {
            return answer.feed(chunk, [&](std::string_view, std::string_view data) { return on_chunk(data, reply, out); });
        });
        if (answer.too_large()) return (void)out.error("bad_response", wire::kTooLargeMessage);
        if (!stream && ex.status == AH_OK && ex.code >= 200 && ex.code < 300) {
            json j = json::parse(answer.whole(), nullptr, false);
            if (j.is_object()) on_chunk(answer.whole(), reply, out, false);
            reply.done = j.is_object() && j.contains("choices");
        }
        if (!reply.stream_error.empty()) return (void)out.error(reply.stream_error_type, reply.stream_error);
        if (wire::report_failure(out, host(), ex, url, call.cancel, reply.done || !reply.finish.empty())) return;
        finish(reply, out);
    }

    json models(const Call& call) override {
        if (auth_.deployment_url) return nullptr;  // an Azure deployment serves one model, named by its URL
        return wire::model_list(host(), endpoint_, wire::join_url(endpoint_.base_url, "/models") + auth_.query, headers(false),
                                call.cancel);
    }

private:
    struct PartialCall {
        std::string id, name, arguments;
    };
    struct Reply {
        std::map<int, PartialCall> calls;  // by the server's index: deltas of several calls interleave
        std::string finish;
        json usage;
        bool done = false;
        std::string stream_error, stream_error_type;
    };

    json headers(bool stream) const {
        json h = json::object();
        auth_.add_key(h, endpoint_.api_key);
        h["Accept"] = stream ? "text/event-stream" : "application/json";
        return h;
    }

    json wire_request(const json& request, bool stream) const {
        json messages = json::array();
        for (const auto& m : request.at("messages")) {
            std::string role = m.value("role", "user");
            json msg{{"role", role}};
            if (role == "assistant") {
                std::string text = wire::content_text(m);
                msg["content"] = text.empty() && m.contains("tool_calls") ? json(nullptr) : json(text);
                if (m.contains("tool_calls") && !m["tool_calls"].empty()) {
                    msg["tool_calls"] = json::array();
                    for (const auto& c : m["tool_calls"])
                        msg["tool_calls"].push_back(
                            {{"id", c.value("id", "")},
                             {"type", "function"},
                             {"function",
                              {{"name", c.value("name", "")},
                               {"arguments", wire::arguments_text(c.value("arguments", json::object()))}}}});
                }
            } else if (role == "tool") {
                msg["tool_call_id"] = m.value("tool_call_id", "");
                msg["content"] = wire::content_text(m);
            } else {
                msg["content"] = wire::content_text(m);
            }
            messages.push_back(std::move(msg));
        }
        json body{{"model", wire::model_of(request, endpoint_)}, {"messages", std::move(messages)}, {"stream", stream}};
        if (stream && include_usage_) body["stream_options"] = {{"include_usage", true}};
        json tools = json::array();
        for (const auto& t : request.value("tools", json::array()))
            tools.push_back({{"type", "function"},
                             {"function",
                              {{"name", t.value("name", "")},
                               {"description", t.value("description", "")},
                               {"parameters", t.value("parameters", json{{"type", "object"}})}}}});
        if (!tools.empty()) {
            body["tools"] = std::move(tools);
            body["tool_choice"] = request.value("tool_choice", "auto");
        }
        if (request.contains("max_tokens")) body[max_tokens_field_] = request["max_tokens"];
        if (request.contains("temperature")) body["temperature"] = request["temperature"];
        return body;
    }

    // One chunk (streamed) or the whole completion (not streamed).
    bool on_chunk(std::string_view data, Reply& reply, Emitter& out, bool streamed = true) {
        if (data == "[DONE]") {
            reply.done = true;
            return true;
        }
        json j = json::parse(data.begin(), data.end(), nullptr, false);
        if (!j.is_object()) return true;  // keep-alives and comments
        if (j.contains("error")) {        // some servers report a failure inside a 200 stream
            auto e = wire::classify_http_error(400, json::object(), std::string(data));
            reply.stream_error = e.message;
            reply.stream_error_type = e.type == "bad_request" ? "transient" : e.type;
            return false;
        }
        if (j.contains("usage") && j["usage"].is_object()) reply.usage = j["usage"];
        if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) return true;
        const json& choice = j["choices"][0];
        const json& delta = streamed ? choice.value("delta", json::object()) : choice.value("message", json::object());
        for (const char* key : {"reasoning_content", "reasoning"})
            if (delta.contains(key) && delta[key].is_string() && !out.reasoning(delta[key].get<std::string>())) return false;
        if (delta.contains("content") && delta["content"].is_string() && !delta["content"].get<std::string>().empty() &&
            !out.text(delta["content"].get<std::string>()))
            return false;
        if (delta.contains("tool_calls") && delta["tool_calls"].is_array()) {
            int position = 0;
            for (const auto& c : delta["tool_calls"]) {
                int index = c.contains("index") && c["index"].is_number_integer() ? c["index"].get<int>() : position;
                ++position;
                PartialCall& p = reply.calls[index];
                if (c.contains("id") && c["id"].is_string()) p.id = c["id"];
                const json& f = c.value("function", json::object());
                if (f.contains("name") && f["name"].is_string()) p.name += f["name"].get<std::string>();
                if (f.contains("arguments"))
                    p.arguments += f["arguments"].is_string() ? f["arguments"].get<std::string>() : f["arguments"].dump();
            }
        }
        if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) reply.finish = choice["finish_reason"];
        return true;
    }

    void finish(const Reply& reply, Emitter& out) {
        for (const auto& [index, c] : reply.calls) {
            json args = c.arguments.empty() ? json::object() : json::parse(c.arguments, nullptr, false);
            if (args.is_discarded()) args = c.arguments;  // the host tells the model its JSON was invalid
            std::string id = c.id.empty() ? "call_" + std::to_string(index) : c.id;
            if (!out.tool_call(id, c.name, args)) return;
        }
        if (reply.usage.is_object())
            out.usage(reply.usage.value("prompt_tokens", 0LL), reply.usage.value("completion_tokens", 0LL),
                      cached_tokens(reply.usage));
        out.stop(stop_reason(reply.finish, !reply.calls.empty()));
    }

    // The prompt tokens a prefix cache served: OpenAI's prompt_tokens_details.cached_tokens, or
    // DeepSeek's prompt_cache_hit_tokens.
    static long long cached_tokens(const json& usage) {
        long long cached = wire::count_of(usage.value("prompt_tokens_details", json::object()), "cached_tokens");
        return cached > 0 ? cached : wire::count_of(usage, "prompt_cache_hit_tokens");
    }

    Endpoint endpoint_;
    bool include_usage_ = true;
    std::string max_tokens_field_;
    wire::OpenAiAuth auth_;
};

}  // namespace

// Thread-safe: the adapter keeps no state between calls, so the LLM queue may run several at once.
AGENTHOST_PLUGIN(OpenAiProvider, "openai", "1.0.0", AH_PLUGIN_THREAD_SAFE)
