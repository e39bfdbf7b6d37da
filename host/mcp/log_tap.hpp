// Forwards the host's log records (spdlog's, plugins' lines included) to the MCP clients that set
// a log level (logging/setLevel), as notifications/message at or above that level. It hangs on the
// default logger's distribution sink, which the CLI sets up; without one it forwards nothing. A
// record below the host's own --log-level is never made, so never forwarded either.
#pragma once

#include "mcp/mcp_session.hpp"

#include <memory>

namespace agenthost::mcp {

class LogTap {
public:
    LogTap();
    ~LogTap();
    LogTap(const LogTap&) = delete;
    LogTap& operator=(const LogTap&) = delete;

    // The session hears records from now on, while it lives, at the level it set.
    void listen(const std::shared_ptr<McpSession>& session);

    struct Sink;

private:
    std::shared_ptr<Sink> sink_;
};

}  // namespace agenthost::mcp
