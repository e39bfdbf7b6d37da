// The OpenAI Responses API adapter (POST /responses), what OpenAI's reasoning models are built
// around: the system prompt as instructions, the conversation as input items (messages,
// function_call and function_call_output), tool calls as output items whose arguments stream as
// deltas, reasoning summaries as reasoning. Nothing is stored on OpenAI's side (store: false):
// a reasoning model's encrypted reasoning items, made before its calls, ride with the first call
// (provider_data) and go back in front of it, so the model keeps its reasoning across tool calls.
#include "../common/exchange.hpp"
#include "../common/openai_auth.hpp"

#include <cctype>
#include <map>

namespace {

using agenthost::providers::Endpoint;
using agenthost::sdk::Call;
using agenthost::sdk::Emitter;
using agenthost::sdk::Host;
using nlohmann::json;
namespace wire = agenthost::providers;

constexpr const char* kDeploymentUrl =
    "Azure serves the Responses API only under /openai/v1, not under a deployment's URL: set base_url = "
    "\"https://YOUR-RESOURCE.openai.azure.com/openai/v1\" and model to the deployment's name";

// Where the call's Responses-only state lives inside provider_data (other providers may see it).
constexpr const char* kDataKey = "openai_responses";

// A failure event's {code, message} → the SDK's type (the codes of the API's error object).
std::string error_type(const std::string& code, const std::string& message) {
    if (code == "rate_limit_exceeded") return "rate_limit";
    if (code == "invalid_api_key") return "auth";
    if (code == "model_not_found") return "model_unavailable";
    if (code == "context_length_exceeded" || wire::says_context_too_large(message)) return "context_too_large";
    if (code == "invalid_prompt" || code == "invalid_request_error") return "bad_request";
    return "transient";  // server_error, vector_store_timeout, anything new
}

class ResponsesProvider : public agenthost::sdk::ProviderPlugin {
public:
    explicit ResponsesProvider(Host host) : ProviderPlugin(host) {
        json cfg = host.config();
        endpoint_ = wire::read_endpoint(cfg, "https://api.openai.com/v1");
        auth_ = wire::OpenAiAuth::read(cfg, endpoint_.base_url);
        reasoning_ = cfg.value("reasoning", "auto");
        reasoning_summary_ = cfg.value("reasoning_summary", "auto");
    }

    void chat(const Call& call, Emitter& out) override {
        if (auth_.deployment_url) return (void)out.error("bad_request", kDeploymentUrl);
        const json& request = call.arguments;
        bool stream = request.value("stream", true);
        const std::string url = wire::join_url(endpoint_.base_url, "/responses") + auth_.query;
        auto http = wire::post_json(endpoint_, url, wire_request(request, stream), headers(stream));

        Reply reply;
        wire::ChatBody answer(stream);
        auto ex = wire::exchange(host(), http, call.cancel, [&](std::string_view chunk) {
            return answer.feed(chunk, [&](std::string_view, std::string_view data) { return on_event(data, reply, out); });
        });
        if (answer.too_large()) return (void)out.error("bad_response", wire::kTooLargeMessage);
        if (!stream && ex.status == AH_OK && ex.code >= 200 && ex.code < 300) {
            json whole = json::parse(answer.whole(), nullptr, false);
            if (whole.is_object()) on_response(whole, reply, out, true);
        }
        if (!reply.error.empty()) return (void)out.error(reply.error_type, reply.error);
        if (wire::report_failure(out, host(), ex, url, call.cancel, reply.done)) return;
        finish(reply, out);
    }

    json models(const Call& call) override {
        if (auth_.deployment_url) return json{{"error", kDeploymentUrl}};
        return wire::model_list(host(), endpoint_, wire::join_url(endpoint_.base_url, "/models") + auth_.query, headers(false),
                                call.cancel);
    }

private:
    struct PartialCall {
        std::string call_id, name, arguments;
        json reasoning = json::array();  // the reasoning items the reply made before this call
        bool done = false;
    };
    struct Reply {
        std::map<int, PartialCall> calls;  // by output_index
        json reasoning = json::array();    // reasoning items not yet given to a call
        bool done = false;
        std::string status, incomplete_reason;
        json usage;
        std::string error, error_type;
    };

    json headers(bool stream) const {
        json h{{"Accept", stream ? "text/event-stream" : "application/json"}};
        auth_.add_key(h, endpoint_.api_key);
        return h;
    }

    // An assistant message's items: its text, then each call preceded by the reasoning it carried.
    static void assistant_items(const json& m, json& input) {
        std::string text = wire::content_text(m);
        if (!text.empty()) input.push_back({{"role", "assistant"}, {"content", text}});
        for (const auto& c : m.value("tool_calls", json::array())) {
            const json data = c.value("provider_data", json::object());
            const json mine = data.is_object() ? data.value(kDataKey, json::object()) : json::object();
            if (mine.is_object() && mine.contains("reasoning") && mine["reasoning"].is_array())
                for (const auto& item : mine["reasoning"]) input.push_back(item);
            input.push_back({{"type", "function_call"},
                             {"call_id", c.value("id", "")},
                             {"name", c.value("name", "")},
                             {"arguments", wire::arguments_text(c.value("arguments", json::object()))}});
        }
    }

    // Whether the model reasons (o1, o3, o4-mini, gpt-5 …, but not gpt-5-chat): only those take
    // reasoning settings and encrypted reasoning, and they refuse a temperature.
    bool reasons(const std::string& model) const {
        if (reasoning_ != "auto") return reasoning_ == "on";
        bool o_series = model.size() > 1 && model[0] == 'o' && std::isdigit(static_cast<unsigned char>(model[1]));
        bool gpt5 = model.rfind("gpt-5", 0) == 0 && model.find("-chat") == std::string::npos;
        return o_series || gpt5 || model.find("codex") != std::string::npos;
    }

    json wire_request(const json& request, bool stream) const {
        std::string instructions;
        json input = json::array();
        for (const auto& m : request.at("messages")) {
            std::string role = m.value("role", "user");
            if (role == "system") {
                instructions += (instructions.empty() ? "" : "\n\n") + wire::content_text(m);
            } else if (role == "assistant") {
                assistant_items(m, input);
            } else if (role == "tool") {
                input.push_back({{"type", "function_call_output"},
                                 {"call_id", m.value("tool_call_id", "")},
                                 {"output", wire::content_text(m)}});
            } else {
                input.push_back({{"role", "user"}, {"content", wire::content_text(m)}});
            }
        }
        const std::string model = wire::model_of(request, endpoint_);
        const bool reasoning = reasons(model);
        json body{{"model", model}, {"input", std::move(input)}, {"stream", stream}, {"store", false}};
        if (!instructions.empty()) body["instructions"] = instructions;
        if (reasoning) body["include"] = json::array({"reasoning.encrypted_content"});
        if (reasoning && reasoning_summary_ != "off") body["reasoning"] = {{"summary", reasoning_summary_}};
        json tools = json::array();
        for (const auto& t : request.value("tools", json::array()))
            tools.push_back({{"type", "function"},
                             {"name", t.value("name", "")},
                             {"description", t.value("description", "")},
                             {"parameters", t.value("parameters", json{{"type", "object"}})},
                             {"strict", false}});
        if (!tools.empty()) {
            body["tools"] = std::move(tools);
            body["tool_choice"] = request.value("tool_choice", "auto");
        }
        if (request.contains("max_tokens")) body["max_output_tokens"] = request["max_tokens"];
        if (request.contains("temperature") && !reasoning) body["temperature"] = request["temperature"];
        return body;
    }

    // One streamed event (its "type" names it; the SSE event line says the same).
    bool on_event(std::string_view data, Reply& reply, Emitter& out) {
        json e = json::parse(data.begin(), data.end(), nullptr, false);
        if (!e.is_object()) return true;
        const std::string type = e.value("type", "");
        const json delta = e.value("delta", json());
        if ((type == "response.output_text.delta" || type == "response.refusal.delta") && delta.is_string())
            return out.text(delta.get<std::string>());  // a refusal is the model's answer too
        if (type == "response.reasoning_summary_part.added" && e.value("summary_index", 0) > 0) return out.reasoning("\n\n");
        if ((type == "response.reasoning_summary_text.delta" || type == "response.reasoning_text.delta") && delta.is_string())
            return out.reasoning(delta.get<std::string>());
        if (type == "response.output_item.added" || type == "response.output_item.done") {
            on_item(e.value("output_index", 0), e.value("item", json::object()), reply, type == "response.output_item.done");
        } else if (type == "response.function_call_arguments.delta" && delta.is_string()) {
            reply.calls[e.value("output_index", 0)].arguments += delta.get<std::string>();
        } else if (type == "response.completed" || type == "response.incomplete" || type == "response.failed") {
            return on_response(e.value("response", json::object()), reply, out, false);
        } else if (type == "error") {
            reply.error = e.value("message", "the stream reported an error");
            reply.error_type = error_type(e.value("code", ""), reply.error);
            return false;
        }
        return true;
    }

    // An output item begun or finished: a call (its name and id; when done, its whole arguments)
    // or a reasoning item, kept for the next call.
    static void on_item(int index, const json& item, Reply& reply, bool done) {
        if (!item.is_object()) return;
        const std::string type = item.value("type", "");
        if (type == "function_call") {
            PartialCall& call = reply.calls[index];
            call.call_id = item.value("call_id", call.call_id);
            call.name = item.value("name", call.name);
            if (done && item.contains("arguments") && item["arguments"].is_string()) call.arguments = item["arguments"];
            if (call.reasoning.empty()) std::swap(call.reasoning, reply.reasoning);
            call.done = call.done || done;
        } else if (type == "reasoning" && done) {
            json kept{{"type", "reasoning"}, {"id", item.value("id", "")}, {"summary", item.value("summary", json::array())}};
            if (item.contains("encrypted_content") && item["encrypted_content"].is_string())
                kept["encrypted_content"] = item["encrypted_content"];
            reply.reasoning.push_back(std::move(kept));
        }
    }

    // The response object of the last event (or the whole answer when not streamed).
    bool on_response(const json& response, Reply& reply, Emitter& out, bool whole) {
        if (!response.is_object()) return true;
        reply.status = response.value("status", "");
        reply.usage = response.value("usage", json());
        reply.done = true;
        if (reply.status == "failed") {
            const json error = response.value("error", json::object());
            reply.error = error.is_object() ? error.value("message", "the response failed") : "the response failed";
            reply.error_type = error_type(error.is_object() ? error.value("code", "") : "", reply.error);
            return false;
        }
        const json details = response.value("incomplete_details", json::object());
        if (details.is_object()) reply.incomplete_reason = details.value("reason", "");
        if (!whole) return true;
        int index = 0;
        for (const auto& item : response.value("output", json::array())) {  // not streamed: every item at once
            const std::string type = item.is_object() ? item.value("type", "") : "";
            if (type == "message")
                for (const auto& part : item.value("content", json::array()))
                    if (part.is_object() && (part.value("type", "") == "output_text" || part.value("type", "") == "refusal"))
                        out.text(part.value(part.value("type", "") == "refusal" ? "refusal" : "text", ""));
            if (type == "reasoning")
                for (const auto& part : item.value("summary", json::array()))
                    if (part.is_object()) out.reasoning(part.value("text", ""));
            on_item(index++, item, reply, true);
        }
        return true;
    }

    void finish(const Reply& reply, Emitter& out) {
        for (const auto& [index, c] : reply.calls) {
            json args = c.arguments.empty() ? json::object() : json::parse(c.arguments, nullptr, false);
            if (args.is_discarded()) args = c.arguments;  // the host tells the model its JSON was invalid
            json data = c.reasoning.empty() ? json(nullptr) : json{{kDataKey, {{"reasoning", c.reasoning}}}};
            if (!out.tool_call(c.call_id.empty() ? "call_" + std::to_string(index) : c.call_id, c.name, args, data)) return;
        }
        if (reply.usage.is_object())
            out.usage(wire::count_of(reply.usage, "input_tokens"), wire::count_of(reply.usage, "output_tokens"),
                      wire::count_of(reply.usage.value("input_tokens_details", json::object()), "cached_tokens"));
        if (!reply.calls.empty()) return (void)out.stop("tool_calls");
        if (reply.status == "incomplete")
            return (void)out.stop(reply.incomplete_reason == "content_filter" ? "content_filter" : "max_tokens");
        out.stop("end");
    }

    Endpoint endpoint_;
    wire::OpenAiAuth auth_;
    std::string reasoning_;          // "auto" | "on" | "off": whether the model reasons
    std::string reasoning_summary_;  // "auto" | "concise" | "detailed" | "off"
};

}  // namespace

// Thread-safe: the adapter keeps no state between calls.
AGENTHOST_PLUGIN(ResponsesProvider, "openai_responses", "1.0.0", AH_PLUGIN_THREAD_SAFE)
