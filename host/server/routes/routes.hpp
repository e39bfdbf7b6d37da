// The server's routes, one file per front end, each adding its routes to the core. They share
// the host, the server's runs (RunHub) and the Idempotency-Key memory through ServerState.
#pragma once

#include "app/host_app.hpp"
#include "server/idempotency.hpp"
#include "server/run_hub.hpp"
#include "server/server_core.hpp"

#include <memory>
#include <optional>

namespace agenthost::server {

struct ServerState {
    explicit ServerState(app::HostApp& a)
        : app(a),
          settings(a.config().server),
          hub(a, a.config().server),
          idempotency(a.storage().idempotency_keys() ? *a.storage().idempotency_keys() : local_keys) {}
    app::HostApp& app;
    const config::ServerSettings& settings;
    RunHub hub;
    IdempotencyKeys local_keys;           // one host's keys, in memory …
    store::IdempotencyKeys& idempotency;  // … or the store's, which every host shares
};

// Conversation `id` as listed, or nothing after answering 404 conversation_not_found. Every route
// that reads a conversation asks here, so none answers an unknown one with 200 or another code.
std::optional<store::ConversationSummary> known_conversation(ServerState& state, const std::string& id, Response& res);

void add_status_routes(ServerCore& core, ServerState& state);      // health, readiness, metrics, plugins, resources
void add_openai_routes(ServerCore& core, ServerState& state);      // /v1/models, /v1/chat/completions
void add_chat_routes(ServerCore& core, ServerState& state);        // the SSE chat API (/api/chat)
void add_run_routes(ServerCore& core, ServerState& state);         // conversations and runs (/api/conversations, /api/runs)
void add_memory_routes(ServerCore& core, ServerState& state);      // /memory
void add_panel_routes(ServerCore& core, ServerState& state);       // the web panel's files (/, /panel/)
void add_attachment_routes(ServerCore& core, ServerState& state);  // files attached in the panel (/api/attachments)

// MCP over Streamable HTTP (/mcp). Its sessions live as long as this object, which must outlive
// the core's serving.
class McpRoutes {
public:
    McpRoutes(ServerCore& core, app::HostApp& app);
    ~McpRoutes();
    McpRoutes(const McpRoutes&) = delete;
    McpRoutes& operator=(const McpRoutes&) = delete;

    void close_sessions();  // ends every session and its listening stream (shutdown)

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace agenthost::server
