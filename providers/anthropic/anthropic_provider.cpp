// The Anthropic Messages API adapter: the system prompt as its own field, tool_use / tool_result
// content blocks, streamed events (message_start, content_block_start/delta/stop with
// input_json_delta for tool input, message_delta with stop_reason and usage), thinking as reasoning.
#include "../common/exchange.hpp"

#include <map>

namespace {

using agenthost::providers::Endpoint;
using agenthost::sdk::Call;
using agenthost::sdk::Emitter;
using agenthost::sdk::Host;
using nlohmann::json;
namespace wire = agenthost::providers;

std::string stop_reason(const std::string& reason) {
    if (reason == "tool_use") return "tool_calls";
    if (reason == "max_tokens") return "max_tokens";
    if (reason == "refusal") return "content_filter";
    return "end";
}

// The error object of an "error" stream event → the SDK's type.
std::string stream_error_type(const json& error) {
    std::string type = error.value("type", "");
    std::string message = error.value("message", "");
    if (type == "rate_limit_error") return "rate_limit";
    if (type == "authentication_error" || type == "permission_error") return "auth";
    if (type == "not_found_error") return "model_unavailable";
    if (type == "invalid_request_error") return wire::says_context_too_large(message) ? "context_too_large" : "bad_request";
    return "transient";  // overloaded_error, api_error, anything new
}

class AnthropicProvider : public agenthost::sdk::ProviderPlugin {
public:
    explicit AnthropicProvider(Host host) : ProviderPlugin(host) {
        json cfg = host.config();
        endpoint_ = wire::read_endpoint(cfg, "https://api.anthropic.com");
        version_ = cfg.value("anthropic_version", "2023-06-01");
        default_max_tokens_ = cfg.value("default_max_tokens", 4096);
        prompt_cache_ = cfg.value("prompt_cache", true);
    }

    void chat(const Call& call, Emitter& out) override {
        const json& request = call.arguments;
        bool stream = request.value("stream", true);
        const std::string url = wire::join_url(endpoint_.base_url, "/v1/messages");
        auto http = wire::post_json(endpoint_, url, wire_request(request, stream), headers(stream));

        Reply reply;
        wire::ChatBody answer(stream);
        auto ex = wire::exchange(host(), http, call.cancel, [&](std::string_view chunk) {
            return answer.feed(chunk, [&](std::string_view, std::string_view data) { return on_event(data, reply, out); });
        });
        if (answer.too_large()) return (void)out.error("bad_response", wire::kTooLargeMessage);
        if (!stream && ex.status == AH_OK && ex.code >= 200 && ex.code < 300)
            on_message(json::parse(answer.whole(), nullptr, false), reply, out);
        if (reply.error.is_object()) {
            out.error(stream_error_type(reply.error), reply.error.value("message", "the stream reported an error"));
            return;
        }
        if (wire::report_failure(out, host(), ex, url, call.cancel, reply.done)) return;
        out.usage(reply.input_tokens, reply.output_tokens, reply.cached_tokens);
        out.stop(stop_reason(reply.stop));
    }

    json models(const Call& call) override {
        return wire::model_list(host(), endpoint_, wire::join_url(endpoint_.base_url, "/v1/models"), headers(false), call.cancel);
    }

private:
    struct Block {
        std::string type, id, name, input;
    };
    struct Reply {
        std::map<int, Block> blocks;
        std::string stop;
        long long input_tokens = 0, output_tokens = 0, cached_tokens = 0;
        bool done = false;
        json error;
    };

    json headers(bool stream) const {
        json h{{"anthropic-version", version_}, {"Accept", stream ? "text/event-stream" : "application/json"}};
        if (!endpoint_.api_key.empty()) h["x-api-key"] = endpoint_.api_key;
        return h;
    }

    // Appends a message, merging it into the previous one of the same role (roles must alternate).
    static void append(json& messages, const std::string& role, json blocks) {
        if (!messages.empty() && messages.back()["role"] == role) {
            for (auto& b : blocks) messages.back()["content"].push_back(std::move(b));
            return;
        }
        messages.push_back({{"role", role}, {"content", std::move(blocks)}});
    }

    json wire_request(const json& request, bool stream) const {
        std::string system;
        json messages = json::array();
        for (const auto& m : request.at("messages")) {
            std::string role = m.value("role", "user");
            std::string text = wire::content_text(m);
            if (role == "system") {
                system += (system.empty() ? "" : "\n\n") + text;
            } else if (role == "assistant") {
                json blocks = json::array();
                if (!text.empty()) blocks.push_back({{"type", "text"}, {"text", text}});
                for (const auto& c : m.value("tool_calls", json::array()))
                    blocks.push_back({{"type", "tool_use"},
                                      {"id", c.value("id", "")},
                                      {"name", c.value("name", "")},
                                      {"input", wire::arguments_object(c.value("arguments", json::object()))}});
                if (!blocks.empty()) append(messages, "assistant", std::move(blocks));
            } else if (role == "tool") {
                append(messages, "user",
                       json::array({{{"type", "tool_result"}, {"tool_use_id", m.value("tool_call_id", "")}, {"content", text}}}));
            } else {
                append(messages, "user", json::array({{{"type", "text"}, {"text", text.empty() ? " " : text}}}));
            }
        }
        json body{{"model", wire::model_of(request, endpoint_)},
                  {"messages", std::move(messages)},
                  {"max_tokens", request.value("max_tokens", default_max_tokens_)},
                  {"stream", stream}};
        json tools = json::array();
        for (const auto& t : request.value("tools", json::array()))
            tools.push_back({{"name", t.value("name", "")},
                             {"description", t.value("description", "")},
                             {"input_schema", t.value("parameters", json{{"type", "object"}})}});
        if (!system.empty()) body["system"] = json::array({{{"type", "text"}, {"text", system}}});
        if (prompt_cache_) mark_cache_breakpoints(body, tools);
        if (!tools.empty()) {
            body["tools"] = std::move(tools);
            std::string choice = request.value("tool_choice", "auto");
            body["tool_choice"] = {{"type", choice == "required" ? "any" : choice == "none" ? "none" : "auto"}};
        }
        if (request.contains("temperature")) body["temperature"] = request["temperature"];
        return body;
    }

    // The prompt is cached up to each marked block (tools, then system, then messages, in that
    // order): the tools, the system prompt and the conversation so far each end a prefix the next
    // step reads from the cache (the host only ever appends to a turn's conversation between
    // prunes). Three of the four breakpoints the API allows.
    static void mark_cache_breakpoints(json& body, json& tools) {
        const json ephemeral{{"type", "ephemeral"}};
        if (!tools.empty()) tools.back()["cache_control"] = ephemeral;
        if (body.contains("system")) body["system"].back()["cache_control"] = ephemeral;
        json& messages = body["messages"];
        if (!messages.empty() && !messages.back()["content"].empty())
            messages.back()["content"].back()["cache_control"] = ephemeral;
    }

    bool on_event(std::string_view data, Reply& reply, Emitter& out) {
        json e = json::parse(data.begin(), data.end(), nullptr, false);
        if (!e.is_object()) return true;
        std::string type = e.value("type", "");
        int index = e.value("index", 0);
        if (type == "message_start") {
            read_usage(e.value("message", json::object()).value("usage", json::object()), reply);
        } else if (type == "content_block_start") {
            const json& b = e.value("content_block", json::object());
            Block& block = reply.blocks[index];
            block.type = b.value("type", "");
            block.id = b.value("id", "");
            block.name = b.value("name", "");
            if (b.contains("text") && b["text"].is_string() && !b["text"].get<std::string>().empty())
                return out.text(b["text"].get<std::string>());
        } else if (type == "content_block_delta") {
            const json& d = e.value("delta", json::object());
            std::string kind = d.value("type", "");
            if (kind == "text_delta") return out.text(d.value("text", ""));
            if (kind == "thinking_delta") return out.reasoning(d.value("thinking", ""));
            if (kind == "input_json_delta") reply.blocks[index].input += d.value("partial_json", "");
        } else if (type == "content_block_stop") {
            const Block& b = reply.blocks[index];
            if (b.type == "tool_use") return emit_call(b, out);
        } else if (type == "message_delta") {
            const json& d = e.value("delta", json::object());
            if (d.contains("stop_reason") && d["stop_reason"].is_string()) reply.stop = d["stop_reason"];
            if (e.contains("usage")) reply.output_tokens = e["usage"].value("output_tokens", reply.output_tokens);
        } else if (type == "message_stop") {
            reply.done = true;
        } else if (type == "error") {
            reply.error = e.value("error", json::object());
            return false;
        }
        return true;
    }

    // Anthropic's input_tokens counts only what follows the last cache breakpoint: the whole prompt
    // adds what was written to the cache and what was read from it.
    static void read_usage(const json& usage, Reply& reply) {
        if (!usage.is_object()) return;
        reply.cached_tokens = wire::count_of(usage, "cache_read_input_tokens");
        reply.input_tokens =
            wire::count_of(usage, "input_tokens") + wire::count_of(usage, "cache_creation_input_tokens") + reply.cached_tokens;
        reply.output_tokens = wire::count_of(usage, "output_tokens");
    }

    bool emit_call(const Block& b, Emitter& out) {
        json input = b.input.empty() ? json::object() : json::parse(b.input, nullptr, false);
        if (input.is_discarded()) input = b.input;  // the host tells the model its JSON was invalid
        return out.tool_call(b.id, b.name, input);
    }

    // A whole (not streamed) message.
    void on_message(const json& m, Reply& reply, Emitter& out) {
        if (!m.is_object()) return;
        for (const auto& b : m.value("content", json::array())) {
            std::string type = b.value("type", "");
            if (type == "text")
                out.text(b.value("text", ""));
            else if (type == "thinking")
                out.reasoning(b.value("thinking", ""));
            else if (type == "tool_use")
                out.tool_call(b.value("id", ""), b.value("name", ""), b.value("input", json::object()));
        }
        reply.stop = m.value("stop_reason", "");
        read_usage(m.value("usage", json::object()), reply);
        reply.done = true;
    }

    Endpoint endpoint_;
    std::string version_;
    int default_max_tokens_ = 4096;
    bool prompt_cache_ = true;
};

}  // namespace

// Thread-safe: the adapter keeps no state between calls.
AGENTHOST_PLUGIN(AnthropicProvider, "anthropic", "1.0.0", AH_PLUGIN_THREAD_SAFE)
