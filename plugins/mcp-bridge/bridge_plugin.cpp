// mcp-bridge: the tools of MCP servers as tools of the host. Each configured server is started as
// a child process (stdio transport) or reached at a URL (Streamable HTTP), initialized, and its tools listed as
// "<server>__<tool>" with their annotations mapped to hint flags. Each server has a thread of its own that starts it,
// restarts it (with backoff) and lists its tools again, so a slow or dead server delays no other and no command for
// longer than startup_wait_ms; a server that comes up later is announced (tools_changed). A call to a server that just
// exited restarts it for that call; a call that does not answer in time fails with a clear error; cancellation is
// forwarded.
#include "http_client.hpp"
#include "stdio_client.hpp"

#include <agenthost/plugin.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace {

using agenthost::sdk::Call;
using agenthost::sdk::Tool;
using agenthost::sdk::ToolResult;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The MCP version the bridge asks for, and those it accepts when a server answers with another.
constexpr const char* kProtocolVersion = "2025-11-25";
constexpr const char* kKnownVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
// A call to a server whose restart is due within this waits for it instead of failing.
constexpr auto kRestartWaitForCall = std::chrono::milliseconds(1000);

struct Server {
    std::string name, command;
    std::vector<std::string> args;
    json env = json::object();
    std::string url;                // set for a remote server (Streamable HTTP)
    json headers = json::object();  // sent with every request to it (e.g. Authorization)
    int timeout_ms = 60000;
    int init_timeout_ms = 15000;                // initialize and tools/list
    std::shared_ptr<bridge::Transport> client;  // calls hold their own reference
    std::thread keeper;                         // starts, restarts and relists this server (keep())
    std::atomic<bool> settled{false};           // the first start has succeeded or failed
    std::atomic<bool> ready{false};             // initialized and listed: its tools can be called
    // `mutex` serialises starts and restarts (which can take seconds); `view_mutex` guards what the
    // host reads at any time without waiting for them: the tools and the error. Writers hold both.
    std::mutex view_mutex;
    std::vector<json> tools;         // as the server listed them
    std::string error;               // why it is not available
    std::atomic<bool> stale{false};  // the server said its tools changed
    int failures = 0;                // consecutive start failures or crashes, for the backoff
    Clock::time_point retry_after{};
    std::mutex mutex;  // one start or restart at a time
};

class BridgePlugin : public agenthost::sdk::ToolPlugin {
public:
    explicit BridgePlugin(agenthost::sdk::Host host) : ToolPlugin(host) {
        json cfg = host.config();
        for (const auto& s : cfg.value("servers", json::array())) {
            if (!s.is_object() || !s.contains("name") || s.contains("command") == s.contains("url")) {
                host.warn("mcp-bridge: a server entry needs \"name\" and either \"command\" (stdio) or \"url\" (HTTP)",
                          {{"entry", s}});
                continue;
            }
            auto server = std::make_unique<Server>();
            server->name = s["name"];
            server->command = s.value("command", "");
            server->args = s.value("args", std::vector<std::string>{});
            server->env = s.value("env", json::object());
            server->url = s.value("url", "");
            server->headers = s.value("headers", json::object());
            server->timeout_ms = s.value("timeout_ms", 60000);
            server->init_timeout_ms = s.value("init_timeout_ms", 15000);
            servers_.push_back(std::move(server));
        }
        // All start at once; the host waits for them up to startup_wait_ms, then goes on with
        // those that answered. The others' tools appear when they do.
        for (auto& server : servers_) server->keeper = std::thread([this, s = server.get()] { keep(*s); });
        const auto wait = std::chrono::milliseconds(cfg.value("startup_wait_ms", 5000));
        {
            std::unique_lock lock(upkeep_mutex_);
            upkeep_wake_.wait_for(lock, wait, [&] {
                return std::all_of(servers_.begin(), servers_.end(), [](const auto& s) { return s->settled.load(); });
            });
        }
        for (const auto& s : servers_) {
            std::lock_guard lock(s->view_mutex);
            if (!s->settled)
                host.warn("mcp-bridge: server still starting; its tools appear when it answers",
                          {{"server", s->name}, {"waited_ms", wait.count()}});
            else if (!s->error.empty())
                host.warn("mcp-bridge: server not available", {{"server", s->name}, {"cause", s->error}});
        }
        announce_ = true;
    }

    ~BridgePlugin() override {
        {
            std::lock_guard lock(upkeep_mutex_);
            stopping_ = true;
            upkeep_wake_.notify_all();
        }
        for (auto& s : servers_) s->keeper.join();
        for (auto& s : servers_)
            if (s->client) s->client->stop();
    }

    // doctor: each configured server is up and listed its tools, or why not.
    std::vector<json> health(const Call&) override {
        std::vector<json> checks;
        for (const auto& s : servers_) {
            std::lock_guard lock(s->view_mutex);
            const std::string where = s->url.empty() ? s->command : s->url;
            const std::string state = s->ready ? std::to_string(s->tools.size()) + " tools from " + where
                                      : s->settled
                                          ? "not available (" + where + "): " + s->error
                                          : "still starting (" + where + "): no answer to initialize yet (init_timeout_ms " +
                                                std::to_string(s->init_timeout_ms) + ")";
            checks.push_back(agenthost::sdk::health_check("MCP server " + s->name, s->ready, state));
        }
        return checks;
    }

    std::vector<Tool> tools() override {
        std::vector<Tool> out;
        for (const auto& s : servers_) {
            std::lock_guard lock(s->view_mutex);
            for (const auto& t : s->tools) {
                json annotations = t.value("annotations", json::object());
                uint32_t hints = 0;
                if (annotations.value("readOnlyHint", false)) hints |= AH_TOOL_READ_ONLY;
                if (annotations.value("destructiveHint", false)) hints |= AH_TOOL_DESTRUCTIVE;
                if (annotations.value("idempotentHint", false)) hints |= AH_TOOL_IDEMPOTENT;
                if (annotations.value("openWorldHint", false)) hints |= AH_TOOL_OPEN_WORLD;
                json schema = t.value("inputSchema", json{{"type", "object"}});
                out.push_back({s->name + "__" + sanitize(t.value("name", "")),
                               "[" + s->name + "] " + t.value("description", std::string()), schema, hints});
            }
        }
        return out;
    }

    std::string context(const Call&) override {
        std::string down;
        for (const auto& s : servers_) {
            std::lock_guard lock(s->view_mutex);
            if (!s->error.empty()) down += (down.empty() ? "" : "; ") + s->name + ": " + s->error;
        }
        return down.empty() ? "" : "MCP servers not available now: " + down + ".";
    }

    ToolResult call(const Call& call) override {
        std::string full(call.tool);
        size_t split = full.find("__");
        Server* server = nullptr;
        for (auto& s : servers_)
            if (split != std::string::npos && s->name == full.substr(0, split)) server = s.get();
        if (!server) return ToolResult::error("unknown_tool", "no MCP server owns " + full);
        std::string tool = original_name(*server, full.substr(split + 2));
        std::shared_ptr<bridge::Transport> client;  // this call's, even if a restart replaces the server's
        {
            std::unique_lock lock(server->mutex);
            if (!server->client || !server->client->running()) {
                // A server that just exited is restarted for this call: its first backoffs are short.
                auto due = server->retry_after - Clock::now();
                if (due > kRestartWaitForCall)
                    return ToolResult::error(
                        "server_unavailable",
                        "the MCP server " + server->name + " is not running (" + server->error + "); the next try is in " +
                            std::to_string(std::chrono::duration_cast<std::chrono::seconds>(due).count() + 1) + " s");
                if (due > Clock::duration::zero()) {
                    lock.unlock();
                    for (auto until = Clock::now() + due; Clock::now() < until;) {
                        if (host().cancelled(call.cancel)) return ToolResult::error("cancelled", "cancelled");
                        std::this_thread::sleep_for(std::chrono::milliseconds(20));
                    }
                    lock.lock();
                }
                if (!server->client || !server->client->running()) {
                    if (!connect(*server))
                        return ToolResult::error("server_unavailable",
                                                 "the MCP server " + server->name + " could not be restarted: " + server->error);
                    host().info("mcp-bridge: server restarted", {{"server", server->name}});
                }
            }
            client = server->client;
        }
        auto reply = client->request("tools/call", {{"name", tool}, {"arguments", call.arguments}}, server->timeout_ms,
                                     [&] { return host().cancelled(call.cancel); });
        if (!reply.ok) {
            if (!client->running()) {
                std::lock_guard lock(server->mutex);
                if (server->client == client) crashed(*server, "it exited during a call");
                host().warn("mcp-bridge: server exited during a call", {{"server", server->name}, {"tool", tool}});
            }
            std::string code = reply.cancelled ? "cancelled" : reply.timed_out ? "timeout" : "plugin_failure";
            return ToolResult::error(code, server->name + "/" + tool + " failed: " + reply.error);
        }
        return to_result(reply.result);
    }

private:
    static std::string sanitize(const std::string& name) {
        std::string out;
        for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
        return out.substr(0, 64 - 2 - 16);
    }

    std::string original_name(Server& s, const std::string& exposed) {
        std::lock_guard lock(s.view_mutex);
        for (const auto& t : s.tools)
            if (sanitize(t.value("name", "")) == exposed) return t["name"];
        return exposed;
    }

    void crashed(Server& s, const std::string& why) {
        {
            std::lock_guard lock(s.view_mutex);
            s.error = why;
        }
        s.ready = false;
        ++s.failures;
        s.retry_after = Clock::now() + std::chrono::milliseconds(std::min(10000, 200 << std::min(s.failures - 1, 6)));
        if (s.client) s.client->stop();
    }

    // Starts the server and lists its tools (the caller holds s.mutex).
    bool connect(Server& s) {
        if (s.client) s.client->stop();
        if (!s.url.empty()) {
            s.client = std::make_unique<bridge::HttpClient>(host(), s.url, s.headers);
        } else {
            auto stdio = std::make_unique<bridge::StdioClient>();
            std::string error;
            if (!stdio->start(s.command, s.args, s.env, error)) {
                s.client = std::move(stdio);
                crashed(s, "cannot start " + s.command + ": " + error);
                return false;
            }
            s.client = std::move(stdio);
        }
        Server* server = &s;
        s.client->on_notification([this, server](const std::string& method) {
            if (method != "notifications/tools/list_changed") return;
            server->stale = true;
            wake();
        });
        s.client->on_unreadable([this, server](const std::string& what) {
            host().warn("mcp-bridge: the server wrote something that is not JSON-RPC",
                        {{"server", server->name}, {"what", what}});
        });
        auto init = s.client->request("initialize",
                                      {{"protocolVersion", kProtocolVersion},
                                       {"capabilities", json::object()},
                                       {"clientInfo", {{"name", "agenthost-mcp-bridge"}, {"version", "1.0.0"}}}},
                                      s.init_timeout_ms, [this] { return stopping(); });
        if (!init.ok) {
            crashed(s, "initialize failed: " + init.error);
            return false;
        }
        const std::string version = init.result.value("protocolVersion", "");
        if (std::find(std::begin(kKnownVersions), std::end(kKnownVersions), version) == std::end(kKnownVersions)) {
            crashed(s, "it speaks MCP version '" + version + "', which the bridge does not (it speaks 2024-11-05 to " +
                           kProtocolVersion + ")");
            return false;
        }
        s.client->notify("notifications/initialized", json::object());
        if (!relist(s)) return false;
        {
            std::lock_guard lock(s.view_mutex);
            s.error.clear();
        }
        s.ready = true;
        s.failures = 0;
        return true;
    }

    // Lists the server's tools (all pages; the caller holds s.mutex) and tells the host when the
    // list is not the one it had. False, with the server marked failed, when listing fails.
    bool relist(Server& s) {
        std::vector<json> tools;
        json cursor;
        do {
            json params = cursor.is_null() ? json::object() : json{{"cursor", cursor}};
            auto listed = s.client->request("tools/list", params, s.init_timeout_ms, [this] { return stopping(); });
            if (!listed.ok) {
                crashed(s, "tools/list failed: " + listed.error);
                return false;
            }
            for (const auto& t : listed.result.value("tools", json::array())) tools.push_back(t);
            cursor = listed.result.value("nextCursor", json());
        } while (!cursor.is_null());
        bool changed;
        {
            std::lock_guard lock(s.view_mutex);
            changed = tools != s.tools;
            s.tools = std::move(tools);
        }
        if (changed && announce_) {
            host().info("mcp-bridge: tools changed", {{"server", s.name}});
            host().tools_changed();
        }
        return true;
    }

    // One server's background work: its first start, then listing again what said it changed and
    // bringing it back once its backoff has passed. Each server has its own, so none waits for another.
    void keep(Server& s) {
        {
            std::lock_guard guard(s.mutex);
            // One that fails after the host stopped waiting is logged here (the others are warned of at start).
            if (!connect(s) && announce_)
                host().warn("mcp-bridge: server not available", {{"server", s.name}, {"cause", s.error}});
        }
        {
            std::lock_guard lock(upkeep_mutex_);
            s.settled = true;
            upkeep_wake_.notify_all();
        }
        std::unique_lock lock(upkeep_mutex_);
        while (!stopping_) {
            upkeep_wake_.wait_for(lock, std::chrono::milliseconds(250), [&] { return stopping_ || s.stale.load(); });
            if (stopping_) return;
            lock.unlock();
            {
                std::lock_guard guard(s.mutex);
                bool up = s.client && s.client->running();
                if (!up) s.ready = false;
                if (up && s.stale.exchange(false))
                    relist(s);
                else if (!up && Clock::now() >= s.retry_after && connect(s))
                    host().info("mcp-bridge: server available", {{"server", s.name}});
            }
            lock.lock();
        }
    }

    void wake() {
        std::lock_guard lock(upkeep_mutex_);
        upkeep_wake_.notify_all();
    }

    bool stopping() {
        std::lock_guard lock(upkeep_mutex_);
        return stopping_;
    }

    // MCP content → the text the model reads, plus structured content and the error flag.
    static ToolResult to_result(const json& result) {
        std::string text;
        for (const auto& item : result.value("content", json::array())) {
            std::string type = item.value("type", "");
            std::string piece;
            if (type == "text")
                piece = item.value("text", "");
            else if (type == "image" || type == "audio")
                piece = "[" + type + ": " + item.value("mimeType", "unknown type") + ", " +
                        std::to_string(item.value("data", "").size() * 3 / 4) + " bytes]";
            else if (type == "resource_link")
                piece = "[resource: " + item.value("uri", "") + "]";
            else if (type == "resource") {
                const json& r = item.value("resource", json::object());
                piece = r.contains("text") ? r.value("text", "") : "[resource: " + r.value("uri", "") + "]";
            }
            text += (text.empty() ? "" : "\n") + piece;
        }
        ToolResult r = result.value("isError", false) ? ToolResult::error("tool_failure", text) : ToolResult::ok(text);
        if (result.contains("structuredContent")) r.body["structured"] = result["structuredContent"];
        return r;
    }

    std::vector<std::unique_ptr<Server>> servers_;
    std::mutex upkeep_mutex_;
    std::condition_variable upkeep_wake_;  // a server settled or said its tools changed, or the plugin stops
    bool stopping_ = false;
    std::atomic<bool> announce_{false};  // tools_changed only after create(): the host lists them then anyway
};

}  // namespace

// Thread-safe: each server's client matches replies by id; starts are serialised per server.
AGENTHOST_PLUGIN(BridgePlugin, "mcp_bridge", "1.0.0", AH_PLUGIN_THREAD_SAFE)
