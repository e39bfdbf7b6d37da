// The http-client module (common/host_module.hpp): the only code that links libcurl.
#include "plugins/http_client.hpp"

#include "common/host_module.hpp"
#include "plugins/abi_text.hpp"

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace agenthost::plugins {
namespace {

using nlohmann::json;

constexpr long kDefaultTimeoutMs = 600'000;  // a long LLM stream fits; plugins set their own
constexpr long kDefaultConnectTimeoutMs = 10'000;

std::optional<HostPort> curl_url_host_port(const std::string& url, const char* reference = nullptr);

struct UrlDeleter {
    void operator()(CURLU* u) const { curl_url_cleanup(u); }
};

struct Transfer {
    const HttpCallbacks* callbacks;
    CURL* curl;
    json headers = json::object();
    bool head_sent = false;
    ah_status sink_status = AH_OK;
    std::string location;  // of the response being read, for may_connect

    ah_status send_head() {
        if (head_sent) return AH_OK;
        head_sent = true;
        long code = 0;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
        if (!callbacks->on_head) return AH_OK;
        return callbacks->on_head(static_cast<int32_t>(code), headers.dump());
    }
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    std::string_view line(data, size * count);
    if (line.rfind("HTTP/", 0) == 0) {
        t->headers = json::object();  // a new response (after a redirect or 100-continue)
        t->location.clear();
        return line.size();
    }
    if ((line == "\r\n" || line == "\n") && !t->location.empty() && t->callbacks->may_connect) {
        // The end of a response that redirects: its target must be allowed as well.
        long code = 0;
        char* current = nullptr;
        curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_getinfo(t->curl, CURLINFO_EFFECTIVE_URL, &current);
        if (code >= 300 && code < 400 && current) {
            auto target = curl_url_host_port(current, t->location.c_str());
            if (!target || !t->callbacks->may_connect(target->host, target->port)) {
                t->sink_status = AH_ERR_INVALID_ARGUMENT;
                return 0;
            }
        }
        return line.size();
    }
    auto colon = line.find(':');
    if (colon == std::string_view::npos) return line.size();
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
    std::string v(value);
    if (name == "location") t->location = v;
    if (t->headers.contains(name))
        t->headers[name] = t->headers[name].get<std::string>() + ", " + v;
    else
        t->headers[name] = v;
    return line.size();
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    size_t n = size * count;
    if ((t->sink_status = t->send_head()) != AH_OK) return 0;
    if (t->callbacks->on_body && (t->sink_status = t->callbacks->on_body(std::string_view(data, n))) != AH_OK) return 0;
    return n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* t = static_cast<Transfer*>(user);
    return t->callbacks->cancelled && t->callbacks->cancelled() ? 1 : 0;
}

struct CurlDeleter {
    void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
    void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// The host and port `url` connects to (the scheme's port when it names none); `reference`, when
// given, is resolved against `url` first (a redirect's Location).
std::optional<HostPort> curl_url_host_port(const std::string& url, const char* reference) {
    std::unique_ptr<CURLU, UrlDeleter> parts(curl_url());
    if (!parts || curl_url_set(parts.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return std::nullopt;
    if (reference && curl_url_set(parts.get(), CURLUPART_URL, reference, 0) != CURLUE_OK) return std::nullopt;
    char* host = nullptr;
    char* port = nullptr;
    std::optional<HostPort> out;
    if (curl_url_get(parts.get(), CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(parts.get(), CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
        std::string h(host);
        if (h.size() > 1 && h.front() == '[') h = h.substr(1, h.size() - 2);
        out = HostPort{h, std::atoi(port)};
    }
    curl_free(host);
    curl_free(port);
    return out;
}

// The request's headers ({"Name": "value"}) as curl's list; a value that is not a string, or one
// that would inject a header (a line break), refuses the request.
ah_status header_lines(const ah_http_request& request, std::unique_ptr<curl_slist, SlistDeleter>& list) {
    if (!request.headers_json.len) return AH_OK;
    json headers = json::parse(view(request.headers_json), nullptr, false);
    if (!headers.is_object()) return AH_ERR_INVALID_ARGUMENT;
    for (const auto& [name, value] : headers.items()) {
        if (!value.is_string()) return AH_ERR_INVALID_ARGUMENT;
        std::string line = name + ": " + value.get<std::string>();
        if (line.find_first_of("\r\n") != std::string::npos) return AH_ERR_INVALID_ARGUMENT;  // header injection
        curl_slist* head = curl_slist_append(list.get(), line.c_str());
        if (!head) return AH_ERR_NO_MEMORY;
        (void)list.release();  // the list grew in place; `head` owns it all
        list.reset(head);
    }
    return AH_OK;
}

ah_status curl_perform(const ah_http_request& request, const HttpCallbacks& callbacks) {
    static std::once_flag curl_ready;
    std::call_once(curl_ready, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });

    std::string url(view(request.url));
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) return AH_ERR_INVALID_ARGUMENT;
    std::string method(view(request.method));
    if (method.empty()) method = "GET";
    if (method.find_first_of(" \r\n\t") != std::string::npos) return AH_ERR_INVALID_ARGUMENT;
    if (callbacks.may_connect) {
        auto target = curl_url_host_port(url);
        if (!target || !callbacks.may_connect(target->host, target->port)) return AH_ERR_INVALID_ARGUMENT;
        if (request.resolve_to.len && !callbacks.may_connect(std::string(view(request.resolve_to)), target->port))
            return AH_ERR_INVALID_ARGUMENT;
    }

    std::unique_ptr<curl_slist, SlistDeleter> header_list;
    if (ah_status read = header_lines(request, header_list); read != AH_OK) return read;

    std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
    if (!curl) return AH_ERR_NO_MEMORY;
    Transfer transfer{&callbacks, curl.get(), json::object(), false, AH_OK, {}};
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, (request.flags & AH_HTTP_NO_REDIRECTS) ? 0L : 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    // No Accept-Encoding by default: a compressing server would hold back a streamed (SSE) body.
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, request.timeout_ms ? static_cast<long>(request.timeout_ms) : kDefaultTimeoutMs);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     request.connect_timeout_ms ? static_cast<long>(request.connect_timeout_ms) : kDefaultConnectTimeoutMs);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
    if (method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (request.body.len) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.len));
    }
    if (header_list) curl_easy_setopt(c, CURLOPT_HTTPHEADER, header_list.get());
    // Pinning: connect to the address the plugin checked, for the URL's own host and port.
    std::unique_ptr<curl_slist, SlistDeleter> pinned;
    if (request.resolve_to.len) {
        std::string address(view(request.resolve_to));
        if (address.find_first_of(",\r\n ") != std::string::npos) return AH_ERR_INVALID_ARGUMENT;
        auto target = curl_url_host_port(url);
        if (!target) return AH_ERR_INVALID_ARGUMENT;
        if (address.find(':') != std::string::npos) address = "[" + address + "]";
        pinned.reset(curl_slist_append(nullptr, (target->host + ":" + std::to_string(target->port) + ":" + address).c_str()));
        curl_easy_setopt(c, CURLOPT_RESOLVE, pinned.get());
    }
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &transfer);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &transfer);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &transfer);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);

    CURLcode rc = curl_easy_perform(c);
    switch (rc) {
        case CURLE_OK: return transfer.send_head();  // a response with no body still reports its head
        case CURLE_WRITE_ERROR: return transfer.sink_status != AH_OK ? transfer.sink_status : AH_ERR_IO;
        case CURLE_ABORTED_BY_CALLBACK: return AH_ERR_CANCELLED;
        case CURLE_OPERATION_TIMEDOUT: return AH_ERR_TIMEOUT;
        case CURLE_URL_MALFORMAT:
        case CURLE_UNSUPPORTED_PROTOCOL: return AH_ERR_INVALID_ARGUMENT;
        default: return AH_ERR_IO;
    }
}

const HttpClientModule kModule{{AGENTHOST_VERSION, sizeof(HttpClientModule)}, curl_perform, curl_url_host_port};

}  // namespace
}  // namespace agenthost::plugins

AGENTHOST_MODULE_ENTRY(agenthost_module_http_client, agenthost::plugins::kModule)
