// MCP over Streamable HTTP: POST /mcp carries JSON-RPC messages (answered as JSON, or as an event
// stream for a call that asked for progress), GET /mcp is a session's listening stream, DELETE
// /mcp ends a session. Every message is bounded and checked here before the MCP server reads it.
#include "common/bounded_json.hpp"
#include "common/ids.hpp"
#include "mcp/mcp_server.hpp"
#include "server/replies.hpp"
#include "server/routes/routes.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace agenthost::server {
using nlohmann::json;

namespace {
// The reason word in an error's data, for the JSON-RPC codes /mcp answers with.
std::string reason_of(int rpc_code) {
    static constexpr std::pair<int, const char*> kReasons[] = {
        {-32700, "parse_error"}, {-32600, "invalid_request"}, {-32000, "bad_request"}, {-32001, "session_not_found"}};
    for (const auto& [code, reason] : kReasons)
        if (code == rpc_code) return reason;
    return "error";
}

// Sessions kept at once; initializing one more ends the oldest, whose client is told 404 "Session
// not found" and initializes again (as the MCP transport says a client does).
constexpr size_t kMaxSessions = 1000;
}  // namespace

struct McpRoutes::Impl {
    app::HostApp& app;
    mcp::McpServer server;
    std::mutex mutex;
    std::map<std::string, std::shared_ptr<mcp::McpSession>> sessions;
    std::deque<std::string> session_order;  // oldest first (ids of deleted sessions are skipped)
    std::atomic<int> listening_streams{0};
    int listening_limit;
    int tools_listener = 0;
    int resource_listener = 0;

    explicit Impl(app::HostApp& a) : app(a), server(a), listening_limit(std::max(4, a.config().server.max_connections / 8)) {
        tools_listener = app.registry().add_tools_listener([this] { announce_tools_changed(); });
        resource_listener =
            app.registry().services().add_resource_listener([this](const std::string& uri) { announce_resource_updated(uri); });
    }
    ~Impl() {
        app.registry().services().remove_resource_listener(resource_listener);
        app.registry().remove_tools_listener(tools_listener);
        close_sessions();
    }

    void post(const Request& req, const std::string& text, Response& res) {
        auto rpc_error = [&](int status, int code, const std::string& message, const json& id = nullptr) {
            send_rpc_error(res, status, reason_of(code), message, code, id);
        };
        // Checked here before the MCP server sees it: a malformed message is a 400 with its JSON-RPC error.
        auto parsed = json_io::parse(text, {mcp::kMaxMessageBytes, kMaxJsonDepth, mcp::kMaxMessageValues}, json_io::Utf8::refuse);
        if (!parsed) return rpc_error(400, -32700, "Parse error: " + parsed.error().message);
        const json& peek = *parsed;
        // A batch (MCP 2025-03-26 only): each message is checked by the MCP server, which answers
        // with the array of responses, or with one error where the session's version has none.
        if (peek.is_array()) return post_batch(req, text, res);
        if (!peek.is_object()) return rpc_error(400, -32600, "Invalid Request: a message is a JSON object");
        json id = peek.contains("id") ? peek["id"] : json();
        if (!(id.is_string() || id.is_number() || id.is_null()))
            return rpc_error(400, -32600, "Invalid Request: \"id\" must be a string or a number");
        // MCP narrows JSON-RPC: a request's id is a string or an integer, never null or fractional.
        if (peek.contains("method") && peek.contains("id") && !(id.is_string() || id.is_number_integer()))
            return rpc_error(400, -32600, "Invalid Request: \"id\" must be a string or an integer (MCP allows no null id)");
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
        bool stateless = req.header("MCP-Protocol-Version") == "2026-07-28" || method == "server/discover";
        std::shared_ptr<mcp::McpSession> session;
        {
            std::lock_guard lock(mutex);
            if (stateless) {
                session = std::make_shared<mcp::McpSession>();
            } else if (initialize) {
                session = std::make_shared<mcp::McpSession>();
                session->id = random_hex(8);
                end_oldest_sessions(kMaxSessions - 1);
                sessions[session->id] = session;
                session_order.push_back(session->id);
            } else {
                std::string sid = req.header("Mcp-Session-Id");
                if (sid.empty()) return rpc_error(400, -32000, "Bad Request: Mcp-Session-Id header is required");
                auto it = sessions.find(sid);
                if (it == sessions.end()) return rpc_error(404, -32001, "Session not found: initialize again");
                session = it->second;
            }
        }
        if (req.has_header("MCP-Protocol-Version") && !initialize &&
            !mcp::McpServer::supported_version(req.header("MCP-Protocol-Version")))
            return rpc_error(400, -32000, "Bad Request: unsupported MCP-Protocol-Version " + req.header("MCP-Protocol-Version"));
        if (!stateless) res.set_header("Mcp-Session-Id", session->id);
        // A tool call from a client that accepts SSE is answered as an event stream: what the
        // server says while it runs (progress, log lines, its own requests: sampling, elicitation,
        // an approval), then its response. A client that takes JSON only gets the response alone.
        if (method == "tools/call" && peek.contains("id") && req.header("Accept").find("text/event-stream") != std::string::npos)
            return stream_call(text, session, res);
        auto reply = server.handle(text, *session, nullptr);
        if (!reply) return res.set_status(202);
        res.set_content(*reply, "application/json");
    }

    void post_batch(const Request& req, const std::string& text, Response& res) {
        auto rpc_error = [&](int status, int code, const std::string& message) {
            send_rpc_error(res, status, reason_of(code), message, code);
        };
        std::shared_ptr<mcp::McpSession> session;
        {
            std::lock_guard lock(mutex);
            std::string sid = req.header("Mcp-Session-Id");
            if (sid.empty())
                return rpc_error(400, -32600,
                                 "Invalid Request: a batch belongs to a session of MCP 2025-03-26 (initialize first, alone)");
            auto it = sessions.find(sid);
            if (it == sessions.end()) return rpc_error(404, -32001, "Session not found: initialize again");
            session = it->second;
        }
        res.set_header("Mcp-Session-Id", session->id);
        auto reply = server.handle(text, *session, nullptr);
        if (!reply) return res.set_status(202);
        res.set_content(*reply, "application/json");
    }

    void stream_call(const std::string& body, const std::shared_ptr<mcp::McpSession>& session, Response& res) {
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
            auto reply = server.handle(body, *session, [push](const std::string& note) { push(note, false); });
            push(reply.value_or(""), true);
        });
        res.stream(
            "text/event-stream",
            [stream](StreamSink& sink) {
                std::unique_lock lock(stream->mutex);
                stream->changed.wait_for(lock, std::chrono::seconds(15),
                                         [&] { return !stream->messages.empty() || stream->done; });
                while (!stream->messages.empty()) {
                    std::string event = "event: message\ndata: " + stream->messages.front() + "\n\n";
                    stream->messages.pop_front();
                    if (!sink.write(event)) return false;
                }
                if (stream->done) sink.done();
                return true;
            },
            [stream] {
                if (stream->worker.joinable()) stream->worker.join();  // the call finishes even if the client left
            });
    }

    // GET /mcp: a session's listening stream, where the server says what the client did not ask
    // (notifications/tools/list_changed). One per session; each holds a server thread, so only a
    // share of them may listen (beyond that: 405, which clients read as "no stream offered").
    void listen(const Request& req, Response& res) {
        if (req.header("Accept").find("text/event-stream") == std::string::npos)
            return send_rpc_error(res, 406, "not_acceptable", "GET /mcp is an event stream: send Accept: text/event-stream");
        std::shared_ptr<mcp::McpSession> session;
        {
            std::lock_guard lock(mutex);
            auto it = sessions.find(req.header("Mcp-Session-Id"));
            if (it == sessions.end())
                return send_rpc_error(res, req.has_header("Mcp-Session-Id") ? 404 : 400, "session_not_found",
                                      "GET /mcp needs the Mcp-Session-Id of an initialized session");
            session = it->second;
        }
        if (listening_streams.fetch_add(1) >= listening_limit) {
            --listening_streams;
            return send_rpc_error(res, 405, "method_not_allowed", "no listening stream is free now; POST requests to /mcp");
        }
        if (!session->open_stream()) {
            --listening_streams;
            return send_rpc_error(res, 409, "conflict", "this session has a listening stream already");
        }
        res.set_header("Mcp-Session-Id", session->id);
        res.stream(
            "text/event-stream",
            [session](StreamSink& sink) {
                auto message = session->next_message(std::chrono::seconds(10));
                if (session->closed()) {
                    sink.done();
                    return true;
                }
                // A comment line when there is nothing to say: finds clients that left.
                return sink.write(message ? "event: message\ndata: " + *message + "\n\n" : ": keep-alive\n\n");
            },
            [this, session] {
                session->close_stream();
                --listening_streams;
            });
    }

    void remove(const Request& req, Response& res) {
        std::lock_guard lock(mutex);
        auto it = sessions.find(req.header("Mcp-Session-Id"));
        if (it == sessions.end()) return send_rpc_error(res, 404, "session_not_found", "no MCP session with that Mcp-Session-Id");
        it->second->close();
        sessions.erase(it);
        res.set_status(200);
    }

    // Ends the oldest sessions until at most `keep` remain (under `mutex`).
    void end_oldest_sessions(size_t keep) {
        while (sessions.size() > keep && !session_order.empty()) {
            auto it = sessions.find(session_order.front());
            session_order.pop_front();
            if (it == sessions.end()) continue;  // deleted by its client already
            it->second->close();
            sessions.erase(it);
        }
        if (session_order.size() > 2 * kMaxSessions) {  // forget the ids of deleted sessions
            std::erase_if(session_order, [&](const std::string& sid) { return !sessions.count(sid); });
        }
    }

    // A plugin's tools changed: every initialized session with a listening stream hears of it.
    void announce_tools_changed() {
        std::lock_guard lock(mutex);
        for (const auto& [sid, session] : sessions)
            if (session->initialized) session->post(mcp::McpServer::tools_list_changed());
    }

    // A plugin's resource changed: the sessions subscribed to it hear of it.
    void announce_resource_updated(const std::string& uri) {
        std::lock_guard lock(mutex);
        for (const auto& [sid, session] : sessions)
            if (session->subscribed(uri)) session->post(mcp::McpServer::resource_updated(uri));
    }

    void close_sessions() {
        std::lock_guard lock(mutex);
        for (const auto& [sid, session] : sessions) session->close();
    }
};

McpRoutes::McpRoutes(ServerCore& core, app::HostApp& app) : impl_(std::make_unique<Impl>(app)) {
    const Access local{.local_origins = true, .json_rpc = true};
    core.post(
        "/mcp", [this](const Request& req, const std::string& body, Response& res) { impl_->post(req, body, res); }, local,
        mcp::kMaxMessageBytes);
    core.del(
        "/mcp", [this](const Request& req, Response& res) { impl_->remove(req, res); }, local);
    core.get(
        "/mcp", [this](const Request& req, Response& res) { impl_->listen(req, res); },
        Access{.local_origins = true, .event_stream = true, .json_rpc = true});
    // RFC 9728 metadata, as MCP's authorization asks: /mcp takes a bearer token in the header and
    // names no authorization server (agenthost checks the token it was given, nothing else).
    // Clients look at the path-suffixed address first, then the root one.
    for (const std::string& path : {std::string(kProtectedResourcePath) + "/mcp", std::string(kProtectedResourcePath)})
        core.get(
            path,
            [](const Request& req, Response& res) {
                send_json(res, 200,
                          {{"resource", base_url(req) + "/mcp"},
                           {"bearer_methods_supported", {"header"}},
                           {"authorization_servers", json::array()},
                           {"resource_name", "agenthost MCP server"},
                           {"resource_documentation", "https://github.com/agenthost/agenthost/blob/main/docs/mcp.md"}});
            },
            Access{.open = true});
    // An OAuth client that finds no authorization server there asks this server itself (its
    // metadata, then dynamic registration): it is told in OAuth's error shape that there is none,
    // and what to do instead.
    const auto no_oauth = [](Response& res) {
        send_json(res, 404,
                  {{"error", "invalid_request"},
                   {"error_description",
                    "agenthost has no OAuth authorization server: configure the client with the server's bearer token "
                    "(Authorization: Bearer <token>; see docs/mcp.md, 'agenthost as an MCP server')"}});
    };
    for (const char* path : {"/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server/mcp",
                             "/.well-known/openid-configuration", "/.well-known/openid-configuration/mcp"})
        core.get(
            path, [no_oauth](const Request&, Response& res) { no_oauth(res); }, Access{.open = true});
    core.post(
        "/register", [no_oauth](const Request&, const std::string&, Response& res) { no_oauth(res); }, Access{.open = true},
        64 << 10);
}

McpRoutes::~McpRoutes() = default;

void McpRoutes::close_sessions() { impl_->close_sessions(); }

}  // namespace agenthost::server
