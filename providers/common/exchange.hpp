// One HTTP exchange with an LLM server as the adapters need it: the endpoint settings from the
// plugin's config, a request whose successful body streams into a decoder, and the typed error
// when it fails. Keys go only into request headers, never into messages or logs.
#pragma once

#include "wire.hpp"

#include <agenthost/plugin.hpp>

#include <optional>
#include <string>

namespace agenthost::providers {

struct Endpoint {
    std::string base_url;
    std::string api_key;
    std::string model;
    uint32_t timeout_ms = 600000;
    uint32_t connect_timeout_ms = 10000;
    json headers = json::object();  // extra headers from config (e.g. OpenAI-Organization)
};

inline Endpoint read_endpoint(const json& cfg, const std::string& default_base_url) {
    Endpoint e;
    e.base_url = cfg.value("base_url", "");
    if (e.base_url.empty()) e.base_url = default_base_url;
    e.api_key = cfg.value("api_key", "");
    e.model = cfg.value("model", "");
    e.timeout_ms = cfg.value("timeout_ms", e.timeout_ms);
    e.connect_timeout_ms = cfg.value("connect_timeout_ms", e.connect_timeout_ms);
    if (cfg.contains("headers") && cfg["headers"].is_object()) e.headers = cfg["headers"];
    return e;
}

// The model of a request: its own "model", else the configured one.
inline std::string model_of(const json& request, const Endpoint& endpoint) {
    std::string m = request.value("model", "");
    return m.empty() ? endpoint.model : m;
}

struct Exchange {
    ah_status status = AH_OK;  // transport outcome
    int code = 0;
    json headers = json::object();
    std::string error_body;  // the body of a non-2xx answer (bounded)
};

// Sends `request`; while the answer is 2xx its body goes to on_body (return false to stop).
template <typename OnBody>
Exchange exchange(const sdk::Host& host, const sdk::HttpRequest& request, const ah_cancel* cancel, OnBody&& on_body) {
    constexpr size_t kErrorBodyLimit = 64 * 1024;
    Exchange ex;
    auto response = host.http(
        request, cancel,
        [&](std::string_view chunk) {
            if (ex.code >= 200 && ex.code < 300) return on_body(chunk);
            if (ex.error_body.size() < kErrorBodyLimit)
                ex.error_body.append(chunk.substr(0, kErrorBodyLimit - ex.error_body.size()));
            return true;
        },
        [&](int code, const json& headers) {
            ex.code = code;
            ex.headers = headers;
        });
    ex.status = response.status;
    return ex;
}

// How a vendor's HTTP error answer reads as the SDK's typed error (classify_http_error, or a
// vendor's own that refines it).
using HttpErrorReader = WireError (*)(int code, const json& headers, std::string_view body);

// Emits the typed error for a failed exchange and returns true; false when it succeeded.
// `complete` says whether the stream reached its proper end.
inline bool report_failure(sdk::Emitter& out, const sdk::Host& host, const Exchange& ex, const std::string& url,
                           const ah_cancel* cancel, bool complete, HttpErrorReader read_error = classify_http_error) {
    if (host.cancelled(cancel) || ex.status == AH_ERR_CANCELLED) return true;  // the host knows; nothing to add
    if (out.stopped()) return true;
    WireError e;
    if (ex.code >= 400)
        e = read_error(ex.code, ex.headers, ex.error_body);
    else if (ex.status != AH_OK)
        e = classify_transport(ex.status, url);
    else if (ex.code < 200 || ex.code >= 300)
        e = {"transient", "unexpected HTTP " + std::to_string(ex.code) + " from " + url, std::nullopt};
    else if (!complete)
        e = {"transient", "the stream from " + url + " ended before the reply was complete", std::nullopt};
    else
        return false;
    // The error event reaches the host, which retries and tells the user once per retry: info here.
    host.info("provider request failed", {{"url", url}, {"type", e.type}, {"http_status", ex.code}});
    out.error(e.type, e.message, e.retry_after);
    return true;
}

inline sdk::HttpRequest post_json(const Endpoint& endpoint, const std::string& url, const json& body, json headers) {
    sdk::HttpRequest r;
    r.method = "POST";
    r.url = url;
    r.flags = AH_HTTP_REPLAYABLE;  // a model call changes nothing: it may go out on a kept connection
    r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    headers["Content-Type"] = "application/json";
    for (const auto& [name, value] : endpoint.headers.items()) headers[name] = value;
    r.headers = std::move(headers);
    r.timeout_ms = endpoint.timeout_ms;
    r.connect_timeout_ms = endpoint.connect_timeout_ms;
    return r;
}

inline sdk::HttpRequest get(const Endpoint& endpoint, const std::string& url, json headers) {
    sdk::HttpRequest r;
    r.url = url;
    for (const auto& [name, value] : endpoint.headers.items()) headers[name] = value;
    r.headers = std::move(headers);
    r.timeout_ms = std::min<uint32_t>(endpoint.timeout_ms, 30000);
    r.connect_timeout_ms = endpoint.connect_timeout_ms;
    return r;
}

// The models of an API answering GET <url> with {"data": [{"id": …}, …]} (OpenAI, Anthropic);
// null when it cannot say.
// Why a model-list request failed, in words (the host shows it in doctor and init); nullopt when it
// got an HTTP 200.
inline std::optional<std::string> list_failure(const sdk::HttpResponse& response, const std::string& url) {
    if (response.status == AH_ERR_TIMEOUT) return url + " did not answer in time";
    if (response.status != AH_OK)
        return "could not connect to " + url + " (refused, unreachable, or the name did not resolve): is the server running?";
    if (response.code == 401 || response.code == 403)
        return url + " refused the key (HTTP " + std::to_string(response.code) + "): check the API key variable";
    if (response.code != 200) return url + " answered HTTP " + std::to_string(response.code);
    return std::nullopt;
}

inline json model_list(const sdk::Host& host, const Endpoint& endpoint, const std::string& url, const json& headers,
                       const ah_cancel* cancel) {
    auto response = host.http(get(endpoint, url, headers), cancel);
    if (auto why = list_failure(response, url)) return json{{"error", *why}};
    json j = json::parse(response.body, nullptr, false);
    if (!j.is_object() || !j.contains("data")) return json{{"error", url + " answered, but not with a model list"}};
    json list = json::array();
    for (const auto& m : j["data"])
        if (m.is_object() && m.contains("id")) list.push_back({{"id", m["id"]}});
    return list;
}

// Arguments the host sends as an object (canonical) → the JSON text OpenAI-style APIs want.
inline std::string arguments_text(const json& arguments) {
    if (arguments.is_string()) return arguments.get<std::string>();
    return (arguments.is_null() ? json::object() : arguments).dump();
}

// Arguments as an object, whatever form they were stored in.
inline json arguments_object(const json& arguments) {
    if (arguments.is_object()) return arguments;
    if (arguments.is_string()) {
        json j = json::parse(arguments.get<std::string>(), nullptr, false);
        if (j.is_object()) return j;
    }
    return json::object();
}

inline std::string content_text(const json& message) {
    const json& c = message.contains("content") ? message["content"] : json();
    if (c.is_string()) return c;
    if (c.is_null()) return "";
    return c.dump();
}

}  // namespace agenthost::providers
