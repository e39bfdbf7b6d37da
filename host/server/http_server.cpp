#include "server/http_server.hpp"

#include "app/reports.hpp"
#include "common/bounded_json.hpp"
#include "common/ids.hpp"
#include "mcp/mcp_server.hpp"
#include "server/elastic_pool.hpp"
#include "server/error_table.hpp"
#include "server/idempotency.hpp"
#include "server/run_hub.hpp"

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <regex>
#include <sstream>

namespace agenthost::server {
namespace {

using nlohmann::json;
using Request = httplib::Request;
using Response = httplib::Response;
using Handled = httplib::Server::HandlerResponse;

constexpr auto kStreamWait = std::chrono::seconds(15);  // a keep-alive comment at least this often
constexpr int kMaxJsonDepth = 64;                       // nesting of any JSON body; deeper is refused unparsed
constexpr const char* kApiCsp = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
constexpr const char* kPanelCsp =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "connect-src 'self'; font-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

using json_io::dump;

void send_json(Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(dump(body), "application/json");
}

// Every error, on every route, in the OpenAI error shape.
void send_error(Response& res, int status, const std::string& code, const std::string& message,
                const std::string& type = "invalid_request_error") {
    send_json(res, status, {{"error", {{"message", message}, {"type", type}, {"code", code}, {"param", nullptr}}}});
}

// An error from the one table (error_table.hpp), with its Retry-After and x-should-retry.
void send_http_error(Response& res, const HttpError& e, const std::string& message, const json& agenthost = nullptr) {
    if (e.retry_after_s > 0) res.set_header("Retry-After", std::to_string(e.retry_after_s));
    if (!e.should_retry) res.set_header("x-should-retry", "false");
    json body{{"error", {{"message", message}, {"type", e.type}, {"code", e.code}, {"param", nullptr}}}};
    if (!agenthost.is_null()) body["agenthost"] = agenthost;
    send_json(res, e.status, body);
}

// Compares without an early exit, so the time taken does not tell how much of a guess was right.
bool constant_time_equal(std::string_view given, std::string_view secret) {
    if (secret.empty()) return false;
    size_t n = std::max(given.size(), secret.size());
    unsigned char diff = given.size() == secret.size() ? 0 : 1;
    for (size_t i = 0; i < n; ++i)
        diff |= static_cast<unsigned char>((i < given.size() ? given[i] : 0) ^ (i < secret.size() ? secret[i] : 0));
    return diff == 0;
}

std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string trim(const std::string& s) {
    size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
    return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

bool loopback(const std::string& host) {
    return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

bool ip_literal(const std::string& name) {
    unsigned char buf[16];
    if (name.size() > 2 && name.front() == '[' && name.back() == ']')
        return inet_pton(AF_INET6, name.substr(1, name.size() - 2).c_str(), buf) == 1;
    return inet_pton(AF_INET, name.c_str(), buf) == 1;
}

// "name:port" / "[v6]:port" / "name" → the lower-case name ("" when malformed).
std::string host_name(const std::string& header) {
    std::string host = lower(trim(header)), port;
    std::string name;
    if (!host.empty() && host[0] == '[') {
        size_t close = host.find(']');
        if (close == std::string::npos) return "";
        name = host.substr(0, close + 1);
        port = host.substr(close + 1);
        if (!port.empty() && port[0] != ':') return "";
    } else {
        size_t colon = host.find(':');
        name = host.substr(0, colon);
        if (colon != std::string::npos) port = host.substr(colon);
    }
    if (!port.empty() && (port.size() == 1 || port.find_first_not_of("0123456789", 1) != std::string::npos)) return "";
    return name;
}

bool is_json_type(const std::string& content_type) {
    return lower(trim(content_type.substr(0, content_type.find(';')))) == "application/json";
}


std::string hex_of(const std::string& text) {
    std::string out;
    for (unsigned char c : text) {
        out += "0123456789abcdef"[c >> 4];
        out += "0123456789abcdef"[c & 15];
    }
    return out;
}

// OpenAI message content: a string, or an array of parts whose text parts are joined.
std::optional<std::string> text_of(const json& content) {
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) return std::nullopt;
    std::string text;
    for (const auto& part : content)
        if (json_io::get_string(part, "type") == "text" && part.contains("text") && part["text"].is_string())
            text += (text.empty() ? "" : "\n") + part["text"].get<std::string>();
    return text;
}

std::string sse_event(const HubEvent& e) {
    return "id: " + std::to_string(e.seq) + "\nevent: " + e.name + "\ndata: " + e.data + "\n\n";
}

// Typed reads of a request body's members: the first wrong-typed one is remembered and answered
// with a 400 naming it.
struct Fields {
    explicit Fields(const json& b) : body(b) {}
    const json& body;
    std::string wrong;

    std::string str(const char* key, std::string fallback = {}) {
        bool bad = false;
        auto v = json_io::get_string(body, key, std::move(fallback), &bad);
        if (bad && wrong.empty()) wrong = std::string("\"") + key + "\" must be a string";
        return v;
    }
    bool boolean(const char* key, bool fallback) {
        bool bad = false;
        auto v = json_io::get_bool(body, key, fallback, &bad);
        if (bad && wrong.empty()) wrong = std::string("\"") + key + "\" must be true or false";
        return v;
    }
    // An optional object member (nullptr when absent).
    const json* object(const char* key) {
        auto it = body.find(key);
        if (it == body.end() || it->is_null()) return nullptr;
        if (!it->is_object()) {
            if (wrong.empty()) wrong = std::string("\"") + key + "\" must be a JSON object";
            return nullptr;
        }
        return &*it;
    }
    bool ok(Response& res) const {
        if (wrong.empty()) return true;
        send_error(res, 400, "invalid_field", wrong + "; fix the request body");
        return false;
    }
};

}  // namespace

struct HttpServer::Impl {
    app::HostApp& app;
    const config::ServerSettings& settings;
    RunHub hub;
    mcp::McpServer mcp_server;
    IdempotencyKeys idempotency;
    std::mutex mcp_mutex;
    std::map<std::string, std::shared_ptr<mcp::McpSession>> mcp_sessions;
    std::atomic<int> listening_streams{0};
    int listening_limit = 4;
    int tools_listener = 0;
    httplib::Server http;
    socket_t listen_socket = INVALID_SOCKET;
    // Set by serve() before the first request.
    std::string token;         // empty with auth = "none"
    std::string cookie_name;   // per port: two servers on one host keep their own
    std::string cookie_value;  // the token, hex-encoded (cookie-safe)
    std::string listen_host;
    std::vector<std::regex> body_routes;  // POST routes: the only requests whose bodies are read

    ~Impl() {
        app.registry().remove_tools_listener(tools_listener);
        close_mcp_sessions();
    }

    explicit Impl(app::HostApp& a) : app(a), settings(a.config().server), hub(a, a.config().server), mcp_server(a) {
        // One thread per connection being served, started on demand: slow sockets, waiting runs and
        // open streams never keep /health from being answered (below max_connections).
        size_t max_threads = static_cast<size_t>(settings.max_connections);
        http.new_task_queue = [max_threads] { return new ElasticPool(8, max_threads); };
        listening_limit = std::max(4, settings.max_connections / 8);
        tools_listener = app.registry().add_tools_listener([this] { announce_tools_changed(); });
        http.set_payload_max_length(std::max(static_cast<size_t>(settings.max_body_bytes), mcp::kMaxMessageBytes));
        // One request per connection: a refused request's unread body can never be read as a second
        // request (smuggling), and no idle keep-alive connection holds a thread.
        http.set_keep_alive_max_count(1);
        http.set_read_timeout(5, 0);   // a client silent this long between bytes is dropped
        http.set_write_timeout(10, 0);  // a client that stops reading its stream is dropped
        http.set_default_headers({{"X-Content-Type-Options", "nosniff"},
                                  {"Referrer-Policy", "no-referrer"},
                                  {"X-Frame-Options", "DENY"},
                                  {"Cross-Origin-Resource-Policy", "same-origin"},
                                  {"Content-Security-Policy", kApiCsp}});
        // The library listens with a backlog of 5, which drops connections when many clients
        // arrive at once; the socket is kept so serve() can widen it.
        // Only SO_REUSEADDR (a restart may bind while old connections linger): the library's
        // default also sets SO_REUSEPORT, which lets a second server bind the same port and take
        // half the connections — a second serve, with other auth, must fail "address in use".
        http.set_socket_options([this](socket_t sock) {
            int yes = 1;
            ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
            listen_socket = sock;
        });
        http.set_pre_routing_handler([this](const Request& req, Response& res) { return guard(req, res); });
        http.set_error_handler([](const Request&, Response& res) {
            if (!res.body.empty()) return;
            const char* code = res.status == 404 ? "not_found" : res.status == 413 ? "body_too_large" : "http_error";
            send_error(res, res.status, code, "HTTP " + std::to_string(res.status) + (res.status == 413 ? ": the request body is larger than [server] max_body_bytes" : ""));
        });
        http.set_exception_handler([](const Request&, Response& res, std::exception_ptr ep) {
            std::string what = "unknown error";
            try {
                std::rethrow_exception(ep);
            } catch (const std::exception& e) {
                what = e.what();
            } catch (...) {
            }
            spdlog::error("request failed: {}", what);
            send_error(res, 500, "internal_error", "the server failed on this request: " + what, "server_error");
        });
        routes();
    }

    // ---- what every request passes before its route (nothing of the body is read yet) ----

    Handled refuse(Response& res, int status, const std::string& code, const std::string& message,
                   const std::string& type = "invalid_request_error") {
        send_error(res, status, code, message, type);
        res.set_header("x-should-retry", "false");
        return Handled::Handled;
    }

    bool host_allowed(const Request& req) {
        if (!req.has_header("Host")) return true;  // HTTP/1.0 tools; browsers always send one
        std::string name = host_name(req.get_header_value("Host"));
        if (name.empty()) return false;
        // A rebinding attack needs a DNS name: IP literals and loopback names are safe.
        if (name == "localhost" || ip_literal(name) || name == lower(listen_host)) return true;
        std::string full = lower(trim(req.get_header_value("Host")));
        for (const auto& allowed : settings.allowed_hosts)
            if (allowed == "*" || lower(allowed) == name || lower(allowed) == full) return true;
        return false;
    }

    // The request comes from a page of this server (or from no page at all).
    bool same_origin(const Request& req) {
        if (!req.has_header("Origin")) return true;
        std::string origin = lower(req.get_header_value("Origin")), host = lower(trim(req.get_header_value("Host")));
        return !host.empty() && (origin == "http://" + host || origin == "https://" + host);
    }

    bool origin_allowed(const Request& req, bool mcp) {
        if (!req.has_header("Origin")) {
            // Browsers send Origin on these requests; a cross-site one without it is refused too.
            return lower(req.get_header_value("Sec-Fetch-Site")) != "cross-site";
        }
        if (same_origin(req)) return true;
        std::string origin = req.get_header_value("Origin");
        for (const auto& allowed : settings.allowed_origins)
            if (origin == allowed) return true;
        if (mcp) {  // MCP clients in a local browser (inspectors) as before, and [mcp] allowed_origins
            for (const char* local : {"http://localhost", "http://127.0.0.1", "https://localhost", "https://127.0.0.1", "http://[::1]"})
                if (origin == local || origin.rfind(std::string(local) + ":", 0) == 0) return true;
            for (const auto& allowed : app.config().mcp.allowed_origins)
                if (origin == allowed) return true;
        }
        return false;
    }

    bool authenticated(const Request& req) {
        if (token.empty()) return true;  // auth = "none"
        std::string header = req.get_header_value("Authorization");
        if (lower(header.substr(0, 7)) == "bearer ") return constant_time_equal(trim(header.substr(7)), token);
        // The panel's cookie counts only on requests from the server's own pages (or none).
        if (!same_origin(req)) return false;
        std::string cookies = req.get_header_value("Cookie");
        for (size_t at = 0; at < cookies.size();) {
            size_t end = cookies.find(';', at);
            std::string pair = trim(cookies.substr(at, end == std::string::npos ? std::string::npos : end - at));
            size_t eq = pair.find('=');
            if (eq != std::string::npos && pair.substr(0, eq) == cookie_name && constant_time_equal(pair.substr(eq + 1), cookie_value))
                return true;
            if (end == std::string::npos) break;
            at = end + 1;
        }
        return false;
    }

    bool body_route(const std::string& path) {
        for (const auto& r : body_routes)
            if (std::regex_match(path, r)) return true;
        return false;
    }

    Handled guard(const Request& req, Response& res) {
        const std::string& method = req.method;
        // Framing first: ambiguous or unsupported bodies are refused before anything is read.
        size_t lengths = req.get_header_value_count("Content-Length"), encodings = req.get_header_value_count("Transfer-Encoding");
        if (lengths && encodings)
            return refuse(res, 400, "ambiguous_length", "the request has both Content-Length and Transfer-Encoding (a request smuggling "
                                                        "pattern); send exactly one of them");
        if (lengths > 1 || encodings > 1)
            return refuse(res, 400, "ambiguous_length", "the request repeats Content-Length or Transfer-Encoding; send it once");
        if (encodings && lower(trim(req.get_header_value("Transfer-Encoding"))) != "chunked")
            return refuse(res, 501, "unsupported_transfer_encoding", "only Transfer-Encoding: chunked is supported");
        uint64_t length = 0;
        if (lengths) {
            std::string text = trim(req.get_header_value("Content-Length"));
            if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
                return refuse(res, 400, "invalid_content_length", "Content-Length must be a whole number of bytes");
            length = std::stoull(text);
        }
        bool has_body = encodings || length > 0;
        bool post = method == "POST";
        if (method == "PUT" || method == "PATCH") return refuse(res, 405, "method_not_allowed", method + " is not used by this server");
        if (encodings && !post) return refuse(res, 400, "unexpected_body", "a chunked body is accepted on POST requests only");
        if (post && !body_route(req.path)) return refuse(res, 404, "not_found", "no POST route " + req.path);
        if (length > limit_for(req.path))
            return refuse(res, 413, "body_too_large", "the request body (" + std::to_string(length) + " bytes) is larger than " +
                                                          std::to_string(limit_for(req.path)) + " bytes ([server] max_body_bytes)");
        // One Host, and HTTP/1.1 must send it (RFC 9112 §3.2): which name was meant is never guessed.
        if (size_t hosts = req.get_header_value_count("Host"); hosts > 1 || (hosts == 0 && req.version == "HTTP/1.1"))
            return refuse(res, 400, "invalid_host", hosts > 1 ? "the request repeats the Host header; send it once"
                                                              : "an HTTP/1.1 request must name its Host");
        // DNS rebinding: a page of another name resolved to this address.
        if (!host_allowed(req)) {
            spdlog::warn("request refused: host_not_allowed host={} path={}", req.get_header_value("Host"), req.path);
            return refuse(res, 421, "host_not_allowed", "this server does not answer to the Host '" + req.get_header_value("Host") +
                                                            "' (DNS rebinding defence); add the name to [server] allowed_hosts");
        }
        bool state_changing = post || method == "DELETE";
        bool stream = method == "GET" && (req.path == "/api/chat" || req.path == "/mcp" ||
                                          req.get_header_value("Accept").find("text/event-stream") != std::string::npos);
        if ((state_changing || stream) && !origin_allowed(req, req.path == "/mcp")) {
            spdlog::warn("request refused: origin_not_allowed origin={} path={}", req.get_header_value("Origin"), req.path);
            return refuse(res, 403, "origin_not_allowed", "requests from the Origin '" + req.get_header_value("Origin") +
                                                              "' may not change or stream anything here; add it to [server] allowed_origins");
        }
        // A cross-site form or text/plain "simple request" cannot send application/json.
        if (post && (has_body || req.has_header("Content-Type")) && !is_json_type(req.get_header_value("Content-Type")))
            return refuse(res, 415, "unsupported_media_type", "POST bodies must be sent with Content-Type: application/json");
        bool open = req.path == "/health" || req.path == "/readyz" || req.path == "/login" || req.path == "/" ||
                    req.path.rfind("/panel/", 0) == 0;
        if (!open && !authenticated(req)) {
            res.set_header("WWW-Authenticate", "Bearer realm=\"agenthost\"");
            return refuse(res, 401, "invalid_api_key",
                          "missing or wrong token: send Authorization: Bearer <token> (the [server] token_env variable, or the "
                          "generated data_dir/server-token), or open the login URL agenthost serve printed",
                          "authentication_error");
        }
        return Handled::Unhandled;
    }

    size_t limit_for(const std::string& path) const {
        return path == "/mcp" ? mcp::kMaxMessageBytes : static_cast<size_t>(settings.max_body_bytes);
    }

    // A POST route whose body is read here, bounded: Content-Length bodies were checked by guard(),
    // chunked ones stop being read at the limit (413) so they never cost more than it.
    void post(const std::string& pattern, std::function<void(const Request&, const std::string&, Response&)> handler) {
        body_routes.emplace_back(pattern);
        http.Post(pattern, [this, handler = std::move(handler)](const Request& req, Response& res, const httplib::ContentReader& reader) {
            std::string body;
            const size_t limit = limit_for(req.path);
            if (req.has_header("Content-Length") || req.has_header("Transfer-Encoding")) {
                bool over = false;
                bool read = reader([&](const char* data, size_t n) {
                    if (body.size() + n > limit) {
                        over = true;
                        return false;
                    }
                    body.append(data, n);
                    return true;
                });
                if (over) {
                    spdlog::warn("request refused: body_too_large path={} limit={}", req.path, limit);
                    res.set_header("x-should-retry", "false");
                    return send_error(res, 413, "body_too_large", "the request body is larger than " + std::to_string(limit) +
                                                                      " bytes ([server] max_body_bytes)");
                }
                if (!read) return send_error(res, 400, "body_unreadable", "the request body could not be read (a broken chunked encoding, or the client stopped sending)");
            }
            handler(req, body, res);
        });
    }

    // The body as a JSON object, within the size and depth limits; a 400 naming the problem otherwise.
    std::optional<json> body_object(const std::string& body, Response& res, bool empty_ok = false) {
        if (body.empty() && empty_ok) return json::object();
        auto parsed = json_io::parse(body, {limit_for(""), kMaxJsonDepth}, json_io::Utf8::refuse);
        if (!parsed) {
            send_error(res, 400, parsed.error().code == "json_too_deep" ? "json_too_deep" : "invalid_json",
                       "the request body is not acceptable JSON: " + parsed.error().message);
            return std::nullopt;
        }
        if (!parsed->is_object()) {
            send_error(res, 400, "invalid_json", "the request body must be a JSON object");
            return std::nullopt;
        }
        return std::move(*parsed);
    }

    // The provider and model a /v1 model id names: "agenthost", "agenthost/<provider>" or "<provider>/<model>".
    std::optional<std::pair<std::string, std::string>> resolve_model(const std::string& id) {
        const auto& cfg = app.config();
        if (id.empty() || id == "agenthost") return std::make_pair(std::string(), std::string());
        size_t slash = id.find('/');
        if (slash == std::string::npos) return std::nullopt;
        std::string head = id.substr(0, slash), tail = id.substr(slash + 1);
        if (head == "agenthost" && cfg.provider_named(tail)) return std::make_pair(tail, std::string());
        if (cfg.provider_named(head)) return std::make_pair(head, tail);
        return std::nullopt;
    }

    void routes() {
        http.Get("/health", [](const Request&, Response& res) { send_json(res, 200, {{"status", "ok"}}); });
        http.Get("/readyz", [this](const Request&, Response& res) { readyz(res); });
        http.Get("/login", [this](const Request& req, Response& res) { login(req, res); });
        http.Get("/v1/models", [this](const Request&, Response& res) { models(res); });
        post("/v1/chat/completions", [this](const Request& req, const std::string& body, Response& res) { completions(req, body, res); });
        post("/api/chat", [this](const Request& req, const std::string& body, Response& res) { start_chat(req, body, res); });
        http.Get("/api/chat", [this](const Request& req, Response& res) { stream_chat(req, res); });
        http.Get("/api/conversations", [this](const Request&, Response& res) { list_conversations(res); });
        http.Get(R"(/api/conversations/([^/]+))", [this](const Request& req, Response& res) { conversation(req, res); });
        http.Delete(R"(/api/conversations/([^/]+))", [this](const Request& req, Response& res) { delete_conversation(req, res); });
        http.Get(R"(/api/runs/(\d+))", [this](const Request& req, Response& res) { run(req, res); });
        post(R"(/api/runs/(\d+)/(approve|reject|cancel|resume))", [this](const Request& req, const std::string& body, Response& res) { act(req, body, res); });
        http.Get("/memory/state", [this](const Request& req, Response& res) { memory_state(req, res); });
        post("/memory/clear-session", [this](const Request&, const std::string& body, Response& res) { clear_session(body, res); });
        http.Get("/api/plugins", [this](const Request&, Response& res) {
            res.set_content(app::plugins_report(app), "application/json");
        });
        http.Get("/metrics", [this](const Request&, Response& res) { metrics(res); });
        http.Get("/api/resources", [this](const Request&, Response& res) { send_json(res, 200, {{"resources", mcp::resource_list(app)}}); });
        http.Get("/api/resources/read", [this](const Request& req, Response& res) {
            std::string uri = req.get_param_value("uri");
            auto contents = mcp::resource_read(app, uri);
            if (!contents) return send_error(res, 404, "resource_not_found", "no plugin serves the resource '" + uri + "'");
            send_json(res, 200, *contents);
        });
        http.Get("/", [this](const Request&, Response& res) { panel_file("index.html", res); });
        http.Get(R"(/panel/([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)?))", [this](const Request& req, Response& res) { panel_file(req.matches[1], res); });
        post("/mcp", [this](const Request& req, const std::string& body, Response& res) { mcp_post(req, body, res); });
        http.Delete("/mcp", [this](const Request& req, Response& res) { mcp_delete(req, res); });
        http.Get("/mcp", [this](const Request& req, Response& res) { mcp_listen(req, res); });
    }

    // ---- the panel's login (the Jupyter pattern): the URL serve printed sets an HttpOnly cookie ----

    void login(const Request& req, Response& res) {
        if (token.empty()) return res.set_redirect("/", 303);
        if (!constant_time_equal(req.get_param_value("token"), token)) {
            spdlog::warn("login refused: wrong token from {}", req.remote_addr);
            return send_error(res, 401, "invalid_token",
                              "the token in this login URL is wrong: open the URL agenthost serve printed (or use the token in "
                              "data_dir/server-token, or the [server] token_env variable)",
                              "authentication_error");
        }
        res.set_header("Set-Cookie", cookie_name + "=" + cookie_value + "; HttpOnly; SameSite=Strict; Path=/; Max-Age=2592000");
        res.set_header("Cache-Control", "no-store");
        res.set_redirect("/", 303);
    }

    // ---- the web panel's static files ----

    void panel_file(const std::string& name, Response& res) {
        std::string path = name;
        if (path.find("..") != std::string::npos) return send_error(res, 404, "not_found", "no such file");
        const auto& dir = app.config().server.web_dir;
        std::error_code ec;
        bool file = std::filesystem::is_regular_file(dir / path, ec);  // a directory is never listed
        std::ifstream in(dir / path, std::ios::binary);
        if (!file || !in) {
            if (name == "index.html")
                return send_error(res, 404, "panel_missing",
                                  "the web panel's files are not in " + dir.string() + ": build the web_panel target, install agenthost, or set [server] web_dir");
            return send_error(res, 404, "not_found", "no file " + name + " in the web panel");
        }
        std::stringstream data;
        data << in.rdbuf();
        std::string ext = std::filesystem::path(path).extension().string();
        const char* type = ext == ".html" ? "text/html; charset=utf-8" : ext == ".js" ? "text/javascript; charset=utf-8"
                         : ext == ".css"  ? "text/css; charset=utf-8" : ext == ".svg" ? "image/svg+xml" : "text/plain; charset=utf-8";
        res.set_header("Cache-Control", "no-cache");
        res.headers.erase("Content-Security-Policy");
        res.set_header("Content-Security-Policy", kPanelCsp);
        res.set_content(data.str(), type);
    }

    // ---- health ----

    void readyz(Response& res) {
        json checks = json::object();
        int ok = app.database().read([](store::Database& d) {
            auto stmt = d.prepare("SELECT 1");
            return stmt && stmt->step() ? 1 : 0;
        });
        checks["database"] = ok ? "ok" : "unavailable";
        const std::string provider = app.config().provider.name;
        auto readiness = app.queue().check(provider);
        checks["provider"] = readiness.ready ? "ok" : readiness.code;
        json body{{"ready", ok && readiness.ready}, {"checks", checks}, {"provider", provider}, {"model", app.config().provider.model}};
        if (!ok) {
            body["error"] = {{"code", "DATABASE_UNAVAILABLE"}, {"message", "the database cannot be read"}};
        } else if (!readiness.ready) {
            body["error"] = {{"code", readiness.code}, {"message", readiness.message}, {"models", readiness.models}};
        }
        send_json(res, body["ready"].get<bool>() ? 200 : 503, body);
    }

    void models(Response& res) {
        json data = json::array({{{"id", "agenthost"}, {"object", "model"}, {"created", 0}, {"owned_by", "agenthost"}}});
        std::vector<std::string> providers{app.config().provider.name};
        for (const auto& [name, p] : app.config().providers) providers.push_back(name);
        for (const auto& provider : providers) {
            data.push_back({{"id", "agenthost/" + provider}, {"object", "model"}, {"created", 0}, {"owned_by", "agenthost"}});
            for (const auto& m : app.queue().check(provider).models)
                data.push_back({{"id", provider + "/" + m}, {"object", "model"}, {"created", 0}, {"owned_by", provider}});
        }
        send_json(res, 200, {{"object", "list"}, {"data", data}});
    }

    // ---- the OpenAI-compatible endpoint ----

    // A run's outcome, from its channel while this server keeps its events, else from the store.
    std::optional<agent::TurnOutcome> settled_outcome(int64_t run) {
        if (auto channel = hub.channel(run)) {
            if (channel->busy()) return std::nullopt;
            return channel->wait();
        }
        auto record = app.runs().run(run);
        if (!record || record->status == RunStatus::running) return std::nullopt;
        agent::TurnOutcome out;
        out.stop_reason = parse_stop_reason(record->stop_reason).value_or(StopReason::internal_error);
        // Runs stored before `timeout` was a stop reason of its own: a transient error that timed out.
        if (out.stop_reason == StopReason::transient) out.stop_reason = provider_stop_reason("transient", record->error);
        out.answer = record->answer;
        out.error = record->error;
        out.run = run;
        return out;
    }

    // The answer to a completion whose run has ended: the chat.completion, or the error its stop
    // reason maps to (error_table.hpp).
    void send_completion(Response& res, const agent::TurnOutcome& outcome, int64_t run, const std::string& conversation,
                         const std::string& model_name) {
        json details{{"run", run}, {"conversation", conversation}, {"stop_reason", outcome.stop_reason_name()},
                     {"error_code", outcome.error_code()}};
        if (!outcome.ok() && outcome.answer.empty()) {
            std::string message = outcome.error.empty() ? "the agent run ended with " + std::string(outcome.stop_reason_name()) : outcome.error;
            if (outcome.stop_reason == StopReason::approval_pending)
                message = "run " + std::to_string(run) + " waits for approval of a tool call: POST /api/runs/" + std::to_string(run) +
                          "/approve or /reject";
            return send_http_error(res, error_for_outcome(outcome), message, details);
        }
        send_json(res, 200,
                  {{"id", "chatcmpl-" + std::to_string(run)},
                   {"object", "chat.completion"},
                   {"created", std::time(nullptr)},
                   {"model", model_name},
                   {"choices", {{{"index", 0},
                                 {"message", {{"role", "assistant"}, {"content", outcome.answer}}},
                                 {"finish_reason", finish_reason(outcome)}}}},
                   {"usage", usage_of(app.runs().run(run))},
                   {"conversation", conversation},
                   {"agenthost", details}});
    }

    // The OpenAI finish_reason of a run that gave an answer (the stop-reason table's column).
    static const char* finish_reason(const agent::TurnOutcome& outcome) { return stop_info(outcome.stop_reason).finish_reason; }

    // The error event a stream ends with when its run gave no answer.
    json stream_error(const agent::TurnOutcome& outcome) {
        HttpError e = error_for_outcome(outcome);
        std::string message = outcome.error.empty() ? "the agent run ended with " + std::string(outcome.stop_reason_name()) : outcome.error;
        return {{"error", {{"message", message},
                           {"type", e.type}, {"code", e.code}, {"status", e.status}, {"param", nullptr}}}};
    }

    // Idempotency-Key: true when the request was answered from an earlier one (or refused).
    bool idempotent_replay(const Request& req, const std::string& route, const std::string& body, Response& res,
                           const std::function<void(int64_t run)>& replay) {
        std::string key = req.get_header_value("Idempotency-Key");
        if (key.empty()) return false;
        if (key.size() > IdempotencyKeys::kMaxKeyLength) {
            send_error(res, 400, "invalid_idempotency_key", "Idempotency-Key is longer than 255 characters");
            return true;
        }
        auto found = idempotency.begin(route, key, IdempotencyKeys::fingerprint(body));
        switch (found.found) {
        case IdempotencyKeys::Found::fresh: return false;
        case IdempotencyKeys::Found::mismatch:
            res.set_header("x-should-retry", "false");
            send_error(res, 422, "idempotency_key_reused", "this Idempotency-Key was used with a different request body; use a new key");
            return true;
        case IdempotencyKeys::Found::in_progress:
            break;
        case IdempotencyKeys::Found::run:
            if (settled_outcome(found.run) || route == "chat") {
                res.set_header("Idempotent-Replayed", "true");
                replay(found.run);
                return true;
            }
            break;
        }
        // Retrying later is safe: the key keeps it from starting a second run.
        res.set_header("Retry-After", "1");
        send_error(res, 409, "idempotency_key_in_progress", "the first request with this Idempotency-Key is still being answered; retry later");
        return true;
    }

    // A new conversation's id is bounded and plain (store::conversation_id_problem); one the store
    // already has is accepted as it is, so conversations made before the rule can go on.
    bool conversation_allowed(const std::string& id, Response& res) {
        if (id.empty()) return true;
        auto problem = store::conversation_id_problem(id);
        if (!problem || (id.size() <= 4096 && !app.runs().runs(id, 1).empty())) return true;
        send_error(res, 400, "invalid_field", "\"conversation\": " + *problem + "; fix the request body");
        return false;
    }

    void completions(const Request& req, const std::string& text, Response& res) {
        auto body = body_object(text, res);
        if (!body) return;
        Fields f{*body};
        std::string model_id = f.str("model");
        bool stream = f.boolean("stream", false);
        std::string conversation = f.str("conversation");
        std::string mode_name = f.str("mode");
        bool include_usage = false;
        if (const json* options = f.object("stream_options")) {
            Fields o{*options};
            include_usage = o.boolean("include_usage", false);
            if (!o.wrong.empty()) f.wrong = "stream_options: " + o.wrong;
        }
        const json* context = f.object("agenthost");
        if (!f.ok(res) || !conversation_allowed(conversation, res)) return;
        auto model = resolve_model(model_id);
        if (!model)
            return send_error(res, 404, "model_not_found",
                              "The model `" + model_id + "` does not exist; GET /v1/models lists the ones that do");
        auto messages = body->find("messages");
        if (messages == body->end() || !messages->is_array() || messages->empty())
            return send_error(res, 400, "invalid_messages", "\"messages\" must be a non-empty array");
        if (messages->size() > static_cast<size_t>(settings.max_messages))
            return send_error(res, 400, "too_many_messages",
                              "at most " + std::to_string(settings.max_messages) + " messages per request ([server] max_messages)");
        json history = json::array();
        std::optional<std::string> prompt;
        for (size_t i = 0; i < messages->size(); ++i) {
            const json& m = (*messages)[i];
            if (!m.is_object()) return send_error(res, 400, "invalid_messages", "messages[" + std::to_string(i) + "] must be an object");
            bool bad = false;
            std::string role = json_io::get_string(m, "role", "", &bad);
            if (bad) return send_error(res, 400, "invalid_messages", "messages[" + std::to_string(i) + "]: \"role\" must be a string");
            auto content = text_of(m.contains("content") ? m["content"] : json());
            if (i + 1 == messages->size()) {
                if (role == "user") prompt = content;
            } else if (content && (role == "system" || role == "user" || role == "assistant")) {
                history.push_back({{"role", role}, {"content", *content}});
            }
        }
        if (!prompt) return send_error(res, 400, "invalid_messages", "the last message must be the user's, with text content");

        agent::TurnRequest request;
        request.prompt = *prompt;
        request.conversation_id = conversation.empty() ? new_conversation_id() : conversation;
        request.history_json = dump(history);
        request.provider = model->first;
        request.model = model->second;
        if (!mode_name.empty()) {
            auto mode = agent::parse_mode(mode_name);
            if (!mode) return send_error(res, 400, "invalid_mode", "\"mode\" must be explore, plan or execute");
            request.mode = *mode;
        } else {
            request.mode = agent::parse_mode(app.config().agent.default_mode).value_or(agent::Mode::execute);
        }
        if (context) request.request_context_json = dump(*context);
        std::string model_name = model_id.empty() ? "agenthost" : model_id;

        if (idempotent_replay(req, "completions", text, res, [&](int64_t run) {
                auto outcome = settled_outcome(run);
                auto record = app.runs().run(run);
                std::string conv = record ? record->conversation : "";
                if (!stream) return send_completion(res, *outcome, run, conv, model_name);
                replay_stream(res, *outcome, run, model_name, conv, include_usage);
            }))
            return;
        std::string key = req.get_header_value("Idempotency-Key");
        auto run = hub.start(request);
        if (!run) {
            if (!key.empty()) idempotency.forget("completions", key);
            spdlog::info("completion not started: code={} conversation={}", run.error().code, request.conversation_id);
            return send_http_error(res, error_for_start(run.error()), run.error().message);
        }
        if (!key.empty()) idempotency.started("completions", key, *run);
        auto channel = hub.channel(*run);
        std::string id = "chatcmpl-" + std::to_string(*run);
        if (!stream) {
            agent::TurnOutcome outcome = channel->wait();
            return send_completion(res, outcome, *run, request.conversation_id, model_name);
        }
        stream_completion(res, channel, *run, id, model_name, request.conversation_id, include_usage);
    }

    // A repeated stream request whose run has ended: its answer as one delta, or its error.
    void replay_stream(Response& res, const agent::TurnOutcome& outcome, int64_t run, const std::string& model,
                       const std::string& conversation, bool include_usage) {
        std::string id = "chatcmpl-" + std::to_string(run);
        auto chunk = [&](const json& delta, const json& finish) {
            json c{{"id", id}, {"object", "chat.completion.chunk"}, {"created", std::time(nullptr)}, {"model", model},
                   {"conversation", conversation}, {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
            return "data: " + dump(c) + "\n\n";
        };
        std::string out;
        if (!outcome.ok() && outcome.answer.empty()) {
            out += "data: " + dump(stream_error(outcome)) + "\n\n";
        } else {
            out += chunk({{"role", "assistant"}, {"content", outcome.answer}}, nullptr);
            out += chunk(json::object(), finish_reason(outcome));
        }
        if (include_usage)
            out += "data: " + dump({{"id", id}, {"object", "chat.completion.chunk"}, {"created", std::time(nullptr)}, {"model", model},
                                    {"choices", json::array()}, {"usage", usage_of(app.runs().run(run))}}) + "\n\n";
        out += "data: [DONE]\n\n";
        res.set_content(out, "text/event-stream");
    }

    json usage_of(const std::optional<store::RunRecord>& record) {
        int64_t in = record ? record->counters.input_tokens : 0, out = record ? record->counters.output_tokens : 0;
        return {{"prompt_tokens", in}, {"completion_tokens", out}, {"total_tokens", in + out}};
    }

    void stream_completion(Response& res, std::shared_ptr<RunChannel> channel, int64_t run, const std::string& id,
                           const std::string& model, const std::string& conversation, bool include_usage) {
        struct State {
            uint64_t seq = 0;
            bool started = false;
        };
        auto state = std::make_shared<State>();
        auto chunk = [id, model, conversation](const json& delta, const json& finish) {
            json c{{"id", id}, {"object", "chat.completion.chunk"}, {"created", std::time(nullptr)}, {"model", model},
                   {"conversation", conversation},
                   {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
            return "data: " + dump(c) + "\n\n";
        };
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider(
            "text/event-stream", [this, channel, run, state, chunk, id, model, include_usage](size_t, httplib::DataSink& sink) {
                auto write = [&](const std::string& text) { return sink.write(text.data(), text.size()); };
                if (!state->started) {
                    state->started = true;
                    if (!write(chunk({{"role", "assistant"}, {"content", ""}}, nullptr))) return false;
                }
                bool done = false;
                auto events = channel->after(state->seq, kStreamWait, done);
                for (const auto& e : events) {
                    state->seq = e.seq;
                    // A client that went away stops only its stream; the run goes on (it can be read later).
                    if (e.name == "token" && !write(chunk({{"content", json::parse(e.data)["text"]}}, nullptr))) return false;
                }
                if (!done) return events.empty() ? write(": keep-alive\n\n") : true;
                agent::TurnOutcome outcome = channel->wait();
                if (!outcome.ok() && outcome.answer.empty()) {
                    write("data: " + dump(stream_error(outcome)) + "\n\n");
                } else {
                    write(chunk(json::object(), finish_reason(outcome)));
                }
                if (include_usage) {
                    json usage{{"id", id}, {"object", "chat.completion.chunk"}, {"created", std::time(nullptr)}, {"model", model},
                               {"choices", json::array()}, {"usage", usage_of(app.runs().run(run))}};
                    write("data: " + dump(usage) + "\n\n");
                }
                write("data: [DONE]\n\n");
                sink.done();
                return true;
            });
    }

    // ---- the SSE chat API ----

    void start_chat(const Request& req, const std::string& text, Response& res) {
        auto body = body_object(text, res);
        if (!body) return;
        Fields f{*body};
        std::string message = f.str("message");
        std::string conversation = f.str("conversation");
        std::string mode_name = f.str("mode", app.config().agent.default_mode);
        const json* context = f.object("context");
        agent::TurnRequest request;
        request.provider = f.str("provider");
        request.model = f.str("model");
        if (!f.ok(res) || !conversation_allowed(conversation, res)) return;
        if (message.empty()) return send_error(res, 400, "invalid_message", "\"message\" must be a non-empty string");
        request.prompt = message;
        request.conversation_id = conversation.empty() ? new_conversation_id() : conversation;
        auto mode = agent::parse_mode(mode_name);
        if (!mode) return send_error(res, 400, "invalid_mode", "\"mode\" must be explore, plan or execute");
        request.mode = *mode;
        if (context) request.request_context_json = dump(*context);
        if (!request.provider.empty() && !app.config().provider_named(request.provider))
            return send_error(res, 400, "unknown_provider", "provider '" + request.provider + "' is not configured");
        if (idempotent_replay(req, "chat", text, res, [&](int64_t run) {
                auto record = app.runs().run(run);
                send_json(res, 200, {{"conversation", record ? record->conversation : request.conversation_id}, {"run", run}});
            }))
            return;
        std::string key = req.get_header_value("Idempotency-Key");
        auto run = hub.start(request);
        if (!run) {
            if (!key.empty()) idempotency.forget("chat", key);
            spdlog::info("chat not started: code={} conversation={}", run.error().code, request.conversation_id);
            return send_http_error(res, error_for_start(run.error()), run.error().message);
        }
        if (!key.empty()) idempotency.started("chat", key, *run);
        send_json(res, 200, {{"conversation", request.conversation_id}, {"run", *run}});
    }

    void stream_chat(const Request& req, Response& res) {
        int64_t run = req.has_param("run") ? std::atoll(req.get_param_value("run").c_str()) : 0;
        std::string conversation = req.get_param_value("conversation");
        if (run == 0 && !conversation.empty()) {
            auto runs = app.runs().runs(conversation, 1);
            if (!runs.empty()) run = runs.front().id;
        }
        if (run == 0) return send_error(res, 400, "missing_run", "give ?run=ID (or a conversation that has runs)", "invalid_request_error");
        uint64_t last = 0;
        std::string resume_from = req.has_header("Last-Event-ID") ? req.get_header_value("Last-Event-ID") : req.get_param_value("last_event_id");
        if (!resume_from.empty()) last = std::strtoull(resume_from.c_str(), nullptr, 10);
        auto channel = hub.channel(run);
        if (!channel) {
            auto record = app.runs().run(run);
            if (!record) return send_error(res, 404, "run_not_found", "there is no run " + std::to_string(run));
            // The events are gone (older than this server); say how the run ended.
            json end = json::parse(app::run_report(*record));
            end["replayed"] = false;
            res.set_content("event: end\ndata: " + dump(end) + "\n\n", "text/event-stream");
            return;
        }
        auto cursor = std::make_shared<uint64_t>(last);
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider("text/event-stream", [channel, cursor](size_t, httplib::DataSink& sink) {
            bool done = false;
            auto events = channel->after(*cursor, kStreamWait, done);
            for (const auto& e : events) {
                std::string text = sse_event(e);
                if (!sink.write(text.data(), text.size())) return false;  // the client left; it may reconnect
                *cursor = e.seq;
            }
            if (done && channel->after(*cursor, std::chrono::milliseconds(0), done).empty()) {
                sink.done();
                return true;
            }
            if (events.empty()) return sink.write(": keep-alive\n\n", 14);
            return true;
        });
    }

    // ---- conversations and runs ----

    void list_conversations(Response& res) {
        json list = json::array();
        for (const auto& c : app.runs().conversations(500))
            list.push_back({{"id", c.id}, {"created_at", c.created_at}, {"updated_at", c.updated_at}, {"runs", c.runs},
                            {"last_prompt", c.last_prompt}, {"busy", hub.conversation_busy(c.id)}});
        send_json(res, 200, {{"conversations", list}});
    }

    json tasks_of(const std::string& conversation) { return memory::tasks_json(app.memory(), conversation); }

    void conversation(const Request& req, Response& res) {
        std::string id = req.matches[1];
        auto messages = app.runs().all(id);
        auto runs = app.runs().runs(id, 1000);
        if (messages.empty() && runs.empty()) return send_error(res, 404, "conversation_not_found", "there is no conversation " + id);
        json out{{"id", id}, {"messages", json::array()}, {"runs", json::array()}, {"tasks", tasks_of(id)}, {"busy", hub.conversation_busy(id)}};
        for (const auto& m : messages) {
            json entry{{"id", m.id}, {"turn", m.turn}, {"run", m.run}, {"message", json::parse(m.body, nullptr, false)},
                       {"kind", m.kind == store::MessageKind::prompt ? "prompt" : m.kind == store::MessageKind::answer ? "answer" : "step"}};
            if (!m.result.empty()) entry["result"] = json::parse(m.result, nullptr, false);
            out["messages"].push_back(std::move(entry));
        }
        for (auto it = runs.rbegin(); it != runs.rend(); ++it) out["runs"].push_back(json::parse(app::run_report(*it)));
        send_json(res, 200, out);
    }

    void delete_conversation(const Request& req, Response& res) {
        std::string id = req.matches[1];
        if (hub.conversation_busy(id)) return send_error(res, 409, "conversation_busy", "conversation " + id + " has a run in progress");
        auto deleted = app.runs().delete_conversation(id);
        if (!deleted) return send_error(res, 500, "store_failure", deleted.error().message, "server_error");
        if (!*deleted) return send_error(res, 404, "conversation_not_found", "there is no conversation " + id);
        res.status = 204;
    }

    void run(const Request& req, Response& res) {
        int64_t id = std::atoll(req.matches[1].str().c_str());
        auto record = app.runs().run(id);
        if (!record) return send_error(res, 404, "run_not_found", "there is no run " + std::to_string(id));
        json out = json::parse(app::run_report(*record));
        auto channel = hub.channel(id);
        out["executing"] = channel && channel->busy();
        if (out["executing"] == true) out["status"] = "running";  // a resume's worker may not have claimed the row yet
        if (record->status == RunStatus::paused)
            if (auto waiting = app.runner().pending_approval(record->conversation))
                out["waiting"] = {{"tool", waiting->tool}, {"call_id", waiting->call_id},
                                  {"arguments", json::parse(waiting->arguments_json, nullptr, false)}, {"reason", waiting->reason}};
        send_json(res, 200, out);
    }

    void act(const Request& req, const std::string& text, Response& res) {
        int64_t id = std::atoll(req.matches[1].str().c_str());
        std::string action = req.matches[2];
        auto body = body_object(text, res, true);
        if (!body) return;
        Fields f{*body};
        std::string reason = f.str("reason"), mode_name = f.str("mode");
        agent::ResumeOptions options;
        options.provider = f.str("provider");
        options.model = f.str("model");
        if (!f.ok(res)) return;
        auto record = app.runs().run(id);
        if (!record) return send_error(res, 404, "run_not_found", "there is no run " + std::to_string(id));
        if (action == "cancel") {
            if (!hub.cancel(id)) return send_error(res, 409, "run_not_executing", "run " + std::to_string(id) + " is " + std::string(run_status_name(record->status)) + ", not executing here");
            return send_json(res, 202, {{"run", id}, {"status", "cancelling"}});
        }
        std::string conversation = record->conversation;
        Result<int64_t> started = Error{"", ""};
        if (action == "approve" || action == "reject") {
            if (record->status != RunStatus::paused)
                return send_error(res, 409, "run_not_paused",
                                  "run " + std::to_string(id) + " is " + std::string(run_status_name(record->status)) + ", not waiting for approval");
            agent::ApprovalDecision decision{action == "approve" ? agent::ApprovalDecision::Kind::approve : agent::ApprovalDecision::Kind::reject,
                                             reason};
            started = hub.continue_run(id, conversation, [this, conversation, decision](const agent::RunControls& c) {
                return app.runner().resume(conversation, decision, c);
            });
        } else {  // resume
            if (auto channel = hub.channel(id); channel && channel->busy())
                return send_error(res, 409, "run_executing", "run " + std::to_string(id) + " is executing; follow it with GET /api/chat?run=" + std::to_string(id));
            if (!store::resumable(*record))
                return send_error(res, 409, "run_not_resumable", store::not_resumable_reason(*record));
            if (!mode_name.empty()) {
                auto mode = agent::parse_mode(mode_name);
                if (!mode) return send_error(res, 400, "invalid_mode", "\"mode\" must be explore, plan or execute");
                options.mode = mode;
            }
            started = hub.continue_run(id, conversation, [this, id, options](const agent::RunControls& c) {
                return app.runner().resume_run(id, options, c);
            });
        }
        if (!started) return send_http_error(res, error_for_start(started.error()), started.error().message);
        send_json(res, 202, {{"run", id}, {"conversation", conversation}, {"status", "running"}});
    }

    // ---- MCP over Streamable HTTP (JSON responses) ----

    void mcp_post(const Request& req, const std::string& text, Response& res) {
        auto rpc_error = [&](int status, int code, const std::string& message, const json& id = nullptr) {
            send_json(res, status, {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
        };
        // Checked here before the MCP server sees it: a malformed message is a 400 with its JSON-RPC error.
        auto parsed = json_io::parse(text, {mcp::kMaxMessageBytes, kMaxJsonDepth}, json_io::Utf8::refuse);
        if (!parsed) return rpc_error(400, -32700, "Parse error: " + parsed.error().message);
        const json& peek = *parsed;
        if (!peek.is_object()) return rpc_error(400, -32600, "Invalid Request: a message is a JSON object (batches are not supported)");
        json id = peek.contains("id") ? peek["id"] : json();
        if (!(id.is_string() || id.is_number() || id.is_null())) return rpc_error(400, -32600, "Invalid Request: \"id\" must be a string or a number");
        bool response = !peek.contains("method") && (peek.contains("result") || peek.contains("error"));
        if (!response) {
            if (!peek.contains("jsonrpc") || !peek["jsonrpc"].is_string() || peek["jsonrpc"] != "2.0")
                return rpc_error(400, -32600, "Invalid Request: \"jsonrpc\" must be \"2.0\"", id);
            if (!peek.contains("method") || !peek["method"].is_string())
                return rpc_error(400, -32600, "Invalid Request: \"method\" must be a string", id);
        }
        const std::string method = json_io::get_string(peek, "method");
        bool initialize = method == "initialize";
        // The stateless 2026-07-28 era (and its server/discover probe) needs no session.
        bool stateless = req.get_header_value("MCP-Protocol-Version") == "2026-07-28" || method == "server/discover";
        std::shared_ptr<mcp::McpSession> session;
        {
            std::lock_guard lock(mcp_mutex);
            if (stateless) {
                session = std::make_shared<mcp::McpSession>();
            } else if (initialize) {
                session = std::make_shared<mcp::McpSession>();
                session->id = random_hex(8);
                mcp_sessions[session->id] = session;
            } else {
                std::string sid = req.get_header_value("Mcp-Session-Id");
                if (sid.empty()) return rpc_error(400, -32000, "Bad Request: Mcp-Session-Id header is required");
                auto it = mcp_sessions.find(sid);
                if (it == mcp_sessions.end()) return rpc_error(404, -32001, "Session not found: initialize again");
                session = it->second;
            }
        }
        if (req.has_header("MCP-Protocol-Version") && !initialize &&
            !mcp::McpServer::supported_version(req.get_header_value("MCP-Protocol-Version")))
            return rpc_error(400, -32000, "Bad Request: unsupported MCP-Protocol-Version " + req.get_header_value("MCP-Protocol-Version"));
        if (!stateless) res.set_header("Mcp-Session-Id", session->id);
        // A call that asked for progress (and accepts SSE) is answered as an event stream: progress
        // notifications while it runs, then its response.
        const json* params = peek.contains("params") && peek["params"].is_object() ? &peek["params"] : nullptr;
        const json* meta = params && params->contains("_meta") && (*params)["_meta"].is_object() ? &(*params)["_meta"] : nullptr;
        if (method == "tools/call" && meta && meta->contains("progressToken") &&
            req.get_header_value("Accept").find("text/event-stream") != std::string::npos)
            return mcp_stream(text, session, res);
        auto reply = mcp_server.handle(text, *session, nullptr);
        if (!reply) {
            res.status = 202;
            return;
        }
        res.set_content(*reply, "application/json");
    }

    void mcp_stream(const std::string& body, std::shared_ptr<mcp::McpSession> session, Response& res) {
        struct Stream {
            std::mutex mutex;
            std::condition_variable changed;
            std::deque<std::string> messages;
            bool done = false;
            std::thread worker;
        };
        auto stream = std::make_shared<Stream>();
        auto push = [stream](std::string message, bool last) {
            std::lock_guard lock(stream->mutex);
            if (!message.empty()) stream->messages.push_back(std::move(message));
            stream->done = stream->done || last;
            stream->changed.notify_all();
        };
        stream->worker = std::thread([this, body, session, push] {
            auto reply = mcp_server.handle(body, *session, [&](const std::string& note) { push(note, false); });
            push(reply.value_or(""), true);
        });
        res.set_chunked_content_provider(
            "text/event-stream",
            [stream](size_t, httplib::DataSink& sink) {
                std::unique_lock lock(stream->mutex);
                stream->changed.wait_for(lock, std::chrono::seconds(15), [&] { return !stream->messages.empty() || stream->done; });
                while (!stream->messages.empty()) {
                    std::string event = "event: message\ndata: " + stream->messages.front() + "\n\n";
                    stream->messages.pop_front();
                    if (!sink.write(event.data(), event.size())) return false;
                }
                if (stream->done) sink.done();
                return true;
            },
            [stream](bool) {
                if (stream->worker.joinable()) stream->worker.join();  // the call finishes even if the client left
            });
    }

    // GET /mcp: a session's listening stream, where the server says what the client did not ask
    // (notifications/tools/list_changed). One per session; each holds a server thread, so only a
    // quarter of them may listen (beyond that: 405, which clients read as "no stream offered").
    void mcp_listen(const Request& req, Response& res) {
        if (req.get_header_value("Accept").find("text/event-stream") == std::string::npos)
            return send_error(res, 406, "not_acceptable", "GET /mcp is an event stream: send Accept: text/event-stream");
        std::shared_ptr<mcp::McpSession> session;
        {
            std::lock_guard lock(mcp_mutex);
            auto it = mcp_sessions.find(req.get_header_value("Mcp-Session-Id"));
            if (it == mcp_sessions.end())
                return send_error(res, req.has_header("Mcp-Session-Id") ? 404 : 400, "session_not_found",
                                  "GET /mcp needs the Mcp-Session-Id of an initialized session");
            session = it->second;
        }
        if (listening_streams.fetch_add(1) >= listening_limit) {
            --listening_streams;
            return send_error(res, 405, "method_not_allowed", "no listening stream is free now; POST requests to /mcp");
        }
        if (!session->open_stream()) {
            --listening_streams;
            return send_error(res, 409, "conflict", "this session has a listening stream already");
        }
        res.set_header("Mcp-Session-Id", session->id);
        res.set_chunked_content_provider(
            "text/event-stream",
            [session](size_t, httplib::DataSink& sink) {
                auto message = session->next_message(std::chrono::seconds(10));
                if (session->closed()) {
                    sink.done();
                    return true;
                }
                // A comment line when there is nothing to say: finds clients that left.
                std::string event = message ? "event: message\ndata: " + *message + "\n\n" : ": keep-alive\n\n";
                return sink.write(event.data(), event.size());
            },
            [this, session](bool) {
                session->close_stream();
                --listening_streams;
            });
    }

    // A plugin's tools changed: every initialized session with a listening stream hears of it.
    void announce_tools_changed() {
        std::lock_guard lock(mcp_mutex);
        for (const auto& [id, session] : mcp_sessions)
            if (session->initialized) session->post(mcp::McpServer::tools_list_changed());
    }

    void close_mcp_sessions() {
        std::lock_guard lock(mcp_mutex);
        for (const auto& [id, session] : mcp_sessions) session->close();
    }

    void mcp_delete(const Request& req, Response& res) {
        std::lock_guard lock(mcp_mutex);
        auto it = mcp_sessions.find(req.get_header_value("Mcp-Session-Id"));
        if (it == mcp_sessions.end()) return send_error(res, 404, "session_not_found", "no MCP session with that Mcp-Session-Id");
        it->second->close();
        mcp_sessions.erase(it);
        res.status = 200;
    }

    // ---- memory, metrics ----

    void memory_state(const Request& req, Response& res) {
        std::string conversation = req.get_param_value("conversation");
        json facts = json::array();
        for (const auto& f : app.memory().recall_facts("", 1000)) facts.push_back({{"id", f.id}, {"text", f.text}});
        json out{{"facts", facts}};
        if (!conversation.empty()) {
            auto session = app.memory().session(conversation);
            json entries = json::object();
            for (const auto& e : app.memory().entries(conversation)) entries[e.key] = json::parse(e.value_json, nullptr, false);
            out["conversation"] = conversation;
            out["session"] = {{"goal", session.goal}, {"progress", session.progress}, {"steps_done", session.steps_done}};
            out["tasks"] = tasks_of(conversation);
            out["pending_question"] = app.memory().pending_question(conversation);
            out["recent_errors"] = app.memory().recent_errors(conversation);
            out["entries"] = entries;
        }
        send_json(res, 200, out);
    }

    void clear_session(const std::string& text, Response& res) {
        auto body = body_object(text, res);
        if (!body) return;
        Fields f{*body};
        std::string conversation = f.str("conversation");
        if (!f.ok(res)) return;
        if (conversation.empty()) return send_error(res, 400, "missing_conversation", "give {\"conversation\": ID}");
        if (hub.conversation_busy(conversation)) return send_error(res, 409, "conversation_busy", "conversation " + conversation + " has a run in progress");
        auto cleared = app.runner().clear_session(conversation);
        if (!cleared) return send_error(res, 500, "store_failure", cleared.error().message, "server_error");
        send_json(res, 200, {{"conversation", conversation}, {"cleared", *cleared}, {"facts_kept", true}});
    }

    void metrics(Response& res) {
        std::string out;
        auto line = [&](const std::string& text) { out += text + "\n"; };
        store::JournalStats journal = app.runs().stats();
        line("# HELP agenthost_runs Runs in the store, by status.\n# TYPE agenthost_runs gauge");
        for (const auto& [status, count] : journal.runs_by_status)
            line("agenthost_runs{status=\"" + status + "\"} " + std::to_string(count));
        line("# HELP agenthost_runs_executing Runs executing in this server.\n# TYPE agenthost_runs_executing gauge");
        line("agenthost_runs_executing " + std::to_string(hub.executing()));
        line("# HELP agenthost_runs_waiting Runs waiting for a slot (max_waiting_runs).\n# TYPE agenthost_runs_waiting gauge");
        line("agenthost_runs_waiting " + std::to_string(hub.waiting()));
        line("# HELP agenthost_iterations_total Model calls of all runs.\n# TYPE agenthost_iterations_total counter");
        line("# HELP agenthost_tokens_total Tokens of all runs.\n# TYPE agenthost_tokens_total counter");
        line("agenthost_iterations_total " + std::to_string(journal.iterations));
        line("agenthost_tokens_total{direction=\"input\"} " + std::to_string(journal.input_tokens));
        line("agenthost_tokens_total{direction=\"output\"} " + std::to_string(journal.output_tokens));
        line("# HELP agenthost_tool_calls_total Tool calls by tool and outcome.\n# TYPE agenthost_tool_calls_total counter");
        for (const auto& t : journal.tool_calls)
            line("agenthost_tool_calls_total{tool=\"" + t.tool + "\",outcome=\"" + t.outcome + "\"} " + std::to_string(t.count));
        line("# HELP agenthost_provider_request_seconds Model request latency.\n# TYPE agenthost_provider_request_seconds histogram");
        line("# HELP agenthost_queue_depth Requests waiting for a provider.\n# TYPE agenthost_queue_depth gauge");
        for (const auto& lane : app.queue().stats()) {
            std::string p = "provider=\"" + lane.provider + "\"";
            for (size_t i = 0; i < lane.bucket_bounds.size(); ++i) {
                char le[32];
                std::snprintf(le, sizeof le, "%g", lane.bucket_bounds[i]);
                line("agenthost_provider_request_seconds_bucket{" + p + ",le=\"" + le + "\"} " + std::to_string(lane.bucket_counts[i]));
            }
            line("agenthost_provider_request_seconds_bucket{" + p + ",le=\"+Inf\"} " + std::to_string(lane.count));
            line("agenthost_provider_request_seconds_sum{" + p + "} " + std::to_string(lane.sum_s));
            line("agenthost_provider_request_seconds_count{" + p + "} " + std::to_string(lane.count));
            line("agenthost_queue_depth{" + p + "} " + std::to_string(lane.waiting));
        }
        res.set_content(out, "text/plain; version=0.0.4");
    }
};
HttpServer::HttpServer(app::HostApp& app) : impl_(std::make_unique<Impl>(app)) {}
HttpServer::~HttpServer() = default;

namespace {

// The token of a server without token_env: read from data_dir/server-token, or generated there
// (0600) on first start.
Result<std::string> stored_token(const std::filesystem::path& data_dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(data_dir, ec);
    fs::path file = data_dir / "server-token";
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        std::string token = random_hex(32);
        bool written = ::write(fd, token.data(), token.size()) == static_cast<ssize_t>(token.size()) && ::fsync(fd) == 0;
        ::close(fd);
        if (!written) return Error{"token_unwritable", "cannot write " + file.string() + ": check the permissions of data_dir"};
        spdlog::info("generated a server token: file={}", file.string());
        return token;
    }
    if (errno != EEXIST) return Error{"token_unwritable", "cannot create " + file.string() + ": check the permissions of data_dir"};
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && (st.st_mode & 077)) {
        spdlog::warn("server token readable by others: file={} mode={:o}; made 0600", file.string(), st.st_mode & 0777);
        ::chmod(file.c_str(), 0600);
    }
    std::ifstream in(file);
    std::string token;
    std::getline(in, token);
    token = trim(token);
    if (token.size() < 16)
        return Error{"token_invalid", file.string() + " holds no usable token (16 characters at least): delete it to have a new one generated"};
    return token;
}

}  // namespace

Status HttpServer::serve(const std::string& listen) {
    size_t colon = listen.rfind(':');
    std::string host = colon == std::string::npos ? listen : listen.substr(0, colon);
    int port = colon == std::string::npos ? 8642 : std::atoi(listen.c_str() + colon + 1);
    if (host.empty() || port <= 0 || port > 65535)
        return Error{"invalid_listen", "listen address '" + listen + "' is not HOST:PORT (e.g. 127.0.0.1:8642)"};
    const auto& s = impl_->settings;
    const std::string bind_host = host.size() > 2 && host.front() == '[' && host.back() == ']' ? host.substr(1, host.size() - 2) : host;
    std::string login;
    bool generated = false;
    if (s.auth == "none") {
        if (!loopback(host))
            return Error{"insecure_listen", "refusing to listen on " + host + " with [server] auth = \"none\": anyone who can reach it could "
                                            "run the agent; remove auth = \"none\" (a token is then used), or listen on 127.0.0.1"};
        spdlog::warn("serving without authentication ([server] auth = \"none\"): every local user and program can use this server");
        std::cerr << "agenthost: WARNING: no authentication ([server] auth = \"none\"); loopback only" << std::endl;
    } else {
        const char* value = std::getenv(s.token_env.c_str());
        std::string token = value ? trim(value) : "";
        if (token.empty() && s.token_env_set)
            return Error{"token_env_unset", "[server] token_env names " + s.token_env + ", which is unset or empty: export " + s.token_env +
                                                "=<a long random string>, or remove token_env to have serve generate a token in " +
                                                (impl_->app.config().data_dir / "server-token").string()};
        if (token.empty()) {
            auto stored = stored_token(impl_->app.config().data_dir);
            if (!stored) return stored.error();
            token = *stored;
            generated = true;
            login = "agenthost: token in " + (impl_->app.config().data_dir / "server-token").string() + "; log the web panel in at ";
        } else {
            login = "agenthost: token from $" + s.token_env + "; log the web panel in at ";
        }
        impl_->token = token;
        impl_->cookie_value = hex_of(token);
    }
    impl_->cookie_name = "agenthost-" + std::to_string(port);
    impl_->listen_host = host;
    // A socket per connection: the soft descriptor limit (often 1024) would cap them below max_connections.
    if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &files);
    }
    if (!impl_->http.bind_to_port(bind_host, port))
        return Error{"listen_failed", "cannot listen on " + listen + " (in use, or not an address of this machine)"};
    if (impl_->listen_socket != INVALID_SOCKET) ::listen(impl_->listen_socket, SOMAXCONN);
    std::cerr << "agenthost: listening on http://" << host << ":" << port << std::endl;
    if (!login.empty()) {
        std::string browse = host == "0.0.0.0" ? "127.0.0.1" : host == "::" || host == "[::]" ? "[::1]" : host;
        std::cerr << login << "http://" << browse << ":" << port << "/login?token=" << (generated ? impl_->token : "$" + s.token_env)
                  << "\nagenthost: API clients send Authorization: Bearer <token>" << std::endl;
    }
    impl_->http.listen_after_bind();
    return Ok{};
}

void HttpServer::shutdown() {
    spdlog::info("shutting down: letting running steps reach a checkpoint");
    impl_->close_mcp_sessions();  // ends the MCP listening streams now
    impl_->hub.shutdown(std::chrono::seconds(impl_->settings.shutdown_grace_seconds));
    impl_->http.stop();
}

}  // namespace agenthost::server
