// The Ollama native adapter: /api/chat with NDJSON streaming, tools with object arguments,
// "thinking" as reasoning, /api/tags for the models and /api/show for the context length.
#include "../common/exchange.hpp"

namespace {

using agenthost::providers::Endpoint;
using agenthost::sdk::Call;
using agenthost::sdk::Emitter;
using agenthost::sdk::Host;
using nlohmann::json;
namespace wire = agenthost::providers;

class OllamaProvider : public agenthost::sdk::ProviderPlugin {
public:
    explicit OllamaProvider(Host host) : ProviderPlugin(host) {
        endpoint_ = wire::read_endpoint(host.config(), "http://127.0.0.1:11434");
    }

    void chat(const Call& call, Emitter& out) override {
        const json& request = call.arguments;
        bool stream = request.value("stream", true);
        const std::string url = wire::join_url(endpoint_.base_url, "/api/chat");
        auto http = wire::post_json(endpoint_, url, wire_request(request, stream), headers());

        Reply reply;
        wire::NdjsonDecoder lines;
        auto ex = wire::exchange(host(), http, call.cancel, [&](std::string_view chunk) {
            return lines.feed(chunk, [&](std::string_view line) { return on_line(line, reply, out); });
        });
        if (lines.too_large()) return (void)out.error("bad_response", wire::kTooLargeMessage);
        if (!reply.error.empty()) {
            auto e = wire::classify_http_error(reply.error.find("not found") != std::string::npos ? 404 : 500, json::object(),
                                               json{{"error", reply.error}}.dump());
            out.error(e.type, e.message, e.retry_after);
            return;
        }
        if (wire::report_failure(out, host(), ex, url, call.cancel, reply.done)) return;
        out.usage(reply.input_tokens, reply.output_tokens);
        out.stop(reply.stop == "length" ? "max_tokens" : reply.calls > 0 ? "tool_calls" : "end");
    }

    json models(const Call& call) override {
        std::string url = wire::join_url(endpoint_.base_url, "/api/tags");
        auto response = host().http(wire::get(endpoint_, url, headers()), call.cancel);
        if (auto why = wire::list_failure(response, url)) return json{{"error", *why}};
        json j = json::parse(response.body, nullptr, false);
        if (!j.is_object() || !j.contains("models")) return json{{"error", url + " answered, but not with a model list"}};
        json list = json::array();
        for (const auto& m : j["models"]) {
            std::string name = m.value("name", m.value("model", ""));
            if (name.empty()) continue;
            json entry{{"id", name}};
            if (name == endpoint_.model || name == endpoint_.model + ":latest")
                if (auto length = context_length(name, call)) entry["context_length"] = *length;
            list.push_back(std::move(entry));
        }
        return list;
    }

private:
    struct Reply {
        std::string stop, error;
        long long input_tokens = 0, output_tokens = 0;
        int calls = 0;
        bool done = false;
    };

    json headers() const {
        json h = json::object();
        if (!endpoint_.api_key.empty()) h["Authorization"] = "Bearer " + endpoint_.api_key;
        return h;
    }

    // model_info holds "<architecture>.context_length".
    std::optional<long long> context_length(const std::string& model, const Call& call) {
        auto http = wire::post_json(endpoint_, wire::join_url(endpoint_.base_url, "/api/show"), {{"model", model}}, headers());
        auto response = host().http(http, call.cancel);
        json j = json::parse(response.body, nullptr, false);
        if (response.code != 200 || !j.is_object()) return std::nullopt;
        const json info = j.value("model_info", json::object());  // items() must not outlive it
        for (const auto& [key, value] : info.items()) {
            const std::string suffix = ".context_length";
            if (key.size() > suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0 &&
                value.is_number_integer())
                return value.get<long long>();
        }
        return std::nullopt;
    }

    json wire_request(const json& request, bool stream) const {
        json messages = json::array();
        for (const auto& m : request.at("messages")) {
            std::string role = m.value("role", "user");
            json msg{{"role", role}, {"content", wire::content_text(m)}};
            if (role == "assistant" && m.contains("tool_calls") && !m["tool_calls"].empty()) {
                msg["tool_calls"] = json::array();
                for (const auto& c : m["tool_calls"])
                    msg["tool_calls"].push_back(
                        {{"function",
                          {{"name", c.value("name", "")},
                           {"arguments", wire::arguments_object(c.value("arguments", json::object()))}}}});
            }
            if (role == "tool" && m.contains("name")) msg["tool_name"] = m["name"];
            messages.push_back(std::move(msg));
        }
        json body{{"model", wire::model_of(request, endpoint_)}, {"messages", std::move(messages)}, {"stream", stream}};
        json tools = json::array();
        for (const auto& t : request.value("tools", json::array()))
            tools.push_back({{"type", "function"},
                             {"function",
                              {{"name", t.value("name", "")},
                               {"description", t.value("description", "")},
                               {"parameters", t.value("parameters", json{{"type", "object"}})}}}});
        if (!tools.empty() && request.value("tool_choice", "auto") != "none") body["tools"] = std::move(tools);
        json options = json::object();
        if (request.contains("max_tokens")) options["num_predict"] = request["max_tokens"];
        if (request.contains("temperature")) options["temperature"] = request["temperature"];
        if (!options.empty()) body["options"] = std::move(options);
        return body;
    }

    bool on_line(std::string_view line, Reply& reply, Emitter& out) {
        json j = json::parse(line.begin(), line.end(), nullptr, false);
        if (!j.is_object()) return true;
        if (j.contains("error")) {
            reply.error = j["error"].is_string() ? j["error"].get<std::string>() : j["error"].dump();
            return false;
        }
        const json& m = j.value("message", json::object());
        if (m.contains("thinking") && m["thinking"].is_string() && !m["thinking"].get<std::string>().empty() &&
            !out.reasoning(m["thinking"].get<std::string>()))
            return false;
        if (m.contains("content") && m["content"].is_string() && !m["content"].get<std::string>().empty() &&
            !out.text(m["content"].get<std::string>()))
            return false;
        for (const auto& c : m.value("tool_calls", json::array())) {
            const json& f = c.value("function", json::object());
            std::string id = c.value("id", "call_" + std::to_string(reply.calls));
            ++reply.calls;
            if (!out.tool_call(id, f.value("name", ""), f.value("arguments", json::object()))) return false;
        }
        if (j.value("done", false)) {
            reply.done = true;
            reply.stop = j.value("done_reason", "stop");
            reply.input_tokens = j.value("prompt_eval_count", 0LL);
            reply.output_tokens = j.value("eval_count", 0LL);
        }
        return true;
    }

    Endpoint endpoint_;
};

}  // namespace

// Thread-safe: the adapter keeps no state between calls.
AGENTHOST_PLUGIN(OllamaProvider, "ollama", "1.0.0", AH_PLUGIN_THREAD_SAFE)
