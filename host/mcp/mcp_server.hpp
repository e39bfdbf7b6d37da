// The host as an MCP server: every enabled tool of every loaded tool plugin, called through the same
// path as the agent (argument validation, the approvals policy: a call that needs approval is put
// to the person at the client by elicitation when it can be, else refused unless [mcp]
// allow_destructive), the plugins' resources, templates, prompts and completions, the agent's
// long-term facts as a resource, the modes as prompts, and the host's log at the level a client
// sets. Transport-independent: `agenthost mcp` feeds it stdio lines, `agenthost serve` feeds it
// POST /mcp bodies.
// Protocol versions 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05, negotiated at initialize, and
// the stateless 2026-07-28 era (server/discover; the version in every request's _meta).
#pragma once

#include "app/host_app.hpp"
#include "mcp/log_tap.hpp"
#include "mcp/mcp_session.hpp"

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

class McpServer {
public:
    explicit McpServer(app::HostApp& app) : app_(app) {}

    // Handles one JSON-RPC message (text). Returns the response text, or nothing for a
    // notification or a response. `notify` sends messages to the client while a request is
    // handled (progress, log lines, the server's own requests: sampling, elicitation); without
    // it nothing is sent and nothing can be asked.
    std::optional<std::string> handle(const std::string& message, McpSession& session, const Send& notify);

    static bool supported_version(const std::string& version);
    // notifications/tools/list_changed, as sent to clients when a plugin's tools changed.
    static std::string tools_list_changed();
    // notifications/resources/updated, for a client subscribed to `uri`.
    static std::string resource_updated(const std::string& uri);

private:
    // One request as its method's handler sees it. A handler answers with the whole JSON-RPC
    // response, or nothing (a cancelled call is not answered).
    struct Request {
        const nlohmann::json& id;
        const nlohmann::json& params;
        McpSession& session;
        const Send& notify;
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
    std::optional<std::string> handle_message(nlohmann::json& message, McpSession& session, const Send& notify);
    std::optional<std::string> handle_batch(nlohmann::json& batch, McpSession& session, const Send& notify);
    std::optional<nlohmann::json> list_tools(const Request& r);
    std::optional<nlohmann::json> call_tool(const Request& r);
    std::optional<nlohmann::json> list_resources(const Request& r);
    std::optional<nlohmann::json> read_resource(const Request& r);
    std::optional<nlohmann::json> list_resource_templates(const Request& r);
    std::optional<nlohmann::json> subscribe(const Request& r);
    std::optional<nlohmann::json> unsubscribe(const Request& r);
    std::optional<nlohmann::json> list_prompts(const Request& r);
    std::optional<nlohmann::json> get_prompt(const Request& r);
    std::optional<nlohmann::json> complete(const Request& r);
    std::optional<nlohmann::json> set_log_level(const Request& r);
    // A call that needs approval, put to the person at the client: empty when they approved,
    // else the result that says why it did not run.
    std::optional<nlohmann::json> ask_approval(const Request& r, const std::string& tool, const nlohmann::json& arguments,
                                               const std::string& why);

    app::HostApp& app_;
    LogTap log_tap_;
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
