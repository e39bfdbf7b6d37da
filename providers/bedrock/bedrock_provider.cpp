// The AWS Bedrock adapter (the Converse API, streamed with ConverseStream): the system prompt as
// system blocks, turns as user / assistant messages of content blocks, tool specs, toolUse and
// toolResult blocks, reasoning blocks (with the signature Claude wants back, kept with the first
// call after them), cache points on the stable prefix, and usage with the cache's reads. Requests
// are signed with SigV4 (sigv4.hpp) from the standard AWS credentials (credentials.hpp), or carry
// a Bedrock API key as a bearer token; answers stream as AWS event-stream messages
// (event_stream.hpp).
#include "../common/exchange.hpp"
#include "credentials.hpp"
#include "event_stream.hpp"
#include "sigv4.hpp"

#include <algorithm>
#include <map>
#include <optional>

namespace {

using agenthost::providers::Endpoint;
using agenthost::sdk::Call;
using agenthost::sdk::Emitter;
using agenthost::sdk::Host;
using nlohmann::json;
namespace wire = agenthost::providers;
namespace aws = agenthost::providers::aws;

constexpr const char* kDefaultBaseUrl = "https://bedrock-runtime.us-east-1.amazonaws.com";
constexpr const char* kService = "bedrock";  // the signing name of the runtime and of the control plane
constexpr const char* kDataKey = "bedrock";  // where a call's Bedrock-only state lives in provider_data

// A field of the server's JSON read without trusting its type: "" when absent or not a string
// (nlohmann's value() throws when a key holds another type).
std::string text_of(const json& j, const char* key) {
    if (!j.is_object()) return "";
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// A content block's index: 0 when absent or not a sensible integer.
int index_of(const json& j) { return static_cast<int>(std::clamp(wire::count_of(j, "contentBlockIndex"), 0LL, 1LL << 20)); }

// The stop reasons that mean the model wrote something unreadable: another attempt usually writes it whole.
bool malformed(const std::string& reason) { return reason == "malformed_model_output" || reason == "malformed_tool_use"; }

// stopReason → the SDK's stop reason.
std::string stop_reason(const std::string& reason, bool has_calls) {
    static const std::map<std::string, std::string> kReasons{{"end_turn", "end"},
                                                             {"stop_sequence", "end"},
                                                             {"tool_use", "tool_calls"},
                                                             {"max_tokens", "max_tokens"},
                                                             {"model_context_window_exceeded", "max_tokens"},
                                                             {"guardrail_intervened", "content_filter"},
                                                             {"content_filtered", "content_filter"}};
    auto it = kReasons.find(reason);
    if (has_calls && (it == kReasons.end() || it->second != "max_tokens")) return "tool_calls";  // a cut call says max_tokens
    return it == kReasons.end() ? "end" : it->second;
}

// The exception names Bedrock gives a failure (x-amzn-errortype, or :exception-type in a stream)
// that say more than the status: the key, the quota, a model still loading.
std::optional<std::string> type_of_exception(std::string name) {
    if (auto colon = name.find(':'); colon != std::string::npos) name.erase(colon);  // "ValidationException:http://…"
    name = wire::lower(name);
    static const std::map<std::string, std::string> kTypes{{"unrecognizedclientexception", "auth"},
                                                           {"invalidsignatureexception", "auth"},
                                                           {"expiredtokenexception", "auth"},
                                                           {"incompletesignatureexception", "auth"},
                                                           {"missingauthenticationtokenexception", "auth"},
                                                           {"accessdeniedexception", "auth"},
                                                           {"throttlingexception", "rate_limit"},
                                                           {"servicequotaexceededexception", "rate_limit"},
                                                           {"modelnotreadyexception", "transient"},
                                                           {"modeltimeoutexception", "transient"},
                                                           {"modelerrorexception", "transient"},
                                                           {"modelstreamerrorexception", "transient"},
                                                           {"internalserverexception", "transient"},
                                                           {"serviceunavailableexception", "transient"},
                                                           {"resourcenotfoundexception", "model_unavailable"},
                                                           {"validationexception", "bad_request"}};
    auto it = kTypes.find(name);
    if (it == kTypes.end()) return std::nullopt;
    return it->second;
}

// Bedrock's words for a prompt too long and for a model id it does not know (both HTTP 400
// ValidationException).
wire::WireError refine(wire::WireError e, const std::string& exception) {
    const std::string said = wire::lower(e.message);
    if (said.find("access to the model") != std::string::npos) {  // AccessDenied for a model, not for the key
        e.type = "model_unavailable";
        e.message += " (ask for access to this model in the Bedrock console's \"Model access\" page, in this region)";
        return e;
    }
    if (auto type = type_of_exception(exception)) {
        e.type = *type;
        if (e.type != "bad_request") return e;  // a throttling message may well speak of "too many tokens"
    }
    const std::string m = wire::lower(e.message);
    if (m.find("input is too long") != std::string::npos || m.find("too many input tokens") != std::string::npos ||
        m.find("exceed context limit") != std::string::npos || m.find("too many total text bytes") != std::string::npos ||
        wire::says_context_too_large(m))
        e.type = "context_too_large";
    else if (m.find("model identifier is invalid") != std::string::npos || m.find("model id") != std::string::npos ||
             m.find("model not found") != std::string::npos)
        e.type = "model_unavailable";
    return e;
}

// A failed request: {"message": "…"} (or "Message") with the exception's name in x-amzn-errortype.
wire::WireError classify(int code, const json& headers, std::string_view body) {
    wire::WireError e = wire::classify_http_error(code, headers, body);
    json j = json::parse(body.begin(), body.end(), nullptr, false);
    if (j.is_object() && j.contains("Message") && j["Message"].is_string())
        e.message = "HTTP " + std::to_string(code) + ": " + j["Message"].get<std::string>();
    std::string exception;
    if (headers.is_object() && headers.contains("x-amzn-errortype") && headers["x-amzn-errortype"].is_string())
        exception = headers["x-amzn-errortype"];
    return refine(std::move(e), exception);
}

// The region in an endpoint's name: bedrock-runtime[-fips].REGION.amazonaws.com[.cn].
std::string region_in(const std::string& url) {
    auto start = url.find("://");
    if (start == std::string::npos) return "";
    std::string host = url.substr(start + 3, url.find_first_of(":/?", start + 3) - start - 3);
    for (const char* prefix : {"bedrock-runtime-fips.", "bedrock-runtime.", "bedrock-fips.", "bedrock."})
        if (host.rfind(prefix, 0) == 0) {
            std::string rest = host.substr(std::string(prefix).size());
            auto dot = rest.find('.');
            if (dot != std::string::npos && rest.find(".amazonaws.com", dot) == dot) return rest.substr(0, dot);
        }
    return "";
}

// An absolute URL's Host header (without the scheme's own port, as libcurl sends it), path and query.
struct UrlParts {
    std::string host, path, query;
};
UrlParts split(const std::string& url) {
    UrlParts parts;
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string::npos) return parts;  // not a URL: the request fails before it is sent
    const std::string scheme = wire::lower(url.substr(0, scheme_end));
    const auto host_start = scheme_end + 3;
    const auto path_start = std::min(url.find_first_of("/?", host_start), url.size());
    parts.host = wire::lower(url.substr(host_start, path_start - host_start));
    const std::string default_port = scheme == "https" ? ":443" : ":80";
    if (parts.host.size() > default_port.size() &&
        parts.host.compare(parts.host.size() - default_port.size(), std::string::npos, default_port) == 0)
        parts.host.erase(parts.host.size() - default_port.size());
    const auto query_start = url.find('?', path_start);
    parts.path = url.substr(path_start, (query_start == std::string::npos ? url.size() : query_start) - path_start);
    if (parts.path.empty()) parts.path = "/";
    if (query_start != std::string::npos) parts.query = url.substr(query_start + 1);
    return parts;
}

class BedrockProvider : public agenthost::sdk::ProviderPlugin {
public:
    explicit BedrockProvider(Host host) : ProviderPlugin(host) {
        json cfg = host.config();
        endpoint_ = wire::read_endpoint(cfg, kDefaultBaseUrl);
        key_source_ = endpoint_.api_key.empty() ? "" : "a Bedrock API key (api_key_env)";
        if (endpoint_.api_key.empty()) {
            endpoint_.api_key = aws::environment("AWS_BEARER_TOKEN_BEDROCK");  // as the AWS SDKs read it
            if (!endpoint_.api_key.empty()) key_source_ = "a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK)";
        }
        // The region, and where it came from (doctor says both).
        for (const auto& [value, source] :
             {std::pair{cfg.value("region", ""), "region in [plugins.bedrock]"},
              std::pair{region_in(endpoint_.base_url), "base_url"}, std::pair{aws::environment("AWS_REGION"), "AWS_REGION"},
              std::pair{aws::environment("AWS_DEFAULT_REGION"), "AWS_DEFAULT_REGION"}})
            if (region_.empty() && !value.empty()) {
                region_ = value;
                region_source_ = source;
            }
        explicit_region_ = region_source_ == "region in [plugins.bedrock]";
        profile_ = cfg.value("profile", "");
        credentials_file_ = cfg.value("credentials_file", "");
        models_url_ = cfg.value("models_url", "");
        cache_points_ = cfg.value("cache_points", "auto");
        thinking_budget_ = cfg.value("thinking_budget", 0LL);
        if (thinking_budget_ > 0 && thinking_budget_ < kMinThinkingBudget) {
            host.warn("thinking_budget is below Claude's least: 1024 tokens are asked for",
                      {{"setting", "plugins.bedrock.thinking_budget"}, {"value", thinking_budget_}});
            thinking_budget_ = kMinThinkingBudget;
        }
    }

    void chat(const Call& call, Emitter& out) override {
        const bool stream = call.arguments.value("stream", true);
        // Some models (Llama, gpt-oss …) take tools only unstreamed: told so, the call goes again whole.
        if (!send(call, out, stream) && stream) send(call, out, false);
    }

    // One request, streamed or not; false when the model refused tools in streaming mode (then
    // nothing was emitted).
    bool send(const Call& call, Emitter& out, bool stream) {
        const json& request = call.arguments;
        const std::string model = wire::model_of(request, endpoint_);
        const std::string url = wire::join_url(
            endpoint_.base_url, "/model/" + aws::uri_encode(model, false) + (stream ? "/converse-stream" : "/converse"));
        json accept{{"Accept", stream ? "application/vnd.amazon.eventstream" : "application/json"}};
        auto http = wire::post_json(endpoint_, url, wire_request(request, model), std::move(accept));
        if (auto why = authorize(http)) return out.error("auth", *why), true;

        Reply reply;
        aws::EventStreamDecoder events(wire::kMaxEventBytes);
        std::string whole;
        bool whole_too_large = false;
        auto ex = wire::exchange(host(), http, call.cancel, [&](std::string_view chunk) {
            if (!stream) return !(whole_too_large = !wire::append_capped(whole, chunk));
            return events.feed(chunk, [&](const aws::EventMessage& m) { return on_message(m, reply, out); });
        });
        if (stream && ex.status == AH_OK && ex.code == 400 &&
            wire::lower(ex.error_body).find("tool use in streaming mode") != std::string::npos)
            return false;
        if (events.fault() == aws::EventStreamDecoder::Fault::too_large || whole_too_large)
            return out.error("bad_response", wire::kTooLargeMessage), true;
        if (events.fault() == aws::EventStreamDecoder::Fault::corrupt)
            return out.error("transient",
                             "the event stream from " + url + " is broken (a message's checksum or length is wrong)"),
                   true;
        if (!stream && ex.status == AH_OK && ex.code >= 200 && ex.code < 300) on_whole(whole, reply, out);
        if (!reply.error.empty()) return out.error(reply.error_type, reply.error, reply.retry_after), true;
        if (wire::report_failure(out, host(), ex, url, call.cancel, reply.done, classify)) return true;
        if (malformed(reply.stop))
            return out.error("transient", "the model wrote an answer Bedrock could not read (stopReason " + reply.stop + ")"),
                   true;
        out.usage(reply.input_tokens, reply.output_tokens, reply.cached_tokens);
        out.stop(stop_reason(reply.stop, reply.calls > 0));
        return true;
    }

    // What doctor shows: where the credentials come from, the region and where it comes from.
    std::vector<json> health(const Call&) override {
        using agenthost::sdk::health_check;
        std::vector<json> checks;
        if (!key_source_.empty()) {
            checks.push_back(health_check("credentials", true, key_source_));
        } else {
            auto found = aws::find_credentials(profile_, credentials_file_);
            checks.push_back(found.credentials.usable() ? health_check("credentials", true, found.source)
                                                        : health_check("credentials", false, found.problem));
        }
        const std::string wrong = endpoint_check();
        if (region_.empty() && key_source_.empty())
            checks.push_back(health_check("region", false, region_problem()));
        else if (!wrong.empty())
            checks.push_back(health_check("region", false, wrong));
        else if (!region_.empty())
            checks.push_back(health_check("region", true, region_ + " (from " + region_source_ + ")"));
        return checks;
    }

    // The models the account may call here: foundation models and inference profiles (the
    // "us.…" / "eu.…" ids most newer models are called by), from the control plane at models_url.
    // Without models_url there is no list, but doctor still learns whether credentials exist.
    json models(const Call& call) override {
        if (endpoint_.api_key.empty()) {  // signing: credentials and a region are needed
            auto found = aws::find_credentials(profile_, credentials_file_);
            if (!found.credentials.usable()) return json{{"error", found.problem}};
            if (region_.empty()) return json{{"error", region_problem()}};
        }
        if (const std::string wrong = endpoint_check(); !wrong.empty()) return json{{"error", wrong}};
        if (models_url_.empty()) return nullptr;
        json list = json::array();
        // Foundation models callable by id (on demand; the others need an inference profile), and
        // the inference profiles ("us.…", "eu.…", "global.…"), page by page.
        struct Listing {
            const char* path;
            const char* field;
            const char* key;
        };
        for (const Listing& listing :
             {Listing{"/foundation-models", "modelSummaries", "modelId"},
              Listing{"/inference-profiles?maxResults=1000", "inferenceProfileSummaries", "inferenceProfileId"}}) {
            std::string next;
            for (int page = 0; page < kMaxListPages; ++page) {
                std::string path = listing.path;
                if (!next.empty())
                    path += (path.find('?') == std::string::npos ? "?" : "&") + std::string("nextToken=") +
                            aws::uri_encode(next, false);
                const std::string url = wire::join_url(models_url_, path);
                auto http = wire::get(endpoint_, url, json{{"Accept", "application/json"}});
                if (auto why = authorize(http)) return json{{"error", *why}};
                auto response = host().http(http, call.cancel);
                if (response.status == AH_OK && response.code == 403)  // IAM's words say which permission is missing
                    return json{{"error", url + " refused the listing (HTTP 403: " + wire::error_message(response.body) +
                                              "): the credentials need bedrock:ListFoundationModels and "
                                              "bedrock:ListInferenceProfiles, or leave models_url out"}};
                if (auto why = wire::list_failure(response, url)) return json{{"error", *why}};
                json j = json::parse(response.body, nullptr, false);
                if (!j.is_object() || !j.contains(listing.field) || !j[listing.field].is_array())
                    return json{{"error", url + " answered, but not with a model list"}};
                for (const auto& m : j[listing.field])
                    if (m.is_object() && m.contains(listing.key) && m[listing.key].is_string() && on_demand(m))
                        list.push_back({{"id", m[listing.key]}});
                next = text_of(j, "nextToken");
                if (next.empty()) break;
            }
        }
        return list;
    }

private:
    struct PartialCall {
        std::string id, name, input;
    };
    struct Reply {
        std::map<int, PartialCall> calls_open;  // by contentBlockIndex, until its contentBlockStop
        std::map<int, json> reasoning_open;     // reasoning blocks being written, by index
        json reasoning = json::array();         // whole reasoning blocks, to ride with the first call
        int calls = 0;
        std::string stop;
        bool done = false;  // messageStop arrived: the reply is whole
        long long input_tokens = 0, output_tokens = 0, cached_tokens = 0;
        std::string error, error_type;
        std::optional<double> retry_after;
    };

    static constexpr int kMaxListPages = 20;
    static constexpr long long kMinThinkingBudget = 1024;  // Claude's least

    // A foundation model that can be called by its own id (its inferenceTypesSupported has
    // ON_DEMAND); entries without the field (inference profiles) are callable.
    static bool on_demand(const json& model) {
        if (!model.contains("inferenceTypesSupported") || !model["inferenceTypesSupported"].is_array()) return true;
        for (const auto& type : model["inferenceTypesSupported"])
            if (type == "ON_DEMAND") return true;
        return false;
    }

    // What doctor says of an endpoint that cannot work: the control plane where the runtime is
    // meant, a region setting that is not base_url's (requests signed for one region are refused
    // by the other), AWS_REGION naming another region than base_url's with no region setting to
    // say which is meant (a model id of one region, "eu.…", fails in the other). "" when fine.
    std::string endpoint_check() const {
        const std::string in_url = region_in(endpoint_.base_url);
        if (!in_url.empty() && endpoint_.base_url.find("://bedrock-runtime") == std::string::npos)
            return "base_url (" + endpoint_.base_url +
                   ") is Bedrock's control plane, which lists models but runs none: write "
                   "base_url = \"https://bedrock-runtime." +
                   in_url +
                   ".amazonaws.com\" (and, for doctor's model list, "
                   "models_url = \"https://bedrock." +
                   in_url + ".amazonaws.com\" in [plugins.bedrock])";
        if (in_url.empty() || region_ == in_url) {
            const std::string wanted = aws::environment("AWS_REGION");
            if (explicit_region_ || wanted.empty() || wanted == region_ || in_url.empty()) return "";
            return "base_url (" + endpoint_.base_url + ") is in " + region_ + " but AWS_REGION says " + wanted +
                   ": write base_url = \"https://bedrock-runtime." + wanted +
                   ".amazonaws.com\" (and models_url = "
                   "\"https://bedrock." +
                   wanted + ".amazonaws.com\" if you set one), or region = \"" + region_ + "\" in [plugins.bedrock] to keep " +
                   region_;
        }
        return "[plugins.bedrock] region is " + region_ + " but base_url (" + endpoint_.base_url + ") is in " + in_url +
               ": requests signed for one region are refused by the other; remove region, or write base_url = "
               "\"https://bedrock-runtime." +
               region_ + ".amazonaws.com\"";
    }

    std::string region_problem() const {
        return "the AWS region is unknown: set region in [plugins.bedrock] (or AWS_REGION), or use a base_url of the form "
               "https://bedrock-runtime.REGION.amazonaws.com";
    }

    // Signs the request (SigV4) or gives it the API key; the reason when it cannot.
    std::optional<std::string> authorize(agenthost::sdk::HttpRequest& http) const {
        if (!endpoint_.api_key.empty()) {
            http.headers["Authorization"] = "Bearer " + endpoint_.api_key;
            return std::nullopt;
        }
        auto found = aws::find_credentials(profile_, credentials_file_);
        if (!found.credentials.usable()) return found.problem;
        if (region_.empty()) return region_problem();
        const UrlParts parts = split(http.url);
        aws::Request request{http.method, parts.host, parts.path, parts.query, http.body, {}};
        const std::string date = aws::amz_date(std::time(nullptr));
        request.headers["x-amz-date"] = date;
        if (http.headers.contains("Content-Type"))
            request.headers["content-type"] = http.headers["Content-Type"].get<std::string>();
        if (!found.credentials.session_token.empty()) request.headers["x-amz-security-token"] = found.credentials.session_token;
        const aws::Signed signed_request = aws::sign(request, found.credentials, {region_, kService}, date);
        http.headers["X-Amz-Date"] = date;
        if (!found.credentials.session_token.empty()) http.headers["X-Amz-Security-Token"] = found.credentials.session_token;
        http.headers["Authorization"] = signed_request.authorization;
        return std::nullopt;
    }

    // The model id without an inference profile's region prefix ("us.", "eu.", "apac.", "global.").
    static std::string base_model(std::string model) {
        if (auto dot = model.find('.'); dot != std::string::npos && dot <= 6 && model.compare(0, dot, "amazon") != 0 &&
                                        model.compare(0, dot, "anthropic") != 0)
            model.erase(0, dot + 1);
        return model;
    }
    static bool claude(const std::string& model) { return base_model(model).rfind("anthropic.claude", 0) == 0; }

    // Cache points where the model takes them: Claude 3.7 and later, Claude 3.5 Haiku, and Nova
    // (others refuse the request). Nova takes them in the system prompt and messages only.
    bool caches(const std::string& model) const {
        if (cache_points_ != "auto") return cache_points_ == "on";
        const std::string id = base_model(model);
        if (id.rfind("amazon.nova", 0) == 0) return true;
        if (!claude(id)) return false;
        for (const char* old :
             {"claude-3-haiku", "claude-3-sonnet", "claude-3-opus", "claude-3-5-sonnet", "claude-v2", "claude-instant"})
            if (id.find(old) != std::string::npos) return false;
        return true;
    }

    // Extended thinking, for Claude when a budget is set. A request whose last assistant message
    // made calls without the signed reasoning before them (another provider's, or thinking turned
    // on since) goes without: Claude refuses thinking after unreasoned calls.
    bool thinks(const json& request, const std::string& model) const {
        if (thinking_budget_ <= 0 || !claude(model)) return false;
        for (const char* unthinking :
             {"claude-3-5", "claude-3-haiku", "claude-3-sonnet", "claude-3-opus", "claude-v2", "claude-instant"})
            if (model.find(unthinking) != std::string::npos) return false;  // extended thinking came with Claude 3.7
        const json& messages = request.at("messages");
        for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
            if (it->value("role", "") != "assistant") continue;
            const json calls = it->value("tool_calls", json::array());
            return calls.empty() || !reasoning_blocks(calls.front()).empty();
        }
        return true;
    }

    // Appends blocks to the last message when it has the same role (Bedrock wants the roles to
    // alternate: a turn's tool results and the note after them share one user message).
    static void append(json& messages, const std::string& role, json blocks) {
        if (blocks.empty()) return;
        if (!messages.empty() && messages.back()["role"] == role) {
            for (auto& b : blocks) messages.back()["content"].push_back(std::move(b));
            return;
        }
        messages.push_back({{"role", role}, {"content", std::move(blocks)}});
    }

    static json text_block(const std::string& text, const char* if_blank) {
        bool blank = text.find_first_not_of(" \t\r\n") == std::string::npos;
        return {{"text", blank ? std::string(if_blank) : text}};  // Bedrock refuses blank text blocks
    }

    // A call, or its result, as plain text: the request offers no tools, and Bedrock refuses
    // toolUse and toolResult blocks without a toolConfig.
    static json call_as_text(const json& call) {
        return {{"text", "[called " + call.value("name", "") + " with " +
                             wire::arguments_object(call.value("arguments", json::object())).dump() + "]"}};
    }

    json wire_request(const json& request, const std::string& model) const {
        const bool cache = caches(model);
        const bool think = thinks(request, model);
        const json offered = request.value("tools", json::array());
        const bool with_tools = offered.is_array() && !offered.empty();
        json system = json::array();
        json messages = json::array();
        for (const auto& m : request.at("messages")) {
            const std::string role = m.value("role", "user");
            const std::string text = wire::content_text(m);
            if (role == "system") {
                system.push_back(text_block(text, "(no instructions)"));
            } else if (role == "assistant") {
                json blocks = json::array();
                const json calls = m.value("tool_calls", json::array());
                if (!calls.empty()) blocks = reasoning_blocks(calls.front());  // the thinking that led to the calls comes first
                if (text.find_first_not_of(" \t\r\n") != std::string::npos) blocks.push_back({{"text", text}});
                for (const auto& c : calls)
                    blocks.push_back(!with_tools
                                         ? call_as_text(c)
                                         : json{{"toolUse",
                                                 {{"toolUseId", c.value("id", "")},
                                                  {"name", c.value("name", "")},
                                                  {"input", wire::arguments_object(c.value("arguments", json::object()))}}}});
                if (!with_tools)
                    blocks.erase(std::remove_if(blocks.begin(), blocks.end(),
                                                [](const json& b) { return b.contains("reasoningContent"); }),
                                 blocks.end());
                append(messages, "assistant", std::move(blocks));
            } else if (role == "tool") {
                json result{{"toolUseId", m.value("tool_call_id", "")},
                            {"content", json::array({text_block(text, "(no output)")})}};
                append(messages, "user",
                       json::array({with_tools ? json{{"toolResult", std::move(result)}}
                                               : text_block("[result of " + m.value("name", "the call") + "] " + text, "")}));
            } else {
                append(messages, "user", json::array({text_block(text, "(empty message)")}));
            }
        }
        if (cache && !messages.empty()) messages.back()["content"].push_back({{"cachePoint", {{"type", "default"}}}});
        json body{{"messages", std::move(messages)}};
        if (!system.empty()) {
            if (cache) system.push_back({{"cachePoint", {{"type", "default"}}}});
            body["system"] = std::move(system);
        }
        json tools = json::array();
        for (const auto& t : with_tools ? offered : json::array()) {
            json spec{{"name", t.value("name", "")},
                      {"inputSchema", {{"json", t.value("parameters", json{{"type", "object"}})}}}};
            if (!t.value("description", "").empty()) spec["description"] = t["description"];  // at least one character
            tools.push_back({{"toolSpec", std::move(spec)}});
        }
        if (!tools.empty()) {
            if (cache && claude(model)) tools.push_back({{"cachePoint", {{"type", "default"}}}});  // Nova: not in tools
            json config{{"tools", std::move(tools)}};
            // "auto" is Converse's default, and toolChoice is refused by most models; "none" has no
            // counterpart; a forced call and thinking do not go together.
            if (request.value("tool_choice", "auto") == "required" && !think) config["toolChoice"] = {{"any", json::object()}};
            body["toolConfig"] = std::move(config);
        }
        json inference = json::object();
        long long max_tokens = request.value("max_tokens", 0LL);
        if (think) {
            // Claude's extended thinking: its budget counts inside maxTokens, and it takes no temperature.
            body["additionalModelRequestFields"] = {{"thinking", {{"type", "enabled"}, {"budget_tokens", thinking_budget_}}}};
            if (max_tokens > 0) max_tokens = std::max<long long>(max_tokens, thinking_budget_ + 1024);
        } else if (request.contains("temperature")) {
            inference["temperature"] = request["temperature"];
        }
        if (max_tokens > 0) inference["maxTokens"] = max_tokens;
        if (!inference.empty()) body["inferenceConfig"] = std::move(inference);
        return body;
    }

    // The reasoning blocks a call carries (provider_data), as Converse wants them back.
    static json reasoning_blocks(const json& call) {
        json blocks = json::array();
        const json data = call.value("provider_data", json::object());
        const json mine = data.is_object() ? data.value(kDataKey, json::object()) : json::object();
        const json reasoning = mine.is_object() ? mine.value("reasoning", json::array()) : json::array();
        for (const auto& r : reasoning.is_array() ? reasoning : json::array())
            if (r.is_object()) blocks.push_back({{"reasoningContent", r}});
        return blocks;
    }

    // One event-stream message.
    bool on_message(const aws::EventMessage& m, Reply& reply, Emitter& out) {
        auto header = [&](const char* name) {
            auto it = m.headers.find(name);
            return it == m.headers.end() ? std::string() : it->second;
        };
        const std::string kind = header(":message-type");
        const std::string text = wire::repair_utf8(m.payload);  // a bad byte costs one character, not the event
        json payload = json::parse(text, nullptr, false);
        if (kind == "exception" || kind == "error") {
            const std::string name = kind == "error" ? header(":error-code") : header(":exception-type");
            std::string message = text_of(payload, "message");
            if (message.empty()) message = text_of(payload, "Message");
            if (message.empty()) message = kind == "error" ? header(":error-message") : text.substr(0, 500);
            wire::WireError e = refine({"transient", name + ": " + message, std::nullopt}, name);
            reply.error = e.message;
            reply.error_type = e.type;
            return false;
        }
        if (!payload.is_object()) {
            reply.error = "the model server sent an event that is not JSON";
            reply.error_type = "transient";
            return false;
        }
        const std::string event = header(":event-type");
        const int index = index_of(payload);
        if (event == "contentBlockStart") {
            const json start = payload.value("start", json::object());
            if (start.is_object() && start.contains("toolUse") && start["toolUse"].is_object())
                reply.calls_open[index] = {text_of(start["toolUse"], "toolUseId"), text_of(start["toolUse"], "name"), ""};
        } else if (event == "contentBlockDelta") {
            return on_delta(payload.value("delta", json::object()), index, reply, out);
        } else if (event == "contentBlockStop") {
            return close_block(index, reply, out);
        } else if (event == "messageStop") {
            reply.stop = text_of(payload, "stopReason");
            reply.done = true;
        } else if (event == "metadata") {
            read_usage(payload.value("usage", json::object()), reply);
        }
        return true;
    }

    bool on_delta(const json& delta, int index, Reply& reply, Emitter& out) {
        if (!delta.is_object()) return true;
        if (delta.contains("text") && delta["text"].is_string()) {
            const std::string& text = delta["text"].get_ref<const std::string&>();
            return text.empty() || out.text(text);
        }
        if (delta.contains("toolUse") && delta["toolUse"].is_object()) {
            const json& input = delta["toolUse"].contains("input") ? delta["toolUse"]["input"] : json("");
            reply.calls_open[index].input += input.is_string() ? input.get<std::string>() : input.dump();  // a proxy's object
            return true;
        }
        if (delta.contains("reasoningContent") && delta["reasoningContent"].is_object()) {
            const json& r = delta["reasoningContent"];
            json& block = reply.reasoning_open[index];
            if (r.contains("text") && r["text"].is_string()) {
                if (!block.contains("reasoningText")) block["reasoningText"] = {{"text", ""}};
                block["reasoningText"]["text"].get_ref<std::string&>() += r["text"].get_ref<const std::string&>();
                if (!out.reasoning(r["text"].get<std::string>())) return false;
            }
            if (r.contains("signature") && r["signature"].is_string()) {
                if (!block.contains("reasoningText")) block["reasoningText"] = {{"text", ""}};
                block["reasoningText"]["signature"] = r["signature"];
            }
            if (r.contains("redactedContent") && r["redactedContent"].is_string())
                block["redactedContent"] = r["redactedContent"];
        }
        return true;
    }

    // A block ends: a call is whole (its input complete), a reasoning block is kept for the call.
    bool close_block(int index, Reply& reply, Emitter& out) {
        if (auto r = reply.reasoning_open.find(index); r != reply.reasoning_open.end()) {
            reply.reasoning.push_back(std::move(r->second));
            reply.reasoning_open.erase(r);
        }
        auto it = reply.calls_open.find(index);
        if (it == reply.calls_open.end()) return true;
        PartialCall call = std::move(it->second);
        reply.calls_open.erase(it);
        json arguments = call.input.empty() ? json::object() : json::parse(call.input, nullptr, false);
        if (arguments.is_discarded()) arguments = call.input;  // as written: the host tells the model its JSON was invalid
        return emit_call(call.id, call.name, arguments, reply, out);
    }

    bool emit_call(std::string id, const std::string& name, const json& arguments, Reply& reply, Emitter& out) {
        json data = nullptr;
        if (reply.calls == 0 && !reply.reasoning.empty()) data = {{kDataKey, {{"reasoning", reply.reasoning}}}};
        if (id.empty()) id = "call_" + std::to_string(reply.calls);
        ++reply.calls;
        return out.tool_call(id, name, arguments, data);
    }

    // The Converse (not streamed) answer: {"output": {"message": {"content": [...]}}, "stopReason", "usage"}.
    void on_whole(const std::string& body, Reply& reply, Emitter& out) {
        json j = json::parse(body, nullptr, false);
        if (!j.is_object() || !j.contains("output")) return;
        const json output = j["output"];
        const json message = output.is_object() ? output.value("message", json::object()) : json::object();
        for (const auto& block : message.is_object() ? message.value("content", json::array()) : json::array()) {
            if (!block.is_object()) continue;
            if (block.contains("text") && block["text"].is_string()) out.text(block["text"].get<std::string>());
            if (block.contains("reasoningContent") && block["reasoningContent"].is_object()) {
                const json& r = block["reasoningContent"];
                if (r.contains("reasoningText") && r["reasoningText"].is_object())
                    out.reasoning(text_of(r["reasoningText"], "text"));
                reply.reasoning.push_back(r);
            }
            if (block.contains("toolUse") && block["toolUse"].is_object()) {
                const json& call = block["toolUse"];
                emit_call(text_of(call, "toolUseId"), text_of(call, "name"),
                          call.contains("input") && call["input"].is_object() ? call["input"] : json::object(), reply, out);
            }
        }
        reply.stop = text_of(j, "stopReason");
        reply.done = true;
        read_usage(j.value("usage", json::object()), reply);
    }

    // inputTokens leaves out what the cache read and wrote; the host counts the whole prompt.
    static void read_usage(const json& usage, Reply& reply) {
        if (!usage.is_object() || usage.empty()) return;
        reply.cached_tokens = wire::count_of(usage, "cacheReadInputTokens");
        reply.input_tokens =
            wire::count_of(usage, "inputTokens") + reply.cached_tokens + wire::count_of(usage, "cacheWriteInputTokens");
        reply.output_tokens = wire::count_of(usage, "outputTokens");
    }

    Endpoint endpoint_;
    std::string region_, region_source_, profile_, credentials_file_, models_url_;
    std::string key_source_;        // "" when requests are signed with SigV4
    bool explicit_region_ = false;  // region was written in [plugins.bedrock]
    std::string cache_points_;      // "auto" | "on" | "off"
    long long thinking_budget_ = 0;
};

}  // namespace

// Thread-safe: the adapter keeps no state between calls (credentials are read per request).
AGENTHOST_PLUGIN(BedrockProvider, "bedrock", "1.0.0", AH_PLUGIN_THREAD_SAFE)
