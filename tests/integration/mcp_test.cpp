// agenthost as an MCP server, driven by the official TypeScript SDK client over stdio (`agenthost
// mcp`) and over Streamable HTTP (`agenthost serve`'s /mcp), plus raw protocol checks.
#include "support/test_support.hpp"
#include "test_paths.h"

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

extern char** environ;

using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

std::string write_config(const test::TempDir& dir) {
    std::string config = (dir.path / "agenthost.toml").string();
    test::write_file(config,
                     "data_dir = \"" + (dir.path / "data").string() +
                         "\"\ndefault_plugin_dirs = false\n"
                         "enabled_plugins = [\"scripted\", \"example_c\", \"agent_tools\", \"service_probe\", \"graph\"]\n"
                         "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS
                         "\", \"" AGENTHOST_FIXTURE_PLUGIN_DIR
                         "\"]\n"
                         "[server]\ntoken_env = \"MCP_TEST_TOKEN\"\n");
    return config;
}

// The v2 client in "auto" mode probes server/discover and, finding 2026-07-28 offered, speaks the
// stateless era: no initialize, no session, _meta on every request.
void check_v2_client(const std::string& mode, const std::string& target, const std::string& extra) {
    auto r = test::run_command("node '" + std::string(test::source_dir()) + "/tests/peers/mcp_client_v2.mjs' " + mode + " '" +
                               target + "' '" + extra + "'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    json out = json::parse(r.out);
    CHECK(out["server"]["name"] == "agenthost");
    CHECK(out["protocol"] == "2026-07-28");
    CHECK(out["echo"]["text"] == "hello from v2");
    CHECK(std::find(out["tools"].begin(), out["tools"].end(), "echo") != out["tools"].end());
}

void check_client_view(const json& out) {
    CHECK(out["server"]["name"] == "agenthost");
    CHECK(std::find(out["tools"].begin(), out["tools"].end(), "echo") != out["tools"].end());
    CHECK(out["echo_annotations"]["readOnlyHint"] == true);
    CHECK(out["echo"]["text"] == "hello over MCP");
    CHECK(out["echo"]["isError"] == false);
    CHECK(out["bad"]["isError"] == true);
    CHECK_THAT(out["bad"]["text"].get<std::string>(), Contains("field 'a'"));
    CHECK(out["destructive"]["isError"] == true);
    CHECK_THAT(out["destructive"]["text"].get<std::string>(), Contains("allow_destructive"));
    CHECK(out["resources"] == json::array({"memory://facts"}));
    CHECK(out["facts"].is_array());
    CHECK(out["cancel"]["aborted"] == true);
    CHECK(out["cancel"]["ms"].get<int>() < 5000);
    CHECK(out["unknown"]["code"] == -32602);
    CHECK(out["list_changed"] == true);  // sent unasked after probe_grow changed the plugin's tools
    CHECK(out["grown"] == true);
    CHECK(out["extra"] == "extra tool here");
}

}  // namespace

TEST_CASE("mcp: the official SDK client over stdio lists and calls tools, reads resources, cancels", "[peer][mcp]") {
    test::TempDir dir;
    std::string config = write_config(dir);
    auto r = test::run_command("node '" + std::string(test::source_dir()) + "/tests/peers/mcp_client.mjs' stdio '" + test::cli() +
                               "' '" + config + "'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    check_client_view(json::parse(r.out));
    check_v2_client("stdio", test::cli(), config);
}

TEST_CASE("mcp: the official SDK client over Streamable HTTP on agenthost serve", "[peer][mcp]") {
    test::TempDir dir;
    std::string config = write_config(dir);
    ::setenv("MCP_TEST_TOKEN", "mcp-token", 1);
    int port = test::free_port();
    std::string listen = "127.0.0.1:" + std::to_string(port);
    std::vector<std::string> args{test::cli(), "--config", config, "serve", "--listen", listen};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    REQUIRE(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) == 0);
    httplib::Client c("127.0.0.1", port);
    for (int i = 0; i < 200 && !c.Get("/health"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));

    auto r = test::run_command("node '" + std::string(test::source_dir()) +
                               "/tests/peers/mcp_client.mjs' http http://127.0.0.1:" + std::to_string(port) + " mcp-token");
    INFO(r.err);
    CHECK(r.exit_code == 0);
    if (r.exit_code == 0) check_client_view(json::parse(r.out));
    check_v2_client("http", "http://127.0.0.1:" + std::to_string(port), "mcp-token");

    // Raw protocol: origin, session and version checks.
    c.set_bearer_token_auth("mcp-token");
    json init{{"jsonrpc", "2.0"},
              {"id", 1},
              {"method", "initialize"},
              {"params",
               {{"protocolVersion", "1999-01-01"},
                {"capabilities", json::object()},
                {"clientInfo", {{"name", "raw"}, {"version", "0"}}}}}};
    auto evil = c.Post("/mcp", {{"Origin", "https://evil.example"}}, init.dump(), "application/json");
    REQUIRE(evil);
    CHECK(evil->status == 403);
    auto ok = c.Post("/mcp", init.dump(), "application/json");
    REQUIRE(ok);
    CHECK(json::parse(ok->body)["result"]["protocolVersion"] == "2025-11-25");  // an unknown version gets our latest
    std::string session = ok->get_header_value("Mcp-Session-Id");
    CHECK_FALSE(session.empty());
    json list{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}};
    auto no_session = c.Post("/mcp", list.dump(), "application/json");
    CHECK(no_session->status == 400);
    auto wrong_version =
        c.Post("/mcp", {{"Mcp-Session-Id", session}, {"MCP-Protocol-Version", "2001-01-01"}}, list.dump(), "application/json");
    CHECK(wrong_version->status == 400);
    auto listed =
        c.Post("/mcp", {{"Mcp-Session-Id", session}, {"MCP-Protocol-Version", "2025-11-25"}}, list.dump(), "application/json");
    CHECK(json::parse(listed->body)["result"]["tools"].size() > 3);
    auto rpc = [&](int id, const std::string& method, const json& params) {
        auto r = c.Post("/mcp", {{"Mcp-Session-Id", session}},
                        json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump(), "application/json");
        return json::parse(r->body);
    };
    CHECK(rpc(10, "tools/call", {{"name", "create_graph"}, {"arguments", {{"name", "Solar"}}}})["result"]["isError"] == false);
    {  // A client that takes elicitation but asks for JSON only: the refusal says how it could be asked.
        json ask_me = init;
        ask_me["params"]["protocolVersion"] = "2025-11-25";
        ask_me["params"]["capabilities"] = {{"elicitation", json::object()}};
        auto opened = c.Post("/mcp", ask_me.dump(), "application/json");
        REQUIRE(opened);
        auto refused = c.Post("/mcp", {{"Mcp-Session-Id", opened->get_header_value("Mcp-Session-Id")}},
                              json{{"jsonrpc", "2.0"},
                                   {"id", 5},
                                   {"method", "tools/call"},
                                   {"params", {{"name", "delete_item"}, {"arguments", {{"name", "x"}}}}}}
                                  .dump(),
                              "application/json");
        REQUIRE(refused);
        json body = json::parse(refused->body);
        CHECK(body["result"]["isError"] == true);
        CHECK_THAT(body["result"]["content"][0]["text"].get<std::string>(), Contains("accepted an event stream"));
    }
    json resources = rpc(11, "resources/list", json::object())["result"]["resources"];
    bool listed_graph = false;
    for (const auto& r : resources) listed_graph = listed_graph || r["uri"] == "graph://Solar";
    CHECK(listed_graph);
    CHECK_THAT(
        rpc(12, "resources/read", {{"uri", "graph://Solar?format=mermaid"}})["result"]["contents"][0]["text"].get<std::string>(),
        Contains("graph LR"));
    CHECK(rpc(13, "resources/read", {{"uri", "graph://Atlantis"}})["error"]["code"] == -32002);
    // A call with a progress token, from a client that accepts SSE: progress, then the response.
    auto progressed =
        c.Post("/mcp", {{"Mcp-Session-Id", session}, {"Accept", "application/json, text/event-stream"}},
               json{{"jsonrpc", "2.0"},
                    {"id", 14},
                    {"method", "tools/call"},
                    {"params", {{"name", "probe_wait"}, {"arguments", {{"ms", 700}}}, {"_meta", {{"progressToken", "p-14"}}}}}}
                   .dump(),
               "application/json");
    REQUIRE(progressed);
    CHECK(progressed->get_header_value("Content-Type") == "text/event-stream");
    CHECK_THAT(progressed->body, Contains("notifications/progress") && Contains("\"progressToken\":\"p-14\""));
    CHECK(progressed->body.find("notifications/progress") < progressed->body.find("\"id\":14"));
    CHECK_THAT(progressed->body, Contains("finished"));
    auto unknown = c.Post("/mcp", {{"Mcp-Session-Id", session}}, json{{"jsonrpc", "2.0"}, {"id", 3}, {"method", "nope"}}.dump(),
                          "application/json");
    CHECK(json::parse(unknown->body)["error"]["code"] == -32601);
    auto note = c.Post("/mcp", {{"Mcp-Session-Id", session}},
                       json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}.dump(), "application/json");
    CHECK(note->status == 202);
    // The listening stream: an event stream, one per session, ended when the session is deleted.
    CHECK(c.Get("/mcp", {{"Mcp-Session-Id", session}})->status == 406);  // not asking for SSE
    CHECK(c.Get("/mcp", {{"Mcp-Session-Id", "nope"}, {"Accept", "text/event-stream"}})->status == 404);
    int listen_status = 0;
    std::thread listening([&] {
        httplib::Client l("127.0.0.1", port);
        l.set_bearer_token_auth("mcp-token");
        l.set_read_timeout(30, 0);
        auto r = l.Get("/mcp", {{"Mcp-Session-Id", session}, {"Accept", "text/event-stream"}});
        listen_status = r ? r->status : -1;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(c.Get("/mcp", {{"Mcp-Session-Id", session}, {"Accept", "text/event-stream"}})->status == 409);
    auto deleting = std::chrono::steady_clock::now();
    CHECK(c.Delete("/mcp", {{"Mcp-Session-Id", session}})->status == 200);
    listening.join();
    CHECK(listen_status == 200);
    CHECK(std::chrono::steady_clock::now() - deleting < std::chrono::seconds(5));  // not left to the keep-alive
    CHECK(c.Post("/mcp", {{"Mcp-Session-Id", session}}, list.dump(), "application/json")->status == 404);
    // Sessions are bounded: past 1000, initializing one ends the oldest, whose client gets 404 and
    // initializes again; the others go on.
    std::vector<std::string> ids;
    for (int i = 0; i < 1001; ++i) {
        auto r = c.Post("/mcp", init.dump(), "application/json");
        REQUIRE(r);
        ids.push_back(r->get_header_value("Mcp-Session-Id"));
    }
    json ping{{"jsonrpc", "2.0"}, {"id", 5}, {"method", "ping"}};
    CHECK(c.Post("/mcp", {{"Mcp-Session-Id", ids.front()}}, ping.dump(), "application/json")->status == 404);
    CHECK(c.Post("/mcp", {{"Mcp-Session-Id", ids[1]}}, ping.dump(), "application/json")->status == 200);
    CHECK(c.Post("/mcp", {{"Mcp-Session-Id", ids.back()}}, ping.dump(), "application/json")->status == 200);

    // Refusals on /mcp are JSON-RPC errors, a 401 included, and the 401 says where the resource's
    // metadata is (RFC 9728), which is there without a token (an outside try: an OpenAI-shaped
    // body, and a 401 from the metadata address).
    httplib::Client anonymous("127.0.0.1", port);
    auto denied = anonymous.Post("/mcp", ping.dump(), "application/json");
    REQUIRE(denied);
    CHECK(denied->status == 401);
    json denied_body = json::parse(denied->body);
    CHECK(denied_body["jsonrpc"] == "2.0");
    CHECK(denied_body["error"]["code"] == -32000);
    CHECK(denied_body["error"]["data"]["reason"] == "invalid_api_key");
    const std::string metadata_url = "http://127.0.0.1:" + std::to_string(port) + "/.well-known/oauth-protected-resource";
    CHECK_THAT(denied->get_header_value("WWW-Authenticate"), Contains("resource_metadata=\"" + metadata_url + "\""));
    for (const char* path : {"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}) {
        auto metadata = anonymous.Get(path);
        REQUIRE(metadata);
        CHECK(metadata->status == 200);
        json m = json::parse(metadata->body);
        CHECK(m["resource"] == "http://127.0.0.1:" + std::to_string(port) + "/mcp");
        CHECK(m["bearer_methods_supported"] == json::array({"header"}));
    }
    // An OAuth client that then asks this server for an authorization server, or to register, is
    // told in OAuth's error shape that there is none (an outside try: 401s, then a 404 its SDK
    // could not read).
    for (const char* path : {"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"}) {
        auto none = anonymous.Get(path);
        REQUIRE(none);
        CHECK(none->status == 404);
        CHECK(json::parse(none->body)["error"] == "invalid_request");
    }
    auto registration = anonymous.Post("/register", json{{"redirect_uris", {"http://localhost/cb"}}}.dump(), "application/json");
    REQUIRE(registration);
    CHECK(registration->status == 404);
    CHECK_THAT(json::parse(registration->body)["error_description"].get<std::string>(), Contains("bearer token"));
    // Every error of /mcp is JSON-RPC shaped, the route's own too.
    auto gone = c.Post("/mcp", {{"Mcp-Session-Id", "no-such-session"}}, ping.dump(), "application/json");
    CHECK(json::parse(gone->body)["error"]["data"]["reason"] == "session_not_found");
    CHECK(json::parse(c.Get("/mcp", {{"Mcp-Session-Id", ids.back()}})->body)["error"]["data"]["status"] == 406);
    auto wrong_type = c.Post("/mcp", {{"Mcp-Session-Id", ids.back()}}, ping.dump(), "text/plain");
    CHECK(wrong_type->status == 415);
    CHECK(json::parse(wrong_type->body)["error"]["data"]["reason"] == "unsupported_media_type");

    // Batches: in a 2025-03-26 session, answered as an array (notifications get nothing, initialize
    // is refused inside one); in a later version, refused as that version has none.
    json old_init = init;
    old_init["params"]["protocolVersion"] = "2025-03-26";
    auto old_session = c.Post("/mcp", old_init.dump(), "application/json");
    REQUIRE(old_session);
    const std::string old_id = old_session->get_header_value("Mcp-Session-Id");
    json batch = json::array({ping,
                              {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
                              {{"jsonrpc", "2.0"}, {"id", "b"}, {"method", "tools/list"}},
                              old_init});
    auto answered = c.Post("/mcp", {{"Mcp-Session-Id", old_id}}, batch.dump(), "application/json");
    REQUIRE(answered);
    CHECK(answered->status == 200);
    json replies = json::parse(answered->body);
    REQUIRE(replies.is_array());
    REQUIRE(replies.size() == 3);
    CHECK(replies[0]["id"] == 5);
    CHECK(replies[0].contains("result"));
    CHECK(replies[1]["id"] == "b");
    CHECK(replies[1]["result"]["tools"].size() > 3);
    CHECK(replies[2]["error"]["code"] == -32600);
    CHECK(c.Post("/mcp", {{"Mcp-Session-Id", old_id}}, json::array({{{"jsonrpc", "2.0"}, {"method", "notifications/x"}}}).dump(),
                 "application/json")
              ->status == 202);
    auto refused = c.Post("/mcp", {{"Mcp-Session-Id", ids.back()}}, json::array({ping}).dump(), "application/json");
    CHECK(json::parse(refused->body)["error"]["code"] == -32600);
    CHECK_THAT(json::parse(refused->body)["error"]["message"].get<std::string>(), Contains("2025-03-26 only"));
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
}

TEST_CASE("mcp: tools that need approval are not offered unless allow_destructive, and batches over stdio",
          "[integration][mcp]") {
    test::TempDir dir;
    std::string config = write_config(dir);
    auto session = [&](const std::string& extra_config, const std::vector<json>& messages) {
        std::string text = test::read_file(config) + extra_config;
        test::write_file(dir.path / "this.toml", text);
        std::string lines;
        for (const auto& m : messages) lines += m.dump() + "\n";
        test::write_file(dir.path / "in.jsonl", lines);
        auto r = test::run_command("'" + std::string(test::cli()) + "' --config '" + (dir.path / "this.toml").string() +
                                   "' mcp < '" + (dir.path / "in.jsonl").string() + "'");
        REQUIRE(r.exit_code == 0);
        std::vector<json> replies;
        std::istringstream out(r.out);
        for (std::string line; std::getline(out, line);) replies.push_back(json::parse(line));
        return replies;
    };
    auto init = [](const char* version) {
        return json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", {{"protocolVersion", version}}}};
    };
    json list{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}};
    auto names = [](const json& reply) {
        std::set<std::string> out;
        for (const auto& t : reply["result"]["tools"]) out.insert(t["name"].get<std::string>());
        return out;
    };
    // delete_nodes is destructive: refused to MCP clients, so not offered (an outside try: listed,
    // then every call refused); offered with allow_destructive.
    auto plain = session("", {init("2025-11-25"), list});
    REQUIRE(plain.size() == 2);
    CHECK(names(plain[1]).count("create_graph"));
    CHECK_FALSE(names(plain[1]).count("delete_nodes"));
    auto allowed = session("[mcp]\nallow_destructive = true\n", {init("2025-11-25"), list});
    REQUIRE(allowed.size() == 2);
    CHECK(names(allowed[1]).count("delete_nodes"));
    // A batch over stdio, in a 2025-03-26 session: one line, one array of answers.
    json ping{{"jsonrpc", "2.0"}, {"id", 3}, {"method", "ping"}};
    auto batched = session("", {init("2025-03-26"), json::array({ping, list})});
    REQUIRE(batched.size() == 2);
    REQUIRE(batched[1].is_array());
    CHECK(batched[1].size() == 2);
    auto refused = session("", {init("2025-06-18"), json::array({ping, list})});
    REQUIRE(refused.size() == 2);
    CHECK(refused[1]["error"]["code"] == -32600);
}

TEST_CASE("mcp: tools/list pages through more than one page of tools with nextCursor", "[integration][mcp]") {
    test::TempDir dir;
    std::string config = (dir.path / "agenthost.toml").string();
    test::write_file(config, "data_dir = \"" + (dir.path / "data").string() +
                                 "\"\ndefault_plugin_dirs = false\n"
                                 "enabled_plugins = [\"scripted\", \"example_c\", \"agent_tools\", \"service_probe\", \"graph\", "
                                 "\"torrent\", \"folders\", \"fetch\"]\n"
                                 "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                                 "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_FIXTURE_PLUGIN_DIR
                                 "\"]\n"
                                 "[plugins.torrent]\nqbittorrent_url = \"http://127.0.0.1:9\"\n");
    auto cfg = test::config(dir.path / "count", true);
    cfg.enabled_plugins = {"scripted", "example_c", "agent_tools", "service_probe", "graph", "torrent", "folders", "fetch"};
    cfg.plugin_tables["torrent"] = R"({"qbittorrent_url": "http://127.0.0.1:9"})";  // its download tools too
    auto app = test::start(cfg);
    size_t total = 0;  // those an MCP client may call: the ones that need approval are not offered
    for (const auto& t : *app->registry().tools()) total += t.needs_approval ? 0 : 1;
    REQUIRE(total > 50);  // more than one page
    app.reset();

    // Over stdio, page by page, as a client walks nextCursor.
    auto ask = [&](const std::vector<json>& requests) {
        std::string lines;
        for (const auto& r : requests) lines += r.dump() + "\n";
        test::write_file(dir.path / "in.jsonl", lines);
        auto r = test::run_command("'" + std::string(test::cli()) + "' --config '" + config + "' mcp < '" +
                                   (dir.path / "in.jsonl").string() + "'");
        REQUIRE(r.exit_code == 0);
        std::map<int, json> replies;
        std::istringstream out(r.out);
        for (std::string line; std::getline(out, line);) {
            json m = json::parse(line);
            if (m.contains("id")) replies[m["id"].get<int>()] = m;
        }
        return replies;
    };
    json init{{"jsonrpc", "2.0"},
              {"id", 1},
              {"method", "initialize"},
              {"params",
               {{"protocolVersion", "2025-11-25"},
                {"capabilities", json::object()},
                {"clientInfo", {{"name", "pager"}, {"version", "0"}}}}}};
    std::set<std::string> names;
    json cursor;
    int pages = 0;
    do {
        json params = cursor.is_null() ? json::object() : json{{"cursor", cursor}};
        auto replies = ask({init, {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}, {"params", params}}});
        json result = replies.at(2)["result"];
        CHECK(result["tools"].size() <= 50);
        for (const auto& t : result["tools"]) CHECK(names.insert(t["name"].get<std::string>()).second);  // no tool twice
        cursor = result.value("nextCursor", json());
        ++pages;
    } while (!cursor.is_null() && pages < 10);
    CHECK(pages == static_cast<int>((total + 49) / 50));
    CHECK(names.size() == total);
    auto bad = ask({init, {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}, {"params", {{"cursor", "not-a-cursor"}}}}});
    CHECK(bad.at(2)["error"]["code"] == -32602);
    // A reviewer's finding: "-1" was read as the largest number, and the next cursor overflowed.
    for (const char* forged : {"-1", "18446744073709551615", "99999", " 50", "50 "}) {
        INFO(forged);
        auto refused = ask({init, {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}, {"params", {{"cursor", forged}}}}});
        CHECK(refused.at(2)["error"]["code"] == -32602);
    }
}

TEST_CASE("mcp: stdio answers hostile lines with JSON-RPC errors and goes on", "[integration][mcp]") {
    test::TempDir dir;
    std::string config = write_config(dir);
    std::string input = (dir.path / "input.jsonl").string();
    {
        std::ofstream in(input, std::ios::binary);
        in << R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})"
           << "\n";
        in << std::string(100000, '[') << std::string(100000, ']') << "\n";  // deep: refused unparsed
        in << R"({"jsonrpc":"2.0","id":7,"method":42})"
           << "\n";  // wrong type
        in << R"({"jsonrpc":2,"id":8,"method":"ping"})"
           << "\n";
        in << R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":42}})"
           << "\n";
        in << R"({"jsonrpc":"2.0","id":10,"method":"tools/list","params":"x"})"
           << "\n";
        in << R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})"
           << "\n";
        in << R"({"jsonrpc":"2.0","id":null,"method":"ping"})"
           << "\n";  // MCP: no null ids
        in << "123\n"
           << "null\n";
        in << "\"" << std::string(5u << 20, 'x') << "\"\n";             // over the 4 MiB line limit
        in << "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"ping\"}\n";  // still served
    }
    auto r = test::run_command("'" + std::string(test::cli()) + "' --config '" + config + "' mcp < '" + input + "'");
    REQUIRE(r.exit_code == 0);
    std::vector<json> replies;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) replies.push_back(json::parse(line));
    REQUIRE(replies.size() == 12);
    // tools/call is answered from its own thread, so replies are found by id; id-less ones by order.
    auto by_id = [&](int id) {
        for (const auto& r : replies)
            if (r["id"] == id) return r;
        FAIL("no reply with id " << id);
        return json();
    };
    std::vector<json> anonymous;
    for (const auto& r : replies)
        if (r["id"].is_null()) anonymous.push_back(r);
    CHECK(by_id(1)["result"]["protocolVersion"] == "2025-06-18");
    CHECK(by_id(7)["error"]["code"] == -32600);
    CHECK(by_id(8)["error"]["code"] == -32600);
    CHECK(by_id(9)["error"]["code"] == -32602);
    CHECK(by_id(10)["error"]["code"] == -32602);
    CHECK(by_id(11).contains("result"));
    REQUIRE(anonymous.size() == 6);  // deep, id object, id null, 123, null, the over-long line
    CHECK(anonymous[0]["error"]["code"] == -32700);
    CHECK(anonymous[1]["error"]["code"] == -32600);
    CHECK(anonymous[2]["error"]["code"] == -32600);
    CHECK_THAT(anonymous[2]["error"]["message"].get<std::string>(), Contains("no null id"));
    CHECK(anonymous[3]["error"]["code"] == -32600);
    CHECK(anonymous[4]["error"]["code"] == -32600);
    CHECK(anonymous[5]["error"]["code"] == -32700);
    CHECK_THAT(anonymous[5]["error"]["message"].get<std::string>(), Contains("longer than"));
}

TEST_CASE("mcp: SIGTERM ends a stdio session cleanly", "[integration][mcp]") {
    test::TempDir dir;
    std::string config = write_config(dir);
    // stdin is a FIFO held open by the shell: the session only ends because of the signal. The
    // signal is sent once the session has answered a ping (a fixed delay raced a slow start).
    std::string fifo = (dir.path / "stdin").string();
    std::string out = (dir.path / "stdout").string();
    auto r = test::run_command("(mkfifo '" + fifo + "'; '" + std::string(test::cli()) + "' --config '" + config + "' mcp < '" +
                               fifo + "' > '" + out + "' & pid=$!; exec 3>'" + fifo +
                               "'; "
                               "echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}' >&3; "
                               "i=0; while [ ! -s '" +
                               out +
                               "' ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; "
                               "kill -TERM $pid; wait $pid; echo \"exit=$?\"; exec 3>&-; cat '" +
                               out + "')");
    CHECK_THAT(r.out, Contains("\"id\":1"));  // the session was up when the signal came
    CHECK_THAT(r.out, Contains("exit=0"));
}

TEST_CASE("mcp: a fresh stdio process starts from the graph last switched to anywhere", "[integration][mcp]") {
    test::TempDir dir;
    std::string config = write_config(dir);
    auto cli = [&](const std::string& args) {
        return test::run_command("'" + std::string(test::cli()) + "' --config '" + config + "' " + args);
    };
    REQUIRE(cli("tool create_graph '{\"name\":\"Alpha\"}'").exit_code == 0);
    REQUIRE(cli("tool create_graph '{\"name\":\"Beta\"}'").exit_code == 0);
    // One stdio session: calls `set_active_graph` (when given), then asks which graph is active.
    auto stdio_session = [&](const std::string& switch_to) {
        std::string input = (dir.path / "session.jsonl").string();
        {
            std::ofstream in(input, std::ios::binary);
            in << R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})"
               << "\n"
               << R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
               << "\n";
            if (!switch_to.empty())
                in << json{{"jsonrpc", "2.0"},
                           {"id", 2},
                           {"method", "tools/call"},
                           {"params", {{"name", "set_active_graph"}, {"arguments", {{"name", switch_to}}}}}}
                          .dump()
                   << "\n";
        }
        auto r = test::run_command("'" + std::string(test::cli()) + "' --config '" + config + "' mcp < '" + input + "'");
        REQUIRE(r.exit_code == 0);
        {
            std::ofstream in(input, std::ios::binary);
            in << R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})"
               << "\n"
               << R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
               << "\n"
               << R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"describe_graph","arguments":{}}})"
               << "\n";
        }
        r = test::run_command("'" + std::string(test::cli()) + "' --config '" + config + "' mcp < '" + input + "'");
        REQUIRE(r.exit_code == 0);
        return r.out;
    };
    // A stdio client switches to Alpha; the next stdio process sees Alpha (the last switch anywhere).
    CHECK_THAT(stdio_session("Alpha"), Contains("Alpha") && !Contains("Beta"));
    // A switch made elsewhere (here the CLI) is what the next stdio process starts from, not what
    // an earlier stdio process chose.
    REQUIRE(cli("tool set_active_graph '{\"name\":\"Beta\"}'").exit_code == 0);
    CHECK_THAT(stdio_session(""), Contains("Beta") && !Contains("Alpha"));
}

namespace {

// Every scenario of @modelcontextprotocol/conformance 0.1.12's active server suite.
const std::set<std::string> kConformanceScenarios = {"server-initialize",
                                                     "logging-set-level",
                                                     "ping",
                                                     "completion-complete",
                                                     "tools-list",
                                                     "tools-call-simple-text",
                                                     "tools-call-image",
                                                     "tools-call-audio",
                                                     "tools-call-embedded-resource",
                                                     "tools-call-mixed-content",
                                                     "tools-call-with-logging",
                                                     "tools-call-error",
                                                     "tools-call-with-progress",
                                                     "tools-call-sampling",
                                                     "tools-call-elicitation",
                                                     "elicitation-sep1034-defaults",
                                                     "server-sse-multiple-streams",
                                                     "elicitation-sep1330-enums",
                                                     "resources-list",
                                                     "resources-read-text",
                                                     "resources-read-binary",
                                                     "resources-templates-read",
                                                     "resources-subscribe",
                                                     "resources-unsubscribe",
                                                     "prompts-list",
                                                     "prompts-get-simple",
                                                     "prompts-get-with-args",
                                                     "prompts-get-embedded-resource",
                                                     "prompts-get-with-image",
                                                     "dns-rebinding-protection"};

// A config with the bundled plugins and the test fixtures, `plugins` enabled, `extra` appended.
std::string config_with(const test::TempDir& dir, const std::string& plugins, const std::string& extra = "") {
    std::string config = (dir.path / "agenthost.toml").string();
    test::write_file(config, "data_dir = \"" + (dir.path / "data").string() +
                                 "\"\ndefault_plugin_dirs = false\n"
                                 "enabled_plugins = [" +
                                 plugins +
                                 "]\n"
                                 "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_FIXTURE_PLUGIN_DIR
                                 "\"]\n" +
                                 extra);
    return config;
}

// One JSON-RPC request as a stdio line.
std::string rpc_line(int id, const std::string& method, const json& params) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump() + "\n";
}

// The responses in a stdio transcript, by id; its other messages (notifications, requests) in order.
std::map<int, json> answers_of(const std::string& transcript, std::vector<json>* others = nullptr) {
    std::map<int, json> answers;
    std::istringstream lines(transcript);
    for (std::string text; std::getline(lines, text);) {
        json m = json::parse(text, nullptr, false);
        if (m.contains("id") && m["id"].is_number_integer() && !m.contains("method"))
            answers[m["id"].get<int>()] = m;
        else if (others && m.is_object())
            others->push_back(m);
    }
    return answers;
}

pid_t spawn(std::vector<std::string> args) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    REQUIRE(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) == 0);
    return pid;
}

void stop(pid_t pid) {
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
}

// Runs the whole suite against `url` and checks that every scenario ran and none failed.
void run_conformance(const std::string& url, const std::filesystem::path& results) {
    std::string peers = std::string(test::source_dir()) + "/tests/peers";
    auto r = test::run_command("cd '" + peers + "' && node node_modules/.bin/conformance server --url " + url + " -o '" +
                               results.string() + "' 2>&1");
    INFO(r.out);
    CHECK(r.exit_code == 0);
    std::set<std::string> ran;
    for (const auto& entry : std::filesystem::directory_iterator(results)) {
        std::ifstream in(entry.path() / "checks.json");
        json checks = json::parse(in, nullptr, false);
        REQUIRE(checks.is_array());
        for (const auto& c : checks) {
            INFO(entry.path().filename().string() << ": " << c.dump());
            CHECK(c.value("status", "") != "FAILURE");
        }
        // The folder is "server-<scenario>-<timestamp>".
        std::string name = entry.path().filename().string().substr(std::string("server-").size());
        name = name.substr(0, name.find("-20"));
        ran.insert(name);
    }
    CHECK(ran == kConformanceScenarios);
}

}  // namespace

TEST_CASE("mcp: the official conformance suite passes every server scenario over HTTP and stdio", "[peer][mcp]") {
    test::TempDir dir;
    std::string config =
        config_with(dir, "\"scripted\", \"conformance\"", "[server]\nauth = \"none\"\n");  // the suite sends no token
    SECTION("Streamable HTTP: agenthost serve's /mcp") {
        int port = test::free_port();
        pid_t pid = spawn({test::cli(), "--config", config, "serve", "--listen", "127.0.0.1:" + std::to_string(port)});
        httplib::Client c("127.0.0.1", port);
        for (int i = 0; i < 200 && !c.Get("/health"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
        run_conformance("http://127.0.0.1:" + std::to_string(port) + "/mcp", dir.path / "http");
        stop(pid);
    }
    SECTION("stdio: agenthost mcp, through tests/peers/mcp_stdio_adapter.mjs") {
        int port = test::free_port();
        pid_t pid = spawn({"/usr/bin/env", "node", std::string(test::source_dir()) + "/tests/peers/mcp_stdio_adapter.mjs",
                           std::to_string(port), test::cli(), config});
        httplib::Client c("127.0.0.1", port);
        for (int i = 0; i < 400 && !c.Get("/mcp"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
        run_conformance("http://127.0.0.1:" + std::to_string(port) + "/mcp", dir.path / "stdio");
        stop(pid);
    }
}

TEST_CASE("mcp: graphs as templates with completion, a wizard prompt, and updates to subscribers over stdio",
          "[integration][mcp]") {
    test::TempDir dir;
    std::string config = write_config(dir);
    REQUIRE(test::run_command("'" + std::string(test::cli()) + "' --config '" + config +
                              "' tool create_graph '{\"name\":\"Solar System\"}'")
                .exit_code == 0);
    std::string input = (dir.path / "in.jsonl").string();
    {
        std::ofstream in(input, std::ios::binary);
        auto request = [&](int id, const std::string& method, const json& params) {
            in << json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump() << "\n";
        };
        request(1, "initialize", {{"protocolVersion", "2025-11-25"}, {"capabilities", json::object()}});
        in << R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
           << "\n";
        request(2, "resources/templates/list", json::object());
        request(
            3, "completion/complete",
            {{"ref", {{"type", "ref/resource"}, {"uri", "graph://{name}"}}}, {"argument", {{"name", "name"}, {"value", "sol"}}}});
        request(4, "completion/complete",
                {{"ref", {{"type", "ref/resource"}, {"uri", "graph://{name}?format={format}"}}},
                 {"argument", {{"name", "format"}, {"value", "m"}}}});
        request(5, "prompts/list", json::object());
        request(6, "prompts/get", {{"name", "graph_wizard"}, {"arguments", {{"topic", "the planets"}}}});
        request(7, "prompts/get", {{"name", "graph_wizard"}, {"arguments", json::object()}});
        request(8, "resources/read", {{"uri", "graph://Solar%20System?format=dot"}});
        request(9, "resources/subscribe", {{"uri", "graph://Solar%20System"}});
        request(10, "tools/call",
                {{"name", "apply_graph_spec"},
                 {"arguments",
                  {{"spec", {{"graph", {{"name", "Solar System"}}}, {"nodes", {{{"name", "Mars"}, {"type", "Planet"}}}}}}}}});
    }
    auto r = test::run_command("'" + std::string(test::cli()) + "' --config '" + config + "' mcp < '" + input + "'");
    REQUIRE(r.exit_code == 0);
    std::vector<json> notices;
    auto answers = answers_of(r.out, &notices);
    INFO(r.out);
    json templates = answers[2]["result"]["resourceTemplates"];
    CHECK(std::any_of(templates.begin(), templates.end(), [](const json& t) { return t["uriTemplate"] == "graph://{name}"; }));
    CHECK(answers[3]["result"]["completion"]["values"] == json::array({"Solar System"}));
    CHECK(answers[4]["result"]["completion"]["values"] == json::array({"mermaid"}));
    std::set<std::string> prompts;
    for (const auto& p : answers[5]["result"]["prompts"]) prompts.insert(p["name"].get<std::string>());
    CHECK(prompts.count("graph_wizard"));
    CHECK(prompts.count("agenthost_plan"));
    CHECK_THAT(answers[6]["result"]["messages"][0]["content"]["text"].get<std::string>(), Contains("the planets"));
    CHECK(answers[7]["error"]["code"] == -32602);
    CHECK_THAT(answers[7]["error"]["message"].get<std::string>(), Contains("\"topic\""));
    CHECK(answers[8]["result"]["contents"][0]["mimeType"] == "text/vnd.graphviz");
    CHECK(answers[9]["result"] == json::object());
    CHECK(answers[10]["result"]["isError"] == false);
    bool updated = std::any_of(notices.begin(), notices.end(), [](const json& n) {
        return n["method"] == "notifications/resources/updated" && n["params"]["uri"] == "graph://Solar%20System";
    });
    CHECK(updated);
}

TEST_CASE("mcp: a question the server stops waiting for is withdrawn, and prompt arguments are strings", "[integration][mcp]") {
    test::TempDir dir;
    std::string config = config_with(dir, "\"scripted\", \"graph\", \"conformance\"");
    std::string first = (dir.path / "first.jsonl").string(), second = (dir.path / "second.jsonl").string();
    test::write_file(
        first, rpc_line(1, "initialize", {{"protocolVersion", "2025-11-25"}, {"capabilities", {{"sampling", json::object()}}}}) +
                   R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
                   "\n" +
                   rpc_line(2, "prompts/get", {{"name", "graph_wizard"}, {"arguments", {{"topic", 5}}}}) +
                   rpc_line(3, "prompts/get", {{"name", "graph_wizard"}, {"arguments", {{"topic", ""}}}}) +
                   rpc_line(4, "tools/call", {{"name", "test_sampling"}, {"arguments", {{"prompt", "never answered"}}}}));
    // The client never answers the sampling request; it cancels the call a second later.
    test::write_file(second, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}})"
                             "\n");
    auto r = test::run_command("(cat '" + first + "'; sleep 1; cat '" + second + "'; sleep 1) | '" + test::cli() +
                               "' --config '" + config + "' mcp");
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    std::vector<json> others;
    auto answers = answers_of(r.out, &others);
    std::string asked_id;
    bool withdrawn = false;
    for (const auto& m : others) {
        if (m.value("method", "") == "sampling/createMessage") asked_id = m["id"].get<std::string>();
        if (m.value("method", "") == "notifications/cancelled") withdrawn = m["params"]["requestId"] == asked_id;
    }
    CHECK(answers[2]["error"]["code"] == -32602);
    CHECK_THAT(answers[2]["error"]["message"].get<std::string>(), Contains("must be a string"));
    CHECK(answers[3]["error"]["code"] == -32602);
    CHECK_FALSE(asked_id.empty());
    CHECK(withdrawn);
    CHECK(answers.count(4) == 0);  // a cancelled call is not answered
}

TEST_CASE("mcp: the media recipe is a prompt whose folder completes from the named folders", "[integration][mcp]") {
    test::TempDir dir;
    std::filesystem::create_directories(dir.path / "movies");
    std::string config = config_with(dir, "\"scripted\", \"folders\", \"torrent\"",
                                     "[plugins.folders]\nfolders = { movies = \"" + (dir.path / "movies").string() + "\" }\n");
    std::string input = (dir.path / "in.jsonl").string();
    test::write_file(input, rpc_line(1, "initialize", {{"protocolVersion", "2025-11-25"}, {"capabilities", json::object()}}) +
                                rpc_line(2, "prompts/list", json::object()) +
                                rpc_line(3, "completion/complete",
                                         {{"ref", {{"type", "ref/prompt"}, {"name", "get_media"}}},
                                          {"argument", {{"name", "folder"}, {"value", "mo"}}}}) +
                                rpc_line(4, "prompts/get",
                                         {{"name", "get_media"}, {"arguments", {{"what", "Metropolis"}, {"folder", "movies"}}}}));
    auto r = test::run_command("'" + std::string(test::cli()) + "' --config '" + config + "' mcp < '" + input + "'");
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    auto answers = answers_of(r.out);
    const json& prompts = answers[2]["result"]["prompts"];
    CHECK(std::any_of(prompts.begin(), prompts.end(), [](const json& p) { return p["name"] == "get_media"; }));
    CHECK(answers[3]["result"]["completion"]["values"] == json::array({"movies"}));
    std::string text = answers[4]["result"]["messages"][0]["content"]["text"];
    CHECK_THAT(text, Contains("Metropolis") && Contains("'movies'") && Contains("find_torrent"));
}

// The host's own template: a conversation's memory, its ids completed as they are typed.
TEST_CASE("mcp: a conversation's memory is a template whose ids complete, an unknown one not found", "[integration][mcp]") {
    test::TempDir dir;
    test::write_file(dir.path / "cassette.json", R"({"fallback": {"text": "hello"}})");
    std::string config =
        config_with(dir, "\"scripted\"", "[plugins.scripted]\ncassette = \"" + (dir.path / "cassette.json").string() + "\"\n");
    for (const char* id : {"trip-paris", "trip-rome", "groceries"})
        REQUIRE(test::run_command("'" + std::string(test::cli()) + "' --config '" + config + "' run --conversation " + id +
                                  " 'hello' > /dev/null 2>&1")
                    .exit_code == 0);
    std::string input = (dir.path / "in.jsonl").string();
    test::write_file(input, rpc_line(1, "initialize", {{"protocolVersion", "2025-11-25"}, {"capabilities", json::object()}}) +
                                rpc_line(2, "resources/templates/list", json::object()) +
                                rpc_line(3, "completion/complete",
                                         {{"ref", {{"type", "ref/resource"}, {"uri", "memory://conversations/{conversation}"}}},
                                          {"argument", {{"name", "conversation"}, {"value", "trip"}}}}) +
                                rpc_line(4, "resources/read", {{"uri", "memory://conversations/trip-rome"}}) +
                                rpc_line(5, "resources/read", {{"uri", "memory://conversations/nowhere"}}));
    auto r = test::run_command("'" + std::string(test::cli()) + "' --config '" + config + "' mcp < '" + input + "'");
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    auto answers = answers_of(r.out);
    const json& templates = answers[2]["result"]["resourceTemplates"];
    CHECK(std::any_of(templates.begin(), templates.end(),
                      [](const json& t) { return t["uriTemplate"] == "memory://conversations/{conversation}"; }));
    json values = answers[3]["result"]["completion"]["values"];
    std::sort(values.begin(), values.end());
    CHECK(values == json::array({"trip-paris", "trip-rome"}));
    json memory = json::parse(answers[4]["result"]["contents"][0]["text"].get<std::string>());
    CHECK(memory["conversation"] == "trip-rome");
    CHECK(memory.contains("session"));
    CHECK(answers[5]["error"]["code"] == -32002);
}
