// The HTTP behind ah_host_api.http_request: libcurl, streamed, cancellable, http(s) only.
#pragma once

#include <agenthost/agenthost.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace agenthost::plugins {

struct HttpCallbacks {
    std::function<ah_status(int32_t status, std::string_view headers_json)> on_head;
    std::function<ah_status(std::string_view chunk)> on_body;
    std::function<bool()> cancelled;
    // When set, asked before connecting to the URL's host and port, a pinned address, and every
    // redirect's target; false refuses the request (AH_ERR_INVALID_ARGUMENT).
    std::function<bool(std::string_view host, int port)> may_connect;
};

struct HostPort {
    std::string host;  // without brackets
    int port = 0;
};
// The host and port `url` connects to (its scheme's port when it names none), as libcurl reads it,
// so a grant and the request it allows read a URL the same way; `reference`, when given, is
// resolved against `url` first (a redirect's Location).
std::optional<HostPort> url_host_port(const std::string& url, const char* reference = nullptr);

// Performs one request; see ah_host_api.http_request for the meaning of the returned status.
ah_status http_perform(const ah_http_request& request, const HttpCallbacks& callbacks);

}  // namespace agenthost::plugins
