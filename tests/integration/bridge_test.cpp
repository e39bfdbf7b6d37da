// The mcp-bridge plugin against real MCP servers from npm (server-everything, server-memory) and two
// small misbehaving ones: a server that crashes mid-call and one that never answers.
#include "app/reports.hpp"
#include "support/test_support.hpp"
#include "test_paths.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <sys/wait.h>

#include <algorithm>
#include <map>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// A minimal MCP server in plain node: `mode` crash exits on tools/call "crash"; silent never answers
// calls. Calling "grow" adds the tool "late" and says so (notifications/tools/list_changed).
std::string fake_server(const std::string& mode) {
    return R"(
const rl = require('readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
let grown = false;
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize') send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'fake', version: '1' } } });
  else if (m.method === 'tools/list') send({ jsonrpc: '2.0', id: m.id, result: { tools: [
    { name: 'ok', description: 'answers', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } },
    { name: 'crash', description: 'exits', inputSchema: { type: 'object' }, annotations: { destructiveHint: true } },
    { name: 'hang', description: 'never answers', inputSchema: { type: 'object' } },
    { name: 'grow', description: 'adds a tool', inputSchema: { type: 'object' } }].concat(
      grown ? [{ name: 'late', description: 'added by grow', inputSchema: { type: 'object' } }] : []) } });
  else if (m.method === 'tools/call') {
    if (')" +
           mode + R"(' === 'silent') return;
    if (m.params.name === 'crash') process.exit(3);
    if (m.params.name === 'grow') {
      grown = true;
      send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'grown' }] } });
      send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      return;
    }
    send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'fine' }, { type: 'image', mimeType: 'image/png', data: 'iVBORw0KGgo=' }] } });
  }
});
)";
}

json servers(const test::TempDir& dir) {
    std::string peers = std::string(test::source_dir()) + "/tests/peers/node_modules/@modelcontextprotocol/";
    test::write_file(dir.path / "crashy.js", fake_server("crash"));
    test::write_file(dir.path / "shared" / "notes.txt", "remember the milk\n");
    test::write_file(dir.path / "silent.js", fake_server("silent"));
    return json::array(
        {{{"name", "everything"}, {"command", "node"}, {"args", {peers + "server-everything/dist/index.js", "stdio"}}},
         {{"name", "memory"},
          {"command", "node"},
          {"args", {peers + "server-memory/dist/index.js"}},
          {"env", {{"MEMORY_FILE_PATH", (dir.path / "memory.jsonl").string()}}}},
         {{"name", "files"},
          {"command", "node"},
          {"args", {peers + "server-filesystem/dist/index.js", (dir.path / "shared").string()}}},
         {{"name", "crashy"}, {"command", "node"}, {"args", {(dir.path / "crashy.js").string()}}},
         {{"name", "silent"}, {"command", "node"}, {"args", {(dir.path / "silent.js").string()}}, {"timeout_ms", 500}},
         {{"name", "missing"}, {"command", "/nonexistent/mcp-server"}}});
}

}  // namespace

TEST_CASE("mcp bridge: real servers' tools appear prefixed, crashes restart, silence times out", "[peer][bridge]") {
    test::TempDir dir;
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = {"mcp_bridge"};
    cfg.plugin_tables["mcp_bridge"] = json{{"servers", servers(dir)}}.dump();
    auto app = test::start(cfg);
    for (const char* tool : {"everything__echo", "files__read_text_file", "memory__create_entities", "memory__read_graph",
                             "crashy__ok", "silent__hang"}) {
        INFO(tool);
        CHECK(app->registry().find_tool(tool) != nullptr);
    }
    CHECK(app->registry().find_tool("crashy__ok")->hints & AH_TOOL_READ_ONLY);
    CHECK(app->registry().find_tool("crashy__crash")->needs_approval);  // destructiveHint → destructive

    auto echo = test::call_tool(*app, "everything__echo", {{"message", "hi"}});
    CHECK(echo["content"] == "Echo: hi");
    // server-filesystem: a file inside its directory is read; one outside is refused by the server.
    auto note = test::call_tool(*app, "files__read_text_file", {{"path", (dir.path / "shared" / "notes.txt").string()}});
    CHECK(note["content"] == "remember the milk\n");
    auto outside = test::call_tool(*app, "files__read_text_file", {{"path", (dir.path / "crashy.js").string()}});
    CHECK(outside["error_code"] == "tool_failure");
    CHECK_THAT(outside["content"].get<std::string>(), Contains("outside allowed directories"));

    auto ok = test::call_tool(*app, "crashy__ok", json::object());
    // Its content blocks pass through (MCP clients of the host get the image); the model reads a note.
    CHECK_THAT(ok["content"].get<std::string>(), Contains("fine") && Contains("[image/png image"));
    REQUIRE(ok["blocks"].is_array());
    CHECK(std::any_of(ok["blocks"].begin(), ok["blocks"].end(), [](const json& b) { return b["type"] == "image"; }));

    auto crash = test::call_tool(*app, "crashy__crash", json::object());
    CHECK(crash["error_code"] == "plugin_failure");
    CHECK_THAT(crash["content"].get<std::string>(), Contains("exited"));
    // The very next call restarts it, as the docs say (an outside try: it failed, "restarted shortly").
    CHECK_THAT(test::call_tool(*app, "crashy__ok", json::object())["content"].get<std::string>(), Contains("fine"));

    // A server whose tools change says so: the bridge lists them again and the host offers the new one.
    CHECK_FALSE(app->registry().find_tool("crashy__late"));
    CHECK(test::call_tool(*app, "crashy__grow", json::object())["content"] == "grown");
    for (int i = 0; i < 500 && !app->registry().find_tool("crashy__late"); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(app->registry().find_tool("crashy__late"));
    CHECK_THAT(test::call_tool(*app, "crashy__late", json::object())["content"].get<std::string>(), Contains("fine"));

    auto started = std::chrono::steady_clock::now();
    auto silent = test::call_tool(*app, "silent__hang", json::object());
    CHECK(silent["error_code"] == "timeout");
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(3));

    plugins::CallInput hook;
    CHECK_THAT(app->registry().context(hook), Contains("missing") && Contains("cannot start"));
    // `agenthost plugins` shows the cause next to the plugin.
    std::string warnings;
    for (const auto& p : app->registry().plugins())
        if (p.name == "mcp_bridge")
            for (const auto& w : p.warnings) warnings += w + "\n";
    CHECK_THAT(warnings, Contains("server not available") && Contains("missing") && Contains("/nonexistent/mcp-server"));
}

TEST_CASE("mcp bridge: servers start at once, and a silent or garbled one delays nothing past startup_wait_ms",
          "[integration][bridge]") {
    test::TempDir dir;
    // A server in plain node whose answer to initialize depends on its argument: "silent" never
    // answers, "garbled" writes lines that are not JSON, "ancient" speaks an unknown version,
    // "slow" answers after 5 s; any other answers at once with the version it was asked for, which
    // its one tool's description then shows.
    test::write_file(dir.path / "server.js", R"(
const mode = process.argv[2];
const rl = require('readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
let asked = '';
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize') {
    asked = m.params.protocolVersion;
    if (mode === 'silent') return;
    if (mode === 'garbled') { process.stdout.write('Server ready! Listening on stdio\n{"id": "x"}\n'); return; }
    const answer = { jsonrpc: '2.0', id: m.id, result: { protocolVersion: mode === 'ancient' ? '1999-01-01' : asked,
      capabilities: { tools: {} }, serverInfo: { name: mode, version: '1' } } };
    if (mode === 'slow') setTimeout(() => send(answer), 5000); else send(answer);
  } else if (m.method === 'tools/list') {
    send({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'version', description: asked, inputSchema: { type: 'object' } }] } });
  } else if (m.method === 'tools/call') {
    send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: mode + ' ' + asked }] } });
  }
});
)");
    auto server = [&](const std::string& mode) {
        return json{{"name", mode}, {"command", "node"}, {"args", {(dir.path / "server.js").string(), mode}}};
    };
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = {"mcp_bridge"};
    json garbled = server("garbled");
    // Long enough that node, started with five others on a loaded machine, has written its lines.
    garbled["init_timeout_ms"] = 5000;
    cfg.plugin_tables["mcp_bridge"] =
        json{{"startup_wait_ms", 3000},  // long enough for node to start on a loaded machine
             {"servers", {server("silent"), server("silent"), server("good"), garbled, server("ancient"), server("slow")}}}
            .dump();
    // Two servers that never answer initialize (15 s each by default) made the host wait 31 s
    // before, one after another: now all start at once and the host waits startup_wait_ms at most.
    auto started = std::chrono::steady_clock::now();
    auto app = test::start(cfg);
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(8));
    REQUIRE(app->registry().find_tool("good__version"));
    CHECK(app->registry().find_tool("good__version")->description == "[good] 2025-11-25");  // the version it asks for
    CHECK(test::call_tool(*app, "good__version", json::object())["content"] == "good 2025-11-25");
    std::string warnings;
    for (const auto& p : app->registry().plugins())
        if (p.name == "mcp_bridge")
            for (const auto& w : p.warnings) warnings += w + "\n";
    CHECK_THAT(warnings, Contains("still starting") && Contains("silent"));
    // doctor says so too, as not ready (an outside try: "ok  MCP server silent: 0 tools").
    std::map<std::string, plugins::HealthCheck> health;
    for (const auto& check : app->registry().health("mcp_bridge")) health[check.name] = check;
    REQUIRE(health.count("MCP server silent"));
    CHECK_FALSE(health["MCP server silent"].ok);
    CHECK_THAT(health["MCP server silent"].detail, Contains("still starting") && Contains("init_timeout_ms 15000"));
    CHECK(health["MCP server good"].ok);
    CHECK_FALSE(health["MCP server ancient"].ok);
    // One that speaks an unknown version is refused, naming it.
    CHECK_THAT(warnings, Contains("ancient") && Contains("speaks MCP version '1999-01-01'"));
    // One that answers late brings its tools then.
    for (int i = 0; i < 300 && !app->registry().find_tool("slow__version"); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(app->registry().find_tool("slow__version"));
    // A server that writes what is not JSON-RPC is said to, with what it wrote, not reported as
    // silence, once its init_timeout_ms has passed (after the host stopped waiting for it).
    plugins::CallInput hook;
    std::string context = app->registry().context(hook);
    for (int i = 0; i < 300 && context.find("garbled: initialize failed") == std::string::npos; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        context = app->registry().context(hook);
    }
    CHECK_THAT(context, Contains("garbled: initialize failed: no answer within 5000 ms; it wrote 2 line(s) "
                                 "that are not JSON-RPC, the first not JSON: 'Server ready! Listening on stdio'"));
}

TEST_CASE("mcp bridge: a remote server over Streamable HTTP", "[peer][bridge]") {
    test::TempDir dir;
    int port = test::free_port();
    std::string everything =
        std::string(test::source_dir()) + "/tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
    test::Process server({"node", everything, "streamableHttp"}, {{"PORT", std::to_string(port)}});
    REQUIRE(server.wait_for_port(port));
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = {"mcp_bridge"};
    std::string url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
    int later_port = test::free_port();
    std::string later_url = "http://127.0.0.1:" + std::to_string(later_port) + "/mcp";
    cfg.plugin_tables["mcp_bridge"] =
        json{{"servers",
              {{{"name", "remote"}, {"url", url}, {"headers", {{"X-Test", "1"}}}, {"timeout_ms", 5000}},
               {{"name", "gone"}, {"url", "http://127.0.0.1:1/mcp"}},
               {{"name", "later"}, {"url", later_url}},
               {{"name", "both"}, {"url", url}, {"command", "node"}}}}}
            .dump();
    auto app = test::start(cfg);
    REQUIRE(app->registry().find_tool("remote__echo") != nullptr);
    CHECK(app->registry().find_tool("both__echo") == nullptr);  // an entry with both command and url is refused
    CHECK(test::call_tool(*app, "remote__echo", {{"message", "over http"}})["content"] == "Echo: over http");
    auto sum = test::call_tool(*app, "remote__get_sum", {{"a", 2}, {"b", 3}});
    CHECK_THAT(sum["content"].get<std::string>(), Contains("5"));  // get-sum, exposed as get_sum
    plugins::CallInput hook;
    CHECK_THAT(app->registry().context(hook), Contains("gone") && Contains("initialize failed"));

    // A server that was down at start-up is brought in once it answers: its tools appear.
    CHECK_FALSE(app->registry().find_tool("later__echo"));
    test::Process later({"node", everything, "streamableHttp"}, {{"PORT", std::to_string(later_port)}});
    REQUIRE(later.wait_for_port(later_port));
    for (int i = 0; i < 300 && !app->registry().find_tool("later__echo"); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    REQUIRE(app->registry().find_tool("later__echo"));
    CHECK(test::call_tool(*app, "later__echo", {{"message", "late but here"}})["content"] == "Echo: late but here");
    // … and the plugin report (/api/plugins, `agenthost plugins`) lists them too, not the start-up list.
    json report = json::parse(app::plugins_report(*app));
    json bridge_tools;
    for (const auto& p : report["plugins"])
        if (p["name"] == "mcp_bridge") bridge_tools = p["tools"];
    CHECK(std::find(bridge_tools.begin(), bridge_tools.end(), json("later__echo")) != bridge_tools.end());
    CHECK(std::find(bridge_tools.begin(), bridge_tools.end(), json("remote__echo")) != bridge_tools.end());
}

TEST_CASE("mcp bridge: an agent turn stores and reads entities through server-memory", "[peer][bridge]") {
    test::TempDir dir;
    auto call = [](const std::string& name, json args) {
        return json{{"tool_calls", {{{"name", name}, {"arguments", std::move(args)}}}}};
    };
    json cassette{
        {"replies",
         {call("memory__create_entities",
               {{"entities",
                 {{{"name", "Ada Lovelace"}, {"entityType", "person"}, {"observations", {"wrote the first program"}}}}}}),
          call("memory__read_graph", json::object()),
          {{"text", "Ada is remembered."}}}}};
    test::write_file(dir.path / "cassette.json", cassette.dump());
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = {"scripted", "mcp_bridge"};
    cfg.plugin_tables["scripted"] = json{{"cassette", (dir.path / "cassette.json").string()}}.dump();
    json list = servers(dir);
    cfg.plugin_tables["mcp_bridge"] = json{{"servers", {list[1]}}}.dump();
    auto app = test::start(cfg);
    std::vector<agent::TurnEvent> events;
    agent::RunControls controls;
    controls.on_event = [&](const agent::TurnEvent& e) { events.push_back(e); };
    controls.approve = [](const agent::ApprovalRequest&) {
        return agent::ApprovalDecision{agent::ApprovalDecision::Kind::approve};
    };
    auto out = app->runner().run({"remember Ada", "bridge", agent::Mode::execute, "{}"}, controls);
    REQUIRE(out.ok());
    std::vector<std::string> results;
    for (const auto& e : events)
        if (const auto* r = e.as<agent::events::ToolResult>()) results.push_back(r->content);
    REQUIRE(results.size() == 2);
    CHECK_THAT(results[1], Contains("Ada Lovelace") && Contains("wrote the first program"));
}

TEST_CASE("mcp bridge: a stdio server busy with a call dies with its host, and the call's effect never lands", "[peer][bridge]") {
    // The server notes the call at once and writes its effect 3 s later. Its host — `agenthost tool`
    // with the bridge in its own process, or in the host's — is killed with SIGKILL meanwhile: the
    // server is killed too (PR_SET_PDEATHSIG), so nothing lands after the host's next start has
    // reported the call's outcome unknown.
    std::string isolation = GENERATE(as<std::string>{}, "in-process", "process");
    INFO("isolation = " << isolation);
    test::TempDir dir;
    std::string effects = (dir.path / "effects.txt").string(), started = (dir.path / "started.txt").string();
    test::write_file(dir.path / "slow.js", R"(
const fs = require('fs');
const rl = require('readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize') send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'slow', version: '1' } } });
  else if (m.method === 'tools/list') send({ jsonrpc: '2.0', id: m.id, result: { tools: [
    { name: 'slow_append', description: 'appends a line after 3 s', inputSchema: { type: 'object' }, annotations: { readOnlyHint: false, destructiveHint: false } }] } });
  else if (m.method === 'tools/call') {
    fs.appendFileSync(')" + started + R"(', 'started\n');
    setTimeout(() => {
      fs.appendFileSync(')" + effects + R"(', 'landed\n');
      send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'appended' }] } });
    }, 3000);
  }
});
)");
    std::string config = (dir.path / "agenthost.toml").string();
    test::write_file(config, "data_dir = \"" + (dir.path / "data").string() +
                                 "\"\ndefault_plugin_dirs = false\n"
                                 "enabled_plugins = [\"mcp_bridge\"]\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                                 "\"]\n"
                                 "[plugins.mcp_bridge]\nisolation = \"" +
                                 isolation +
                                 "\"\n"
                                 "servers = [{ name = \"slow\", command = \"node\", args = [\"" +
                                 (dir.path / "slow.js").string() + "\"] }]\n");
    test::Process host({"sh", "-c",
                        "exec '" + std::string(test::cli()) + "' --config '" + config + "' tool slow__slow_append '{}' > '" +
                            (dir.path / "out").string() + "' 2> '" + (dir.path / "err").string() + "'"});
    REQUIRE(host.pid > 0);
    for (int i = 0; i < 600 && !std::filesystem::exists(started); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    INFO(test::read_file(dir.path / "err"));
    REQUIRE(std::filesystem::exists(started));  // the server is busy with the call
    const auto call_started = std::chrono::steady_clock::now();
    std::vector<int> below = test::descendants(host.pid), servers;
    for (int pid : below)
        if (test::process_name(pid) == "node") servers.push_back(pid);
    REQUIRE(servers.size() == 1);
    struct KillLeftovers {  // whatever outlived the host (the bug this test is about) is not left behind
        std::vector<int>& pids;
        ~KillLeftovers() {
            for (int pid : pids)
                if (!test::process_gone(pid)) ::kill(pid, SIGKILL);
        }
    } leftovers{below};

    ::kill(host.pid, SIGKILL);
    ::waitpid(host.pid, nullptr, 0);
    host.pid = -1;
    const auto killed = std::chrono::steady_clock::now();
    auto all_gone = [&] { return std::all_of(below.begin(), below.end(), [](int pid) { return test::process_gone(pid); }); };
    while (!all_gone() && std::chrono::steady_clock::now() - killed < std::chrono::seconds(2))
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed).count();
    INFO("the server (and any runner) ended " << took << " ms after the host");
    CHECK(test::process_gone(servers[0]));
    CHECK(all_gone());
    CHECK(took < 1000);
    std::this_thread::sleep_until(call_started + std::chrono::milliseconds(3700));
    CHECK_FALSE(std::filesystem::exists(effects));
}

// A chain, client → agenthost → bridged server: what server-everything asks of its client
// (sampling, elicitation, roots) is put to the MCP client that made the call, or answered from
// the named folders, and its progress reaches that client. A destructive tool is asked of the
// client as an approval (it takes elicitation) instead of refused.
TEST_CASE("mcp bridge: a bridged server's sampling, elicitation, roots and progress reach the caller", "[peer][bridge]") {
    test::TempDir dir;
    std::string peers = std::string(test::source_dir()) + "/tests/peers/";
    std::filesystem::create_directories(dir.path / "movies");
    std::string config = (dir.path / "agenthost.toml").string();
    test::write_file(config, "data_dir = \"" + (dir.path / "data").string() +
                                 "\"\ndefault_plugin_dirs = false\n"
                                 "enabled_plugins = [\"scripted\", \"mcp_bridge\", \"agent_tools\", \"folders\"]\n"
                                 "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_FIXTURE_PLUGIN_DIR
                                 "\"]\n"
                                 "[server]\ntoken_env = \"CHAIN_TEST_TOKEN\"\n"
                                 "[plugins.folders]\nfolders = { movies = \"" +
                                 (dir.path / "movies").string() +
                                 "\" }\n"
                                 "[plugins.mcp_bridge]\nservers = [{ name = \"everything\", command = \"node\", args = [\"" +
                                 peers + "node_modules/@modelcontextprotocol/server-everything/dist/index.js\", \"stdio\"] }]\n");
    int port = test::free_port();
    test::Process serve({test::cli(), "--config", config, "serve", "--listen", "127.0.0.1:" + std::to_string(port)},
                        {{"CHAIN_TEST_TOKEN", "chain-token"}});
    REQUIRE(serve.wait_for_port(port));
    auto r = test::run_command("node '" + peers + "mcp_chain_client.mjs' http://127.0.0.1:" + std::to_string(port) +
                               " chain-token 2>&1");
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    json out = json::parse(r.out.substr(r.out.find('{')));
    // server-everything offers these only to a client that declared sampling, elicitation, roots.
    for (const char* tool :
         {"everything__trigger_sampling_request", "everything__trigger_elicitation_request", "everything__get_roots_list"})
        CHECK(std::find(out["tools"].begin(), out["tools"].end(), json(tool)) != out["tools"].end());
    CHECK(out["sampling"]["isError"] == false);
    CHECK_THAT(out["sampling"]["text"].get<std::string>(), Contains("an answer from the chain client"));
    REQUIRE(out["sampled"].size() == 1);
    CHECK_THAT(out["sampled"][0].get<std::string>(), Contains("say hi"));
    CHECK(out["elicitation"]["isError"] == false);
    CHECK_THAT(out["elicitation"]["text"].get<std::string>(), Contains("Ada Lovelace"));
    CHECK_THAT(out["roots"]["text"].get<std::string>(), Contains("movies") && Contains((dir.path / "movies").string()));
    CHECK(out["progress"]["isError"] == false);
    // The server's own values (1 to 4 of 4) all get through, heartbeats or not, always growing.
    const json& values = out["progress"]["values"];
    for (int step = 1; step <= 4; ++step) CHECK(std::find(values.begin(), values.end(), json(step)) != values.end());
    for (size_t i = 1; i < values.size(); ++i) CHECK(values[i].get<double>() > values[i - 1].get<double>());
    CHECK(out["image_types"] == json::array({"text", "image", "text"}));
    // The bridged server's prompts (renamed), completion, resources (labelled) and templates.
    CHECK(std::find(out["prompts"].begin(), out["prompts"].end(), json("everything__simple-prompt")) != out["prompts"].end());
    CHECK_FALSE(out["prompt_text"].get<std::string>().empty());
    CHECK(out["completion"] == json::array({"Engineering"}));
    CHECK_FALSE(out["resource_names"].empty());
    CHECK(out["resource_read"].get<int>() >= 1);
    CHECK(std::any_of(out["templates"].begin(), out["templates"].end(),
                      [](const json& t) { return t.get<std::string>().find("{resourceId}") != std::string::npos; }));
    // The destructive tool ran after the person at the client approved it (asked by elicitation).
    CHECK(out["approved"]["isError"] == false);
    bool asked_approval = std::any_of(out["elicited"].begin(), out["elicited"].end(), [](const json& m) {
        return m.get<std::string>().find("delete_item") != std::string::npos;
    });
    CHECK(asked_approval);

    // The bridged server dies while its question waits for the client: the call ends at once.
    int server_pid = 0;
    for (int pid : test::descendants(serve.pid))
        if (test::process_name(pid) == "node") server_pid = pid;
    REQUIRE(server_pid > 0);
    auto killed = test::run_command("node '" + peers + "mcp_chain_client.mjs' http://127.0.0.1:" + std::to_string(port) +
                                    " chain-token kill=" + std::to_string(server_pid) + " 2>&1");
    INFO(killed.out);
    REQUIRE(killed.exit_code == 0);
    json died = json::parse(killed.out.substr(killed.out.find('{')))["kill"];
    CHECK(died["isError"] == true);
    CHECK_THAT(died["text"].get<std::string>(), Contains("exited"));
    CHECK(died["ms"].get<int>() < 5000);
}

// An agent turn calls a bridged server's tools that ask back: its sampling request is answered by
// the host's own model (the scripted provider) once the person consents ([sampling] policy = ask),
// and its elicitation goes to the person, each announced as a Question event first.
TEST_CASE("mcp bridge: in an agent turn, a bridged server's questions go to the person and its sampling to the host's model",
          "[peer][bridge]") {
    test::TempDir dir;
    auto call = [](const std::string& name, json args) {
        return json{{"tool_calls", {{{"name", name}, {"arguments", std::move(args)}}}}};
    };
    json cassette{{"rules",
                   {{{"match", "context: say hi"}, {"replies", {{{"text", "hello from the host's model"}}}}},
                    {{"match", "ask everything"},
                     {"replies",
                      {call("everything__trigger_sampling_request", {{"prompt", "say hi"}, {"maxTokens", 50}}),
                       call("everything__trigger_elicitation_request", json::object()),
                       {{"text", "All asked."}}}}}}}};
    test::write_file(dir.path / "cassette.json", cassette.dump());
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = {"scripted", "mcp_bridge"};
    cfg.plugin_tables["scripted"] = json{{"cassette", (dir.path / "cassette.json").string()}}.dump();
    cfg.plugin_tables["mcp_bridge"] = json{{"servers", {servers(dir)[0]}}}.dump();
    cfg.agent.on_demand_tools = 0;
    auto app = test::start(cfg);

    std::vector<agent::TurnEvent> events;
    std::vector<agent::PersonQuestion> asked;
    agent::RunControls controls;
    controls.on_event = [&](const agent::TurnEvent& e) { events.push_back(e); };
    controls.approve = [](const agent::ApprovalRequest&) {
        return agent::ApprovalDecision{agent::ApprovalDecision::Kind::approve};
    };
    controls.ask_person = [&](const agent::PersonQuestion& q) -> plugins::CallerAnswer {
        asked.push_back(q);
        json content = q.consent ? json{{"allow", true}} : json{{"name", "Ada Lovelace"}};
        return {AH_OK, json{{"action", "accept"}, {"content", content}}.dump()};
    };
    auto out = app->runner().run({"ask everything", "asking", agent::Mode::execute, "{}"}, controls);
    INFO(out.error);
    REQUIRE(out.ok());
    std::vector<std::string> results, questions;
    for (const auto& e : events) {
        if (const auto* r = e.as<agent::events::ToolResult>()) results.push_back(r->content);
        if (const auto* q = e.as<agent::events::Question>()) questions.push_back(q->tool);
    }
    REQUIRE(results.size() == 2);
    CHECK_THAT(results[0], Contains("hello from the host's model"));
    CHECK_THAT(results[1], Contains("Ada Lovelace"));
    REQUIRE(asked.size() == 2);
    CHECK(asked[0].consent);
    CHECK_THAT(asked[0].params["message"].get<std::string>(), Contains("say hi"));
    CHECK_FALSE(asked[1].consent);
    CHECK(questions ==
          std::vector<std::string>{"everything__trigger_sampling_request", "everything__trigger_elicitation_request"});

    // Nobody to ask (a script's run): the server is told why, in words, and the turn goes on.
    events.clear();
    controls.ask_person = nullptr;
    auto again = app->runner().run({"ask everything", "unasked", agent::Mode::execute, "{}"}, controls);
    REQUIRE(again.ok());
    results.clear();
    for (const auto& e : events)
        if (const auto* r = e.as<agent::events::ToolResult>()) results.push_back(r->content);
    REQUIRE(results.size() == 2);
    CHECK_THAT(results[0], Contains("policy = \\\"allow\\\"") || Contains("policy = \"allow\""));
    CHECK_THAT(results[1], Contains("nobody can be asked"));
}

// The official suite's client scenarios that apply to a bridge (not its OAuth ones), each one
// agenthost command against the suite's own test server (tests/peers/bridge_conformance_client.sh).
// Not tools_call: its server connects one SDK Server to a new transport per request, which the
// SDK pinned here (1.32.2) refuses from the second request on ("Already connected"), so the
// official TypeScript client fails it the same way; calling a remote server's tool is tested above.
TEST_CASE("mcp bridge: the official conformance suite's client scenarios pass against the bridge", "[peer][bridge]") {
    test::TempDir dir;
    const std::string peers = std::string(test::source_dir()) + "/tests/peers";
    for (const char* scenario : {"initialize", "elicitation-sep1034-client-defaults", "sse-retry"}) {
        const auto work = dir.path / scenario;
        const std::string command = "sh " + peers + "/bridge_conformance_client.sh " + test::cli() +
                                    " " AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS " " + (work / "host").string();
        auto r = test::run_command("cd '" + peers + "' && node node_modules/.bin/conformance client --command '" + command +
                                   "' --scenario " + scenario + " -o '" + (work / "results").string() + "' 2>&1");
        INFO(scenario << ": " << r.out);
        CHECK(r.exit_code == 0);
        size_t checked = 0;
        for (const auto& entry : std::filesystem::directory_iterator(work / "results")) {
            std::ifstream in(entry.path() / "checks.json");
            json checks = json::parse(in, nullptr, false);
            REQUIRE(checks.is_array());
            for (const auto& c : checks) {
                INFO(scenario << ": " << c.dump());
                CHECK(c.value("status", "") != "FAILURE");
                checked += c.value("status", "") == "SUCCESS";
            }
        }
        CHECK(checked > 0);
    }
}
