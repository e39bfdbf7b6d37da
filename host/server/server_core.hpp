// What every route stands on: the listening socket and its connection threads, the checks every
// request passes before its route sees it (framing, Host, Origin, token), POST bodies read within
// their route's limit, error answers for what no route handles, and the panel's login. The route
// files (routes/) add the routes; its implementation (server_core.cpp, in the http-server module)
// is the one file that knows the HTTP library.
#pragma once

#include "common/host_module.hpp"
#include "common/result.hpp"
#include "config/config.hpp"
#include "server/http.hpp"

#include <cctype>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace agenthost::server {

// Who may use a route, beyond the checks every request passes.
struct Access {
    bool open = false;           // no token needed (health, login, the panel's files)
    bool local_origins = false;  // Origins of pages on this machine are accepted too (MCP inspectors)
    bool event_stream = false;   // a GET that streams: the Origin is checked as for a state change
    bool form_body = false;      // a browser form's body (application/x-www-form-urlencoded) too: the login form
    bool json_rpc = false;       // refusals as JSON-RPC error objects, as its clients read them (/mcp)
};

// RFC 9728: where this server describes itself as an OAuth protected resource (MCP clients look
// there after a 401); /mcp's own metadata is that path with "/mcp" appended.
inline constexpr const char* kProtectedResourcePath = "/.well-known/oauth-protected-resource";

// "http://host:port" as the client reached this server ("https" when a proxy says so with
// X-Forwarded-Proto): for URLs the server hands out about itself.
// Inline: the routes (in the binary) and the core (in the HTTP module) both use it.
inline std::string base_url(const Request& req) {
    std::string proto;
    for (char c : req.header("X-Forwarded-Proto"))
        if (c != ' ') proto += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string host;  // only what a host and port are made of: the URL is quoted into headers
    for (char c : req.header("Host"))
        if (std::isalnum(static_cast<unsigned char>(c)) || std::string_view(".-:[]").find(c) != std::string_view::npos) host += c;
    return (proto == "https" ? "https://" : "http://") + host;
}

// The Content-Security-Policy of the panel's pages: scripts and styles from this server only.
inline constexpr const char* kPanelCsp =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "connect-src 'self'; font-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

class ServerCore {
public:
    virtual ~ServerCore() = default;

    virtual void get(const std::string& pattern, Handler handler, Access access = {}) = 0;
    virtual void del(const std::string& pattern, Handler handler, Access access = {}) = 0;
    // A POST route; its body is read up to `max_body_bytes` (0: [server] max_body_bytes) and a
    // bigger one is answered 413 unread.
    virtual void post(const std::string& pattern, BodyHandler handler, Access access = {}, size_t max_body_bytes = 0) = 0;
    // A PATCH route: read, limited and guarded (Origin, Content-Type) exactly as POST routes are.
    virtual void patch(const std::string& pattern, BodyHandler handler, Access access = {}, size_t max_body_bytes = 0) = 0;

    // The token clients must send (empty: no authentication) and the port its panel cookie is
    // named after; set before serving.
    virtual void set_token(const std::string& token, int port) = 0;
    virtual void set_listen_host(const std::string& host) = 0;
    virtual const std::string& token() const = 0;

    // Binds HOST:PORT with a full backlog; false when it is in use or not this machine's address.
    virtual bool bind(const std::string& host, int port) = 0;
    // Serves until stop(). A listening socket that fails under it (accept() ending with an error
    // other than EINTR, EAGAIN or EMFILE) is opened again on the same address; an error when that
    // cannot be done, so the process exits non-zero instead of as though it had been stopped.
    virtual Status listen_after_bind() = 0;
    virtual void stop() = 0;
};

// The core over cpp-httplib, from the http-server module (common/host_module.hpp); an error when
// the module cannot be loaded.
Result<std::unique_ptr<ServerCore>> make_server_core(const config::Config& config);

// The http-server module's table.
struct HttpServerModule {
    modules::ModuleHeader header;
    std::unique_ptr<ServerCore> (*make)(const config::Config& config);
};

}  // namespace agenthost::server
