#include "mcp/mcp_server.hpp"

#include "common/bounded_json.hpp"
#include "app/memory_report.hpp"
#include "common/ids.hpp"
#include "mcp/prompts.hpp"
#include "tools/policy.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <iostream>

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace agenthost::mcp {
namespace {

using nlohmann::json;

constexpr const char* kVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};  // negotiated at initialize
constexpr const char* kModernVersion = "2026-07-28";  // stateless: named in every request's _meta
constexpr const char* kBatchVersion = "2025-03-26";   // the one version with JSON-RPC batches
constexpr size_t kPageSize = 50;
// One JSON-RPC message, over stdio or HTTP: refused unparsed beyond these.
constexpr json_io::Limits kMessageLimits{kMaxMessageBytes, 64, kMaxMessageValues};

using json_io::dump;

json error_response(const json& id, int code, const std::string& message) {
    return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

json result_response(const json& id, json result) { return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}; }

// A tool result as MCP content: its content blocks (ABI 1.5), else the text the model would
// read; structuredContent, isError.
json to_call_result(const json& result) {
    json blocks;
    if (result.contains("blocks") && result["blocks"].is_array() && !result["blocks"].empty()) {
        blocks = result["blocks"];  // checked by the invoker
    } else {
        const json& content = result.contains("content") ? result["content"] : result;
        std::string text = content.is_string() ? content.get<std::string>() : dump(content);
        blocks = json::array({{{"type", "text"}, {"text", text}}});
    }
    json out{{"content", std::move(blocks)}, {"isError", json_io::get_bool(result, "is_error", false)}};
    if (result.contains("structured") && result["structured"].is_object()) out["structuredContent"] = result["structured"];
    return out;
}

json tool_error(const std::string& text) {
    return {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", true}};
}

}  // namespace

std::string McpServer::tools_list_changed() { return dump({{"jsonrpc", "2.0"}, {"method", "notifications/tools/list_changed"}}); }

std::string McpServer::resource_updated(const std::string& uri) {
    return dump({{"jsonrpc", "2.0"}, {"method", "notifications/resources/updated"}, {"params", {{"uri", uri}}}});
}

json resource_list(app::HostApp& app) {
    json list = json::array({{{"uri", "memory://facts"},
                              {"name", "facts"},
                              {"description", "The agent's long-term facts"},
                              {"mimeType", "application/json"}}});
    plugins::CallInput input;
    json listed = json::parse(app.registry().resources(input), nullptr, false);
    if (!listed.is_array()) return list;
    for (auto& r : listed) {
        r.erase("plugin");
        list.push_back(std::move(r));
    }
    return list;
}

std::optional<json> resource_read(app::HostApp& app, const std::string& uri) {
    if (uri.rfind(kConversationMemoryPrefix, 0) == 0) {  // memory://conversations/{conversation}
        std::string id = uri.substr(std::string_view(kConversationMemoryPrefix).size());
        auto known = app.runs().conversation(id);
        if (id.empty() || !known || !*known) return std::nullopt;
        return json{{"contents", json::array({{{"uri", uri},
                                               {"mimeType", "application/json"},
                                               {"text", dump(app::conversation_memory(app.memory(), id))}}})}};
    }
    if (uri != "memory://facts") {
        plugins::CallInput input;
        auto contents = app.registry().read_resource(uri, input);
        if (!contents) return std::nullopt;
        json parsed = json::parse(*contents, nullptr, false);
        if (!parsed.is_object()) return std::nullopt;
        return parsed;
    }
    json facts = json::array();
    for (const auto& f : app.memory().recall_facts("", 10000)) facts.push_back({{"id", f.id}, {"text", f.text}});
    return json{{"contents", json::array({{{"uri", uri}, {"mimeType", "application/json"}, {"text", dump(facts)}}})}};
}

namespace {

// Where an MCP client's calls come from: plugin tools only. The person at the client can be asked
// for an approval when the client takes elicitation and the request can carry a question.
tools::CallSite mcp_call_site(app::HostApp& app, McpSession& session, bool can_send) {
    tools::CallSite site;
    site.scope = tools::Scope::plugins_only;
    site.can_ask = can_send && session.client_can("elicitation");
    site.approval_waived = app.config().mcp.allow_destructive;
    return site;
}

// What this server offers, the same at initialize and server/discover.
json server_capabilities() {
    return {{"tools", {{"listChanged", true}}},
            {"resources", {{"listChanged", false}, {"subscribe", true}}},
            {"prompts", {{"listChanged", false}}},
            {"completions", json::object()},
            {"logging", json::object()}};
}

bool legacy_version(const std::string& version) {
    for (const char* v : kVersions)
        if (version == v) return true;
    return false;
}

bool is_modern(const json& params) {
    if (!params.is_object() || !params.contains("_meta") || !params["_meta"].is_object()) return false;
    const json& meta = params["_meta"];
    auto it = meta.find("io.modelcontextprotocol/protocolVersion");
    return it != meta.end() && it->is_string() && it->get<std::string>() == kModernVersion;
}

// What the 2026-07-28 era asks of every complete result.
void stamp_modern(const std::string& method, json& result) {
    if (!result.is_object()) return;
    result["resultType"] = "complete";
    static const char* cacheable[] = {"tools/list", "resources/list", "resources/read", "server/discover"};
    for (const char* m : cacheable)
        if (method == m) {
            // Tools change rarely (a plugin's tools_changed), and a sessionless client hears of it
            // only through this hint: a minute. Resources (graphs, facts) change with every turn.
            result["ttlMs"] = method == "tools/list" || method == "server/discover" ? 60000 : 0;
            result["cacheScope"] = "private";
        }
    if (!result.contains("_meta") || !result["_meta"].is_object()) result["_meta"] = json::object();
    result["_meta"]["io.modelcontextprotocol/serverInfo"] = {{"name", "agenthost"}, {"version", AGENTHOST_VERSION}};
}

// What a plugin may say to the client while its call runs: progress (when asked for), and
// requests for sampling and elicitation (when the client takes them). Captured by value: a plugin
// thread may still hold the channel as the call ends.
std::shared_ptr<plugins::CallChannel> caller_channel(const Send& notify, McpSession& client, const json& token,
                                                     const std::shared_ptr<ah_cancel>& cancel,
                                                     const std::shared_ptr<std::atomic<bool>>& ended) {
    auto channel = std::make_shared<plugins::CallChannel>();
    std::shared_ptr<McpSession> session = client.weak_from_this().lock();  // none for a session not held by shared_ptr
    if (!token.is_null() && notify)
        channel->progress = [notify, token](double progress, double total, const std::string& message) {
            json note{{"progressToken", token}, {"progress", progress}};
            if (total > 0) note["total"] = total;
            if (!message.empty()) note["message"] = message;
            notify(dump({{"jsonrpc", "2.0"}, {"method", "notifications/progress"}, {"params", note}}));
        };
    channel->ask = [notify, session, cancel, ended](plugins::CallerRequest request,
                                                    const json& request_params) -> plugins::CallerAnswer {
        const auto& info = plugins::caller_request(request);
        if (!notify || !session)
            return {AH_ERR_UNSUPPORTED,
                    "this request cannot carry a question to the client: it accepts no event stream "
                    "(send Accept: application/json, text/event-stream)"};
        if (session->protocol_version.empty())
            return {AH_ERR_UNSUPPORTED,
                    "the client speaks MCP 2026-07-28, in which agenthost cannot ask it questions yet "
                    "(a session of 2025-11-25 or earlier can)"};
        if (!session->client_can(info.capability))
            return {AH_ERR_UNSUPPORTED, "the MCP client does not take " + std::string(info.method)};
        return session->ask(info.method, request_params, notify, info.wait,
                            [cancel, ended] { return cancel->cancelled() || ended->load(); });
    };
    return channel;
}

}  // namespace

bool McpServer::supported_version(const std::string& version) { return legacy_version(version) || version == kModernVersion; }

LineRead LineReader::next(std::string& line, const std::atomic<bool>* stop) {
    line.clear();
    bool too_long = false;
    for (;;) {
        if (size_t nl = buffer_.find('\n'); nl != std::string::npos) {
            too_long = too_long || nl > max_bytes_;
            if (!too_long) line.assign(buffer_, 0, nl);
            buffer_.erase(0, nl + 1);
            return too_long ? LineRead::too_long : LineRead::line;
        }
        if (buffer_.size() > max_bytes_ || too_long) {  // keep nothing of an over-long line
            too_long = true;
            buffer_.clear();
        }
        if (eof_) {
            if (too_long) return LineRead::too_long;
            if (buffer_.empty()) return LineRead::end;
            line = std::move(buffer_);  // a last line without '\n'
            buffer_.clear();
            return LineRead::line;
        }
        if (stop && stop->load()) return LineRead::end;
        pollfd p{fd_, POLLIN, 0};
        int ready = ::poll(&p, 1, 200);
        if (ready < 0 && errno != EINTR) {
            eof_ = true;
            continue;
        }
        if (ready <= 0) continue;
        char chunk[64 << 10];
        ssize_t n = ::read(fd_, chunk, sizeof chunk);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) {
            eof_ = true;
            continue;
        }
        buffer_.append(chunk, static_cast<size_t>(n));
    }
}

std::optional<std::string> McpServer::handle(const std::string& text, McpSession& session, const Send& notify) {
    auto parsed = json_io::parse(text, kMessageLimits);
    if (!parsed) return dump(error_response(nullptr, -32700, "Parse error: " + parsed.error().message));
    if (parsed->is_array()) return handle_batch(*parsed, session, notify);
    return handle_message(*parsed, session, notify);
}

// JSON-RPC batches, which MCP had in 2025-03-26 only: each message answered as if sent alone, the
// responses in one array (nothing when all were notifications). initialize is never batched.
std::optional<std::string> McpServer::handle_batch(json& batch, McpSession& session, const Send& notify) {
    if (session.protocol_version != kBatchVersion)
        return dump(error_response(nullptr, -32600,
                                   "Invalid Request: batches are part of MCP " + std::string(kBatchVersion) + " only; this " +
                                       (session.protocol_version.empty() ? std::string("client has not initialized")
                                                                         : "session speaks " + session.protocol_version) +
                                       " (send each message alone)"));
    if (batch.empty()) return dump(error_response(nullptr, -32600, "Invalid Request: an empty batch"));
    std::string replies;
    for (json& message : batch) {
        std::optional<std::string> reply;
        if (message.is_object() && json_io::get_string(message, "method") == "initialize")
            reply = dump(
                error_response(message.value("id", json()), -32600, "Invalid Request: initialize may not be part of a batch"));
        else
            reply = handle_message(message, session, notify);
        if (reply) replies += (replies.empty() ? "[" : ",") + *reply;
    }
    if (replies.empty()) return std::nullopt;
    return replies + "]";
}

std::optional<std::string> McpServer::handle_message(json& message, McpSession& session, const Send& notify) {
    if (!message.is_object()) return dump(error_response(nullptr, -32600, "Invalid Request: a message is a JSON object"));
    // MCP narrows JSON-RPC: a request id is a string or an integer, never null.
    const bool is_request = message.contains("id");
    json id = is_request ? message["id"] : json();
    if (is_request && !(id.is_string() || id.is_number_integer()))
        return dump(
            error_response(nullptr, -32600, "Invalid Request: \"id\" must be a string or an integer (MCP allows no null id)"));
    if (message.contains("result") || message.contains("error")) {  // the client's answer to a request of ours
        session.answered(message);
        return std::nullopt;
    }
    if (json_io::get_string(message, "jsonrpc") != "2.0")
        return is_request
                   ? std::optional<std::string>(dump(error_response(id, -32600, "Invalid Request: \"jsonrpc\" must be \"2.0\"")))
                   : std::nullopt;
    if (!message.contains("method") || !message["method"].is_string())
        return is_request
                   ? std::optional<std::string>(dump(error_response(id, -32600, "Invalid Request: \"method\" must be a string")))
                   : std::nullopt;
    const std::string method = message["method"];
    if (message.contains("params") && !message["params"].is_object() && !message["params"].is_null())
        return is_request
                   ? std::optional<std::string>(dump(error_response(id, -32602, "Invalid params: \"params\" must be an object")))
                   : std::nullopt;
    const json params = message.contains("params") && message["params"].is_object() ? message["params"] : json::object();

    if (!is_request) {  // notifications
        if (method == "notifications/initialized") session.initialized = true;
        if (method == "notifications/cancelled" && params.contains("requestId")) session.cancel(dump(params["requestId"]));
        return std::nullopt;
    }
    // The stateless 2026-07-28 era: every request carries its version in _meta; no initialize, no
    // session. Results then carry resultType, cache hints for cacheable methods, and serverInfo.
    const bool modern = is_modern(params);
    static const Method kMethods[] = {
        {"server/discover", &McpServer::discover, false, true},
        {"initialize", &McpServer::initialize, false, false},
        {"ping", &McpServer::ping, false, true},
        {"tools/list", &McpServer::list_tools, true, true},
        {"tools/call", &McpServer::call_tool, true, true},
        {"resources/list", &McpServer::list_resources, true, true},
        {"resources/read", &McpServer::read_resource, true, true},
        {"resources/templates/list", &McpServer::list_resource_templates, true, true},
        {"resources/subscribe", &McpServer::subscribe, true, false},
        {"resources/unsubscribe", &McpServer::unsubscribe, true, false},
        {"prompts/list", &McpServer::list_prompts, true, true},
        {"prompts/get", &McpServer::get_prompt, true, true},
        {"completion/complete", &McpServer::complete, true, true},
        {"logging/setLevel", &McpServer::set_log_level, true, false},
    };
    const Method* row = std::find_if(std::begin(kMethods), std::end(kMethods), [&](const Method& m) { return m.name == method; });
    if (row == std::end(kMethods)) return dump(error_response(id, -32601, "Method not found: " + method));
    if (row->needs_session && session.protocol_version.empty() && !modern)
        return dump(error_response(id, -32002, "Server not initialized: send initialize first"));
    auto response = (this->*(row->handler))(Request{id, params, session, notify});
    if (!response) return std::nullopt;
    if (row->stamped && modern && response->contains("result")) stamp_modern(method, (*response)["result"]);
    return dump(*response);
}

std::optional<json> McpServer::discover(const Request& r) {
    return result_response(
        r.id, {{"supportedVersions", {kModernVersion}}, {"capabilities", server_capabilities()}, {"resultType", "complete"}});
}

std::optional<json> McpServer::initialize(const Request& r) {
    std::string asked = json_io::get_string(r.params, "protocolVersion");
    r.session.protocol_version = legacy_version(asked) ? asked : kVersions[0];
    r.session.set_client_capabilities(r.params.contains("capabilities") ? r.params["capabilities"] : json());
    return result_response(
        r.id, {{"protocolVersion", r.session.protocol_version},
               {"capabilities", server_capabilities()},
               {"serverInfo", {{"name", "agenthost"}, {"version", AGENTHOST_VERSION}}},
               {"instructions",
                "Tools, resources and prompts of the agenthost plugins. A call that needs a person's approval "
                "(destructive ones) is asked of you by elicitation when this client supports it; otherwise such tools "
                "are offered only when the operator sets [mcp] allow_destructive = true."}});
}

std::optional<json> McpServer::ping(const Request& r) { return result_response(r.id, json::object()); }

std::optional<json> McpServer::list_tools(const Request& r) {
    size_t start = 0;
    if (r.params.contains("cursor")) {
        std::string cursor = r.params["cursor"].is_string() ? r.params["cursor"].get<std::string>() : "";
        // Only a cursor this server gave out: digits alone (no sign, no space), within the list.
        auto [end, failed] = std::from_chars(cursor.data(), cursor.data() + cursor.size(), start);
        if (cursor.empty() || failed != std::errc() || end != cursor.data() + cursor.size())
            return error_response(r.id, -32602, "Invalid params: unknown cursor");
    }
    // Only what an MCP client may call: a tool that needs a person's approval (destructive ones,
    // unless [mcp] allow_destructive) is refused to it, so it is not offered either. The same
    // decision as tools/call's, asked of each tool.
    std::vector<tools::Tool> tools;
    for (auto& t : app_.catalogue().all(tools::Scope::plugins_only))
        if (tools::decide(app_.catalogue(), t, t.name, json::object(), mcp_call_site(app_, r.session, true)).kind !=
            tools::Verdict::Kind::refuse)
            tools.push_back(std::move(t));
    if (start > tools.size()) return error_response(r.id, -32602, "Invalid params: unknown cursor");
    json list = json::array();
    for (size_t i = start; i < tools.size() && i < start + kPageSize; ++i) {
        const auto& t = tools[i];
        // Checked at registration (an object schema); MCP clients also insist on "type": "object".
        json schema = json::parse(t.input_schema_json, nullptr, false);
        if (!schema.is_object()) schema = json::object();
        schema["type"] = "object";
        json entry{{"name", t.name},
                   {"description", t.description},
                   {"inputSchema", schema},
                   {"annotations",
                    {{"readOnlyHint", (t.hints & AH_TOOL_READ_ONLY) != 0},
                     {"destructiveHint", (t.hints & AH_TOOL_DESTRUCTIVE) != 0},
                     {"idempotentHint", (t.hints & AH_TOOL_IDEMPOTENT) != 0},
                     {"openWorldHint", (t.hints & AH_TOOL_OPEN_WORLD) != 0}}}};
        if (!t.title.empty()) entry["title"] = t.title;
        if (json output = json::parse(t.output_schema_json, nullptr, false); output.is_object()) {
            output["type"] = "object";
            entry["outputSchema"] = std::move(output);
        }
        list.push_back(std::move(entry));
    }
    json result{{"tools", list}};
    if (start + kPageSize < tools.size()) result["nextCursor"] = std::to_string(start + kPageSize);
    return result_response(r.id, result);
}

std::optional<json> McpServer::call_tool(const Request& r) {
    const json& params = r.params;
    if (!params.contains("name") || !params["name"].is_string())
        return error_response(r.id, -32602, "Invalid params: tools/call needs \"name\", a string");
    const std::string name = params["name"];
    json args = params.contains("arguments") && !params["arguments"].is_null() ? params["arguments"] : json::object();
    std::optional<tools::Tool> tool = app_.catalogue().find(name, tools::Scope::plugins_only);
    tools::Verdict verdict =
        tools::decide(app_.catalogue(), tool, name, args, mcp_call_site(app_, r.session, r.notify != nullptr));
    if (verdict.kind == tools::Verdict::Kind::refuse) {
        if (verdict.why == tools::Refused::unknown_tool) return error_response(r.id, -32602, "Unknown tool: " + name);
        if (verdict.why == tools::Refused::needs_approval && !r.notify && r.session.client_can("elicitation"))
            verdict.message +=
                " It would be asked of you by elicitation if this request accepted an event stream "
                "(Accept: application/json, text/event-stream).";
        return result_response(r.id, tool_error(verdict.message));
    }
    if (auto invalid = app_.invoker().check_arguments(*tool, args)) return result_response(r.id, to_call_result(*invalid));
    const bool approved = verdict.kind == tools::Verdict::Kind::ask;
    if (approved) {
        if (auto refused = ask_approval(r, name, args, verdict.message)) return result_response(r.id, *refused);
    }
    std::string key = dump(r.id);
    auto cancel = r.session.start_call(key, tool->plugin, r.notify);
    tools::Invocation invocation;
    invocation.call_id = "mcp-" + r.session.id + "-" + key;
    invocation.conversation_id = "mcp-" + r.session.id;
    invocation.arguments = args;
    invocation.cancel = cancel.get();
    invocation.approved = approved;
    json token = params.contains("_meta") && params["_meta"].is_object() && params["_meta"].contains("progressToken")
                     ? params["_meta"]["progressToken"]
                     : json();
    // A question still waiting when the call ends (a plugin thread asked late) ends with it.
    auto ended = std::make_shared<std::atomic<bool>>(false);
    auto channel = caller_channel(r.notify, r.session, token, cancel, ended);
    plugins::CallChannels& channels = app_.registry().services().call_channels();
    auto open = channels.open(invocation.call_id, channel);
    // A heartbeat whenever the plugin has said nothing for a while, so the client knows the call lives.
    std::atomic<bool> done{false};
    std::thread heartbeat;
    if (channel->progress)
        heartbeat = std::thread([&] {
            while (!done) {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                if (!done)
                    channels.report_progress(invocation.call_id, plugins::ProgressFrom::heartbeat, 0, 0, name + " is running");
            }
        });
    json result = app_.invoker().call(*tool, invocation);
    app_.direct_tool_calls().add(name, !json_io::get_bool(result, "is_error", false));
    done = true;
    *ended = true;
    if (heartbeat.joinable()) heartbeat.join();
    open.reset();
    r.session.end_call(key);
    if (cancel->cancelled()) return std::nullopt;  // a cancelled request gets no response
    return result_response(r.id, to_call_result(result));
}

std::optional<json> McpServer::ask_approval(const Request& r, const std::string& tool, const json& arguments,
                                            const std::string& why) {
    json question{{"message", "agenthost asks before running the tool '" + tool + "' (" + why + ") with these arguments:\n" +
                                  dump(arguments, 2)},
                  {"requestedSchema",
                   {{"type", "object"},
                    {"properties",
                     {{"approve",
                       {{"type", "boolean"},
                        {"title", "Run " + tool},
                        {"description", "Yes runs the tool once with these arguments"},
                        {"default", false}}}}},
                    {"required", json::array({"approve"})}}}};
    auto answer =
        r.session.ask("elicitation/create", question, r.notify, plugins::caller_request(plugins::CallerRequest::elicit).wait);
    if (answer.status != AH_OK) return tool_error("Not run: the approval could not be asked (" + answer.text + ").");
    json reply = json::parse(answer.text, nullptr, false);
    std::string action = json_io::get_string(reply, "action");
    bool yes = action == "accept" && reply.contains("content") && json_io::get_bool(reply["content"], "approve", false);
    if (yes) return std::nullopt;
    static const std::pair<const char*, const char*> kWhy[] = {
        {"accept", "they answered no"}, {"decline", "they declined"}, {"cancel", "they dismissed the question"}};
    std::string answered = "no answer";
    for (const auto& [word, meaning] : kWhy)
        if (action == word) answered = meaning;
    return tool_error("Not run: the person at the client did not approve it (" + answered + ").");
}

std::optional<json> McpServer::list_resources(const Request& r) {
    return result_response(r.id, {{"resources", resource_list(app_)}});
}

std::optional<json> McpServer::read_resource(const Request& r) {
    if (!r.params.contains("uri") || !r.params["uri"].is_string())
        return error_response(r.id, -32602, "Invalid params: resources/read needs \"uri\", a string");
    std::string uri = r.params["uri"];
    auto contents = resource_read(app_, uri);
    if (!contents) return error_response(r.id, -32002, "Resource not found: " + uri);
    return result_response(r.id, *contents);
}

std::optional<json> McpServer::list_resource_templates(const Request& r) {
    plugins::CallInput input;
    json templates = json::array({{{"uriTemplate", std::string(kConversationMemoryPrefix) + "{conversation}"},
                                   {"name", "conversation memory"},
                                   {"description",
                                    "What the agent keeps for one conversation: its goal, progress, tasks, "
                                    "entries, recent errors and the question it asked"},
                                   {"mimeType", "application/json"}}});
    for (auto& t : app_.registry().list_from_plugins(plugins::McpSlot::list_resource_templates, input)) {
        t.erase("plugin");
        templates.push_back(std::move(t));
    }
    return result_response(r.id, {{"resourceTemplates", templates}});
}

std::optional<json> McpServer::subscribe(const Request& r) {
    std::string uri = json_io::get_string(r.params, "uri");
    if (uri.empty()) return error_response(r.id, -32602, "Invalid params: resources/subscribe needs \"uri\", a string");
    if (!r.session.subscribe(uri))
        return error_response(r.id, -32602,
                              "Invalid params: this session has " + std::to_string(McpSession::kMaxSubscriptions) +
                                  " subscriptions already; unsubscribe from one first");
    return result_response(r.id, json::object());
}

std::optional<json> McpServer::unsubscribe(const Request& r) {
    std::string uri = json_io::get_string(r.params, "uri");
    if (uri.empty()) return error_response(r.id, -32602, "Invalid params: resources/unsubscribe needs \"uri\", a string");
    r.session.unsubscribe(uri);
    return result_response(r.id, json::object());
}

std::optional<json> McpServer::list_prompts(const Request& r) { return result_response(r.id, {{"prompts", prompt_list(app_)}}); }

std::optional<json> McpServer::get_prompt(const Request& r) {
    std::string name = json_io::get_string(r.params, "name");
    if (name.empty()) return error_response(r.id, -32602, "Invalid params: prompts/get needs \"name\", a string");
    json arguments = r.params.contains("arguments") && r.params["arguments"].is_object() ? r.params["arguments"] : json::object();
    auto prompt = prompt_get(app_, name, arguments);
    if (!prompt) return error_response(r.id, prompt.error().code == "plugin_failure" ? -32603 : -32602, prompt.error().message);
    return result_response(r.id, *prompt);
}

std::optional<json> McpServer::complete(const Request& r) {
    const json& ref = r.params.contains("ref") ? r.params["ref"] : json();
    std::string type = json_io::get_string(ref, "type");
    if (type != "ref/prompt" && type != "ref/resource")
        return error_response(r.id, -32602,
                              "Invalid params: completion/complete needs \"ref\" of type ref/prompt or ref/resource");
    if (!r.params.contains("argument") || !r.params["argument"].is_object())
        return error_response(r.id, -32602, "Invalid params: completion/complete needs \"argument\": {\"name\", \"value\"}");
    return result_response(r.id, mcp::complete(app_, r.params));
}

std::optional<json> McpServer::set_log_level(const Request& r) {
    auto level = parse_log_level(json_io::get_string(r.params, "level"));
    if (!level)
        return error_response(
            r.id, -32602, "Invalid params: \"level\" is one of debug, info, notice, warning, error, critical, alert, emergency");
    r.session.set_log_level(*level);
    if (auto session = r.session.weak_from_this().lock()) log_tap_.listen(session);
    return result_response(r.id, json::object());
}

int serve_stdio(app::HostApp& app, const std::atomic<bool>* stop) {
    McpServer server(app);
    auto session = std::make_shared<McpSession>();
    // Each process is a client of its own, as each HTTP session is: its calls are conversation
    // "mcp-stdio-…", which starts from the plugins' defaults (the graph last switched to anywhere),
    // not from what an earlier stdio process left.
    session->id = "stdio-" + random_hex(8);
    auto out_mutex = std::make_shared<std::mutex>();
    const Send send = [out_mutex](const std::string& line) {
        std::lock_guard lock(*out_mutex);
        std::cout << line << "\n" << std::flush;
    };
    // What the server says unasked (log lines, updated resources) goes out as it comes, as over
    // an HTTP session's listening stream.
    session->open_stream();
    std::thread unasked([&] {
        for (;;) {
            if (auto message = session->next_message(std::chrono::milliseconds(500)))
                send(*message);
            else if (session->closed())
                break;
        }
    });
    // A plugin whose tools changed: an initialized client hears of it and lists them again.
    int listener = app.registry().add_tools_listener([&] {
        if (session->initialized) send(McpServer::tools_list_changed());
    });
    int resource_listener = app.registry().services().add_resource_listener([&](const std::string& uri) {
        if (session->subscribed(uri)) session->post(McpServer::resource_updated(uri));
    });
    std::vector<std::thread> calls;
    std::string line;
    LineReader reader(0, kMaxMessageBytes);
    for (;;) {
        LineRead got = reader.next(line, stop);
        if (got == LineRead::end) break;
        if (got == LineRead::too_long) {  // skipped to its end unread; the stream goes on
            send(dump(error_response(
                nullptr, -32700,
                "Parse error: the message is longer than " + std::to_string(kMaxMessageBytes >> 20) + " MiB and was skipped")));
            continue;
        }
        if (line.empty() || line == "\r") continue;
        auto peek = json_io::parse(line, kMessageLimits);
        bool long_call =
            peek && peek->is_object() && json_io::get_string(*peek, "method") == "tools/call" && peek->contains("id");
        if (!long_call) {  // quick: answered in order, on this thread (answers to our own requests too)
            if (auto reply = server.handle(line, *session, send)) send(*reply);
            continue;
        }
        calls.emplace_back([&server, session, send, line] {
            if (auto reply = server.handle(line, *session, send)) send(*reply);
        });
    }
    // The client is gone or stopping: a question put to it gets no answer now. The calls in
    // flight finish and are answered first, and what they made the server say goes out too.
    session->end_asks();
    for (auto& t : calls) t.join();
    app.registry().services().remove_resource_listener(resource_listener);
    app.registry().remove_tools_listener(listener);
    session->close();
    unasked.join();
    return 0;
}

}  // namespace agenthost::mcp
