// The agenthost binary, run as a user runs it.
#include "support/plugin_fixtures.hpp"
#include "support/test_support.hpp"
#include "test_paths.h"
#include "support/loopback_server.hpp"

#include <catch2/catch.hpp>
#include <httplib.h>
#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {
// Runs the CLI from the source tree with its data in `data_home`.
test::CommandResult run_cli(const test::TempDir& data_home, const std::string& args) {
    return test::run_command("cd '" + std::string(test::source_dir()) + "' && XDG_DATA_HOME='" + data_home.path.string() +
                             "' AGENTHOST_CONFIG= '" + test::cli() + "' " + args);
}
// `agenthost mcp` with only the careless fixture plugin (its table `careless_table`), asked to
// initialize and then to call `tool`.
test::CommandResult mcp_call_careless(const test::TempDir& home, const std::string& careless_table, const std::string& tool) {
    test::write_file(home.path / "agenthost.toml",
                     "default_plugin_dirs = false\nenabled_plugins = [\"careless\"]\n"
                     "plugin_dirs = [\"" AGENTHOST_CARELESS_PLUGIN_DIR "\"]\n[plugins.careless]\n" +
                         careless_table);
    test::write_file(home.path / "requests.jsonl",
                     R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})"
                     "\n"
                     R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":")" +
                         tool +
                         R"(","arguments":{}}})"
                         "\n");
    return run_cli(home, "--config '" + (home.path / "agenthost.toml").string() + "' mcp < '" +
                             (home.path / "requests.jsonl").string() + "'");
}
// The database a command made somewhere under `data_home` ("" when none).
fs::path database_in(const test::TempDir& data_home) {
    for (const auto& entry : fs::recursive_directory_iterator(data_home.path))
        if (entry.path().filename() == "agenthost.db") return entry.path();
    return {};
}
}  // namespace

TEST_CASE("cli: --version and --help", "[integration][cli]") {
    test::TempDir home;
    auto version = run_cli(home, "--version");
    CHECK(version.exit_code == 0);
    CHECK_THAT(version.out, Contains("plugin ABI " AH_ABI_VERSION_STRING));
    auto help = run_cli(home, "--help");
    CHECK(help.exit_code == 0);
    CHECK_THAT(help.out, Contains("plugins [--json]") && Contains("run"));
    auto resume = run_cli(home, "resume --help");  // a command's own help, not the list of all
    CHECK(resume.exit_code == 0);
    CHECK_THAT(resume.out,
               StartsWith("Usage: agenthost [--config FILE] [--log-level LEVEL] resume RUN") && Contains("--mode MODE"));
    CHECK_THAT(resume.out, !Contains("parse-toolcalls"));
    auto wrong = run_cli(home, "fly");
    CHECK(wrong.exit_code == 2);
    CHECK_THAT(wrong.err, Contains("unknown command 'fly'"));
}

TEST_CASE("cli: the offline demo streams a turn that calls the C plugin's tools", "[integration][cli][demo]") {
    test::TempDir home;
    auto r = run_cli(home, "--config examples/offline-demo/agenthost.toml run 'Show me a demo'");
    INFO(r.err);
    CHECK(r.exit_code == 0);
    // The trace on stderr, the answer alone on stdout (agenthost run … > answer.txt keeps the answer).
    CHECK_THAT(r.err, Contains("→ echo {\"text\":\"Hello from a plugin written in C — ünïcödé intact.\"}"));
    CHECK_THAT(r.err, Contains("← echo: Hello from a plugin written in C — ünïcödé intact."));
    CHECK_THAT(r.err, Contains("→ add {\"a\":40,\"b\":2}"));
    CHECK_THAT(r.err, Contains("← add: 42"));
    CHECK_THAT(r.out, Contains("Done: echo returned the text as sent") && !Contains("→") && !Contains("←"));
    CHECK_THAT(r.err, Contains("conversation: c-"));

    auto rule = run_cli(home, "--config examples/offline-demo/agenthost.toml run 'please add 19.5 and 22.5'");
    CHECK(rule.exit_code == 0);
    CHECK_THAT(rule.err, Contains("← add: 42"));

    // scripts/demo builds only what the demo uses: with the other bundled plugins unbuilt (their
    // manifests there, their libraries not), the demo prints its turn and nothing about them.
    test::TempDir tree;
    const fs::path build = fs::path(test::cli()).parent_path().parent_path();
    for (const char* part : {"bin", "lib", "share"}) {  // linked when one file system holds both (200 MB otherwise)
        std::error_code linked;
        fs::copy(build / part, tree.path / part, fs::copy_options::recursive | fs::copy_options::create_hard_links, linked);
        if (linked) {
            fs::remove_all(tree.path / part);
            fs::copy(build / part, tree.path / part, fs::copy_options::recursive);
        }
    }
    for (const auto& entry : fs::recursive_directory_iterator(tree.path / "lib" / "agenthost" / "plugins"))
        if (entry.path().extension() == ".so" && entry.path().filename() != "scripted.so") fs::remove(entry.path());
    auto bare = test::run_command("cd '" + std::string(test::source_dir()) + "' && AGENTHOST_CONFIG= XDG_DATA_HOME='" +
                                  (home.path / "data").string() + "' '" + (tree.path / "bin" / "agenthost").string() +
                                  "' --config examples/offline-demo/agenthost.toml run 'Show me a demo'");
    INFO(bare.err);
    CHECK(bare.exit_code == 0);
    CHECK_THAT(bare.err, Contains("← add: 42") && !Contains("not loaded") && !Contains("warning"));
}

TEST_CASE("cli: plugins --json lists bundled plugins and each broken fixture's cause", "[integration][cli]") {
    test::TempDir home;
    // Bundled plugins first: the fixture duplicating "echo" is then the one refused.
    test::write_file(home.path / "fixtures.toml",
                     "default_plugin_dirs = false\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_FIXTURE_PLUGIN_DIR "\"]\n");
    auto r = run_cli(home, "--config '" + (home.path / "fixtures.toml").string() + "' plugins --json");
    REQUIRE(r.exit_code == 0);
    json out = json::parse(r.out);
    std::map<std::string, json> by_name;
    for (const auto& p : out["plugins"]) by_name[p["name"]] = p;
    CHECK(by_name.at("example_c")["status"] == "loaded");
    CHECK(by_name.at("example_c")["tools"] == json::array({"echo", "add"}));
    CHECK(by_name.at("scripted")["kind"] == "provider");
    CHECK(by_name.at("newer_minor")["status"] == "loaded");
    for (auto [name, code] : std::map<std::string, std::string>{{"no_manifest", "manifest_missing"},
                                                                {"bad_toml", "manifest_invalid"},
                                                                {"missing_library", "library_missing"},
                                                                {"not_elf", "not_shared_object"},
                                                                {"no_entry", "entry_missing"},
                                                                {"abi_major", "abi_mismatch"},
                                                                {"create_fails", "create_failed"}}) {
        INFO(name);
        CHECK(by_name.at(name)["status"] == "failed");
        CHECK(by_name.at(name)["error"]["code"] == code);
    }
    auto text = run_cli(home, "--config '" + (home.path / "fixtures.toml").string() + "' plugins");
    CHECK(text.exit_code == 0);
    CHECK_THAT(text.out, Contains("error (abi_mismatch)") && Contains("tools: echo, add"));
}

TEST_CASE("cli: configuration errors and failed turns exit non-zero with a one-line cause", "[integration][cli]") {
    test::TempDir home;
    test::write_file(home.path / "bad.toml", "[provider]\nuse = \"scripted\"\nmodell = \"x\"\n");
    auto bad = run_cli(home, "--config '" + (home.path / "bad.toml").string() + "' plugins");
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Contains("bad.toml:3") && Contains("provider.modell"));

    auto missing = run_cli(home, "--config /nonexistent/agenthost.toml plugins");
    CHECK(missing.exit_code == 2);
    CHECK_THAT(missing.err, Contains("/nonexistent/agenthost.toml"));

    test::write_file(home.path / "nocassette.toml", "[provider]\nuse = \"scripted\"\n");
    auto failed = run_cli(home, "--config '" + (home.path / "nocassette.toml").string() + "' run hello");
    CHECK(failed.exit_code == 1);
    CHECK_THAT(failed.err, Contains("turn stopped (bad_request)") && Contains("cassette"));
    CHECK_THAT(failed.err, !Contains("resume it"));  // the provider refused the request: resuming would not help

    // A failure whose cause can pass (here the provider refused the key) says how to resume.
    test::write_file(home.path / "auth.json", R"({"replies": [{"error": {"type": "auth", "message": "bad key"}}]})");
    test::write_file(home.path / "auth.toml", "[provider]\nuse = \"scripted\"\n[plugins.scripted]\ncassette = \"" +
                                                  (home.path / "auth.json").string() + "\"\n");
    auto refused = run_cli(home, "--config '" + (home.path / "auth.toml").string() + "' run hello");
    CHECK(refused.exit_code == 1);
    CHECK_THAT(refused.err,
               Contains("turn stopped (auth)") && Contains("resume it: agenthost --config '") && Contains("auth.toml' resume "));

    // A provider plugin that does not exist is a configuration error, caught before the turn.
    test::write_file(home.path / "noprovider.toml", "[provider]\nuse = \"opneai\"\n");
    auto none = run_cli(home, "--config '" + (home.path / "noprovider.toml").string() + "' run hello");
    CHECK(none.exit_code == 2);
    CHECK_THAT(none.err,
               Contains("noprovider.toml:2: provider.use = \"opneai\" names no provider plugin (did you mean 'openai'?)"));

    // So is a [sampling] provider that names no provider instance (an outside try: it passed doctor).
    test::write_file(home.path / "nosampler.toml",
                     "[providers.cheap]\nuse = \"scripted\"\n[sampling]\npolicy = \"allow\"\nprovider = \"chaep\"\n");
    auto sampler = run_cli(home, "--config '" + (home.path / "nosampler.toml").string() + "' doctor");
    CHECK(sampler.exit_code != 0);
    CHECK_THAT(sampler.out + sampler.err,
               Contains("sampling.provider = \"chaep\" names no provider instance (did you mean 'cheap'?)"));
}

TEST_CASE("cli: plugins opens a provider plugin no table uses, so its author sees whether it loads", "[integration][cli]") {
    test::TempDir home;
    // A provider's manifest beside a tool plugin's library: the host, which does not open a provider
    // no table uses, would not notice; `agenthost plugins` does.
    test::provider_manifest_beside_tool_library(home.path / "plugins");
    test::write_file(home.path / "agenthost.toml",
                     "default_plugin_dirs = false\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS "\", \"" +
                         (home.path / "plugins").string() +
                         "\"]\nenabled_plugins = [\"scripted\", \"anthropic\", \"duplicate_tool\"]\n");
    const std::string config = "--config '" + (home.path / "agenthost.toml").string() + "' ";
    auto listed = run_cli(home, config + "plugins --json");
    INFO(listed.out << listed.err);
    REQUIRE(listed.exit_code == 0);
    const json report = json::parse(listed.out);
    std::map<std::string, json> by_name;
    for (const auto& p : report["plugins"]) by_name[p["name"]] = p;
    CHECK(by_name.at("duplicate_tool")["status"] == "failed");
    CHECK(by_name.at("duplicate_tool")["error"]["code"] == "kind_mismatch");
    CHECK(by_name.at("anthropic")["status"] == "unused");  // opened, it loads: still not in use
    auto text = run_cli(home, config + "plugins");
    CHECK_THAT(text.out, Contains("error (kind_mismatch)") && Contains("not opened: no provider table uses it"));
}

TEST_CASE("cli: with no config file every bundled plugin loads with its defaults", "[integration][cli]") {
    test::TempDir home;
    auto r = test::run_command("cd '" + home.path.string() + "' && XDG_DATA_HOME='" + home.path.string() +
                               "' AGENTHOST_CONFIG= '" + test::cli() + "' plugins --json");
    REQUIRE(r.exit_code == 0);
    json out = json::parse(r.out);
    std::set<std::string> loaded;
    for (const auto& p : out["plugins"])
        if (p["status"] == "loaded") loaded.insert(p["name"]);
    CHECK(loaded.count("scripted"));
    CHECK(loaded.count("folders"));
    CHECK(!loaded.count("example_c"));  // the demo's plugin is offered only where a config names it
    CHECK(std::filesystem::exists(home.path / "agenthost" / "agenthost.db"));
}

TEST_CASE("cli: parse-toolcalls prints the calls, content and reasoning of raw model output", "[integration][cli]") {
    test::TempDir home;
    test::write_file(home.path / "tools.json",
                     R"([{"type": "function", "function": {"name": "get_weather", "description": "weather",
                          "parameters": {"type": "object", "properties": {"days": {"type": "integer"}, "id": {"type": "string"}}}}}])");
    test::write_file(home.path / "reply.txt",
                     "<think>need weather</think>Checking.\n<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n"
                     "</parameter>\n<parameter=id>\n007\n</parameter>\n</function>\n</tool_call>\n"
                     "<tool_call>{\"name\": \"not_offered\", \"arguments\": {}}</tool_call>");
    auto r = run_cli(home, "parse-toolcalls --tools '" + (home.path / "tools.json").string() + "' < '" +
                               (home.path / "reply.txt").string() + "'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    json out = json::parse(r.out);
    REQUIRE(out["calls"].size() == 1);
    CHECK(out["calls"][0]["name"] == "get_weather");
    CHECK(out["calls"][0]["arguments"] == json{{"days", 3}, {"id", "007"}});
    CHECK(out["reasoning"] == "need weather");
    CHECK_THAT(out["content"].get<std::string>(), Contains("Checking.") && Contains("not_offered"));

    auto any = run_cli(home, "parse-toolcalls < '" + (home.path / "reply.txt").string() + "'");
    CHECK(json::parse(any.out)["calls"].size() == 2);  // without --tools every name counts

    test::write_file(home.path / "bad.json", "{\"not\": \"an array\"}");
    auto bad = run_cli(home, "parse-toolcalls --tools '" + (home.path / "bad.json").string() + "' < /dev/null");
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Contains("bad.json"));
}

TEST_CASE("cli: a destructive call pauses the run, approve and reject continue it, --yes approves", "[integration][cli]") {
    test::TempDir home;
    test::write_file(
        home.path / "cassette.json",
        json{{"rules",
              {{{"match", "delete"},
                {"replies",
                 {{{"tool_calls", {{{"name", "delete_item"}, {"arguments", {{"name", "old"}}}}}}}, {{"text", "Deleted."}}}}},
               {{"match", "remove"},
                {"replies",
                 {{{"tool_calls", {{{"name", "delete_item"}, {"arguments", {{"name", "x"}}}}}}},
                  {{"text", "Understood, kept it."}}}}},
               {{"match", "force"},
                {"replies",
                 {{{"tool_calls", {{{"name", "delete_item"}, {"arguments", {{"name", "y"}}}}}}}, {{"text", "Forced."}}}}}}}}
            .dump());
    test::write_file(home.path / "agenthost.toml",
                     "default_plugin_dirs = false\nenabled_plugins = [\"scripted\", \"agent_tools\"]\n"
                     "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS
                     "\", \"" AGENTHOST_FIXTURE_PLUGIN_DIR
                     "\"]\n"
                     "[plugins.scripted]\ncassette = \"" +
                         (home.path / "cassette.json").string() + "\"\n");
    std::string config = "--config '" + (home.path / "agenthost.toml").string() + "' ";

    auto paused = run_cli(home, config + "run --conversation cli-1 'delete the old item' < /dev/null");
    CHECK(paused.exit_code == 3);
    CHECK_THAT(paused.err, Contains("delete_item") && Contains("agenthost approve --conversation cli-1"));
    CHECK_THAT(paused.out, !Contains("← delete_item"));
    auto approved = run_cli(home, config + "approve --conversation cli-1");
    INFO(approved.err);
    CHECK(approved.exit_code == 0);
    CHECK_THAT(approved.err, Contains("← delete_item: deleted old"));
    CHECK_THAT(approved.out, Contains("Deleted."));
    auto again = run_cli(home, config + "approve --conversation cli-1");
    CHECK(again.exit_code == 2);
    CHECK_THAT(again.err, Contains("no run waiting") && !Contains("interrupted"));

    // A process stopped while it asked leaves its run interrupted: approve says how to go on.
    CHECK(run_cli(home, config + "run --conversation cli-3 'delete the old item' < /dev/null").exit_code == 3);
    {
        sqlite3* db = nullptr;
        REQUIRE(sqlite3_open(database_in(home).c_str(), &db) == SQLITE_OK);
        CHECK(sqlite3_exec(db, "UPDATE runs SET status = 'interrupted' WHERE conversation = 'cli-3'", nullptr, nullptr,
                           nullptr) == SQLITE_OK);
        sqlite3_close(db);
    }
    auto stopped = run_cli(home, config + "approve --conversation cli-3");
    CHECK(stopped.exit_code == 2);
    CHECK_THAT(stopped.err, Contains("no run waiting") && Contains("was interrupted: resume that run"));

    CHECK(run_cli(home, config + "run --conversation cli-2 'remove x' < /dev/null").exit_code == 3);
    auto rejected = run_cli(home, config + "reject --conversation cli-2 --reason 'keep it'");
    CHECK(rejected.exit_code == 0);
    CHECK_THAT(rejected.err, Contains("– delete_item") && Contains("keep it") && !Contains("failed"));
    CHECK_THAT(rejected.out, Contains("Understood, kept it."));

    auto yes = run_cli(home, config + "run --yes 'force it' < /dev/null");
    CHECK(yes.exit_code == 0);
    CHECK_THAT(yes.err, Contains("← delete_item: deleted y"));
    CHECK_THAT(yes.out, Contains("Forced."));

    auto explore = run_cli(home, config + "run --mode explore 'delete the old item' < /dev/null");
    CHECK(explore.exit_code == 0);
    CHECK_THAT(explore.err, Contains("not available in explore mode"));
    auto bad_mode = run_cli(home, config + "run --mode turbo hi");
    CHECK(bad_mode.exit_code == 2);
    CHECK_THAT(bad_mode.err, Contains("--mode must be explore, plan or execute"));
}

TEST_CASE("cli: SIGTERM (or Ctrl-C) cancels a running turn cleanly, --context reaches the model", "[integration][cli]") {
    test::TempDir home;
    test::write_file(home.path / "cassette.json", json{{"replies", {{{"delay_ms", 20000}, {"text", "too late"}}}}}.dump());
    test::write_file(home.path / "agenthost.toml",
                     "default_plugin_dirs = false\nenabled_plugins = [\"scripted\"]\n"
                     "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS
                     "\"]\n"
                     "[plugins.scripted]\ncassette = \"" +
                         (home.path / "cassette.json").string() +
                         "\"\n"
                         "request_log = \"" +
                         (home.path / "requests.jsonl").string() + "\"\n");
    std::string log = (home.path / "requests.jsonl").string();
    // Wait until the provider has the request, then signal; report the exit code.
    auto r = test::run_command("(cd '" + home.path.string() + "' && XDG_DATA_HOME='" + home.path.string() + "' '" + test::cli() +
                               "' --config agenthost.toml run --context '{\"active_graph\": \"marvel\"}' hello & pid=$!; "
                               "while [ ! -s '" +
                               log + "' ]; do sleep 0.05; done; kill -TERM $pid; wait $pid; echo \"exit=$?\")");
    CHECK_THAT(r.out, Contains("exit=130"));  // handled: a process killed by SIGTERM would report 143
    CHECK_THAT(r.err, Contains("cancelling the turn") && Contains("turn stopped (cancelled)"));
    // Which state the run is left in, and how to go on, is said in words.
    CHECK_THAT(r.err, Contains("ends for good") && Contains("the conversation goes on: agenthost run --conversation"));
    CHECK_THAT(test::read_file(log), Contains("active_graph") && Contains("marvel"));
    auto runs = run_cli(home, "--config '" + (home.path / "agenthost.toml").string() + "' runs --json");
    REQUIRE(runs.exit_code == 0);
    CHECK(json::parse(runs.out)[0]["status"] == "cancelled");
}

TEST_CASE("cli: a signal at any moment, with every plugin's threads running, is taken by agenthost", "[integration][cli]") {
    test::TempDir home;
    test::write_file(home.path / "cassette.json", json{{"replies", {{{"delay_ms", 20000}, {"text", "too late"}}}}}.dump());
    // Every plugin of the build loads (the torrent, MCP bridge and fetch plugins start threads).
    test::write_file(home.path / "agenthost.toml",
                     "default_plugin_dirs = false\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS
                     "\"]\n"
                     "[plugins.scripted]\ncassette = \"" +
                         (home.path / "cassette.json").string() +
                         "\"\n"
                         "request_log = \"" +
                         (home.path / "requests.jsonl").string() + "\"\n");
    // A simple command in the background, so $pid is agenthost itself (not a shell around it).
    std::string start = "cd '" + home.path.string() + "'; XDG_DATA_HOME='" + home.path.string() + "' '" + test::cli() +
                        "' --config agenthost.toml run hello & pid=$!; ";
    std::string log = (home.path / "requests.jsonl").string();
    // The clock starts once main() has blocked the signals (SigBlk in /proc): before that the process
    // is still in the dynamic loader, where no program can take a signal, and under load that lasts
    // longer than the first delay.
    std::string in_main =
        "while kill -0 $pid 2>/dev/null && ! grep -q '^SigBlk:.*[1-9a-f]' /proc/$pid/status 2>/dev/null; do sleep 0.002; done; ";
    for (const char* delay : {"0", "0.05", "0.15", "0.3"}) {  // start-up, plugin loading, the turn
        INFO("signal " << delay << " s after main() began");
        auto r = test::run_command("(" + start + in_main + "sleep " + delay + "; kill -TERM $pid; wait $pid; echo \"exit=$?\")");
        CHECK_THAT(r.out, Contains("exit=130"));
    }
    // Mid-turn, then a second signal while the turn is still winding down: quits at once, by itself.
    std::filesystem::remove(log);
    auto r = test::run_command("(" + start + "while [ ! -s '" + log +
                               "' ]; do sleep 0.05; done; kill -TERM $pid; kill -TERM $pid; "
                               "wait $pid; echo \"exit=$?\")");
    CHECK_THAT(r.out, Contains("exit=130"));
}

TEST_CASE("cli: doctor shows plugins and each provider's readiness, never a key", "[integration][cli][providers]") {
    test::TempDir home;
    // The torrent plugin would search the internet's Knaben: its checks are tested on their own.
    test::write_file(home.path / "agenthost.toml",
                     "default_plugin_dirs = false\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS
                     "\"]\n"
                     "disabled_plugins = [\"torrent\"]\n"
                     "[plugins.scripted]\ncassette = \"" +
                         std::string(test::source_dir()) +
                         "/examples/offline-demo/cassette.json\"\n"
                         "[providers.local]\npreset = \"vllm\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"qwen\"\n"
                         "api_key_env = \"DOCTOR_TEST_KEY\"\nconnect_timeout_ms = 500\n");
    std::string config = "--config '" + (home.path / "agenthost.toml").string() + "' ";
    auto r = test::run_command("cd '" + home.path.string() + "' && DOCTOR_TEST_KEY=sk-very-secret XDG_DATA_HOME='" +
                               home.path.string() + "' '" + test::cli() + "' " + config + "doctor");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);  // the default (scripted) provider is ready, but every configured one counts
    CHECK_THAT(r.out, Contains("scripted (default)") && Contains("ready") && Contains("NOT READY: see above"));
    CHECK_THAT(r.out, Contains("local: plugin openai, preset vllm, model qwen") && Contains("DOCTOR_TEST_KEY (set)"));
    CHECK_THAT(r.out, Contains("NOT READY MODEL_LIST_FAILED"));
    CHECK_THAT(r.out + r.err, !Contains("sk-very-secret"));

    CHECK_THAT(r.out, Contains("ok   cassette: "));

    auto unknown = run_cli(home, config + "run --provider nope hi");
    CHECK(unknown.exit_code == 2);
    CHECK_THAT(unknown.err, Contains("--provider 'nope'") && Contains("the providers: scripted, local"));
    auto typo = run_cli(home, config + "run --provider locl hi");
    CHECK_THAT(typo.err, Contains("did you mean 'local'"));
    auto bad_option = run_cli(home, config + "plugins --jsn");  // the hint names the command's own help
    CHECK(bad_option.exit_code == 2);
    CHECK_THAT(bad_option.err, Contains("Run 'agenthost plugins --help' for its options."));

    // A tool the host refused is a plugin's defect: doctor lists it and is not ready.
    test::write_file(home.path / "refused.toml",
                     "default_plugin_dirs = false\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_FIXTURE_PLUGIN_DIR
                     "\"]\nenabled_plugins = [\"scripted\", \"example_c\", \"duplicate_tool\"]\n"
                     "[plugins.scripted]\ncassette = \"" +
                         std::string(test::source_dir()) + "/examples/offline-demo/cassette.json\"\n");
    auto refused = run_cli(home, "--config '" + (home.path / "refused.toml").string() + "' doctor");
    INFO(refused.out << refused.err);
    CHECK(refused.exit_code == 1);
    CHECK_THAT(refused.out, Contains("FAIL tool echo refused: plugin 'example_c' (loaded first)") && Contains("NOT READY"));

    // The scripted provider without a cassette cannot answer: readiness and its own check agree.
    test::write_file(home.path / "bare.toml",
                     "default_plugin_dirs = false\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\"]\n"
                     "enabled_plugins = [\"scripted\"]\n");
    auto bare = run_cli(home, "--config '" + (home.path / "bare.toml").string() + "' doctor");
    INFO(bare.out << bare.err);
    CHECK(bare.exit_code == 1);
    CHECK_THAT(bare.out, Contains("scripted (default)") && Contains("no cassette: set [plugins.scripted] cassette") &&
                             !Contains("ready (1 model)"));
}

TEST_CASE("cli: an answer given through agent_done is printed on stdout", "[integration][cli]") {
    test::TempDir home;
    test::write_file(
        home.path / "cassette.json",
        json{{"replies",
              {{{"tool_calls", {{{"name", "agent_done"}, {"arguments", {{"summary", "All three files are renamed."}}}}}}}}}}
            .dump());
    test::write_file(home.path / "agenthost.toml",
                     "default_plugin_dirs = false\nenabled_plugins = [\"scripted\"]\n"
                     "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS
                     "\"]\n"
                     "[plugins.scripted]\ncassette = \"" +
                         (home.path / "cassette.json").string() + "\"\n");
    auto r = run_cli(home, "--config '" + (home.path / "agenthost.toml").string() + "' run 'rename them' < /dev/null");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("All three files are renamed.\n"));
}

TEST_CASE("cli: a model that is slow to answer is counted on the terminal, never looks like a hang", "[integration][cli]") {
    test::TempDir home;
    test::write_file(home.path / "cassette.json", json{{"replies", {{{"delay_ms", 6500}, {"text", "At last."}}}}}.dump());
    test::write_file(home.path / "agenthost.toml",
                     "default_plugin_dirs = false\nenabled_plugins = [\"scripted\"]\n"
                     "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\"]\n"
                     "[plugins.scripted]\ncassette = \"" +
                         (home.path / "cassette.json").string() + "\"\n");
    // script(1) gives the command a terminal, where the wait is drawn.
    auto r = test::run_command(std::string("script -qec \"'") + test::cli() + "' --config '" +
                               (home.path / "agenthost.toml").string() + "' run 'hello' < /dev/null\" /dev/null");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("waiting for the model · 5 s (Ctrl-C stops the turn; it can be resumed)") && Contains("At last."));
}

TEST_CASE("cli: an in-process plugin that crashes the host is named on the way down", "[integration][cli]") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    WARN("skipped: the sanitizer's own crash report replaces the note");
    return;
#endif
    test::TempDir home;
    auto r = mcp_call_careless(home, "", "careless_crash");
    INFO(r.err);
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.err, Contains("the in-process plugin 'careless' crashed the host while running 'careless_crash'") &&
                          Contains("[plugins.careless] isolation = \"process\""));
}

TEST_CASE("cli: a crash on a plugin's own thread names the in-process calls that ran", "[integration][cli]") {
    // A Go plugin's panic in a goroutine aborts the process on a thread of the Go runtime, not the
    // thread the host called in on: the note of that thread is empty, the running calls are not.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    WARN("skipped: the sanitizer's own crash report replaces the note");
    return;
#endif
    test::TempDir home;
    auto r = mcp_call_careless(home, "", "careless_thread_crash");
    INFO(r.err);
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.err, Contains("signal 6 on a thread in no plugin call") &&
                          Contains("plugin 'careless' running 'careless_thread_crash'") && Contains("isolation = \"process\""));
}

TEST_CASE("cli: what an isolated plugin prints reaches the log labelled and escaped, never the terminal raw",
          "[integration][cli]") {
    // An outside try saw a process-isolated plugin's escape sequences and control bytes reach the
    // operator's terminal as they were (only a sandboxed one's were labelled).
    test::TempDir home;
    auto r = mcp_call_careless(home, "isolation = \"process\"\n", "careless_print");
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("printed"));
    CHECK_THAT(r.err, Contains("plugin stderr: plugin=careless \\x1b[31mRED-ESCAPE\\x01 to stdout") &&
                          Contains("plugin stderr: plugin=careless \\x1b]0;title\\x07 to stderr"));
    CHECK(r.err.find('\x1b') == std::string::npos);
    CHECK(r.out.find('\x1b') == std::string::npos);
}

TEST_CASE("cli: the prompt can come from stdin, a wrong --log-level is refused", "[integration][cli]") {
    test::TempDir home;
    auto r = test::run_command("cd '" + std::string(test::source_dir()) +
                               "' && echo 'please add 19.5 and 22.5' | XDG_DATA_HOME='" + home.path.string() +
                               "' AGENTHOST_CONFIG= '" + test::cli() + "' --config examples/offline-demo/agenthost.toml run -");
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, Contains("← add: 42"));
    auto loud = run_cli(home, "--log-level loud plugins");
    CHECK(loud.exit_code == 2);
    CHECK_THAT(loud.err, Contains("--log-level \"loud\" is unknown") && Contains("\"warn\" (the default)"));
}

TEST_CASE("cli: config shows the file found in the search path and masks secrets", "[integration][cli]") {
    test::TempDir home;
    test::write_file(home.path / "xdg" / "agenthost" / "agenthost.toml",
                     "data_dir = \"data\"\n[provider]\nuse = \"openai\"\npreset = \"openai\"\nmodel = \"gpt-x\"\napi_key_env = "
                     "\"CLI_TEST_KEY\"\n");
    auto r = test::run_command("cd '" + home.path.string() + "' && CLI_TEST_KEY=sk-very-secret XDG_CONFIG_HOME='" +
                               (home.path / "xdg").string() + "' AGENTHOST_CONFIG= '" + test::cli() + "' config");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    json shown = json::parse(r.out);
    CHECK(shown["file"] == (home.path / "xdg" / "agenthost" / "agenthost.toml").string());
    CHECK(shown["data_dir"] == (home.path / "xdg" / "agenthost" / "data").string());  // relative to the file
    CHECK(shown["provider"]["model"] == "gpt-x");
    CHECK(shown["provider"]["api_key"] == "set");
    CHECK_THAT(r.out, !Contains("sk-very-secret"));
    // Values in effect: timeouts left unset are the provider plugin's declared defaults, not 0.
    CHECK(shown["provider"]["timeout_ms"] == 600000);
    CHECK(shown["provider"]["connect_timeout_ms"] == 10000);
    // Every server limit a user can set is shown, with its default.
    CHECK(shown["server"]["max_connections_per_address"] == 256);
    CHECK_THAT(shown["server"]["max_memory_mb"].get<std::string>(), Contains("a quarter"));
    // Enumerated settings are shown as the file spells them, never as numbers.
    CHECK(shown["server"]["auth"] == "token");
    CHECK(shown["store"]["backend"] == "sqlite");
    CHECK(shown["store"]["durability"] == "full");
    CHECK(shown["agent"]["default_mode"] == "execute");
    // Nothing anywhere: the places searched are named.
    auto none = test::run_command("cd '" + home.path.string() + "' && HOME='" + home.path.string() +
                                  "' XDG_CONFIG_HOME= AGENTHOST_CONFIG= '" + test::cli() + "' config");
    REQUIRE(none.exit_code == 0);
    json defaults = json::parse(none.out);
    CHECK(defaults["file"].is_null());
    CHECK_THAT(defaults["searched"].dump(), Contains("agenthost.toml") && Contains(".config/agenthost/agenthost.toml"));
}

TEST_CASE("cli: every config mistake is caught at start with the file, the line and a suggestion", "[integration][cli][config]") {
    test::TempDir home;
    test::write_file(home.path / "typos.toml",
                     "default_plugin_dirs = false\n"
                     "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\"]\n"
                     "enabled_plugins = [\"scripted\", \"folders\", \"torrent\", \"folderz\"]\n"  // line 3
                     "[plugins.torrent]\n"
                     "reslts = 10\n"                       // line 5
                     "qbittorrent_password_env = \"X\"\n"  // line 6
                     "[plugins.torent]\n"                  // line 7
                     "results = 3\n"
                     "[plugins.folders]\n"
                     "page_size = \"fifty\"\n"      // line 10
                     "[tools.delete_everything]\n"  // line 11
                     "needs_approval = true\n");
    std::string config = "--config '" + (home.path / "typos.toml").string() + "' ";
    auto run = run_cli(home, config + "run hello");
    INFO(run.err);
    CHECK(run.exit_code == 2);
    CHECK_THAT(run.err,
               Contains("typos.toml:5: [plugins.torrent] reslts: 'torrent' has no setting 'reslts' (did you mean 'results'?)"));
    CHECK_THAT(run.err, Contains("typos.toml:6: [plugins.torrent] qbittorrent_password_env") &&
                            Contains("(did you mean 'password_env'?)"));
    CHECK_THAT(run.err, Contains("typos.toml:7: [plugins.torent] names 'torent'") && Contains("(did you mean 'torrent'?)"));
    CHECK_THAT(run.err, Contains("typos.toml:10: [plugins.folders] page_size: expected integer, got string \"fifty\""));
    CHECK_THAT(run.err, Contains("typos.toml:3: enabled_plugins names 'folderz'") && Contains("(did you mean 'folders'?)"));
    CHECK_THAT(run.err, Contains("typos.toml:11: [tools.delete_everything] names no tool"));
    CHECK_THAT(run.err, !Contains("json.exception"));
    // doctor lists every problem and says it is not ready; nothing ran.
    auto doctor = run_cli(home, config + "doctor");
    CHECK(doctor.exit_code == 2);  // the file is wrong: as for every command
    CHECK_THAT(doctor.out, Contains("typos.toml:5: [plugins.torrent] reslts") &&
                               Contains("typos.toml:11: [tools.delete_everything]") && Contains("NOT READY"));

    // A host key and a declared one are fine; a wrong isolation value names its line.
    test::write_file(home.path / "fine.toml",
                     "default_plugin_dirs = false\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\"]\n"
                     "[plugins.folders]\npage_size = 20\nisolation = \"process\"\n"
                     "[plugins.fetch]\nisolation = \"sometimes\"\n");
    auto fine = run_cli(home, "--config '" + (home.path / "fine.toml").string() + "' plugins --json");
    REQUIRE(fine.exit_code == 2);               // listed, and the file is wrong
    const json listed = json::parse(fine.out);  // kept: a range-for over a temporary's member would dangle
    for (const auto& p : listed["plugins"]) {
        if (p["name"] == "folders") CHECK(p["status"] == "loaded");
        if (p["name"] == "fetch")
            CHECK_THAT(p["error"]["message"].get<std::string>(), Contains("fine.toml:7: [plugins.fetch] isolation"));
        if (p["name"] == "torrent") CHECK(p["settings"]["results"]["default"] == 10);  // the declared settings, described
    }
}

TEST_CASE("cli: a path setting resolves against the config file, from any working directory", "[integration][cli][config]") {
    test::TempDir home;
    test::write_file(home.path / "conf" / "cassette.json",
                     json{{"replies", {{{"text", "from the cassette beside the config"}}}}}.dump());
    test::write_file(home.path / "conf" / "agenthost.toml",
                     "default_plugin_dirs = false\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\"]\nenabled_plugins = [\"scripted\"]\n"
                     "[plugins.scripted]\ncassette = \"cassette.json\"\n");
    auto r = test::run_command("cd / && XDG_DATA_HOME='" + home.path.string() + "' '" + test::cli() + "' --config '" +
                               (home.path / "conf" / "agenthost.toml").string() + "' run hi < /dev/null");
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("from the cassette beside the config"));
    // config shows what the plugin received: the resolved path, defaults filled in.
    auto shown = test::run_command("cd / && XDG_DATA_HOME='" + home.path.string() + "' '" + test::cli() + "' --config '" +
                                   (home.path / "conf" / "agenthost.toml").string() + "' config");
    REQUIRE(shown.exit_code == 0);
    json settings = json::parse(shown.out)["plugins"]["scripted"]["settings"];
    CHECK(settings["cassette"] == (home.path / "conf" / "cassette.json").string());
    CHECK(settings["delta_chars"] == 6);
    CHECK(json::parse(shown.out)["problems"]["errors"].empty());
}

TEST_CASE("cli: tools lists what the model is offered and tool calls one by hand", "[integration][cli]") {
    test::TempDir home;
    std::string demo = "--config examples/offline-demo/agenthost.toml ";
    auto list = run_cli(home, demo + "tools --json");
    REQUIRE(list.exit_code == 0);
    json tools = json::parse(list.out);
    bool found_add = false;
    for (const auto& t : tools) {
        // The agent's own tools say what they do too: reading ones are read-only.
        if (t["name"] == "recall_facts" || t["name"] == "list_tasks") CHECK(t["read_only"] == true);
        if (t["name"] == "push_task") CHECK(t["read_only"] == false);
        if (t["name"] == "add") {
            found_add = true;
            CHECK(t["plugin"] == "example_c");
            CHECK(t["input_schema"]["properties"].contains("a"));
        }
    }
    CHECK(found_add);
    auto text = run_cli(home, demo + "tools");
    CHECK_THAT(text.out, Contains("TOOL") && Contains("add") && Contains("example_c"));

    auto added = run_cli(home, demo + "tool add '{\"a\": 2, \"b\": 40}'");
    INFO(added.err);
    CHECK(added.exit_code == 0);
    CHECK(json::parse(added.out)["content"] == "42");
    auto piped =
        test::run_command("cd '" + std::string(test::source_dir()) + "' && echo '{\"text\": \"piped\"}' | XDG_DATA_HOME='" +
                          home.path.string() + "' '" + test::cli() + "' " + demo + "tool echo -");
    CHECK(json::parse(piped.out)["content"] == "piped");
    // Checked against the schema exactly as the model's calls are, before the plugin sees them.
    auto wrong = run_cli(home, demo + "tool add '{\"a\": \"two\", \"c\": 1}'");
    CHECK(wrong.exit_code == 2);
    CHECK_THAT(wrong.err, Contains("Invalid arguments for add") && Contains("'a'") && Contains("'c'"));
    auto builtin = run_cli(home, demo + "tool set_goal '{\"goal\": \"x\"}'");
    CHECK(builtin.exit_code == 2);
    CHECK_THAT(builtin.err, Contains("built-in tool of the agent loop"));
    auto unknown = run_cli(home, demo + "tool nosuch '{}'");
    CHECK(unknown.exit_code == 2);
    CHECK_THAT(unknown.err, Contains("nosuch"));
    auto not_object = run_cli(home, demo + "tool add '[1]'");
    CHECK(not_object.exit_code == 2);
}

TEST_CASE("cli: run --json prints one event per line, conversations and show read the store", "[integration][cli]") {
    test::TempDir home;
    std::string demo = "--config examples/offline-demo/agenthost.toml ";
    auto r = run_cli(home, demo + "run --json --conversation cj-1 'please add 19.5 and 22.5'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    std::vector<std::string> names;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        json event = json::parse(line);  // every line is one JSON object
        names.push_back(event["event"]);
        if (event["event"] == "tool_result") CHECK(event["content"] == "42");
        if (event["event"] == "end") {
            CHECK(event["ok"] == true);
            CHECK(event["conversation"] == "cj-1");  // a script can go on from the JSON alone
        }
    }
    CHECK(std::find(names.begin(), names.end(), "tool_call") != names.end());
    CHECK(names.back() == "end");
    CHECK_THAT(r.err, !Contains("←"));

    auto quiet = run_cli(home, demo + "run --quiet --conversation cj-1 'please add 19.5 and 22.5'");
    CHECK(quiet.exit_code == 0);
    CHECK_THAT(quiet.out, Contains("42") && !Contains("Let me add"));  // the final answer alone
    CHECK_THAT(quiet.err, !Contains("←") && !Contains("conversation:"));
    CHECK(run_cli(home, demo + "run --json --quiet hi").exit_code == 2);
    CHECK(run_cli(home, demo + "run ''").exit_code == 2);

    auto list = run_cli(home, demo + "conversations --json");
    REQUIRE(list.exit_code == 0);
    json conversations = json::parse(list.out);
    REQUIRE(conversations.size() == 1);
    CHECK(conversations[0]["id"] == "cj-1");
    CHECK(conversations[0]["runs"] == 2);
    auto shown = run_cli(home, demo + "show cj-1");
    CHECK(shown.exit_code == 0);
    CHECK_THAT(shown.out, Contains("> please add 19.5 and 22.5") && Contains("→ add") && Contains("← 42"));
    CHECK(run_cli(home, demo + "show nope").exit_code == 2);
    auto runs = run_cli(home, demo + "runs");
    CHECK_THAT(runs.out, Contains("STATUS") && Contains("PROVIDER") && Contains("TOKENS") && Contains("completed"));
}

TEST_CASE("cli: chat from a pipe sends each line into one conversation, slash commands work", "[integration][cli]") {
    test::TempDir home;
    auto r = test::run_command("cd '" + std::string(test::source_dir()) +
                               "' && printf 'please add 19.5 and 22.5\\n/mode plan\\n/frobnicate\\n"
                               "Show me a demo\\n' | XDG_DATA_HOME='" +
                               home.path.string() + "' '" + test::cli() +
                               "' --config examples/offline-demo/agenthost.toml chat --conversation chat-1");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("42"));
    CHECK_THAT(r.err, Contains("mode: plan") && Contains("unknown command /frobnicate"));
    auto runs = run_cli(home, "--config examples/offline-demo/agenthost.toml runs --json --conversation chat-1");
    json list = json::parse(runs.out);
    REQUIRE(list.size() == 2);
    CHECK(list[0]["mode"] == "plan");  // newest first: the turn after /mode plan
    CHECK(list[1]["mode"] == "execute");
}

TEST_CASE("cli: chat shows the current mode, provider and model, the history, and sends the last message again",
          "[integration][cli]") {
    test::TempDir home;
    auto r = test::run_command("cd '" + std::string(test::source_dir()) +
                               "' && printf '/mode\n/provider\n/model\n/retry\n"
                               "please add 19.5 and 22.5\n/history 1\n/retry\n/provider nowhere\n' | XDG_DATA_HOME='" +
                               home.path.string() + "' '" + test::cli() +
                               "' --config examples/offline-demo/agenthost.toml chat --conversation chat-2");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, Contains("mode: execute (explore, plan or execute)") &&
                          Contains("provider: default (choices: default (scripted))") &&
                          Contains("model: the provider's default") && Contains("nothing to send again yet"));
    CHECK_THAT(r.err, Contains("you: please add 19.5 and 22.5") && Contains("again: please add 19.5 and 22.5") &&
                          Contains("no provider 'nowhere' (choices: default (scripted))"));
    auto runs = run_cli(home, "--config examples/offline-demo/agenthost.toml runs --json --conversation chat-2");
    CHECK(json::parse(runs.out).size() == 2);  // the message and its retry
}

TEST_CASE("cli: chat taken up again keeps its mode, marks unanswered prompts, copies the last answer given",
          "[integration][cli]") {
    test::TempDir home;
    json cassette{
        {"rules",
         {{{"match", "plan the trip"}, {"replies", {{{"text", "Go by train."}}}}},
          {{"match", "break"}, {"replies", {{{"error", {{"type", "bad_request"}, {"message", "the server refused it"}}}}}}}}},
        {"fallback", {{"text", "fallback"}}}};
    test::write_file(home.path / "cassette.json", cassette.dump());
    test::write_file(home.path / "agenthost.toml",
                     "data_dir = \"data\"\ndefault_plugin_dirs = false\nenabled_plugins = [\"scripted\"]\n"
                     "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\"]\n"
                     "[plugins.scripted]\ncassette = \"cassette.json\"\n");
    std::string cli = std::string("'") + test::cli() + "' --config '" + (home.path / "agenthost.toml").string() + "' ";
    CHECK(test::run_command(cli + "run --mode plan --conversation trip 'plan the trip' < /dev/null").exit_code == 0);
    CHECK(test::run_command(cli + "run --mode plan --conversation trip 'break it' < /dev/null").exit_code == 1);
    auto r = test::run_command("printf '/mode\n/history\n/copy\n/model nosuch\n' | " + cli + "chat --conversation trip");
    INFO(r.out << r.err);
    CHECK_THAT(r.err, Contains("mode: plan"));  // the conversation's, not the default execute
    // run decides the same way (one place): the conversation's last mode, unless --mode.
    CHECK(test::run_command(cli + "run --conversation trip 'plan the trip' < /dev/null").exit_code == 0);
    CHECK(test::run_command(cli + "run --mode explore --conversation trip 'plan the trip' < /dev/null").exit_code == 0);
    json modes = json::parse(test::run_command(cli + "runs --json --conversation trip").out);
    std::vector<std::string> seen;
    for (const auto& run : modes) seen.push_back(run["mode"]);
    CHECK(seen == std::vector<std::string>{"explore", "plan", "plan", "plan"});  // newest first
    CHECK_THAT(r.err, Contains("you: plan the trip\nagent: Go by train.\nyou: break it\n  (no answer: run 2 bad_request)"));
    CHECK_THAT(r.err, Contains("copied the last answer (12 bytes)"));
    // A model the provider does not serve is refused at once, with what it serves.
    CHECK_THAT(r.err,
               Contains("the provider does not serve 'nosuch'; it serves: scripted; the model stays the provider's default"));
}

TEST_CASE("cli: a model the server does not serve names the ones it does", "[integration][cli][providers]") {
    test::TempDir home;
    test::LoopbackServer fake;  // an OpenAI-compatible server with one model, refusing any other as OpenAI does
    fake.http.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"object":"list","data":[{"id":"local-7b","object":"model"}]})", "application/json");
    });
    fake.http.Post("/v1/chat/completions", [](const httplib::Request&, httplib::Response& res) {
        res.status = 404;
        res.set_content(
            R"({"error":{"message":"The model `nosuch` does not exist","type":"invalid_request_error","code":"model_not_found"}})",
            "application/json");
    });
    int port = fake.start();
    test::write_file(home.path / "agenthost.toml",
                     "data_dir = \"data\"\ndefault_plugin_dirs = false\nenabled_plugins = [\"openai\"]\n"
                     "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\"]\n[provider]\npreset = \"llamacpp\"\n"
                     "model = \"local-7b\"\nbase_url = \"http://127.0.0.1:" +
                         std::to_string(port) + "/v1\"\n");
    auto r = test::run_command(std::string("'") + test::cli() + "' --config '" + (home.path / "agenthost.toml").string() +
                               "' run --model nosuch 'hello' < /dev/null");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Contains("turn stopped (model_unavailable)") &&
                          Contains("the provider serves: local-7b; choose one with --model NAME") &&
                          Contains(" resume 1 --model local-7b\n"));
    CHECK_THAT(r.err, !Contains("doctor"));  // doctor checks the configured model, which is served
}

TEST_CASE("cli: a model that does not finish in time names timeout_ms, and the wait is shown again for the retry",
          "[integration][cli][providers]") {
    test::TempDir home;
    test::LoopbackServer fake;  // lists its model at once, never finishes a reply in time
    fake.http.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"object":"list","data":[{"id":"local-7b","object":"model"}]})", "application/json");
    });
    fake.http.Post("/v1/chat/completions", [](const httplib::Request&, httplib::Response& res) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2500));
        res.set_content("{}", "application/json");
    });
    int port = fake.start();
    test::write_file(home.path / "agenthost.toml",
                     "data_dir = \"data\"\ndefault_plugin_dirs = false\nenabled_plugins = [\"openai\"]\n"
                     "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\"]\n[provider]\npreset = \"llamacpp\"\n"
                     "model = \"local-7b\"\ntimeout_ms = 1000\nretry_attempts = 2\nretry_base_ms = 10\n"
                     "base_url = \"http://127.0.0.1:" +
                         std::to_string(port) + "/v1\"\n");
    auto r = test::run_command(std::string("script -qec \"'") + test::cli() + "' --config '" +
                               (home.path / "agenthost.toml").string() + "' run 'hello' < /dev/null\" /dev/null");
    INFO(r.out << r.err);
    CHECK_THAT(r.out, Contains("turn stopped (timeout)") &&
                          Contains("the model did not finish within timeout_ms = 1000 ms (provider 'openai'): raise it in ") &&
                          !Contains("doctor"));
    // The retry's warning ends the waiting line, and the waiting line comes back for the second attempt.
    size_t warned = r.out.find("attempt 2 of 2");
    REQUIRE(warned != std::string::npos);
    CHECK(r.out.find("waiting for the model", warned) != std::string::npos);
}

TEST_CASE("cli: completion scripts come from the command table", "[integration][cli]") {
    test::TempDir home;
    auto bash = run_cli(home, "completion bash");
    CHECK(bash.exit_code == 0);
    CHECK_THAT(bash.out,
               Contains("complete -o default -F _agenthost agenthost") && Contains("chat") && Contains("--conversation"));
    auto syntax =
        test::run_command("cd '" + std::string(test::source_dir()) + "' && '" + test::cli() + "' completion bash | bash -n");
    CHECK(syntax.exit_code == 0);
    // Values complete too: --mode's words, and tool names asked of agenthost with the --config given.
    auto words = test::run_command(
        "cd '" + std::string(test::source_dir()) + "' && PATH=\"$(dirname '" + test::cli() +
        "'):$PATH\" bash -c 'source <(agenthost completion bash); "
        "COMP_WORDS=(agenthost run --mode \"\"); COMP_CWORD=3; _agenthost; echo \"mode: ${COMPREPLY[*]}\"; "
        "COMP_WORDS=(agenthost --config examples/offline-demo/agenthost.toml tool ad); COMP_CWORD=4; _agenthost; "
        "echo \"tool: ${COMPREPLY[*]}\"'");
    CHECK_THAT(words.out, Contains("mode: explore plan execute") && Contains("tool: add"));
    CHECK_THAT(run_cli(home, "completion fish").out, Contains("__fish_seen_subcommand_from run"));
    CHECK(run_cli(home, "completion tcsh").exit_code == 2);
    auto typo = run_cli(home, "conversatoins");
    CHECK_THAT(typo.err, Contains("did you mean 'conversations'?"));
}

TEST_CASE("cli: doctor vouches only for what it checked: folders, the cassette, a provider's key", "[integration][cli][doctor]") {
    test::TempDir home;
    std::filesystem::create_directories(home.path / "movies");
    test::write_file(home.path / "agenthost.toml",
                     "default_plugin_dirs = false\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\"]\n"
                     "enabled_plugins = [\"scripted\", \"folders\", \"openai\"]\n"
                     "[plugins.folders]\nfolders = { movies = \"movies\", tv = \"/nonexistent/tv\" }\n"
                     "[providers.cloud]\npreset = \"openai\"\napi_key_env = \"DOCTOR_UNSET_KEY\"\n");
    auto r = test::run_command("cd / && XDG_DATA_HOME='" + home.path.string() + "' '" + test::cli() + "' --config '" +
                               (home.path / "agenthost.toml").string() + "' doctor");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);                                                                // no cassette, a folder missing
    CHECK_THAT(r.out, Contains("ok   folder movies: " + (home.path / "movies").string()));  // relative to the config file
    CHECK_THAT(r.out, Contains("FAIL folder tv: missing: create /nonexistent/tv"));
    CHECK_THAT(r.out, Contains("FAIL cassette: none configured"));
    CHECK_THAT(r.out, Contains("the key for https://api.openai.com/v1"));
    CHECK_THAT(r.out, Contains("NOT READY KEY_MISSING: DOCTOR_UNSET_KEY is not set"));
    CHECK_THAT(r.out, Contains("NOT READY: see above"));
    auto as_json = test::run_command("cd / && XDG_DATA_HOME='" + home.path.string() + "' '" + test::cli() + "' --config '" +
                                     (home.path / "agenthost.toml").string() + "' doctor --json");
    CHECK(as_json.exit_code == 1);
    json report = json::parse(as_json.out);
    CHECK(report["ready"] == false);
    bool tv_failed = false;
    for (const auto& p : report["plugins"])
        for (const auto& c : p["checks"]) tv_failed |= c["name"] == "folder tv" && c["ok"] == false;
    CHECK(tv_failed);
    CHECK(report["providers"][1]["code"] == "KEY_MISSING");

    // A turn on that provider says what doctor says, without sending a request that lacks its key
    // (the server here would only be unreachable: 127.0.0.1:1 over https).
    test::write_file(home.path / "keyless.toml",
                     "default_plugin_dirs = false\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\"]\n"
                     "enabled_plugins = [\"openai\"]\n[provider]\nuse = \"openai\"\nmodel = \"m\"\n"
                     "base_url = \"https://127.0.0.1:1/v1\"\napi_key_env = \"DOCTOR_UNSET_KEY\"\n");
    auto turn = run_cli(home, "--config '" + (home.path / "keyless.toml").string() + "' run hello");
    CHECK(turn.exit_code == 1);
    CHECK_THAT(turn.err, Contains("turn stopped (auth): provider 'openai' cannot be asked: DOCTOR_UNSET_KEY is not set") &&
                             !Contains("could not reach"));
    // Hints name the config they were given: pasted as printed, they act on the same data.
    const std::string named = "agenthost --config '" + (home.path / "keyless.toml").string() + "'";
    CHECK_THAT(turn.err, Contains("resume it: " + named + " resume ") && Contains(named + " doctor") &&
                             Contains("continue with " + named + " run --conversation "));
}

TEST_CASE("cli: secrets_file puts its variables in the environment, which wins, and a bad line names its place",
          "[integration][cli][config]") {
    test::TempDir home;
    test::write_file(home.path / "secrets.env",
                     "; written by the operator\nSECRET_FILE_KEY=\"from-the-file\"\n\nSECRET_KEPT=file\n");
    test::write_file(home.path / "agenthost.toml",
                     "secrets_file = \"secrets.env\"\ndata_dir = \"data\"\ndefault_plugin_dirs = false\n"
                     "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\"]\n"
                     "enabled_plugins = [\"scripted\", \"openai\"]\n"
                     "[providers.cloud]\nuse = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\n"
                     "api_key_env = \"SECRET_FILE_KEY\"\n");
    std::string cli = std::string("'") + test::cli() + "' --config '" + (home.path / "agenthost.toml").string() + "' ";
    auto r = test::run_command("env -u SECRET_FILE_KEY SECRET_KEPT=env " + cli + "doctor");
    INFO(r.out << r.err);
    CHECK_THAT(r.out, Contains("secrets:   " + (home.path / "secrets.env").string() +
                               ": SECRET_FILE_KEY from the file; SECRET_KEPT already in the environment (kept)"));
    CHECK_THAT(r.out, Contains("key SECRET_FILE_KEY (set)") && !Contains("from-the-file"));
    // A file that is not there is said, not an error: the service reads its unit's EnvironmentFile.
    test::fs::remove(home.path / "secrets.env");
    auto missing = test::run_command(cli + "doctor --json");
    CHECK_THAT(json::parse(missing.out)["secrets"]["unreadable"].get<std::string>(), Contains("secrets.env does not exist"));
    // A line that is no assignment stops every command, with the file and line but not the line.
    test::write_file(home.path / "secrets.env", "GOOD=1\nhunter2\n");
    auto bad = test::run_command(cli + "tools");
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.err, Contains("secrets.env:2: expected NAME=value") && !Contains("hunter2"));
}

TEST_CASE("cli: every mistake of a file is listed at once, a provider that cannot start stops the turn before it begins",
          "[integration][cli][config]") {
    test::TempDir home;
    test::write_file(home.path / "many.toml",
                     "enabled_plugin = [\"scripted\"]\n[limits]\nexecute_iterations = \"20\"\n"
                     "[plugins.scripted]\nlog_level = \"info\"\n");
    auto many = run_cli(home, "--config '" + (home.path / "many.toml").string() + "' doctor");
    CHECK(many.exit_code == 2);
    CHECK_THAT(many.err, Contains("many.toml:1: unknown key 'enabled_plugin' (did you mean 'enabled_plugins'?)"));
    CHECK_THAT(many.err, Contains("many.toml:3: key 'limits.execute_iterations': expected an integer, got string \"20\""));
    CHECK_THAT(many.err, !Contains("--help"));

    test::write_file(home.path / "below.toml",
                     "default_plugin_dirs = false\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\"]\n"
                     "[plugins.scripted]\ncassette = \"c.json\"\nlog_level = \"info\"\n"
                     "[plugins.folders]\nfolders = { d = 5 }\n");
    test::write_file(home.path / "c.json", "{\"replies\": [],}");
    auto below = run_cli(home, "--config '" + (home.path / "below.toml").string() + "' plugins");
    CHECK_THAT(below.out, Contains("'log_level' is a top-level key: move it above the first [table]"));
    CHECK_THAT(below.out, Contains("below.toml:7: [plugins.folders] folders: field 'd': expected string"));

    // The cassette is broken: the provider's plugin did not start, so no turn (and no conversation) begins.
    test::write_file(home.path / "broken.toml",
                     "default_plugin_dirs = false\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\"]\n"
                     "enabled_plugins = [\"scripted\"]\n[plugins.scripted]\ncassette = \"c.json\"\n");
    auto broken = run_cli(home, "--config '" + (home.path / "broken.toml").string() + "' run hello");
    CHECK(broken.exit_code == 2);
    CHECK_THAT(broken.err, Contains("provider 'scripted' cannot answer: its plugin 'scripted' did not start") &&
                               Contains("is not valid JSON") && Contains("line 1"));
    auto none = run_cli(home, "--config '" + (home.path / "broken.toml").string() + "' conversations --json");
    CHECK(json::parse(none.out).empty());
}

TEST_CASE("cli: init for a provider that lists no models says what it checked, and asks for --model",
          "[integration][cli][init]") {
    test::TempDir home;
    std::string env = "cd '" + home.path.string() + "' && HOME='" + home.path.string() + "' XDG_CONFIG_HOME= XDG_DATA_HOME='" +
                      home.path.string() + "' AGENTHOST_CONFIG= AWS_ACCESS_KEY_ID=AKIDINIT AWS_SECRET_ACCESS_KEY=secret '" +
                      test::cli() + "' ";
    auto bare = test::run_command(env + "init --preset bedrock < /dev/null");
    INFO(bare.out << bare.err);
    CHECK(bare.exit_code == 2);
    CHECK_THAT(bare.out, Contains("lists no models to choose from: run init again with --model NAME"));
    auto named =
        test::run_command(env + "init --force --preset bedrock --model us.anthropic.claude-sonnet-4-20250514-v1:0 < /dev/null");
    INFO(named.out << named.err);
    CHECK(named.exit_code == 0);
    CHECK_THAT(named.out, Contains("lists no models: us.anthropic.claude-sonnet-4-20250514-v1:0 is checked by its first call") &&
                              !Contains("answers and serves"));
}

TEST_CASE("cli: init writes a commented config for a preset and checks the provider answers", "[integration][cli][init]") {
    test::TempDir home;
    test::LoopbackServer fake;  // an OpenAI-compatible server that serves one model
    fake.http.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"object":"list","data":[{"id":"local-7b","object":"model"}]})", "application/json");
    });
    int port = fake.start();
    std::string env = "cd '" + home.path.string() + "' && HOME='" + home.path.string() + "' XDG_CONFIG_HOME= XDG_DATA_HOME='" +
                      home.path.string() + "' AGENTHOST_CONFIG= '" + test::cli() + "' ";
    auto ok = test::run_command(
        env + "init --preset llamacpp --model local-7b --base-url http://127.0.0.1:" + std::to_string(port) + "/v1 < /dev/null");
    INFO(ok.out << ok.err);
    CHECK(ok.exit_code == 0);
    CHECK_THAT(ok.out, Contains("wrote " + (home.path / ".config" / "agenthost" / "agenthost.toml").string()) &&
                           Contains("the provider answers") && Contains("local-7b"));
    std::string written = test::read_file(home.path / ".config" / "agenthost" / "agenthost.toml");
    CHECK_THAT(written, Contains("preset = \"llamacpp\"") && Contains("model = \"local-7b\"") && Contains("# "));
    // Every later command finds and uses it.
    auto doctor = test::run_command(env + "doctor");
    CHECK_THAT(doctor.out, Contains("preset llamacpp, model local-7b") && Contains("ready (1 model)"));
    // Without a model the request would name none, which a server refuses: doctor is not ready and says what to add.
    test::write_file(home.path / "nomodel.toml",
                     "data_dir = \"nomodel-data\"\n[provider]\npreset = \"llamacpp\"\n"
                     "base_url = \"http://127.0.0.1:" +
                         std::to_string(port) + "/v1\"\n");
    auto no_model = test::run_command(env + "--config nomodel.toml doctor");
    INFO(no_model.out);
    CHECK(no_model.exit_code == 1);
    CHECK_THAT(no_model.out, Contains("model (none set)"));
    CHECK_THAT(no_model.out,
               Contains("NOT READY MODEL_NOT_SET: provider 'openai' has no model set: add model = \"local-7b\" to [provider] "
                        "in nomodel.toml (it serves: local-7b)"));

    auto again = test::run_command(env + "init --preset ollama < /dev/null");
    CHECK(again.exit_code == 2);
    CHECK_THAT(again.err, Contains("exists; add --force"));
    // Replaced with --force, a config keeps the data dir it pointed at (a service's data stays in use).
    // What it does not write is kept in a copy of the old file, and named.
    const std::string service = "data_dir = \"" + (home.path / "service-data").string() +
                                "\"\nsecrets_file = \"s.env\"\nenabled_plugins = [\"scripted\"]\n"
                                "[plugins.scripted]\ndelta_chars = 4\n[tools.delete_item]\nneeds_approval = true\n";
    test::write_file(home.path / "service.toml", service);
    auto replaced = test::run_command(env + "--config '" + (home.path / "service.toml").string() +
                                      "' init --force --preset scripted < /dev/null");
    CHECK_THAT(replaced.out, Contains("keeping data_dir = " + (home.path / "service-data").string()));
    CHECK_THAT(replaced.out, Contains("kept the old file as " + (home.path / "service.toml.bak").string() +
                                      "; copy from it what the new one lacks: enabled_plugins, [plugins.scripted], secrets_file, "
                                      "[tools.delete_item]"));
    CHECK(test::read_file(home.path / "service.toml.bak") == service);
    // A second --force keeps the first backup and makes another.
    auto twice = test::run_command(env + "--config '" + (home.path / "service.toml").string() +
                                   "' init --force --preset scripted < /dev/null");
    CHECK_THAT(twice.out, Contains("kept the old file as " + (home.path / "service.toml.bak.1").string()));
    CHECK(test::read_file(home.path / "service.toml.bak") == service);
    CHECK_THAT(test::read_file(home.path / "service.toml"),
               Contains("data_dir = \"" + (home.path / "service-data").string() + "\""));
    auto missing_model = test::run_command(env + "init --force --preset openai < /dev/null");
    CHECK(missing_model.exit_code == 2);
    CHECK_THAT(missing_model.err, Contains("init needs --model for openai"));
    auto typo = test::run_command(env + "init --force --preset olama < /dev/null");
    CHECK_THAT(typo.err, Contains("did you mean 'ollama'?"));
    auto wrong_model = test::run_command(env + "init --force --preset llamacpp --model other --base-url http://127.0.0.1:" +
                                         std::to_string(port) + "/v1 < /dev/null");
    CHECK(wrong_model.exit_code == 1);
    CHECK_THAT(wrong_model.out, Contains("does not serve model 'other'") && Contains("it serves: local-7b"));
    // No model named: the server's only one is written.
    auto only = test::run_command(env + "init --force --preset llamacpp --base-url http://127.0.0.1:" + std::to_string(port) +
                                  "/v1 < /dev/null");
    CHECK(only.exit_code == 0);
    CHECK_THAT(only.out, Contains("model: local-7b"));
    CHECK_THAT(test::read_file(home.path / ".config" / "agenthost" / "agenthost.toml"), Contains("model = \"local-7b\""));
    // A server that is down is named, in words.
    auto down = test::run_command(env + "init --force --preset llamacpp --model m --base-url http://127.0.0.1:9/v1 < /dev/null");
    CHECK(down.exit_code == 1);
    CHECK_THAT(down.out, Contains("could not connect to http://127.0.0.1:9/v1/models") && !Contains("AH_ERR"));
    auto no_key = test::run_command(env + "init --force --preset openai --model gpt-x --api-key-env INIT_TEST_UNSET < /dev/null");
    CHECK(no_key.exit_code == 1);
    CHECK_THAT(no_key.out, Contains("INIT_TEST_UNSET is not set"));
}

TEST_CASE("cli: run --json's error event carries the code and stop reason, as end does", "[integration][cli]") {
    test::TempDir home;
    test::write_file(home.path / "cassette.json",
                     json{{"replies", {{{"error", {{"type", "auth"}, {"message", "bad key"}}}}}}}.dump());
    test::write_file(home.path / "agenthost.toml",
                     "default_plugin_dirs = false\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                     "\"]\n"
                     "enabled_plugins = [\"scripted\"]\n[plugins.scripted]\ncassette = \"cassette.json\"\n");
    auto r = run_cli(home, "--config '" + (home.path / "agenthost.toml").string() + "' run --json hello");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    bool seen = false;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        json event = json::parse(line);
        if (event["event"] != "error") continue;
        seen = true;
        CHECK(event["code"] == "PROVIDER_AUTH");
        CHECK(event["stop_reason"] == "auth");
    }
    CHECK(seen);
}

TEST_CASE("cli: libcurl and libpq and OpenSSL are loaded only by what uses them and a missing module is named",
          "[integration][cli][modules]") {
    test::TempDir home;
    // The offline demo: no HTTP, no PostgreSQL, no server. LD_DEBUG=files names every object the
    // loader maps, at start and through dlopen.
    auto demo = test::run_command("cd '" + std::string(test::source_dir()) + "' && XDG_DATA_HOME='" + home.path.string() +
                                  "' AGENTHOST_CONFIG= LD_DEBUG=files '" + test::cli() +
                                  "' --config examples/offline-demo/agenthost.toml run 'please add 19.5 and 22.5'");
    REQUIRE(demo.exit_code == 0);
    CHECK_THAT(demo.err, Contains("file=libsqlite3.so"));  // the check sees what is loaded
    for (const char* big : {"file=libcurl", "file=libpq", "file=libssl", "file=libcrypto", "modules/"}) {
        INFO(big);
        CHECK_THAT(demo.err, !Contains(big));
    }

    // A copy of the executable without its modules: serve and a PostgreSQL store say what is
    // missing, where it was looked for and the fix; nothing crashes.
    test::TempDir prefix;
    fs::create_directories(prefix.path / "bin");
    fs::copy_file(test::cli(), prefix.path / "bin" / "agenthost");
    const fs::path config = prefix.path / "agenthost.toml";
    std::ofstream(config) << "data_dir = \"" << (prefix.path / "data").string() << "\"\ndefault_plugin_dirs = false\n"
                          << "plugin_dirs = [\"" << AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS << "\"]\n"
                          << "enabled_plugins = [\"scripted\"]\n[provider]\nuse = \"scripted\"\n";
    const std::string copy =
        "AGENTHOST_CONFIG= '" + (prefix.path / "bin" / "agenthost").string() + "' --config '" + config.string() + "' ";
    const std::string module_dir = (prefix.path / "lib").string();
    auto serve = test::run_command(copy + "serve --listen 127.0.0.1:0");
    CHECK(serve.exit_code == 2);  // as every start-up failure
    CHECK_THAT(serve.err,
               Contains("http-server module " + module_dir) && Contains("No such file") && Contains("reinstall agenthost"));

    // Without its http-client module, a provider's request fails at once, not retried, and says so.
    std::ofstream(prefix.path / "openai.toml")
        << "data_dir = \"" << (prefix.path / "data").string() << "\"\ndefault_plugin_dirs = false\n"
        << "plugin_dirs = [\"" << AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS << "\"]\nenabled_plugins = [\"openai\"]\n"
        << "[provider]\nuse = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n";
    auto http = test::run_command("AGENTHOST_CONFIG= '" + (prefix.path / "bin" / "agenthost").string() + "' --config '" +
                                  (prefix.path / "openai.toml").string() + "' run hi");
    CHECK(http.exit_code == 1);
    CHECK_THAT(http.err,
               Contains("cannot make HTTP requests") && Contains("http-client module " + module_dir) && !Contains("attempts"));

    // A module cut short (a truncated copy, a disk that filled during an upgrade) or not a shared
    // object at all is named, never mapped: mapping it would kill the process with SIGBUS.
    fs::create_directories(prefix.path / "lib" / "agenthost" / "modules");
    const fs::path installed = fs::path(test::binary_dir()) / "lib" / "agenthost" / "modules" / "http-server.so";
    const fs::path broken = prefix.path / "lib" / "agenthost" / "modules" / "http-server.so";
    {
        std::ifstream in(installed, std::ios::binary);
        std::string head(200 * 1024, '\0');
        in.read(head.data(), static_cast<std::streamsize>(head.size()));
        std::ofstream(broken, std::ios::binary) << head;
    }
    auto cut = test::run_command(copy + "serve --listen 127.0.0.1:0");
    CHECK(cut.exit_code == 2);
    CHECK_THAT(cut.err, Contains("the file is cut off") && Contains("reinstall agenthost"));
    std::ofstream(broken, std::ios::binary | std::ios::trunc) << "not a library";
    auto garbage = test::run_command(copy + "serve --listen 127.0.0.1:0");
    CHECK(garbage.exit_code == 2);
    CHECK_THAT(garbage.err, Contains("not a 64-bit shared object"));
    auto doctor = test::run_command(copy + "doctor");
    CHECK(doctor.exit_code == 1);
    CHECK_THAT(doctor.out, Contains("FAIL agenthost's http-client module") && Contains("FAIL agenthost's http-server module"));

    std::ofstream(config, std::ios::app) << "[store]\nbackend = \"postgresql\"\n";
    auto pg = test::run_command("AGENTHOST_DATABASE_URL=postgresql://127.0.0.1:1/none " + copy + "run hi");
    CHECK(pg.exit_code == 2);
    CHECK_THAT(pg.err, Contains("postgres module " + module_dir) && Contains("reinstall agenthost"));
}

TEST_CASE("cli: a provider whose base_url is outside its network permissions says so and is not retried",
          "[integration][cli][permissions]") {
    test::TempDir home;
    // A model server that redirects every call to a port the provider was never granted: the
    // bundled providers may connect only where base_url points.
    test::LoopbackServer redirecting;
    redirecting.http.Post("/v1/chat/completions", [](const httplib::Request&, httplib::Response& res) {
        res.status = 307;
        res.set_header("Location", "http://127.0.0.1:9/v1/chat/completions");
    });
    redirecting.start();
    const fs::path config = home.path / "agenthost.toml";
    auto write_config = [&](const std::string& extra) {
        std::ofstream(config) << "data_dir = \"" << (home.path / "data").string() << "\"\ndefault_plugin_dirs = false\n"
                              << "plugin_dirs = [\"" << AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                              << "\"]\nenabled_plugins = [\"openai\"]\n"
                              << "[provider]\nuse = \"openai\"\nbase_url = \"" << redirecting.url() << "/v1\"\nmodel = \"m\"\n"
                              << extra;
    };
    write_config("");
    auto r = run_cli(home, "--config '" + config.string() + "' run hi");
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Contains("was refused before it was sent") && Contains("outside the plugin's network permissions") &&
                          Contains("plugin HTTP refused: plugin=openai destination=127.0.0.1:9") && !Contains("attempts"));

    // An operator's grant narrower than base_url: the plugin is not loaded, and the error names the
    // file, the line, what it needs and what was granted.
    write_config("[plugins.openai]\npermissions = { network = [\"127.0.0.1:8\"] }\n");
    auto narrow = run_cli(home, "--config '" + config.string() + "' run hi");
    CHECK(narrow.exit_code == 2);
    CHECK_THAT(narrow.err, Contains("permissions_exceeded") && Contains("agenthost.toml:10 [plugins.openai] permissions") &&
                               Contains("(granted: 127.0.0.1:8)"));
}

TEST_CASE("cli: compact reports what the database and its log take on disk, and leaves the log empty", "[integration][cli]") {
    test::TempDir home;
    for (int i = 0; i < 3; ++i)
        REQUIRE(run_cli(home, "--config examples/offline-demo/agenthost.toml run 'Show me a demo'").exit_code == 0);
    auto r = run_cli(home, "--config examples/offline-demo/agenthost.toml compact");
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("database and its log"));
    // The figure after the arrow is the database file plus its write-ahead log, as they are left.
    auto after = std::stoul(r.out.substr(r.out.find("-> ") + 3));
    fs::path db = database_in(home);
    REQUIRE_FALSE(db.empty());
    std::error_code missing;
    auto wal = fs::file_size(db.string() + "-wal", missing);
    CHECK((missing ? 0 : wal) == 0);
    CHECK(after == fs::file_size(db) / 1024);
}

TEST_CASE("cli: a finished run leaves the database file alone on disk, its log checkpointed and removed", "[integration][cli]") {
    test::TempDir home;
    REQUIRE(run_cli(home, "--config examples/offline-demo/agenthost.toml run 'Show me a demo'").exit_code == 0);
    fs::path db = database_in(home);
    REQUIRE_FALSE(db.empty());
    CHECK_FALSE(fs::exists(db.string() + "-wal"));
    CHECK_FALSE(fs::exists(db.string() + "-shm"));
}

TEST_CASE("cli: root on a data dir another user owns acts as that user: every file made there is the owner's",
          "[integration][cli]") {
    if (::geteuid() != 0) {
        SUCCEED("needs root: skipped");
        return;
    }
    test::TempDir home;
    const fs::path data = home.path / "data";
    fs::create_directories(data);
    fs::permissions(home.path, fs::perms::others_exec, fs::perm_options::add);  // the owner reaches its dir
    REQUIRE(::chown(data.c_str(), 65534, 65534) == 0);                          // nobody
    test::write_file(home.path / "agenthost.toml",
                     "data_dir = \"" + data.string() +
                         "\"\ndefault_plugin_dirs = false\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                         "\"]\nenabled_plugins = [\"scripted\"]\n[plugins.scripted]\ncassette = \"" +
                         (home.path / "cassette.json").string() + "\"\n");
    test::write_file(home.path / "cassette.json", R"({"fallback": {"text": "hello back"}})");
    fs::permissions(home.path / "cassette.json", fs::perms::others_read, fs::perm_options::add);
    fs::permissions(home.path / "agenthost.toml", fs::perms::others_read, fs::perm_options::add);
    auto r = run_cli(home, "--config '" + (home.path / "agenthost.toml").string() + "' run hello");
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("hello back"));
    size_t files = 0;
    for (const auto& entry : fs::recursive_directory_iterator(data)) {
        struct stat st {};
        REQUIRE(::stat(entry.path().c_str(), &st) == 0);
        INFO(entry.path());
        CHECK(st.st_uid == 65534);
        ++files;
    }
    CHECK(files >= 1);  // the database at least
}
