// The host as an MCP server: every enabled tool of every loaded tool plugin, called through the same
// path as the agent (argument validation, the approvals policy: destructive tools are refused unless
// [mcp] allow_destructive), plus the agent's long-term facts as a resource. Transport-independent:
// `agenthost mcp` feeds it stdio lines, `agenthost serve` feeds it POST /mcp bodies.
// Protocol versions 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05, negotiated at initialize, and
// the stateless 2026-07-28 era (server/discover; the version in every request's _meta).
#pragma once

#include "app/host_app.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace agenthost::mcp {

// The largest JSON-RPC message read (a stdio line or an HTTP body); a longer one is refused unread.
constexpr size_t kMaxMessageBytes = 4u << 20;
// Values in one message (json_io::Limits::max_values): its parsed form stays within tens of MiB.
constexpr size_t kMaxMessageValues = 100000;

// Reads '\n'-terminated lines of at most `max_bytes` from a file descriptor. A longer line is
// consumed to its end without being kept (too_long), so one huge message costs no memory and the
// stream goes on. next() returns `end` at end of file or once `*stop` is set (checked while waiting).
enum class LineRead { line, too_long, end };
class LineReader {
public:
    LineReader(int fd, size_t max_bytes) : fd_(fd), max_bytes_(max_bytes) {}
    LineRead next(std::string& line, const std::atomic<bool>* stop = nullptr);

private:
    int fd_;
    size_t max_bytes_;
    std::string buffer_;  // read but not yet returned
    bool eof_ = false;
};

// One client's state: its protocol version, the calls it may cancel, and the messages the server
// sends it unasked (over HTTP through its listening stream, GET /mcp).
class McpSession {
public:
    std::string id;
    std::string protocol_version;
    std::atomic<bool> initialized{false};

    // A cancel token for a request id (its JSON text), removed when the call ends.
    std::shared_ptr<ah_cancel> start_call(const std::string& request_id);
    void end_call(const std::string& request_id);
    void cancel(const std::string& request_id);

    // The listening stream: open_stream() is false when one is open already. post() queues a
    // message for it (dropped when none is open: the client re-lists when it reconnects).
    bool open_stream();
    void close_stream();
    void post(std::string message);
    // The next queued message; nothing after `timeout` or once the session is closed.
    std::optional<std::string> next_message(std::chrono::milliseconds timeout);
    // Ends the listening stream for good (session deleted, server stopping).
    void close();
    bool closed();

private:
    std::mutex mutex_;
    std::map<std::string, std::shared_ptr<ah_cancel>> calls_;
    std::condition_variable posted_;
    std::deque<std::string> outbox_;
    bool streaming_ = false;
    bool closed_ = false;
};

class McpServer {
public:
    explicit McpServer(app::HostApp& app) : app_(app) {}

    // Handles one JSON-RPC message (text). Returns the response text, or nothing for a
    // notification. `notify` sends a server notification (progress) while a call runs.
    std::optional<std::string> handle(const std::string& message, McpSession& session,
                                      const std::function<void(const std::string&)>& notify);

    static bool supported_version(const std::string& version);
    // notifications/tools/list_changed, as sent to clients when a plugin's tools changed.
    static std::string tools_list_changed();

private:
    // One request as its method's handler sees it. A handler answers with the whole JSON-RPC
    // response, or nothing (a cancelled call is not answered).
    struct Request {
        const nlohmann::json& id;
        const nlohmann::json& params;
        McpSession& session;
        const std::function<void(const std::string&)>& notify;
    };
    using Handler = std::optional<nlohmann::json> (McpServer::*)(const Request&);
    // A method served (the table is in handle()): its handler, and whether a session (initialize,
    // or the stateless era's _meta) must come first.
    struct Method {
        std::string_view name;
        Handler handler;
        bool needs_session;
        bool stamped;  // the stateless era's result fields are added (all but initialize)
    };

    std::optional<nlohmann::json> discover(const Request& r);
    std::optional<nlohmann::json> initialize(const Request& r);
    std::optional<nlohmann::json> ping(const Request& r);
    std::optional<std::string> handle_message(nlohmann::json& message, McpSession& session,
                                              const std::function<void(const std::string&)>& notify);
    std::optional<std::string> handle_batch(nlohmann::json& batch, McpSession& session,
                                            const std::function<void(const std::string&)>& notify);
    std::optional<nlohmann::json> list_tools(const Request& r);
    std::optional<nlohmann::json> call_tool(const Request& r);
    std::optional<nlohmann::json> list_resources(const Request& r);
    std::optional<nlohmann::json> read_resource(const Request& r);

    app::HostApp& app_;
};

// The resources MCP clients and the web panel read: the agent's facts (memory://facts) and every
// plugin's (ABI 1.2 resource hook). resource_read answers {"contents": [...]}, or nothing when no
// one serves the URI.
nlohmann::json resource_list(app::HostApp& app);
std::optional<nlohmann::json> resource_read(app::HostApp& app, const std::string& uri);

// Serves MCP over stdin/stdout until stdin closes: one JSON-RPC message per line, requests handled
// concurrently (so notifications/cancelled reaches a running call), responses in any order.
// Serves MCP on stdin/stdout until end of input or `*stop` (the first Ctrl-C / SIGTERM); calls in
// flight finish and are answered first.
int serve_stdio(app::HostApp& app, const std::atomic<bool>* stop = nullptr);

}  // namespace agenthost::mcp
