// The Google Gemini API adapter (generateContent / streamGenerateContent?alt=sse): the system
// prompt as systemInstruction, turns as "user" / "model" contents of parts, function declarations
// and calls, function responses by name, thoughts as reasoning, and the thoughtSignature of a
// function call kept with the call (provider_data) because the API refuses a later request
// without it.
#include "../common/exchange.hpp"

#include <map>

namespace {

using agenthost::providers::Endpoint;
using agenthost::sdk::Call;
using agenthost::sdk::Emitter;
using agenthost::sdk::Host;
using nlohmann::json;
namespace wire = agenthost::providers;

// Where the call's Gemini-only state lives inside provider_data (other providers may see it).
constexpr const char* kDataKey = "gemini";

// finishReason → the SDK's stop reason; the rest of Gemini's reasons are its safety filters.
std::string stop_reason(const std::string& finish, bool has_calls) {
    if (has_calls) return "tool_calls";
    if (finish == "STOP" || finish.empty() || finish == "FINISH_REASON_UNSPECIFIED" || finish == "OTHER") return "end";
    if (finish == "MAX_TOKENS") return "max_tokens";
    return "content_filter";  // SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, IMAGE_SAFETY …
}

// "17s" or "0.5s" (a google.protobuf.Duration in JSON) → seconds.
std::optional<double> duration_seconds(const json& value) {
    if (!value.is_string()) return std::nullopt;
    std::string text = value.get<std::string>();
    if (text.empty() || text.back() != 's') return std::nullopt;
    return wire::parse_retry_after(text.substr(0, text.size() - 1));
}

// A failed request in Gemini's words: {"error": {"code", "message", "status", "details"}}. It says
// a wrong key with HTTP 400 (reason API_KEY_INVALID) and a retry delay in a RetryInfo detail.
wire::WireError classify(int code, const json& headers, std::string_view body) {
    wire::WireError e = wire::classify_http_error(code, headers, body);
    json j = json::parse(body.begin(), body.end(), nullptr, false);
    const json error = j.is_object() ? j.value("error", json::object()) : json::object();
    if (!error.is_object()) return e;
    std::string status = error.value("status", "");
    for (const auto& detail : error.value("details", json::array())) {
        if (!detail.is_object()) continue;
        if (detail.value("reason", "") == "API_KEY_INVALID") e.type = "auth";
        if (!e.retry_after && detail.contains("retryDelay")) e.retry_after = duration_seconds(detail["retryDelay"]);
    }
    if (status == "UNAUTHENTICATED" || status == "PERMISSION_DENIED") e.type = "auth";
    return e;
}

class GeminiProvider : public agenthost::sdk::ProviderPlugin {
public:
    explicit GeminiProvider(Host host) : ProviderPlugin(host) {
        json cfg = host.config();
        endpoint_ = wire::read_endpoint(cfg, "https://generativelanguage.googleapis.com/v1beta");
        include_thoughts_ = cfg.value("include_thoughts", "auto");
        schema_field_ = cfg.value("tool_schema_field", "parametersJsonSchema");
    }

    void chat(const Call& call, Emitter& out) override {
        const json& request = call.arguments;
        bool stream = request.value("stream", true);
        std::string model = wire::model_of(request, endpoint_);
        if (model.rfind("models/", 0) == 0) model.erase(0, 7);
        const std::string url = wire::join_url(endpoint_.base_url, "/models/" + model) +
                                (stream ? ":streamGenerateContent?alt=sse" : ":generateContent");
        auto http = wire::post_json(endpoint_, url, wire_request(request), headers(stream));

        Reply reply;
        wire::ChatBody answer(stream);
        auto ex = wire::exchange(host(), http, call.cancel, [&](std::string_view chunk) {
            return answer.feed(chunk, [&](std::string_view, std::string_view data) { return on_chunk(data, reply, out); });
        });
        if (answer.too_large()) return (void)out.error("bad_response", wire::kTooLargeMessage);
        if (!stream && ex.status == AH_OK && ex.code >= 200 && ex.code < 300) on_chunk(answer.whole(), reply, out);
        if (!reply.error.empty()) return (void)out.error(reply.error_type, reply.error);
        if (wire::report_failure(out, host(), ex, url, call.cancel, reply.done, classify)) return;
        out.usage(reply.input_tokens, reply.output_tokens, reply.cached_tokens);
        out.stop(reply.blocked ? "content_filter" : stop_reason(reply.finish, reply.calls > 0));
    }

    json models(const Call& call) override {
        const std::string url = wire::join_url(endpoint_.base_url, "/models?pageSize=1000");
        auto response = host().http(wire::get(endpoint_, url, headers(false)), call.cancel);
        if (auto why = wire::list_failure(response, url)) return json{{"error", *why}};
        json j = json::parse(response.body, nullptr, false);
        if (!j.is_object() || !j.contains("models") || !j["models"].is_array())
            return json{{"error", url + " answered, but not with a model list"}};
        json list = json::array();
        for (const auto& m : j["models"]) {
            std::string name = m.is_object() ? m.value("name", "") : "";
            if (name.rfind("models/", 0) == 0) name.erase(0, 7);
            if (!name.empty()) list.push_back({{"id", name}});
        }
        return list;
    }

private:
    struct Reply {
        std::string finish;
        bool blocked = false;  // promptFeedback.blockReason: the prompt itself was refused
        bool done = false;     // a finishReason (or a block) arrived: the stream ended properly
        int calls = 0;
        long long input_tokens = 0, output_tokens = 0, cached_tokens = 0;
        std::string error, error_type;
    };

    json headers(bool stream) const {
        json h{{"Accept", stream ? "text/event-stream" : "application/json"}};
        if (!endpoint_.api_key.empty()) h["x-goog-api-key"] = endpoint_.api_key;
        return h;
    }

    // Whether the model thinks: the 1.x and 2.0 models and the image models do not, and refuse
    // thinkingConfig.
    static bool thinks(std::string model) {
        if (model.rfind("models/", 0) == 0) model.erase(0, 7);
        return model.rfind("gemini-1", 0) != 0 && model.rfind("gemini-2.0", 0) != 0 && model.find("-image") == std::string::npos;
    }

    // Whether to ask for thought summaries ("auto": when the model thinks).
    bool asks_for_thoughts(const std::string& model) const {
        return include_thoughts_ == "auto" ? thinks(model) : include_thoughts_ == "on";
    }

    // Appends parts to the contents, merging them into the previous content of the same role when
    // it holds parts of the same kind: all the responses to one reply's calls go back in one
    // content, as the API requires, and text never shares a content with function responses.
    static void append(json& contents, const std::string& role, json parts) {
        auto kind = [](const json& part) { return part.contains("functionResponse"); };
        if (!contents.empty() && contents.back()["role"] == role && !parts.empty() &&
            kind(contents.back()["parts"].back()) == kind(parts.front())) {
            for (auto& p : parts) contents.back()["parts"].push_back(std::move(p));
            return;
        }
        contents.push_back({{"role", role}, {"parts", std::move(parts)}});
    }

    // An assistant message's function call as the API wrote it: its signature and id come back.
    static json call_part(const json& c) {
        json call{{"name", c.value("name", "")}, {"args", wire::arguments_object(c.value("arguments", json::object()))}};
        json part = json::object();
        const json data = c.value("provider_data", json::object());
        const json mine = data.is_object() ? data.value(kDataKey, json::object()) : json::object();
        if (mine.is_object()) {
            if (mine.contains("id") && mine["id"].is_string()) call["id"] = mine["id"];
            if (mine.contains("thought_signature") && mine["thought_signature"].is_string())
                part["thoughtSignature"] = mine["thought_signature"];
        }
        part["functionCall"] = std::move(call);
        return part;
    }

    json wire_request(const json& request) const {
        std::string system;
        json contents = json::array();
        std::map<std::string, std::string> gemini_ids;  // our call id → the id Gemini gave it, if any
        for (const auto& m : request.at("messages")) {
            std::string role = m.value("role", "user");
            std::string text = wire::content_text(m);
            if (role == "system") {
                system += (system.empty() ? "" : "\n\n") + text;
            } else if (role == "assistant") {
                json parts = json::array();
                if (!text.empty()) parts.push_back({{"text", text}});
                bool signed_calls = false;
                for (const auto& c : m.value("tool_calls", json::array())) {
                    json part = call_part(c);
                    if (part["functionCall"].contains("id")) gemini_ids[c.value("id", "")] = part["functionCall"]["id"];
                    signed_calls = signed_calls || part.contains("thoughtSignature");
                    parts.push_back(std::move(part));
                }
                // Calls Gemini did not write (another provider's, after a fallback) carry no
                // signature; the API documents this value for such history, which Gemini 3
                // otherwise refuses. It goes on the first call, where Gemini puts its own.
                if (!signed_calls && thinks(wire::model_of(request, endpoint_)))
                    for (auto& part : parts)
                        if (part.contains("functionCall")) {
                            part["thoughtSignature"] = "skip_thought_signature_validator";
                            break;
                        }
                if (!parts.empty()) append(contents, "model", std::move(parts));
            } else if (role == "tool") {
                json response{{"name", m.value("name", "")}, {"response", {{"result", text}}}};
                if (auto it = gemini_ids.find(m.value("tool_call_id", "")); it != gemini_ids.end()) response["id"] = it->second;
                append(contents, "user", json::array({{{"functionResponse", std::move(response)}}}));
            } else {
                append(contents, "user", json::array({{{"text", text.empty() ? " " : text}}}));
            }
        }
        json body{{"contents", std::move(contents)}};
        if (!system.empty()) body["systemInstruction"] = {{"parts", json::array({{{"text", system}}})}};
        json declarations = json::array();
        for (const auto& t : request.value("tools", json::array()))
            declarations.push_back({{"name", t.value("name", "")},
                                    {"description", t.value("description", "")},
                                    {schema_field_, t.value("parameters", json{{"type", "object"}})}});
        if (!declarations.empty()) {
            body["tools"] = json::array({{{"functionDeclarations", std::move(declarations)}}});
            std::string choice = request.value("tool_choice", "auto");
            body["toolConfig"] = {{"functionCallingConfig",
                                   {{"mode", choice == "required" ? "ANY"
                                             : choice == "none"   ? "NONE"
                                                                  : "AUTO"}}}};
        }
        json generation = json::object();
        if (request.contains("max_tokens")) generation["maxOutputTokens"] = request["max_tokens"];
        if (request.contains("temperature")) generation["temperature"] = request["temperature"];
        if (asks_for_thoughts(wire::model_of(request, endpoint_))) generation["thinkingConfig"] = {{"includeThoughts", true}};
        if (!generation.empty()) body["generationConfig"] = std::move(generation);
        return body;
    }

    // One streamed GenerateContentResponse, or the whole one when not streamed.
    bool on_chunk(std::string_view data, Reply& reply, Emitter& out) {
        json j = json::parse(data.begin(), data.end(), nullptr, false);
        if (!j.is_object()) return true;
        if (j.contains("error")) {  // a failure reported inside a 200 stream
            wire::WireError e = classify(500, json::object(), data);
            reply.error = e.message;
            reply.error_type = e.type;
            return false;
        }
        read_usage(j.value("usageMetadata", json::object()), reply);
        const json feedback = j.value("promptFeedback", json::object());
        if (feedback.is_object() && feedback.contains("blockReason")) {
            reply.blocked = reply.done = true;
            return true;
        }
        const json candidates = j.value("candidates", json::array());
        if (!candidates.is_array() || candidates.empty() || !candidates[0].is_object()) return true;
        const json& candidate = candidates[0];
        const json content = candidate.value("content", json::object());
        for (const auto& part : content.is_object() ? content.value("parts", json::array()) : json::array())
            if (part.is_object() && !on_part(part, reply, out)) return false;
        if (candidate.contains("finishReason") && candidate["finishReason"].is_string()) {
            reply.finish = candidate["finishReason"];
            reply.done = true;
            if (reply.finish == "MALFORMED_FUNCTION_CALL") {
                reply.error = "the model wrote a function call the API could not read (finishReason MALFORMED_FUNCTION_CALL)";
                reply.error_type = "transient";  // another attempt usually writes it whole
                return false;
            }
        }
        return true;
    }

    bool on_part(const json& part, Reply& reply, Emitter& out) {
        if (part.contains("functionCall") && part["functionCall"].is_object()) {
            const json& call = part["functionCall"];
            json mine = json::object();
            if (call.contains("id") && call["id"].is_string()) mine["id"] = call["id"];
            if (part.contains("thoughtSignature") && part["thoughtSignature"].is_string())
                mine["thought_signature"] = part["thoughtSignature"];
            std::string id = mine.contains("id") ? mine["id"].get<std::string>() : "call_" + std::to_string(reply.calls);
            ++reply.calls;
            return out.tool_call(id, call.value("name", ""), wire::arguments_object(call.value("args", json::object())),
                                 mine.empty() ? json(nullptr) : json{{kDataKey, std::move(mine)}});
        }
        if (!part.contains("text") || !part["text"].is_string()) return true;
        const std::string& text = part["text"].get_ref<const std::string&>();
        if (text.empty()) return true;
        return part.value("thought", false) ? out.reasoning(text) : out.text(text);
    }

    // promptTokenCount counts the whole prompt, cached part included; thoughts are output too.
    static void read_usage(const json& usage, Reply& reply) {
        if (!usage.is_object() || usage.empty()) return;
        reply.input_tokens = wire::count_of(usage, "promptTokenCount");
        reply.output_tokens = wire::count_of(usage, "candidatesTokenCount") + wire::count_of(usage, "thoughtsTokenCount");
        reply.cached_tokens = wire::count_of(usage, "cachedContentTokenCount");
    }

    Endpoint endpoint_;
    std::string include_thoughts_;  // "auto" | "on" | "off"
    std::string schema_field_;
};

}  // namespace

// Thread-safe: the adapter keeps no state between calls.
AGENTHOST_PLUGIN(GeminiProvider, "gemini", "1.0.0", AH_PLUGIN_THREAD_SAFE)
