// The disk fills up in the middle of a run — simulated inside the process (SQLite's max_page_count),
// and for real: the CLI on a 600 KiB tmpfs in a private mount namespace. The run stops with a clear
// store_failure, the database stays intact, every step acknowledged before stays, and the host
// works again once there is room.
#include "support/test_support.hpp"
#include "test_paths.h"

#include "sqlite/database.hpp"

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

int64_t count(app::HostApp& app, const std::string& sql) {
    return app.storage().sqlite()->read([&](sqlite::Database& db) -> int64_t {
        auto stmt = db.prepare(sql);
        return stmt && stmt->step() ? stmt->integer(0) : -1;
    });
}

std::string text(app::HostApp& app, const std::string& sql) {
    return app.storage().sqlite()->read([&](sqlite::Database& db) -> std::string {
        auto stmt = db.prepare(sql);
        return stmt && stmt->step() ? stmt->text(0) : "";
    });
}

}  // namespace

TEST_CASE("disk full mid-run: a clear failure, an intact database, nothing acknowledged lost", "[integration][faults][store]") {
    test::TempDir dir;
    json replies = json::array();
    for (int i = 0; i < 12; ++i)
        replies.push_back(
            {{"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", std::string(30000, static_cast<char>('a' + i))}}}}}}});
    replies.push_back({{"text", "done"}});
    test::write_file(dir.path / "cassette.json", json{{"replies", replies}}.dump());
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = {"scripted", "example_c"};
    cfg.plugin_tables["scripted"] = json{{"cassette", (dir.path / "cassette.json").string()}, {"delta_chars", 4096}}.dump();
    auto app = test::start(cfg);

    int acknowledged = 0;
    agent::RunControls controls;
    controls.on_event = [&](const agent::TurnEvent& e) {
        if (!e.is<agent::events::ToolResult>()) return;
        if (++acknowledged == 3)  // the disk is full from here on
            REQUIRE(app->storage().sqlite()->exec("PRAGMA max_page_count = " + std::to_string(count(*app, "PRAGMA page_count"))));
    };
    auto out = app->runner().run({"fill the disk", "full", agent::Mode::execute, "{}"}, controls);
    INFO(out.error);
    CHECK_FALSE(out.ok());
    CHECK(out.stop_reason == StopReason::store_failure);
    CHECK_THAT(out.error, Contains("full"));

    CHECK(text(*app, "PRAGMA integrity_check") == "ok");
    // Every step the run reported done before the disk filled is in the store.
    CHECK(count(*app, "SELECT COUNT(*) FROM messages WHERE conversation = 'full' AND json_extract(body, '$.role') = 'tool'") >=
          3);

    // Room again: the host goes on.
    REQUIRE(app->storage().sqlite()->exec("PRAGMA max_page_count = 1073741823"));
    test::write_file(dir.path / "cassette.json", json{{"replies", {{{"text", "back"}}}}}.dump());
    auto again = app->runner().run({"are you there", "after", agent::Mode::execute, "{}"}, {});
    CHECK(again.ok());
}

TEST_CASE("disk full for real: the CLI on a tmpfs that fills up mid-run", "[integration][faults][store]") {
    // A private mount namespace needs root (CAP_SYS_ADMIN): CI has it; elsewhere the case says so.
    if (test::run_command("unshare -m true").exit_code != 0) {
        WARN("skipped: cannot make a private mount namespace here (run as root)");
        return;
    }
    test::TempDir dir;
    json replies = json::array();
    for (int i = 0; i < 40; ++i)
        replies.push_back(
            {{"tool_calls",
              {{{"name", "echo"}, {"arguments", {{"text", std::string(30000, static_cast<char>('a' + i % 26))}}}}}}});
    replies.push_back({{"text", "done"}});
    test::write_file(dir.path / "cassette.json", json{{"replies", replies}}.dump());
    std::string data = (dir.path / "data").string(), out = (dir.path / "out").string(),
                config = (dir.path / "agenthost.toml").string();
    test::write_file(config, "data_dir = \"" + data +
                                 "\"\ndefault_plugin_dirs = false\nenabled_plugins = [\"scripted\", \"example_c\"]\n"
                                 "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                                 "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS "\"]\n[plugins.scripted]\ncassette = \"" +
                                 (dir.path / "cassette.json").string() + "\"\ndelta_chars = 4096\n");
    std::filesystem::create_directories(data);
    std::filesystem::create_directories(out);
    // In the namespace: a small tmpfs as data_dir, the run that fills it, a copy of the database
    // files for the checks below, then more room and a second run.
    std::string cli = "'" + std::string(test::cli()) + "' --config '" + config + "'";
    auto r = test::run_command("unshare -m sh -c \"mount -t tmpfs -o size=600k tmpfs '" + data +
                               "' && "
                               "{ " +
                               cli + " run --conversation full 'fill the disk' > '" + out + "/run.out' 2> '" + out +
                               "/run.err'; echo \\$? > '" + out +
                               "/run.rc'; } && "
                               "cp '" +
                               data + "'/agenthost.db* '" + out +
                               "/' && "
                               "mount -o remount,size=16m '" +
                               data +
                               "' && "
                               "{ " +
                               cli + " run --conversation after 'are you there' > '" + out + "/again.out' 2> '" + out +
                               "/again.err'; echo \\$? > '" + out + "/again.rc'; }\"");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    std::string run_err = test::read_file(out + "/run.err");
    INFO(run_err);
    CHECK(test::read_file(out + "/run.rc") == "1\n");
    CHECK_THAT(run_err, Contains("store_failure") && Contains("disk is full") && Contains(data));

    // Acknowledged: every tool result the CLI printed (on its trace, stderr) before the disk filled.
    std::istringstream printed(run_err);
    int acknowledged = 0;
    for (std::string line; std::getline(printed, line);) acknowledged += line.rfind("← echo", 0) == 0;
    CHECK(acknowledged >= 1);
    auto db = sqlite::Database::open(std::filesystem::path(out) / "agenthost.db");
    REQUIRE(db.ok());
    auto scalar = [&](const std::string& sql) {
        auto stmt = (*db)->prepare(sql);
        return stmt && stmt->step() ? stmt->text(0) : std::string();
    };
    CHECK(scalar("PRAGMA integrity_check") == "ok");
    CHECK(std::stoi(
              scalar("SELECT COUNT(*) FROM messages WHERE conversation = 'full' AND json_extract(body, '$.role') = 'tool'")) >=
          acknowledged);

    CHECK(test::read_file(out + "/again.rc") == "0\n");  // room again: the host goes on
}

namespace {

// The config of a host with its data in `data` (a tmpfs), the scripted model's `cassette` and the
// agent_tools fixture; a short lease, so what waits for one lapsing is short too.
std::string full_disk_config(const test::TempDir& dir, const std::string& data, const json& cassette,
                             const std::string& more = "") {
    test::write_file(dir.path / "cassette.json", cassette.dump());
    std::string config = (dir.path / "agenthost.toml").string();
    test::write_file(config, "data_dir = \"" + data +
                                 "\"\ndefault_plugin_dirs = false\nenabled_plugins = [\"scripted\", \"agent_tools\"]\n"
                                 "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_FIXTURE_PLUGIN_DIR
                                 "\"]\n"
                                 "[plugins.scripted]\ncassette = \"" +
                                 (dir.path / "cassette.json").string() +
                                 "\"\n"
                                 "[store]\nlease_seconds = 3\n" +
                                 more);
    std::filesystem::create_directories(data);
    return config;
}

int lines_in(const std::string& file) {
    std::istringstream text(test::read_file(file));
    int n = 0;
    for (std::string line; std::getline(text, line);) ++n;
    return n;
}

}  // namespace

TEST_CASE("disk full for real: a run whose end cannot be written is no answer, and run exits 1", "[integration][faults][store]") {
    if (test::run_command("unshare -m true").exit_code != 0) {
        WARN("skipped: cannot make a private mount namespace here (run as root)");
        return;
    }
    // One tool call, then the model takes 3 s over its answer; meanwhile the tmpfs is filled, so
    // the only write left — the run's end with its answer — fails. The answer was streamed, but the
    // run has not ended in the store: `run` must not exit 0 as if it had. With room again the run
    // is resumed from its last step (the tool is not run again) and ends.
    test::TempDir dir;
    std::string data = (dir.path / "data").string(), out = (dir.path / "out").string(),
                marker = (dir.path / "marker.txt").string();
    json cassette{
        {"rules",
         {{{"after", "^finish it$"},
           {"reply", {{"tool_calls", {{{"name", "append_line"}, {"arguments", {{"path", marker}, {"text", "step"}}}}}}}}},
          {{"after", "wrote step"}, {"reply", {{"delay_ms", 3000}, {"text", "the end"}}}}}}};
    std::string config = full_disk_config(dir, data, cassette);
    std::filesystem::create_directories(out);
    std::string cli = "'" + std::string(test::cli()) + "' --config '" + config + "'";
    // In the namespace: the run in the background; a second after its tool call (stored by then)
    // the tmpfs is filled; its exit status; then room again, what the store says of the run, and
    // its resume (the first run of a new database is run 1).
    auto r = test::run_command(
        "timeout 60 unshare -m sh -c \"mount -t tmpfs -o size=2m tmpfs '" + data +
        "' && "
        "{ " +
        cli + " run --conversation ending 'finish it' > '" + out + "/run.out' 2> '" + out +
        "/run.err' & pid=\\$!; "
        "i=0; while [ ! -s '" +
        marker +
        "' ] && [ \\$i -lt 200 ]; do sleep 0.05; i=\\$((i+1)); done; sleep 1; "
        "cat /dev/zero > '" +
        data + "/filler' 2>/dev/null; wait \\$pid; echo \\$? > '" + out +
        "/run.rc'; } ; "
        "mount -o remount,size=16m '" +
        data + "' && rm -f '" + data + "/filler' && " + cli + " runs --json --conversation ending > '" + out +
        "/runs.json' && "
        "{ " +
        cli + " resume 1 > '" + out + "/resume.out' 2> '" + out + "/resume.err'; echo \\$? > '" + out + "/resume.rc'; }\"");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    std::string run_err = test::read_file(out + "/run.err");
    INFO(run_err);
    REQUIRE(lines_in(marker) == 1);  // the tool ran, before the disk filled
    CHECK(test::read_file(out + "/run.rc") == "1\n");
    CHECK_THAT(run_err, Contains("store_failure") && Contains("could not be recorded"));
    json runs = json::parse(test::read_file(out + "/runs.json"));
    INFO(runs.dump());
    REQUIRE(runs.size() == 1);
    CHECK(runs[0]["id"] == 1);
    CHECK(runs[0]["status"] != "completed");  // nothing stored says it ended

    INFO(test::read_file(out + "/resume.err"));
    CHECK(test::read_file(out + "/resume.rc") == "0\n");
    CHECK_THAT(test::read_file(out + "/resume.out"), Contains("the end"));
    CHECK(lines_in(marker) == 1);  // resumed from its last step: the call was not made again
}

TEST_CASE(
    "disk full for real: serve stops a run the store cannot take, keeps answering, and resumes it by itself once there is room",
    "[integration][faults][store][server]") {
    if (test::run_command("unshare -m true").exit_code != 0) {
        WARN("skipped: cannot make a private mount namespace here (run as root)");
        return;
    }
    // `serve` with its data on a tmpfs in its own mount namespace (the test reaches it with
    // nsenter). A run of kSteps tool calls (each effect a line in a file off the tmpfs) is under way
    // when the tmpfs is filled; it stops without running on. Once the tmpfs is grown, the server
    // resumes it by itself — no /resume — within about a lease, and it completes, no effect twice.
    constexpr int kSteps = 10;
    test::TempDir dir;
    std::string data = (dir.path / "data").string(), effects = (dir.path / "effects.txt").string();
    json rules = json::array();
    auto call = [&](int i) {
        return json{
            {"delay_ms", 150},
            {"tool_calls",
             {{{"name", "append_line"}, {"arguments", {{"path", effects}, {"text", "step=" + std::to_string(i) + ";"}}}}}}};
    };
    rules.push_back({{"after", "^work$"}, {"reply", call(0)}});
    for (int i = 0; i + 1 < kSteps; ++i) rules.push_back({{"after", "step=" + std::to_string(i) + ";"}, {"reply", call(i + 1)}});
    rules.push_back({{"after", "step=" + std::to_string(kSteps - 1) + ";"}, {"reply", {{"text", "all steps done"}}}});
    std::string config = full_disk_config(dir, data, {{"rules", rules}}, "[server]\nauth = \"none\"\n");
    int port = test::free_port();
    std::string log = (dir.path / "serve.log").string();
    test::Process serve({"unshare", "-m", "sh", "-c",
                         "mount -t tmpfs -o size=4m tmpfs '" + data + "' && exec '" + std::string(test::cli()) + "' --config '" +
                             config + "' serve --listen 127.0.0.1:" + std::to_string(port) + " 2> '" + log + "'"});
    REQUIRE(serve.wait_for_port(port));
    INFO(test::read_file(log));
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(10, 0);
    auto in_namespace = [&](const std::string& command) {
        return test::run_command("nsenter -t " + std::to_string(serve.pid) + " -m sh -c \"" + command + "\"");
    };
    auto get = [&](const std::string& path) {
        auto r = client.Get(path);
        REQUIRE(r);
        INFO(path << " → " << r->status << " " << r->body);
        REQUIRE(r->status == 200);
        return json::parse(r->body);
    };

    auto started = client.Post("/api/chat", json{{"message", "work"}, {"conversation", "full"}}.dump(), "application/json");
    REQUIRE(started);
    INFO(started->body);
    REQUIRE(started->status == 200);
    int64_t run = json::parse(started->body)["run"];
    std::string path = "/api/runs/" + std::to_string(run);
    for (int i = 0; i < 200 && lines_in(effects) < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    REQUIRE(lines_in(effects) >= 2);
    in_namespace("cat /dev/zero > '" + data + "/filler' 2>/dev/null; true");
    const int at_fill = lines_in(effects);
    REQUIRE(at_fill < kSteps);

    // Stopped: failed for the store, or still `running` in the store (its end could not be written)
    // while no worker executes it.
    json stopped;
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
         std::chrono::steady_clock::now() < deadline;) {
        stopped = get(path);
        if (!stopped["executing"].get<bool>() &&
            (stopped["status"] == "running" || (stopped["status"] == "failed" && stopped["stop_reason"] == "store_failure")))
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    INFO("stopped: " << stopped.dump());
    CHECK_FALSE(stopped["executing"].get<bool>());
    CHECK((stopped["status"] == "running" || stopped["stop_reason"] == "store_failure"));
    const int at_stop = lines_in(effects);
    CHECK(at_stop <= at_fill + 1);  // at most the call in flight when the disk filled
    auto health = client.Get("/health");
    REQUIRE(health);
    CHECK(health->status == 200);
    auto ready = client.Get("/readyz");  // alive, but not ready: the data dir is full
    REQUIRE(ready);
    CHECK(ready->status == 503);
    CHECK_THAT(ready->body, Catch::Contains("DATA_DIR_UNWRITABLE") && Catch::Contains("free"));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // still full: nothing runs on
    CHECK(lines_in(effects) == at_stop);
    CHECK_FALSE(get(path)["status"] == "completed");

    // Room again: resumed by the server itself, and finished.
    auto grown = in_namespace("mount -o remount,size=16m '" + data + "'");
    INFO(grown.err);
    REQUIRE(grown.exit_code == 0);
    const auto room = std::chrono::steady_clock::now();
    json after;
    while (std::chrono::steady_clock::now() - room < std::chrono::seconds(15)) {
        after = get(path);
        if (after["status"] == "completed") break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - room).count();
    INFO("after: " << after.dump() << "; " << took << " ms after the disk had room again\n" << test::read_file(log));
    REQUIRE(after["status"] == "completed");
    CHECK(after["answer"] == "all steps done");
    CHECK(took < 8000);  // lease_seconds (3) and a few seconds
    std::string lines = test::read_file(effects);
    for (int i = 0; i < kSteps; ++i) {
        std::string step = "step=" + std::to_string(i) + ";";
        size_t first = lines.find(step);
        CHECK((first == std::string::npos || lines.find(step, first + 1) == std::string::npos));  // never twice
    }
    CHECK(lines_in(effects) >= kSteps - 1);  // every step ran, but for at most one whose outcome was unknown
    CHECK(get("/health").is_object());
    // Its stream has one "end", the last event, and it says the run completed: the store failure's
    // ending was not the run's.
    auto stream = test::run_command("curl -s -N --max-time 10 'http://127.0.0.1:" + std::to_string(port) +
                                    "/api/chat?run=" + std::to_string(run) + "'");
    size_t ends = 0;
    for (size_t at = stream.out.find("event: end"); at != std::string::npos; at = stream.out.find("event: end", at + 1)) ++ends;
    INFO(stream.out.substr(stream.out.size() > 2000 ? stream.out.size() - 2000 : 0));
    CHECK(ends == 1);
    CHECK_THAT(stream.out.substr(stream.out.rfind("event: end")), Catch::Contains("\"ok\":true"));
    std::printf(
        "disk full under serve: the run stopped %s with %d of %d effects; %d ms after the tmpfs was grown it was resumed "
        "by the server and completed with %d\n",
        stopped["status"] == "running" ? "running (its end not written)" : "failed (store_failure)", at_stop, kSteps,
        static_cast<int>(took), lines_in(effects));
}

TEST_CASE("a data dir on a read-only file system: doctor names the cause and the fix, and is not ready",
          "[integration][faults][store][doctor]") {
    if (test::run_command("unshare -m true").exit_code != 0) {
        WARN("skipped: cannot make a private mount namespace here (run as root)");
        return;
    }
    test::TempDir dir;
    std::string data = (dir.path / "data").string(), out = (dir.path / "out").string();
    std::string config = full_disk_config(dir, data, json{{"replies", {{{"text", "hi"}}}}});
    std::filesystem::create_directories(out);
    // A fresh, empty tmpfs mounted read-only: SQLite can only say "unable to open database file".
    auto r = test::run_command("unshare -m sh -c \"mount -t tmpfs -o size=1m,ro tmpfs '" + data + "' && '" + test::cli() +
                               "' --config '" + config + "' doctor > '" + out + "/doctor.out' 2> '" + out +
                               "/doctor.err'; echo \\$? > '" + out + "/doctor.rc'\"");
    REQUIRE(r.exit_code == 0);
    std::string err = test::read_file(out + "/doctor.err");
    INFO(err << test::read_file(out + "/doctor.out"));
    CHECK(test::read_file(out + "/doctor.rc") == "1\n");  // not ready, not a mistake in the file
    CHECK_THAT(err,
               Contains("the cause: data dir " + data + " is on a read-only file system") && Contains("remount it read-write"));
    CHECK_THAT(test::read_file(out + "/doctor.out"), Contains("NOT READY"));

    // Full, with the database already there (SQLite then says "disk I/O error"): the same.
    r = test::run_command("unshare -m sh -c \"mount -t tmpfs -o size=2m tmpfs '" + data + "' && '" + test::cli() +
                          "' --config '" + config + "' conversations > /dev/null 2>&1; cat /dev/zero > '" + data +
                          "/filler' 2>/dev/null; '" + test::cli() + "' --config '" + config + "' doctor > '" + out +
                          "/full.out' 2> '" + out + "/full.err'; echo \\$? > '" + out + "/full.rc'\"");
    REQUIRE(r.exit_code == 0);
    std::string full = test::read_file(out + "/full.err");
    INFO(full);
    CHECK(test::read_file(out + "/full.rc") == "1\n");
    CHECK_THAT(full, Contains("the cause: data dir " + data + " has 0 KiB free") && Contains("free space on its file system"));
}
