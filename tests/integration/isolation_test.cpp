// Plugins in their own process (isolation = "process"): the same .so, host services forwarded,
// and every way a plugin process can fail — a segfault, an abort, an exit, a hang, a memory limit —
// ends as a clear failed call while the host goes on; repeated failures disable the plugin.
#include "app/reports.hpp"
#include "support/loopback_server.hpp"
#include "tools/policy.hpp"
#include "support/test_support.hpp"
#include "test_paths.h"

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <thread>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// Sanitizer builds run the child several times slower, and AddressSanitizer cannot live under an
// address-space limit.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

std::unique_ptr<app::HostApp> isolated_probe(const test::TempDir& dir, json extra = json::object()) {
    auto cfg = test::config(dir.path, true);
    cfg.enabled_plugins = {"service_probe"};
    json table{{"isolation", "process"}, {"isolation_timeout_ms", 10000}, {"isolation_max_crashes", 4}, {"greeting", "hello"}};
    table.merge_patch(extra);
    cfg.plugin_tables["service_probe"] = table.dump();
    return test::start(cfg);
}

std::string text(const json& r) { return r["content"].is_string() ? r["content"].get<std::string>() : r["content"].dump(); }

}  // namespace

TEST_CASE("isolation: a plugin in its own process uses the host's services", "[integration][isolation]") {
    test::LoopbackServer site;
    site.http.Post("/echo",
                   [](const httplib::Request& req, httplib::Response& res) { res.set_content("got " + req.body, "text/plain"); });
    int port = site.start();
    test::TempDir dir;
    // An 8 MiB result crosses the socket and is checked twice: a sanitizer build on a loaded
    // machine once took longer than 10 s for it.
    auto app = isolated_probe(dir, {{"isolation_timeout_ms", kSanitized ? 60000 : 10000}});
    REQUIRE(app->registry().find_tool("probe_kv") != nullptr);

    CHECK(test::call_tool(*app, "probe_kv", {{"op", "set"}, {"key", "k"}, {"value", "v1"}})["content"] == 0);
    CHECK(test::call_tool(*app, "probe_kv", {{"op", "get"}, {"key", "k"}})["content"] == "v1");
    CHECK(test::call_tool(*app, "probe_memory", {{"key", "topic"}, {"value", "isolation"}}, "c1")["content"] == 0);
    CHECK(**app->memory().store().get("c1", "topic") == "\"isolation\"");
    // An event posted from the child reaches the conversation (its request carries an "event"
    // field, and was once taken for a stream event and never answered: the call hung).
    CHECK(test::call_tool(*app, "probe_event", {{"message", "download finished"}}, "c1")["content"] == AH_OK);
    auto events = app->memory().store().take_events("c1");
    REQUIRE(events.size() == 1);
    CHECK_THAT(events[0].body, Contains("download finished"));
    json config = test::call_tool(*app, "probe_config", json::object())["content"];
    CHECK(config["greeting"] == "hello");
    CHECK_FALSE(config.contains("isolation"));  // host settings are not the plugin's
    auto http = test::call_tool(*app, "probe_http",
                                {{"url", "http://127.0.0.1:" + std::to_string(port) + "/echo"},
                                 {"method", "POST"},
                                 {"body", std::string("bytes \x01\x02 ok")}});
    CHECK(http["content"]["code"] == 200);
    CHECK(http["content"]["body"] == std::string("got bytes \x01\x02 ok"));
    plugins::CallInput hook;
    hook.conversation_id = "c7";
    CHECK_THAT(app->registry().context(hook), Contains("service_probe context for c7"));
    auto big = test::call_tool(*app, "probe_big", {{"mb", 8}});
    CHECK(text(big).size() == 8u << 20);
    // A changed tool list is announced from the child and listed again through it.
    CHECK(test::call_tool(*app, "probe_grow", json::object())["content"] == 0);
    for (int i = 0; i < 500 && !app->registry().find_tool("probe_extra"); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(test::call_tool(*app, "probe_extra", json::object())["content"] == "extra tool here");

    // Cancellation reaches the call in the child.
    ah_cancel cancel;
    std::thread later([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        cancel.fired = true;
    });
    auto started = std::chrono::steady_clock::now();
    CHECK(test::call_tool(*app, "probe_wait", {{"ms", 10000}}, "c1", &cancel)["content"] == "cancelled");
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(3));
    later.join();
    app.reset();
}

TEST_CASE("isolation: crashes, exits and hangs fail the call, the plugin restarts, repeated failures disable it",
          "[integration][isolation]") {
    test::TempDir dir;
    auto app = isolated_probe(dir, {{"isolation_timeout_ms", 1500}});
    CHECK(test::call_tool(*app, "probe_kv", {{"op", "set"}, {"key", "kept"}, {"value", "yes"}})["content"] == 0);

    auto crash = test::call_tool(*app, "probe_crash", json::object());
    CHECK(crash["error_code"] == "plugin_failure");
    // Under a sanitizer its own handler reports the segfault and ends the process its way.
    CHECK_THAT(text(crash), Contains(kSanitized ? "the process of plugin" : "crashed with signal 11 (Segmentation fault)") &&
                                Contains("restarted"));
    CHECK(test::call_tool(*app, "probe_kv", {{"op", "get"}, {"key", "kept"}})["content"] ==
          "yes");  // a new process, same host store
    auto health = app->registry().process_health("service_probe");
    REQUIRE(health);  // what `agenthost plugins` and /api/plugins show
    CHECK(health->restarts == 1);
    CHECK(health->recent_failures == 1);
    CHECK_FALSE(health->disabled);
    CHECK_THAT(health->last_failure, Contains(kSanitized ? "" : "signal 11"));

    auto aborted = test::call_tool(*app, "probe_abort", json::object());
    CHECK_THAT(text(aborted), Contains("signal 6 (Aborted)"));
    auto exited = test::call_tool(*app, "probe_exit", json::object());
    CHECK_THAT(text(exited), Contains("exited with code 7"));

    auto started = std::chrono::steady_clock::now();
    auto hung = test::call_tool(*app, "probe_hang", json::object());
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
    CHECK(hung["error_code"] == "plugin_failure");
    CHECK_THAT(text(hung), Contains("did not answer within 1500 ms") && Contains("plugin 'service_probe' running 'probe_hang'"));
    // The fourth failure used up the budget: the message must not promise a restart that will not come.
    CHECK_THAT(text(hung), !Contains("restarted"));

    // Four failures within the window: disabled, with the reason, whether the call arrives before
    // the plugin's tools are withdrawn (the invoker) or after (the policy every front end asks).
    plugins::CallInput direct;
    direct.tool_name = "probe_kv";
    direct.arguments_json = R"({"op":"get","key":"kept"})";
    auto refused = app->registry().call_tool(direct);  // an error result, or an Error once the tools are withdrawn
    std::string said = refused ? *refused : refused.error().message;
    CHECK_THAT(said, Contains("disabled after 4 failures"));
    for (int i = 0; i < 500 && app->catalogue().find("probe_kv"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    auto verdict =
        tools::decide(app->catalogue(), app->catalogue().find("probe_kv"), "probe_kv", json::object(), tools::CallSite{});
    CHECK(verdict.kind == tools::Verdict::Kind::refuse);
    CHECK(verdict.error_code() == "plugin_failure");
    CHECK_THAT(verdict.message, Contains("'service_probe' is disabled after 4 failures"));
    health = app->registry().process_health("service_probe");
    REQUIRE(health);
    CHECK(health->disabled);
    CHECK(health->recent_failures == 4);
    CHECK_THAT(app::plugins_report(*app), Contains("\"disabled\": true") && Contains("\"restarts\": 3"));
    // Disabled shows as its status, and its tools are no longer offered to models or MCP clients.
    json report = json::parse(app::plugins_report(*app));
    for (const auto& p : report["plugins"])
        if (p["name"] == "service_probe") CHECK(p["status"] == "disabled");
    // The tools leave through the registry's refresher: wait for it.
    auto offers_probe = [&] {
        auto all = app->catalogue().all();
        return std::any_of(all.begin(), all.end(), [](const tools::Tool& t) { return t.plugin == "service_probe"; });
    };
    for (int i = 0; i < 500 && offers_probe(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK_FALSE(offers_probe());
    CHECK_THAT(text(hung), Contains("the plugin is now disabled after 4 failures"));
}

TEST_CASE("isolation: calls in flight when the process crashes are told so, not blamed alone", "[integration][isolation]") {
    // A thread-safe plugin's calls overlap in one process; a crash fails them all.
    test::TempDir dir;
    auto cfg = test::config(dir.path, false);
    cfg.plugin_dirs.push_back(AGENTHOST_CARELESS_PLUGIN_DIR);
    cfg.enabled_plugins = {"careless"};
    cfg.plugin_tables["careless"] = json{{"isolation", "process"}}.dump();
    auto app = test::start(cfg);
    json waited;
    std::thread waiting([&] { waited = test::call_tool(*app, "careless_slow", json::object()); });
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // careless_slow is under way (it takes 3 s)
    auto crash = test::call_tool(*app, "careless_crash", json::object());
    waiting.join();
    CHECK(waited["error_code"] == "plugin_failure");
    CHECK_THAT(text(waited), Contains("running 'careless_slow'") &&
                                 Contains("1 other call(s) of this plugin were running in the same process"));
    CHECK_THAT(text(crash), Contains("1 other call(s)"));
    CHECK(test::call_tool(*app, "careless_ok", json::object())["content"] == "fine");  // restarted, answering
}

TEST_CASE("isolation: a call is not held back behind a long one in the same process", "[integration][isolation]") {
    // The child's thread that reads a call runs it and leaves the reading to the others lazily: a
    // long call must still leave someone reading, so a second call and a cancel get through.
    test::TempDir dir;
    auto cfg = test::config(dir.path, false);
    cfg.plugin_dirs.push_back(AGENTHOST_CARELESS_PLUGIN_DIR);
    cfg.enabled_plugins = {"careless"};
    cfg.plugin_tables["careless"] = json{{"isolation", "process"}}.dump();
    auto app = test::start(cfg);
    for (int i = 0; i < 20; ++i)
        REQUIRE(test::call_tool(*app, "careless_ok", json::object())["content"] == "fine");  // calls coming
    json slow;
    auto started = std::chrono::steady_clock::now();
    std::thread waiting([&] { slow = test::call_tool(*app, "careless_slow", json::object()); });  // 3 s
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(test::call_tool(*app, "careless_ok", json::object())["content"] == "fine");
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::milliseconds(2500));  // while the slow one runs
    waiting.join();
    CHECK_FALSE(slow.value("is_error", false));
}

TEST_CASE("isolation: a plugin that writes half a frame and stops is stopped at the call's deadline",
          "[integration][isolation]") {
    // A waiting call reads its own reply: it must not block inside a frame that never ends.
    test::TempDir dir;
    auto app = isolated_probe(dir, {{"isolation_timeout_ms", 1500}});
    for (int i = 0; i < 5; ++i)
        REQUIRE_FALSE(test::call_tool(*app, "probe_config", json::object()).value("is_error", false));  // calls coming
    auto started = std::chrono::steady_clock::now();
    auto half = test::call_tool(*app, "probe_half_frame", json::object());
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
    CHECK(half["error_code"] == "plugin_failure");
    CHECK_THAT(text(half), Contains("did not answer within 1500 ms"));
    CHECK(test::call_tool(*app, "probe_kv", {{"op", "set"}, {"key", "after"}, {"value", "yes"}})["content"] ==
          0);  // restarted, answering
}

TEST_CASE("isolation: a plugin that is not thread-safe runs one call at a time, and one stuck call is not blamed on the next",
          "[integration][isolation]") {
    // service_probe is not thread-safe. An outside try saw calls queued behind a hung one fail with
    // "did not answer within …" when the hung one timed out, and a call after a cancelled one
    // that ignored its cancellation wait out its whole timeout, blamed for it.
    test::TempDir dir;
    auto app = isolated_probe(dir, {{"isolation_timeout_ms", 3000}});  // longer than the 2 s a cancellation is given
    json hung;
    std::thread hanging([&] { hung = test::call_tool(*app, "probe_hang", json::object()); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // probe_hang is under way
    auto behind = test::call_tool(*app, "probe_config", json::object());
    hanging.join();
    CHECK_THAT(text(hung), Contains("running 'probe_hang'") && Contains("did not answer within 3000 ms"));
    CHECK_FALSE(behind.value("is_error", false));  // it waited its turn and ran in the new process
    CHECK_THAT(text(behind), Contains("hello"));

    // A cancelled call that ignores its cancellation: its process is stopped, the next call runs
    // at once in a new one.
    ah_cancel cancel;
    std::thread later([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        cancel.fired = true;
    });
    auto cancelled = test::call_tool(*app, "probe_hang", json::object(), "c1", &cancel);
    later.join();
    CHECK(cancelled["is_error"] == true);
    auto started = std::chrono::steady_clock::now();
    auto next = test::call_tool(*app, "probe_config", json::object());
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::milliseconds(2500));  // not its timeout
    CHECK_FALSE(next.value("is_error", false));
    auto health = app->registry().process_health("service_probe");
    REQUIRE(health);
    INFO(health->last_failure);
    CHECK(health->recent_failures == 1);  // the timeout; the stop after the ignored cancellation is not a failure
}

TEST_CASE("isolation: a memory limit stops a greedy plugin, not the host", "[integration][isolation]") {
    if (kSanitized) {
        WARN("skipped: AddressSanitizer reserves terabytes of address space, so it cannot run under RLIMIT_AS");
        return;
    }
    test::TempDir dir;
    auto app = isolated_probe(dir, {{"isolation_memory_mb", 256}});
    auto hog = test::call_tool(*app, "probe_hog", {{"mb", 1024}});
    CHECK(hog["is_error"] == true);
    INFO(hog.dump());
    CHECK(test::call_tool(*app, "probe_hog", {{"mb", 16}})["content"] == "allocated 16 MiB");
}

TEST_CASE("isolation: a wrong isolation value is refused with the fix", "[integration][isolation]") {
    test::TempDir dir;
    auto cfg = test::config(dir.path, true);
    cfg.enabled_plugins = {"service_probe"};
    cfg.plugin_tables["service_probe"] = json{{"isolation", "container"}}.dump();
    auto app = test::start(cfg);
    CHECK(app->registry().find_tool("probe_kv") == nullptr);
    bool reported = false;
    for (const auto& p : app->registry().plugins())
        if (p.name == "service_probe" && p.error)
            reported = p.error->message.find("\"container\" is unknown: use \"in-process\" (the default") != std::string::npos &&
                       p.error->message.find("or \"sandbox\"") != std::string::npos;
    CHECK(reported);
}

TEST_CASE("isolation: a provider plugin in its own process streams a turn", "[integration][isolation]") {
    test::TempDir dir;
    json cassette{{"replies",
                   {{{"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", "from a child"}}}}}}},
                    {{"text", "The echo said: from a child."}}}}};
    test::write_file(dir.path / "cassette.json", cassette.dump());
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = {"scripted", "example_c"};
    cfg.plugin_tables["scripted"] =
        json{{"cassette", (dir.path / "cassette.json").string()}, {"isolation", "process"}, {"delta_chars", 3}}.dump();
    cfg.plugin_tables["example_c"] = json{{"isolation", "process"}}.dump();
    auto app = test::start(cfg);
    std::string streamed;
    std::vector<std::string> results;
    agent::RunControls controls;
    controls.on_event = [&](const agent::TurnEvent& e) {
        if (const auto* t = e.as<agent::events::Text>()) streamed += t->delta;
        if (const auto* r = e.as<agent::events::ToolResult>()) results.push_back(r->content);
    };
    auto out = app->runner().run({"echo something", "iso", agent::Mode::execute, "{}"}, controls);
    INFO(out.error);
    REQUIRE(out.ok());
    CHECK(out.answer == "The echo said: from a child.");
    CHECK(streamed == out.answer);
    REQUIRE(results.size() == 1);
    CHECK_THAT(results[0], Contains("from a child"));
}

TEST_CASE("isolation: a plugin's process dies with its host, even mid-call, and the call's effect never lands",
          "[integration][isolation]") {
    // `agenthost tool` runs an isolated tool that takes 3 s before its effect; the host is killed
    // with SIGKILL a moment into it. The runner sees the host's end of its socket hang up and ends:
    // the host's next start reports the call's outcome unknown, so it must not land afterwards.
    test::TempDir dir;
    std::string config = (dir.path / "agenthost.toml").string(), effects = (dir.path / "effects.txt").string(),
                started = (dir.path / "started.txt").string();
    test::write_file(config, "data_dir = \"" + (dir.path / "data").string() +
                                 "\"\ndefault_plugin_dirs = false\n"
                                 "enabled_plugins = [\"agent_tools\"]\nplugin_dirs = [\"" AGENTHOST_FIXTURE_PLUGIN_DIR
                                 "\"]\n"
                                 "[plugins.agent_tools]\nisolation = \"process\"\n");
    json args{{"path", effects}, {"text", "landed"}, {"ms", 3000}, {"started", started}};
    test::Process host({"sh", "-c",
                        "exec '" + std::string(test::cli()) + "' --config '" + config + "' tool slow_append_line '" +
                            args.dump() + "' > '" + (dir.path / "out").string() + "' 2> '" + (dir.path / "err").string() + "'"});
    REQUIRE(host.pid > 0);
    for (int i = 0; i < 400 && !std::filesystem::exists(started); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    INFO(test::read_file(dir.path / "err"));
    REQUIRE(std::filesystem::exists(started));  // the call is under way in the plugin's process
    const auto call_started = std::chrono::steady_clock::now();
    std::vector<int> runners;
    for (int pid : test::descendants(host.pid))
        if (test::process_name(pid).rfind("agenthost-plug", 0) == 0) runners.push_back(pid);
    REQUIRE(runners.size() == 1);
    struct KillLeftovers {  // whatever outlived the host (the bug this test is about) is not left behind
        std::vector<int>& pids;
        ~KillLeftovers() {
            for (int pid : pids)
                if (!test::process_gone(pid)) ::kill(pid, SIGKILL);
        }
    } leftovers{runners};

    ::kill(host.pid, SIGKILL);
    ::waitpid(host.pid, nullptr, 0);
    host.pid = -1;
    const auto killed = std::chrono::steady_clock::now();
    while (!test::process_gone(runners[0]) && std::chrono::steady_clock::now() - killed < std::chrono::seconds(2))
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed).count();
    INFO("the runner ended " << took << " ms after its host");
    CHECK(test::process_gone(runners[0]));
    CHECK(took < 1000);
    // Past the moment the call would have written its line: nothing landed.
    std::this_thread::sleep_until(call_started + std::chrono::milliseconds(3700));
    CHECK_FALSE(std::filesystem::exists(effects));
}

TEST_CASE("isolation: process settings of the wrong type or sign are named with their place, never thrown",
          "[integration][isolation]") {
    // A reviewer's finding: isolation_memory_mb = "lots" threw out of the registry and ended the host.
    test::TempDir dir;
    auto app = isolated_probe(dir, {{"isolation_memory_mb", "lots"}, {"isolation_timeout_ms", -5}});
    auto named = [](app::HostApp& host) {
        for (const auto& p : host.registry().plugins())
            if (p.name == "service_probe") return p;
        FAIL("service_probe is not listed");
        return host.registry().plugins().front();
    };
    const auto probe = named(*app);
    REQUIRE(probe.error);
    CHECK(probe.error->code == "config_invalid");
    CHECK_THAT(probe.error->message,
               Contains("[plugins.service_probe] isolation_memory_mb = \"lots\" is not a whole number from 0") &&
                   Contains("megabytes of address space"));
    CHECK_THAT(probe.error->message, Contains("isolation_timeout_ms = -5 is not a whole number"));
    CHECK(app->config_problems().errors.size() == 2);  // one line each, both reported at once
    CHECK(app->registry().find_tool("probe_kv") == nullptr);

    auto word = isolated_probe(dir, {{"isolation", 5}});  // not silently the default
    const auto refused = named(*word);
    REQUIRE(refused.error);
    CHECK_THAT(refused.error->message, Contains("[plugins.service_probe] isolation = 5 is not text: use \"in-process\""));
}
