// The http-server module (common/host_module.hpp): ServerCore over cpp-httplib, the only code that
// links the HTTP library and, through it, OpenSSL.
#include "server/server_core.hpp"

#include "common/ids.hpp"
#include "server/connection_gate.hpp"
#include "server/header_values.hpp"
#include "server/memory_budget.hpp"
#include "server/screened_server.hpp"
#include "server/security_headers.hpp"
#include "server/replies.hpp"

#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <regex>
#include <thread>
#include <vector>

namespace agenthost::server {

namespace {

using Native = httplib::Request;
using NativeResponse = httplib::Response;
using Handled = httplib::Server::HandlerResponse;

// ---- the thin request/response types over the library's ----

class HttplibRequest final : public Request {
public:
    explicit HttplibRequest(const Native& native) : native_(native) {}
    const std::string& method() const override { return native_.method; }
    const std::string& path() const override { return native_.path; }
    std::string match(size_t index) const override { return index < native_.matches.size() ? native_.matches[index].str() : ""; }
    std::string header(const std::string& name) const override { return native_.get_header_value(name); }
    bool has_header(const std::string& name) const override { return native_.has_header(name); }
    size_t header_count(const std::string& name) const override { return native_.get_header_value_count(name); }
    std::string param(const std::string& name) const override { return native_.get_param_value(name); }
    bool has_param(const std::string& name) const override { return native_.has_param(name); }
    const std::string& version() const override { return native_.version; }
    const std::string& remote_addr() const override { return native_.remote_addr; }
    bool client_gone() const override { return served_client_gone(); }

private:
    const Native& native_;
};

class HttplibSink final : public StreamSink {
public:
    explicit HttplibSink(httplib::DataSink& native) : native_(native) {}
    bool write(std::string_view text) override { return native_.write(text.data(), text.size()); }
    void done() override { native_.done(); }
    bool client_gone() const override { return served_client_gone(); }

private:
    httplib::DataSink& native_;
};

class HttplibResponse final : public Response {
public:
    explicit HttplibResponse(NativeResponse& native) : native_(native) {}
    void set_status(int status) override { native_.status = status; }
    int status() const override { return native_.status; }
    void set_header(const std::string& name, const std::string& value) override { native_.set_header(name, value); }
    void remove_header(const std::string& name) override { native_.headers.erase(name); }
    void set_content(const std::string& body, const std::string& content_type) override {
        native_.set_content(body, content_type);
    }
    void redirect(const std::string& location, int status) override { native_.set_redirect(location, status); }
    void stream(const std::string& content_type, std::function<bool(StreamSink&)> next, std::function<void()> finished) override {
        native_.set_chunked_content_provider(
            content_type,
            [next = std::move(next)](size_t, httplib::DataSink& sink) {
                HttplibSink ours(sink);
                return next(ours);
            },
            [finished = std::move(finished)](bool) {
                if (finished) finished();
            });
    }

private:
    NativeResponse& native_;
};

// ---- the core ----

struct CoreState {
    struct Route {
        std::string method;
        std::string pattern;
        std::optional<std::regex> regex;  // none when the pattern is a plain path
        Access access;
        size_t max_body_bytes = 0;  // POST and PATCH routes

        bool matches(const std::string& m, const std::string& path) const {
            return m == method && (regex ? std::regex_match(path, *regex) : path == pattern);
        }
    };

    const config::Config& config;
    const config::ServerSettings& settings;
    ScreenedServer http;
    socket_t listen_socket = INVALID_SOCKET;
    std::string bound_host;  // what bind() was given, to listen again after a socket failure
    int bound_port = 0;
    std::mutex listening;  // stop() and listening again never overlap
    std::atomic<bool> stopping = false;
    std::vector<Route> routes;
    // The panel's session: an HttpOnly cookie and a header the panel's script sends, both derived
    // from the token (derived_secret) and never the token. Both must match: a browser gives a host's cookies to
    // every port of it (another local server the user visits sees the cookie), and script on the
    // panel's page could read only the header's secret (kept in the panel origin's storage).
    std::string cookie_name;  // per port: two servers on one host keep their own
    std::string cookie_value;
    std::string session_value;  // the X-Agenthost-Session header's
    std::string server_token;   // what clients must send; empty: no authentication
    std::string listen_host;    // the name serve listens on, always an allowed Host

    MemoryBudget memory;  // [server] max_memory_mb: large bodies are admitted against it

    explicit CoreState(const config::Config& c) : config(c), settings(c.server), memory(c.server.max_memory_mb) {}

    const Route* route(const std::string& method, const std::string& path) const {
        for (const Route& r : routes)
            if (r.matches(method, path)) return &r;
        return nullptr;
    }

    void add(const std::string& method, const std::string& pattern, Access access, size_t max_body_bytes) {
        bool plain = pattern.find_first_of("()[]\\*+?|^$") == std::string::npos;
        routes.push_back({method, pattern, plain ? std::nullopt : std::optional<std::regex>(pattern), access, max_body_bytes});
    }

    // The one place a request is refused before its route: the body in the shape its clients read
    // (OpenAI's error object, or a JSON-RPC error for /mcp), the status and reason the same.
    Handled refuse(NativeResponse& native, const Route* target, int status, const std::string& code, const std::string& message,
                   const std::string& type = "invalid_request_error") {
        HttplibResponse res(native);
        if (target && target->access.json_rpc)
            send_rpc_error(res, status, code, message);
        else
            send_error(res, status, code, message, type);
        res.set_header("x-should-retry", "false");
        return Handled::Handled;
    }

    bool host_allowed(const Request& req) const {
        if (!req.has_header("Host")) return true;  // HTTP/1.0 tools; browsers always send one
        std::string name = host_name(req.header("Host"));
        if (name.empty()) return false;
        // A rebinding attack needs a DNS name: IP literals and loopback names are safe.
        if (name == "localhost" || ip_literal(name) || name == lower(listen_host)) return true;
        std::string full = lower(trim(req.header("Host")));
        for (const auto& allowed : settings.allowed_hosts)
            if (allowed == "*" || lower(allowed) == name || lower(allowed) == full) return true;
        return false;
    }

    // The request comes from a page of this server (or from no page at all).
    static bool same_origin(const Request& req) {
        if (!req.has_header("Origin")) return true;
        std::string origin = lower(req.header("Origin")), host = lower(trim(req.header("Host")));
        return !host.empty() && (origin == "http://" + host || origin == "https://" + host);
    }

    bool origin_allowed(const Request& req, const Access& access) const {
        if (!req.has_header("Origin")) {
            // Browsers send Origin on these requests; a cross-site one without it is refused too.
            return lower(req.header("Sec-Fetch-Site")) != "cross-site";
        }
        if (same_origin(req)) return true;
        std::string origin = req.header("Origin");
        for (const auto& allowed : settings.allowed_origins)
            if (origin == allowed) return true;
        if (access.local_origins) {  // clients in a local browser (MCP inspectors), and [mcp] allowed_origins
            for (const char* local :
                 {"http://localhost", "http://127.0.0.1", "https://localhost", "https://127.0.0.1", "http://[::1]"})
                if (origin == local || origin.rfind(std::string(local) + ":", 0) == 0) return true;
            for (const auto& allowed : config.mcp.allowed_origins)
                if (origin == allowed) return true;
        }
        return false;
    }

    bool authenticated(const Request& req) const {
        if (server_token.empty()) return true;  // auth = "none"
        std::string header = req.header("Authorization");
        if (lower(header.substr(0, 7)) == "bearer ") return constant_time_equal(trim(header.substr(7)), server_token);
        // The panel's session counts only on requests from the server's own pages (or none), with
        // its header and its cookie.
        if (!same_origin(req) || session_value.empty() || !constant_time_equal(req.header("X-Agenthost-Session"), session_value))
            return false;
        std::string cookies = req.header("Cookie");
        for (size_t at = 0; at < cookies.size();) {
            size_t end = cookies.find(';', at);
            std::string pair = trim(cookies.substr(at, end == std::string::npos ? std::string::npos : end - at));
            size_t eq = pair.find('=');
            if (eq != std::string::npos && pair.substr(0, eq) == cookie_name &&
                constant_time_equal(pair.substr(eq + 1), cookie_value))
                return true;
            if (end == std::string::npos) break;
            at = end + 1;
        }
        return false;
    }

    size_t body_limit(const Route& r) const {
        return r.max_body_bytes ? r.max_body_bytes : static_cast<size_t>(settings.max_body_bytes);
    }

    // What every request passes before its route; nothing of the body is read yet.
    Handled guard(const Native& native_req, NativeResponse& res) {
        const HttplibRequest req(native_req);
        const std::string& method = req.method();
        const Route* target = route(method, req.path());  // nullptr: no route (answered 404 by the router)
        for (const char* name :
             {"Host", "Origin", "Authorization", "Cookie", "X-Agenthost-Session", "Content-Type", "Content-Length",
              "Transfer-Encoding", "Sec-Fetch-Site", "Idempotency-Key", "Mcp-Session-Id", "Last-Event-ID"})
            if (has_control_character(req.header(name)))
                return refuse(res, target, 400, "invalid_header",
                              std::string("the ") + name + " header holds a control character; send it as plain text");
        // Framing first: ambiguous or unsupported bodies are refused before anything is read.
        size_t lengths = req.header_count("Content-Length"), encodings = req.header_count("Transfer-Encoding");
        if (lengths && encodings)
            return refuse(res, target, 400, "ambiguous_length",
                          "the request has both Content-Length and Transfer-Encoding (a request smuggling "
                          "pattern); send exactly one of them");
        if (lengths > 1 || encodings > 1)
            return refuse(res, target, 400, "ambiguous_length",
                          "the request repeats Content-Length or Transfer-Encoding; send it once");
        if (encodings && lower(trim(req.header("Transfer-Encoding"))) != "chunked")
            return refuse(res, target, 501, "unsupported_transfer_encoding", "only Transfer-Encoding: chunked is supported");
        uint64_t length = 0;
        if (lengths) {
            std::string text = trim(req.header("Content-Length"));
            if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
                return refuse(res, target, 400, "invalid_content_length", "Content-Length must be a whole number of bytes");
            length = std::stoull(text);
        }
        bool has_body = encodings || length > 0;
        // POST and PATCH carry bodies and change state: every check below treats them alike.
        bool with_body = method == "POST" || method == "PATCH";
        if (method == "PUT") return refuse(res, target, 405, "method_not_allowed", method + " is not used by this server");
        if (encodings && !with_body)
            return refuse(res, target, 400, "unexpected_body", "a chunked body is accepted on POST and PATCH requests only");
        if (with_body && !target) return refuse(res, target, 404, "not_found", "no " + method + " route " + req.path());
        if (with_body && length > body_limit(*target))
            return refuse(res, target, 413, "body_too_large",
                          "the request body (" + std::to_string(length) + " bytes) is larger than " +
                              std::to_string(body_limit(*target)) + " bytes ([server] max_body_bytes)");
        // One Host, and HTTP/1.1 must send it (RFC 9112 §3.2): which name was meant is never guessed.
        if (size_t hosts = req.header_count("Host"); hosts > 1 || (hosts == 0 && req.version() == "HTTP/1.1"))
            return refuse(
                res, target, 400, "invalid_host",
                hosts > 1 ? "the request repeats the Host header; send it once" : "an HTTP/1.1 request must name its Host");
        // DNS rebinding: a page of another name resolved to this address.
        if (!host_allowed(req)) {
            spdlog::warn("request refused: host_not_allowed host={} path={}", loggable(req.header("Host")), loggable(req.path()));
            return refuse(res, target, 421, "host_not_allowed",
                          "this server does not answer to the Host '" + req.header("Host") +
                              "' (DNS rebinding defence); add the name to [server] allowed_hosts");
        }
        const Access access = target ? target->access : Access{};
        bool state_changing = with_body || method == "DELETE";
        bool stream =
            method == "GET" && (access.event_stream || req.header("Accept").find("text/event-stream") != std::string::npos);
        if ((state_changing || stream) && !origin_allowed(req, access)) {
            spdlog::warn("request refused: origin_not_allowed origin={} path={}", loggable(req.header("Origin")),
                         loggable(req.path()));
            if (!req.has_header("Origin"))
                return refuse(res, target, 403, "origin_not_allowed",
                              "a cross-site request (Sec-Fetch-Site: cross-site) may not change or stream anything here");
            return refuse(res, target, 403, "origin_not_allowed",
                          "requests from the Origin '" + loggable(req.header("Origin")) +
                              "' may not change or stream anything here; add it to " +
                              (access.local_origins ? "[mcp] allowed_origins" : "[server] allowed_origins"));
        }
        // A cross-site form or text/plain "simple request" cannot send application/json.
        if (with_body && (has_body || req.has_header("Content-Type")) && !is_json_type(req.header("Content-Type")) &&
            !(access.form_body && is_form_type(req.header("Content-Type"))))
            return refuse(res, target, 415, "unsupported_media_type",
                          method + " bodies must be sent with Content-Type: application/json");
        if (!access.open && !authenticated(req)) {
            res.set_header("WWW-Authenticate",  // RFC 9728: where the resource says how to authenticate
                           "Bearer realm=\"agenthost\", resource_metadata=\"" + base_url(req) + kProtectedResourcePath + "\"");
            return refuse(res, target, 401, "invalid_api_key",
                          "missing or wrong token: send Authorization: Bearer <token> (the [server] token_env variable, or the "
                          "generated data_dir/server-token), or open the login URL agenthost serve printed",
                          "authentication_error");
        }
        return Handled::Unhandled;
    }

    // The panel's login: the URL serve printed (GET /login?token=…) or the panel's form (POST, the
    // token in the body, so in no URL or history). The right token answers a page that sets the
    // session's cookie and hands its header secret to the panel, then opens the panel.
    void login(const Request& req, const std::string& given, Response& res) const {
        if (server_token.empty()) return res.redirect("/", 303);
        if (!constant_time_equal(given, server_token)) {
            spdlog::warn("login refused: wrong token from {}", loggable(req.remote_addr()));
            // A browser (the panel's login form) goes back to the panel, which says so in words.
            if (req.header("Accept").find("text/html") != std::string::npos) return res.redirect("/?login=failed", 303);
            return send_error(res, 401, "invalid_token",
                              "the token in this login is wrong: open the URL agenthost serve printed (or use the token in "
                              "data_dir/server-token, or the [server] token_env variable)",
                              "authentication_error");
        }
        res.set_header("Set-Cookie", cookie_name + "=" + cookie_value + "; HttpOnly; SameSite=Strict; Path=/; Max-Age=2592000");
        res.set_header("Cache-Control", "no-store");
        res.remove_header("Content-Security-Policy");
        res.set_header("Content-Security-Policy", kPanelCsp);
        res.set_content("<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><meta name=\"agenthost-session\" content=\"" +
                            session_value +
                            "\"><title>agenthost</title><script src=\"/panel/login.js\"></script>"
                            "<p>Logged in. <a href=\"/\">Open the panel</a>.</p></html>",
                        "text/html; charset=utf-8");
    }
};

class HttplibCore final : public ServerCore {
public:
    explicit HttplibCore(const config::Config& config);
    void get(const std::string& pattern, Handler handler, Access access) override;
    void del(const std::string& pattern, Handler handler, Access access) override;
    void post(const std::string& pattern, BodyHandler handler, Access access, size_t max_body_bytes) override;
    void patch(const std::string& pattern, BodyHandler handler, Access access, size_t max_body_bytes) override;
    void set_token(const std::string& token, int port) override;
    void set_listen_host(const std::string& host) override { impl_->listen_host = host; }
    const std::string& token() const override { return impl_->server_token; }
    bool bind(const std::string& host, int port) override;
    Status listen_after_bind() override;
    void stop() override;

private:
    void add_body_route(const std::string& method, const std::string& pattern, BodyHandler handler, Access access,
                        size_t max_body_bytes);

    std::unique_ptr<CoreState> impl_;
};

// What no route answered, in words: the library's own refusals of malformed requests too.
void answer_unrouted(const Native& req, NativeResponse& native) {
    if (!native.body.empty()) return;
    HttplibResponse res(native);
    const int status = native.status;
    struct Known {
        int status;
        const char* code;
        const char* message;
    };
    static constexpr Known kKnown[] = {
        {400, "malformed_request",
         "the request is not well-formed HTTP/1.1 (in a query, '?' and '#' inside a value must be percent-encoded, e.g. "
         "?uri=graph%3A%2F%2Fg1%3Fformat%3Dmermaid)"},
        {404, "not_found", ""},
        {413, "body_too_large", "the request body is larger than [server] max_body_bytes"},
        {414, "uri_too_long", "the request line is longer than the server reads; send the data in a POST body"},
        {431, "headers_too_large", "the request's headers are larger than the server reads"},
    };
    std::string code = "http_error", message = "the request was refused (HTTP " + std::to_string(status) + ")";
    for (const Known& k : kKnown)
        if (k.status == status) {
            code = k.code;
            message = k.message;
        }
    if (status == 404)
        message = "no route " + loggable(req.method) + " " + loggable(req.path) + " (docs/server.md lists the routes)";
    send_error(res, status, code, message);
}

// A handler that threw: logged, and answered 500 with what it said.
void answer_exception(const Native&, NativeResponse& native, const std::exception_ptr& ep) {
    std::string what = "unknown error";
    try {
        std::rethrow_exception(ep);
    } catch (const std::exception& e) {
        what = e.what();
    } catch (...) {
    }
    spdlog::error("request failed: {}", what);
    HttplibResponse res(native);
    send_error(res, 500, "internal_error", "the server failed on this request: " + what, "server_error");
}

HttplibCore::HttplibCore(const config::Config& config) : impl_(std::make_unique<CoreState>(config)) {
    auto& http = impl_->http;
    const auto& settings = impl_->settings;
    // One thread per connection being served, started on demand once its head is here: idle and
    // slow sockets, waiting runs and open streams never keep /health from being answered.
    GateLimits gate;
    gate.max_served = static_cast<size_t>(settings.max_connections);
    gate.max_per_address = static_cast<size_t>(settings.max_connections_per_address);
    gate.max_waiting = 4 * gate.max_served;
    gate.max_body_bytes = static_cast<size_t>(settings.max_body_bytes);
    http.open_gate(gate);
    http.set_payload_max_length(static_cast<size_t>(settings.max_body_bytes));
    // One request per connection: a refused request's unread body can never be read as a second
    // request (smuggling), and no idle keep-alive connection holds a thread.
    http.set_keep_alive_max_count(1);
    // Each event of a stream leaves at once, as streaming servers do: with Nagle on, an event written
    // while the one before is unacknowledged may wait for the client's delayed ACK (no difference
    // was measured on loopback; docs/performance.md).
    http.set_tcp_nodelay(true);
    http.set_read_timeout(5, 0);    // a client silent this long between bytes is dropped
    http.set_write_timeout(10, 0);  // a client that stops reading its stream is dropped
    httplib::Headers security;
    for (const auto& [name, value] : kSecurityHeaders) security.emplace(name, value);
    http.set_default_headers(std::move(security));
    // The library listens with a backlog of 5, which drops connections when many clients arrive at
    // once; the socket is kept so bind() can widen it. Only SO_REUSEADDR (a restart may bind while
    // old connections linger): the library's default also sets SO_REUSEPORT, which lets a second
    // server bind the same port and take half the connections — a second serve, with other auth,
    // must fail "address in use".
    http.set_socket_options([this](socket_t sock) {
        int yes = 1;
        ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        // Room for a whole request head (64 KiB) in a connection's receive buffer, inherited by every
        // accepted socket: the head is looked at before it is read (request_head.hpp).
        int room = 256 << 10;
        ::setsockopt(sock, SOL_SOCKET, SO_RCVBUF, &room, sizeof room);
        impl_->listen_socket = sock;
    });
    http.set_pre_routing_handler([this](const Native& req, NativeResponse& res) { return impl_->guard(req, res); });
    http.set_error_handler(answer_unrouted);
    http.set_exception_handler(answer_exception);
    get(
        "/login", [this](const Request& req, Response& res) { impl_->login(req, req.param("token"), res); },
        Access{.open = true});
    post(
        "/login",
        [this](const Request& req, const std::string& body, Response& res) { impl_->login(req, form_value(body, "token"), res); },
        Access{.open = true, .form_body = true}, 4096);
}

void HttplibCore::get(const std::string& pattern, Handler handler, Access access) {
    impl_->add("GET", pattern, access, 0);
    impl_->http.Get(pattern, [handler = std::move(handler)](const Native& native, NativeResponse& native_res) {
        HttplibResponse res(native_res);
        handler(HttplibRequest(native), res);
    });
}

void HttplibCore::del(const std::string& pattern, Handler handler, Access access) {
    impl_->add("DELETE", pattern, access, 0);
    impl_->http.Delete(pattern, [handler = std::move(handler)](const Native& native, NativeResponse& native_res) {
        HttplibResponse res(native_res);
        handler(HttplibRequest(native), res);
    });
}

void HttplibCore::post(const std::string& pattern, BodyHandler handler, Access access, size_t max_body_bytes) {
    add_body_route("POST", pattern, std::move(handler), access, max_body_bytes);
}

void HttplibCore::patch(const std::string& pattern, BodyHandler handler, Access access, size_t max_body_bytes) {
    add_body_route("PATCH", pattern, std::move(handler), access, max_body_bytes);
}

// Content-Length bodies were checked by the guard; chunked ones stop being read at the limit (413),
// so they never cost more than it.
void HttplibCore::add_body_route(const std::string& method, const std::string& pattern, BodyHandler handler, Access access,
                                 size_t max_body_bytes) {
    impl_->add(method, pattern, access, max_body_bytes);
    const size_t limit = max_body_bytes ? max_body_bytes : static_cast<size_t>(impl_->settings.max_body_bytes);
    impl_->http.set_payload_max_length(std::max(limit, static_cast<size_t>(impl_->settings.max_body_bytes)));
    MemoryBudget& memory = impl_->memory;
    httplib::Server::HandlerWithContentReader read_then_handle = [limit, &memory, handler = std::move(handler)](
                                                                     const Native& native, NativeResponse& native_res,
                                                                     const httplib::ContentReader& reader) {
        HttplibResponse res(native_res);
        HttplibRequest req(native);
        MemoryBudget::Reservation reservation;  // held while the request is served
        std::string body;
        if (req.has_header("Content-Length") || req.has_header("Transfer-Encoding")) {
            // A large body is admitted against the memory budget before it is read (its length was
            // checked against the route's limit by the guard); a chunked one as it grows.
            const size_t announced = std::min(
                static_cast<size_t>(std::strtoull(native.get_header_value("Content-Length").c_str(), nullptr, 10)), limit);
            auto refuse_for_memory = [&](size_t bytes) {
                spdlog::warn("request refused: memory_budget path={} body_bytes={} budget_mb={}", loggable(req.path()), bytes,
                             memory.budget_bytes() >> 20);
                res.set_header("Retry-After", "2");
                send_error(res, 503, "server_memory_budget", memory.refusal(bytes), "server_error");
            };
            auto admitted = memory.admit(announced);
            if (!admitted) return refuse_for_memory(announced);
            reservation = std::move(*admitted);
            body.reserve(announced);  // read once into its final place, not doubled as it grows
            bool over = false, over_budget = false;
            bool read = reader([&](const char* data, size_t n) {
                if (body.size() + n > limit) {
                    over = true;
                    return false;
                }
                if (body.size() + n > announced && (body.size() + n) / (1 << 20) != body.size() / (1 << 20) &&
                    !memory.grow(reservation, body.size() + n)) {
                    over_budget = true;
                    return false;
                }
                body.append(data, n);
                return true;
            });
            if (over_budget) return refuse_for_memory(body.size());
            if (over) {
                spdlog::warn("request refused: body_too_large path={} limit={}", loggable(req.path()), limit);
                res.set_header("x-should-retry", "false");
                return send_error(
                    res, 413, "body_too_large",
                    "the request body is larger than " + std::to_string(limit) + " bytes ([server] max_body_bytes)");
            }
            if (!read && served_too_slowly()) {
                res.set_header("x-should-retry", "false");
                return send_error(res, 408, "request_timeout",
                                  "the request's body came too slowly (past its first " + std::to_string(kReadGrace.count()) +
                                      " seconds it must come at " + std::to_string(kMinReadRate >> 10) +
                                      " KiB a second on average); send it faster");
            }
            if (!read)
                return send_error(
                    res, 400, "body_unreadable",
                    "the request body could not be read (a broken chunked encoding, or the client stopped sending)");
        }
        handler(req, body, res);
    };
    if (method == "PATCH")
        impl_->http.Patch(pattern, std::move(read_then_handle));
    else
        impl_->http.Post(pattern, std::move(read_then_handle));
}

namespace {

// A secret derived from the token: HMAC-SHA256 keyed with it, as hex. The panel's session secrets
// are these, never the token (which they do not reveal): the same after a restart, so a person
// stays logged in, and new when the token changes, so a rotated token logs every browser out.
std::string derived_secret(const std::string& token, std::string_view purpose) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (!HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()), reinterpret_cast<const unsigned char*>(purpose.data()),
              purpose.size(), digest, &length))
        return random_hex(32);  // no HMAC here: a secret of this process, as before
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    for (unsigned int i = 0; i < length; ++i) {
        hex += kHex[digest[i] >> 4];
        hex += kHex[digest[i] & 0xf];
    }
    return hex;
}

}  // namespace

void HttplibCore::set_token(const std::string& token, int port) {
    impl_->server_token = token;
    impl_->cookie_value = token.empty() ? "" : derived_secret(token, "agenthost panel cookie");
    impl_->session_value = token.empty() ? "" : derived_secret(token, "agenthost panel session header");
    impl_->cookie_name = "agenthost-" + std::to_string(port);
}

bool HttplibCore::bind(const std::string& host, int port) {
    if (!impl_->http.bind_to_port(host, port)) return false;
    if (impl_->listen_socket != INVALID_SOCKET) ::listen(impl_->listen_socket, SOMAXCONN);
    impl_->bound_host = host;
    impl_->bound_port = port;
    return true;
}

Status HttplibCore::listen_after_bind() {
    // The library's accept loop ends, as though stopped, on any accept() error but EINTR, EAGAIN
    // and EMFILE: a network error the kernel passes on, a socket shut down under the server. A
    // service that then exits 0 is not restarted, so serving goes on from a new socket instead.
    constexpr int kTries = 10;
    Status ended = Ok{};
    for (;;) {
        {
            std::lock_guard lock(impl_->listening);  // a stop() before this point ends serving here
            if (impl_->stopping) break;
        }
        impl_->http.listen_after_bind();
        const int error = errno;
        if (impl_->stopping) break;
        spdlog::error("listening socket failed ({}); listening again on {}:{}", std::strerror(error), impl_->bound_host,
                      impl_->bound_port);
        bool bound = false;
        for (int attempt = 0; attempt < kTries && !bound && !impl_->stopping; ++attempt) {
            if (attempt > 0) std::this_thread::sleep_for(std::chrono::seconds(1));
            std::lock_guard lock(impl_->listening);  // a stop() now finds the new socket, or none
            if (!impl_->stopping) bound = bind(impl_->bound_host, impl_->bound_port);
        }
        if (bound) continue;
        if (!impl_->stopping)
            ended =
                Error{"listen_lost", "the listening socket on " + impl_->bound_host + ":" + std::to_string(impl_->bound_port) +
                                         " failed (" + std::strerror(error) + ") and could not be opened again in " +
                                         std::to_string(kTries) + " tries; runs in flight resume at the next start"};
        break;
    }
    impl_->http.close_gate();  // the connections handed over finish, as the library's own pool would
    return ended;
}

void HttplibCore::stop() {
    std::lock_guard lock(impl_->listening);
    impl_->stopping = true;
    // The library's stop() does nothing until its accept loop runs: a stop during start-up (a
    // signal while plugins load) would be lost and the server would serve on. Then the bound
    // socket is shut down here, so an accept loop about to start ends at once.
    const bool running = impl_->http.is_running();
    impl_->http.stop();
    if (!running && impl_->listen_socket != INVALID_SOCKET) ::shutdown(impl_->listen_socket, SHUT_RDWR);
}

std::unique_ptr<ServerCore> make_httplib_core(const config::Config& config) { return std::make_unique<HttplibCore>(config); }

const HttpServerModule kModule{{AGENTHOST_VERSION, sizeof(HttpServerModule)}, make_httplib_core};

}  // namespace
}  // namespace agenthost::server

AGENTHOST_MODULE_ENTRY(agenthost_module_http_server, agenthost::server::kModule)
