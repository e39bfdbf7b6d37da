// The host as an MCP server: every enabled tool of every loaded tool plugin, called through the same
// path as the agent (argument validation, the approvals policy: destructive tools are refused unless
// [mcp] allow_destructive), plus the agent's long-term facts as a resource. Transport-independent:
// `agenthost mcp` feeds it stdio lines, `agenthost serve` feeds it POST /mcp bodies.
// Protocol versions 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05, negotiated at initialize, and
// the stateless 2026-07-28 era (server/discover; the version in every request's _meta).
#pragma once

#include "cli/host_app.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace agenthost::mcp {

// One client's state: its protocol version and the calls it may cancel.
class McpSession {
public:
    std::string id;
    std::string protocol_version;
    bool initialized = false;

    // A cancel token for a request id (its JSON text), removed when the call ends.
    std::shared_ptr<ah_cancel> start_call(const std::string& request_id);
    void end_call(const std::string& request_id);
    void cancel(const std::string& request_id);

private:
    std::mutex mutex_;
    std::map<std::string, std::shared_ptr<ah_cancel>> calls_;
};

class McpServer {
public:
    explicit McpServer(cli::HostApp& app) : app_(app) {}

    // Handles one JSON-RPC message (text). Returns the response text, or nothing for a
    // notification. `notify` sends a server notification (progress) while a call runs.
    std::optional<std::string> handle(const std::string& message, McpSession& session,
                                      const std::function<void(const std::string&)>& notify);

    static bool supported_version(const std::string& version);

private:
    cli::HostApp& app_;
};

// The resources MCP clients and the web panel read: the agent's facts (memory://facts) and every
// plugin's (ABI 1.2 resource hook). resource_read answers {"contents": [...]}, or nothing when no
// one serves the URI.
nlohmann::json resource_list(cli::HostApp& app);
std::optional<nlohmann::json> resource_read(cli::HostApp& app, const std::string& uri);

// Serves MCP over stdin/stdout until stdin closes: one JSON-RPC message per line, requests handled
// concurrently (so notifications/cancelled reaches a running call), responses in any order.
int serve_stdio(cli::HostApp& app);

}  // namespace agenthost::mcp
