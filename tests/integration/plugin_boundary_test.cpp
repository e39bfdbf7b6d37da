// The plugin boundary: whatever a careless plugin returns — bad UTF-8, wrong types, deep or huge
// output, broken schemas — the host stays up and answers, in-process and isolated, through the
// invoker, the MCP server and the agent loop. Approval decisions go through the one policy.
#include "common/bounded_json.hpp"
#include "mcp/mcp_server.hpp"
#include "support/test_support.hpp"
#include "test_paths.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

const char* const kCases[] = {"utf8_in_string",
                              "raw_bad_text",
                              "overlong",
                              "surrogate",
                              "escaped_surrogate",
                              "beyond_unicode",
                              "is_error_yes",
                              "is_error_one",
                              "is_error_null",
                              "marker_number",
                              "done_with_object_summary",
                              "structured_string",
                              "error_code_array",
                              "deep",
                              "deep_content",
                              "nul",
                              "not_object",
                              "empty",
                              "number",
                              "huge",
                              "escapes",
                              "raw_control",
                              "escaped_nul",
                              "unknown_escape",
                              "overflow_number",
                              "error_status"};

config::Config careless_config(const test::TempDir& dir, bool isolated) {
    auto cfg = test::config(dir.path, false);
    cfg.plugin_dirs.push_back(AGENTHOST_CARELESS_PLUGIN_DIR);
    cfg.enabled_plugins = {"careless", "example_c", "scripted"};
    if (isolated) cfg.plugin_tables["careless"] = json{{"isolation", "process"}, {"isolation_max_crashes", 100}}.dump();
    return cfg;
}

const plugins::PluginInfo* find_info(app::HostApp& app, const std::string& name) {
    for (const auto& p : app.registry().plugins())
        if (p.name == name) return &p;
    return nullptr;
}

// A result the host can always use: an object whose typed members have their types, and whose
// serialised form is valid UTF-8.
void check_usable(const json& result) {
    REQUIRE(result.is_object());
    REQUIRE(result.contains("is_error"));
    CHECK(result["is_error"].is_boolean());
    for (const char* key : {"error_code", "marker", "summary", "reason"})
        if (result.contains(key)) CHECK(result[key].is_string());
    if (result.contains("structured")) CHECK(result["structured"].is_object());
    CHECK(json_io::valid_utf8(json_io::dump(result)));
}

}  // namespace

TEST_CASE("plugin boundary: broken schemas, bad names and repeated names are refused, the siblings load",
          "[integration][boundary]") {
    for (bool isolated : {false, true}) {
        INFO("isolated: " << isolated);
        test::TempDir dir;
        auto app = test::start(careless_config(dir, isolated));
        const plugins::PluginInfo* info = find_info(*app, "careless");
        REQUIRE(info);
        CHECK(info->status == plugins::PluginStatus::loaded);
        CHECK(info->isolation == (isolated ? plugins::Isolation::process : plugins::Isolation::in_process));
        CHECK(info->tools == std::vector<std::string>{"careless_ok", "careless_say", "careless_statuses", "careless_slow",
                                                      "careless_crash", "careless_print", "careless_thread_crash",
                                                      "careless_big"});
        std::map<std::string, std::string> refused;
        for (const auto& r : info->refused_tools) refused[r.name] += r.reason + "|";
        CHECK_THAT(refused["bad_type_string"], Contains("type") && Contains("\"object\""));
        CHECK_THAT(refused["bad_type_typo"], Contains("properties.a.type") && Contains("strng"));
        CHECK_THAT(refused["bad_required"], Contains("required") && Contains("array"));
        CHECK_THAT(refused["bad_json_schema"], Contains("not usable JSON"));
        CHECK_THAT(refused["9lives"], Contains("name must match"));
        CHECK_THAT(refused["careless_ok"], Contains("twice"));
        CHECK_THAT(refused["bad_properties"], Contains("properties"));
        CHECK(app->catalogue().find("careless_ok"));
        CHECK_FALSE(app->catalogue().find("bad_required"));
        CHECK(test::call_tool(*app, "careless_ok", json::object())["content"] == "fine");
        // add() answers the same in-process and isolated: what the host will refuse, it refuses.
        CHECK(test::call_tool(*app, "careless_statuses", json::object())["content"] ==
              "bad_type_string=-2,bad_type_typo=-2,bad_required=-2,bad_json_schema=-2,9lives=-2,careless_ok=0,careless_say=0,"
              "careless_ok=-2,bad_properties=-2,careless_statuses=0,careless_slow=0,careless_crash=0,careless_print=0,careless_"
              "thread_crash=0,careless_big=0");
    }
}

TEST_CASE("plugin boundary: every malformed result leaves a usable result and a live host", "[integration][boundary]") {
    for (bool isolated : {false, true}) {
        INFO("isolated: " << isolated);
        test::TempDir dir;
        auto app = test::start(careless_config(dir, isolated));
        for (const char* c : kCases) {
            INFO("case: " << c);
            json result = test::call_tool(*app, "careless_say", {{"case", c}});
            check_usable(result);
        }
        // What each class becomes.
        auto say = [&](const char* c) { return test::call_tool(*app, "careless_say", {{"case", c}}); };
        CHECK(say("utf8_in_string")["content"] == "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes");
        CHECK(say("raw_bad_text")["content"] == "plain \xEF\xBF\xBD text");
        CHECK(say("is_error_yes")["is_error"] == false);  // a wrong type is ignored, not guessed
        CHECK(say("is_error_yes")["content"] == "x");
        CHECK_FALSE(say("marker_number").contains("marker"));
        CHECK(say("nul")["content"] ==
              "a\xEF\xBF\xBD"
              "b");
        CHECK(say("not_object")["content"] == json::array({1, 2, 3}));
        CHECK(say("deep")["content"].is_string());  // too deep to be JSON here: kept as text
        // Broken JSON text is mended, not demoted to plain text: is_error survives.
        CHECK(say("raw_control")["content"] == "tab\there\x01");
        CHECK(say("raw_control")["is_error"] == true);
        CHECK(say("escaped_nul")["content"] == std::string("a\0b", 3));  // valid JSON: kept as meant
        CHECK(say("escaped_nul")["is_error"] == true);
        CHECK(say("escaped_surrogate")["content"] == "\xEF\xBF\xBD");
        CHECK(say("unknown_escape")["content"] == "C:\\dir\\x");
        CHECK(say("overflow_number")["is_error"] == true);
        CHECK(say("overflow_number")["n"] == "1e999999");
        // A failing status keeps what the plugin wrote, in-process and isolated alike.
        json failed = say("error_status");
        CHECK(failed["is_error"] == true);
        CHECK(failed["error_code"] == "plugin_failure");
        CHECK_THAT(failed["content"].get<std::string>(), Contains("the disk is full") && Contains("AH_ERR_IO"));
        json huge = say("huge");
        CHECK(huge["is_error"] == true);
        CHECK(huge["error_code"] == "output_too_large");
        CHECK_THAT(huge["content"].get<std::string>(), Contains("64 MiB"));
        if (isolated) {  // escaped, 12 MiB of control bytes outgrow one frame: refused at once, named
            json escapes = say("escapes");
            CHECK(escapes["error_code"] == "output_too_large");
        }
        // Still answering.
        CHECK(test::call_tool(*app, "careless_ok", json::object())["content"] == "fine");
        CHECK(test::call_tool(*app, "echo", {{"text", "alive"}})["content"] == "alive");
        // Context, resource lists and resources with bad bytes are read, repaired or skipped.
        plugins::CallInput input;
        std::string context = app->registry().context(input);
        CHECK_THAT(context, Contains("careless context"));
        CHECK(json_io::valid_utf8(context));
        CHECK(context.find('\0') == std::string::npos);
        json resources = json::parse(app->registry().resources(input));
        REQUIRE(resources.is_array());
        CHECK(std::any_of(resources.begin(), resources.end(), [](const json& r) { return r["uri"] == "careless://one"; }));
        CHECK_FALSE(app->registry().read_resource("careless://one", input));  // 100k levels deep: refused, named
    }
}

TEST_CASE("plugin boundary: the MCP server answers every malformed result with valid JSON-RPC", "[integration][boundary]") {
    test::TempDir dir;
    auto app = test::start(careless_config(dir, false));
    mcp::McpServer server(*app);
    mcp::McpSession session;
    session.id = "t";
    REQUIRE(server.handle(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})", session,
                          {}));
    auto list = server.handle(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", session, {});
    REQUIRE(list);
    json listed = json::parse(*list);
    for (const auto& t : listed["result"]["tools"]) {
        CHECK(t["inputSchema"]["type"] == "object");
        if (t["inputSchema"].contains("required")) CHECK(t["inputSchema"]["required"].is_array());
        CHECK(t["name"] != "bad_required");
    }
    int id = 2;
    for (const char* c : kCases) {
        INFO("case: " << c);
        json request{{"jsonrpc", "2.0"},
                     {"id", id++},
                     {"method", "tools/call"},
                     {"params", {{"name", "careless_say"}, {"arguments", {{"case", c}}}}}};
        auto reply = server.handle(request.dump(), session, {});
        REQUIRE(reply);
        auto parsed = json_io::parse(*reply, {256u << 20, 64});  // valid UTF-8 and valid JSON
        REQUIRE(parsed);
        CHECK((*parsed)["jsonrpc"] == "2.0");
        CHECK((*parsed)["result"]["isError"].is_boolean());
    }
}

TEST_CASE("plugin boundary: the official MCP client lists tools with a broken-schema plugin loaded", "[peer][boundary]") {
    test::TempDir dir;
    std::string config = (dir.path / "agenthost.toml").string();
    test::write_file(config, "data_dir = \"" + (dir.path / "data").string() +
                                 "\"\ndefault_plugin_dirs = false\n"
                                 "enabled_plugins = [\"careless\", \"example_c\"]\n"
                                 "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                                 "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_CARELESS_PLUGIN_DIR "\"]\n");
    json calls = json::array({{{"name", "careless_say"}, {"arguments", {{"case", "utf8_in_string"}}}},
                              {{"name", "careless_say"}, {"arguments", {{"case", "is_error_yes"}}}},
                              {{"name", "careless_say"}, {"arguments", {{"case", "deep"}}}},
                              {{"name", "echo"}, {"arguments", {{"text", "still here"}}}}});
    auto r = test::run_command("node '" + std::string(test::source_dir()) + "/tests/peers/mcp_calls.mjs' '" + test::cli() +
                               "' '" + config + "' '" + calls.dump() + "'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    json out = json::parse(r.out);
    std::set<std::string> tools(out["tools"].begin(), out["tools"].end());
    CHECK(tools.count("careless_ok"));
    CHECK(tools.count("careless_say"));
    CHECK(tools.count("echo"));
    CHECK_FALSE(tools.count("bad_required"));
    REQUIRE(out["calls"].size() == 4);
    CHECK(out["calls"][0]["text"] == "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes");
    CHECK(out["calls"][1]["isError"] == false);
    CHECK(out["calls"][3]["text"] == "still here");
    CHECK(out["alive"] == true);

    // agenthost plugins names the refused tools and why.
    auto listed = test::run_command(std::string(test::cli()) + " --config '" + config + "' plugins --json");
    REQUIRE(listed.exit_code == 0);
    json plugins = json::parse(listed.out)["plugins"];
    auto careless = std::find_if(plugins.begin(), plugins.end(), [](const json& p) { return p["name"] == "careless"; });
    REQUIRE(careless != plugins.end());
    CHECK((*careless)["isolation"] == "in-process");
    bool named = false;
    for (const auto& t : (*careless)["refused_tools"])
        named = named || (t["name"] == "bad_type_typo" && t["reason"].get<std::string>().find("strng") != std::string::npos);
    CHECK(named);
    auto text = test::run_command(std::string(test::cli()) + " --config '" + config + "' plugins");
    CHECK_THAT(text.out, Contains("refused") && Contains("bad_required"));
}
