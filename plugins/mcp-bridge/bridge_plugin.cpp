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
#include <set>
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
    // The host's calls now running on this server, newest last: a request the server makes
    // (sampling, elicitation) goes to the caller of the newest, and its progress to its caller.
    std::mutex calls_mutex;
    std::vector<std::string> calls;
    json capabilities = json::object();  // what it said it offers at initialize (under `mutex`)
};

// Keeps a call in its server's list while it runs.
class RunningCall {
public:
    RunningCall(Server& s, std::string id) : s_(s), id_(std::move(id)) {
        std::lock_guard lock(s_.calls_mutex);
        s_.calls.push_back(id_);
    }
    ~RunningCall() {
        std::lock_guard lock(s_.calls_mutex);
        std::erase(s_.calls, id_);
    }
    RunningCall(const RunningCall&) = delete;
    RunningCall& operator=(const RunningCall&) = delete;

private:
    Server& s_;
    std::string id_;
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
                Tool tool{s->name + "__" + sanitize(t.value("name", "")),
                          "[" + s->name + "] " + t.value("description", std::string()), schema, hints};
                tool.title = t.value("title", annotations.value("title", std::string()));
                if (t.contains("outputSchema") && t["outputSchema"].is_object()) tool.output_schema = t["outputSchema"];
                out.push_back(std::move(tool));
            }
        }
        return out;
    }

    // What the servers offer besides tools, reachable through the host (MCP clients, the panel):
    // their resources and templates as they are (named "[server] …"), their prompts named
    // "<server>__<prompt>", completion for both. Asked live, of the servers ready now.
    json resources(const Call&) override { return gather("resources", "resources/list", "resources", "name"); }
    json resource_templates(const Call&) override {
        return gather("resources", "resources/templates/list", "resourceTemplates", "name");
    }
    json prompts(const Call&) override { return gather("prompts", "prompts/list", "prompts", ""); }

    json read_resource(const Call&, const std::string& uri) override {
        for (auto& s : servers_)
            if (auto client = ready_client(*s, "resources")) {
                auto read = client->request("resources/read", {{"uri", uri}}, s->timeout_ms);
                if (read.ok && read.result.contains("contents")) return read.result;
            }
        return nullptr;
    }

    json get_prompt(const Call&, const std::string& name, const json& arguments) override {
        auto [server, original] = owner_of(name);
        auto client = server ? ready_client(*server, "prompts") : nullptr;
        if (!client) return nullptr;
        auto got = client->request("prompts/get", {{"name", original}, {"arguments", arguments}}, server->timeout_ms);
        return got.ok ? got.result : nullptr;
    }

    json complete(const Call&, const json& request) override {
        json ref = request.value("ref", json::object());
        std::vector<Server*> asked;
        if (ref.value("type", "") == "ref/prompt") {
            auto [server, original] = owner_of(ref.value("name", ""));
            if (!server) return nullptr;
            ref["name"] = original;
            asked.push_back(server);
        } else {
            for (auto& s : servers_) asked.push_back(s.get());
        }
        json forwarded = request;
        forwarded["ref"] = ref;
        for (Server* s : asked)
            if (auto client = ready_client(*s, "completions")) {
                auto done = client->request("completion/complete", forwarded, s->timeout_ms);
                if (done.ok && done.result.contains("completion")) return done.result["completion"];
            }
        return nullptr;
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
        // The call's id is its progress token: the server's progress reaches this call's caller.
        RunningCall running(*server, std::string(call.id));
        json params{{"name", tool}, {"arguments", call.arguments}, {"_meta", {{"progressToken", std::string(call.id)}}}};
        auto reply = client->request("tools/call", params, server->timeout_ms, [&] { return host().cancelled(call.cancel); });
        if (!reply.ok) {
            if (!client->running()) {
                // Stopped later, by the keeper: a question the server put to this call's caller
                // ends when this call does, and stopping joins it.
                std::lock_guard lock(server->mutex);
                if (server->client == client) crashed(*server, "it exited during a call", false);
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

    // The server's client when it is ready and offers `capability`; none while it (re)starts.
    static std::shared_ptr<bridge::Transport> ready_client(Server& s, const char* capability) {
        std::unique_lock lock(s.mutex, std::try_to_lock);
        if (!lock || !s.ready || !s.client || !s.client->running() || !s.capabilities.contains(capability)) return nullptr;
        return s.client;
    }

    // Each ready server's list (its first page) of `key` from `method`; entries renamed so that
    // people and the host tell the servers apart: `label` ("name") prefixed "[server] ", or, with
    // no label, the entry's name made "<server>__<name>" (prompts, called by that name).
    json gather(const char* capability, const char* method, const char* key, const char* label) {
        json all = json::array();
        for (auto& s : servers_) {
            auto client = ready_client(*s, capability);
            if (!client) continue;
            auto listed = client->request(method, json::object(), s->init_timeout_ms);
            if (!listed.ok) continue;
            for (auto entry : listed.result.value(key, json::array())) {
                if (!entry.is_object()) continue;
                if (*label)
                    entry[label] = "[" + s->name + "] " + entry.value(label, std::string());
                else
                    entry["name"] = s->name + "__" + entry.value("name", std::string());
                all.push_back(std::move(entry));
            }
        }
        return all;
    }

    // The server a prefixed name ("<server>__<name>") belongs to, and the name it knows.
    std::pair<Server*, std::string> owner_of(const std::string& full) {
        size_t split = full.find("__");
        if (split == std::string::npos) return {nullptr, ""};
        for (auto& s : servers_)
            if (s->name == full.substr(0, split)) return {s.get(), full.substr(split + 2)};
        return {nullptr, ""};
    }

    void crashed(Server& s, const std::string& why, bool stop_now = true) {
        {
            std::lock_guard lock(s.view_mutex);
            s.error = why;
        }
        s.ready = false;
        ++s.failures;
        s.retry_after = Clock::now() + std::chrono::milliseconds(std::min(10000, 200 << std::min(s.failures - 1, 6)));
        if (s.client && stop_now) s.client->stop();
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
        s.client->on_notification([this, server](const std::string& method, const json& params) {
            if (method == "notifications/progress") return pass_progress(*server, params);
            if (method != "notifications/tools/list_changed") return;
            server->stale = true;
            wake();
        });
        s.client->on_request(
            [this, server](const std::string& method, const json& params) { return answer(*server, method, params); });
        s.client->on_unreadable([this, server](const std::string& what) {
            host().warn("mcp-bridge: the server wrote something that is not JSON-RPC",
                        {{"server", server->name}, {"what", what}});
        });
        // What the bridge answers: sampling and elicitation go to whoever made the call (an MCP
        // client of the host that takes them); roots are the named folders.
        auto init = s.client->request(
            "initialize",
            {{"protocolVersion", kProtocolVersion},
             {"capabilities", {{"sampling", json::object()}, {"elicitation", json::object()}, {"roots", json::object()}}},
             {"clientInfo", {{"name", "agenthost-mcp-bridge"}, {"version", "1.0.0"}}}},
            s.init_timeout_ms, [this] { return stopping(); });
        if (!init.ok) {
            crashed(s, "initialize failed: " + init.error);
            return false;
        }
        s.capabilities = init.result.value("capabilities", json::object());
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

    // MCP content as the tool result's blocks (ABI 1.5): the host gives MCP clients the blocks
    // and the model their text; structured content and the error flag are kept.
    static ToolResult to_result(const json& result) {
        ToolResult r = ToolResult::of_blocks(result.value("content", json::array()));
        if (result.value("isError", false)) {
            r.body["is_error"] = true;
            r.body["error_code"] = "tool_failure";
        }
        if (result.contains("structuredContent")) r.body["structured"] = result["structuredContent"];
        return r;
    }

    // The server's progress on a call, to that call's caller (its token is the call's id).
    void pass_progress(Server& s, const json& params) {
        const json token = params.value("progressToken", json());
        if (!token.is_string() || !params.contains("progress") || !params["progress"].is_number()) return;
        {
            std::lock_guard lock(s.calls_mutex);
            if (std::find(s.calls.begin(), s.calls.end(), token.get<std::string>()) == s.calls.end()) return;
        }
        const json total = params.value("total", json(0));
        host().progress(token.get<std::string>(), params["progress"].get<double>(), total.is_number() ? total.get<double>() : 0,
                        params.value("message", std::string()));
    }

    // A request from a server: sampling and elicitation go to the host for its newest call, which
    // asks that call's caller (an MCP client of the host), the person (terminal, web panel) or its
    // own model under [sampling] policy, or refuses, saying why; roots are the named folders
    // (file:// URIs).
    json answer(Server& s, const std::string& method, const json& params) {
        auto refuse = [](int code, const std::string& message) {
            return json{{"error", {{"code", code}, {"message", message}}}};
        };
        if (method == "roots/list") return json{{"roots", named_folders()}};
        const bool sampling = method == "sampling/createMessage";
        if (!sampling && method != "elicitation/create") return refuse(-32601, "Method not found: " + method);
        std::string call_id;
        {
            std::lock_guard lock(s.calls_mutex);
            if (!s.calls.empty()) call_id = s.calls.back();
        }
        if (call_id.empty()) return refuse(-32603, "agenthost has no call of yours running to ask about");
        json result;
        ah_status status = sampling ? host().sample(call_id, params, result) : host().elicit(call_id, params, result);
        if (status == AH_OK) return result;
        // The host says why in words (no person to ask, [sampling] policy, a refusal …).
        std::string why = result.is_string() ? result.get<std::string>() : result.is_null() ? std::string() : result.dump();
        if (status == AH_ERR_UNSUPPORTED)
            return refuse(-32603, std::string(sampling ? "sampling" : "elicitation") + " is not available for this call" +
                                      (why.empty() ? std::string() : ": " + why));
        return refuse(-32603, "agenthost could not get an answer" + (why.empty() ? std::string() : ": " + why));
    }

    // The named folders of the folders plugin (long-term memory), as MCP roots.
    json named_folders() const {
        json roots = json::array();
        std::set<std::string> seen;
        for (const char* key : {"folder_presets", "folders"}) {
            auto folders = host().memory_get("", key);
            if (!folders || !folders->is_object()) continue;
            for (const auto& [name, path] : folders->items())
                if (path.is_string() && seen.insert(name).second)
                    roots.push_back({{"uri", "file://" + path.get<std::string>()}, {"name", name}});
        }
        return roots;
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
