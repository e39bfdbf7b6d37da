// The HTTP behind ah_host_api.http_request: libcurl, streamed, cancellable, http(s) only. libcurl is
// in the http-client module (http_client_curl.cpp), loaded by the first call here.
#pragma once

#include "common/host_module.hpp"

#include <agenthost/agenthost.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
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
    // When set, told why a request failed to connect or broke (AH_ERR_IO), in libcurl's words and
    // with a hint when there is one (a certificate no trusted CA signed: SSL_CERT_FILE).
    std::function<void(std::string_view why)> on_io_failure;
};

struct HostPort {
    std::string host;  // without brackets
    int port = 0;
};
// The host and port `url` connects to (its scheme's port when it names none), as libcurl reads it,
// so a grant and the request it allows read a URL the same way; `reference`, when given, is
// resolved against `url` first (a redirect's Location).
std::optional<HostPort> url_host_port(const std::string& url, const char* reference = nullptr);

// The host and port of a URL in the one plain form settings use — http(s)://NAME[:PORT]/… with a
// DNS name whose last label starts with a letter, or a dotted-quad IPv4 address in canonical form
// — read without libcurl, so the grants of plugins with URL settings are computed without loading
// the http-client module. Anything else (user info, IPv6, percent signs, numeric forms libcurl
// normalises, unusual characters) is nullopt and left to libcurl. tests/unit/permissions_test
// checks that it equals libcurl's on the forms it accepts and on near misses.
std::optional<HostPort> plain_url_host_port(std::string_view url);

// The connections one plugin instance keeps open between its requests (defined in the
// http-client module). A connection serves one request at a time; it is lent again only to a
// request to the same origin that may be sent twice (idempotent, or AH_HTTP_REPLAYABLE), only
// when nothing is waiting on it, and only after a clean exchange (no error, no 408, 429 or 5xx);
// it closes after 30 s idle (kIdleLimit). Details and reasons in http_client_curl.cpp.
struct HttpConnections;

// What close_connections() does beyond closing the kept connections.
enum class ConnectionsEnd {
    idle_only,  // nothing: later requests keep theirs
    for_good,   // keeps none from now on
    and_free,   // and frees the pool
};

// Owns an instance's HttpConnections, made on its first request (the module is loaded by then).
class KeptConnections {
public:
    static constexpr std::chrono::milliseconds kIdleLimit{30'000};

    explicit KeptConnections(std::chrono::milliseconds idle_limit = kIdleLimit) : idle_limit_(idle_limit) {}
    KeptConnections(const KeptConnections&) = delete;
    KeptConnections& operator=(const KeptConnections&) = delete;
    ~KeptConnections();

    // The pool, made if need be; null when the http-client module cannot be loaded.
    HttpConnections* get();
    // Closes every kept connection and keeps none from now on (the instance is destroyed).
    void close();
    // Closes the connections kept now; later requests keep theirs again. For a failure only the
    // plugin saw (a provider's stream that ended early): its retry starts on a new connection.
    void close_idle();

private:
    const std::chrono::milliseconds idle_limit_;
    std::mutex mutex_;
    HttpConnections* connections_ = nullptr;  // owned; freed through the module
};

// Performs one request; see ah_host_api.http_request for the meaning of the returned status.
// `kept`, when given, lends and keeps the request's connection. AH_ERR_UNSUPPORTED when the
// http-client module cannot be loaded (logged with its cause).
ah_status http_perform(const ah_http_request& request, const HttpCallbacks& callbacks, KeptConnections* kept = nullptr);

// The http-client module's table (common/host_module.hpp).
struct HttpClientModule {
    modules::ModuleHeader header;
    ah_status (*perform)(const ah_http_request& request, const HttpCallbacks& callbacks, HttpConnections* kept);
    std::optional<HostPort> (*url_host_port)(const std::string& url, const char* reference);
    HttpConnections* (*open_connections)(std::chrono::milliseconds idle_limit);
    void (*close_connections)(HttpConnections* kept, ConnectionsEnd end);
};

}  // namespace agenthost::plugins
