// The disk fills up in the middle of a run — simulated inside the process (SQLite's max_page_count),
// and for real: the CLI on a 600 KiB tmpfs in a private mount namespace. The run stops with a clear
// store_failure, the database stays intact, every step acknowledged before stays, and the host
// works again once there is room.
#include "unit/test_support.hpp"

#include "store/database.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sstream>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

int64_t count(app::HostApp& app, const std::string& sql) {
    return app.stores().sqlite()->read([&](store::Database& db) -> int64_t {
        auto stmt = db.prepare(sql);
        return stmt && stmt->step() ? stmt->integer(0) : -1;
    });
}

std::string text(app::HostApp& app, const std::string& sql) {
    return app.stores().sqlite()->read([&](store::Database& db) -> std::string {
        auto stmt = db.prepare(sql);
        return stmt && stmt->step() ? stmt->text(0) : "";
    });
}

}  // namespace

TEST_CASE("disk full mid-run: a clear failure, an intact database, nothing acknowledged lost", "[faults][store]") {
    test::TempDir dir;
    json replies = json::array();
    for (int i = 0; i < 12; ++i)
        replies.push_back({{"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", std::string(30000, static_cast<char>('a' + i))}}}}}}});
    replies.push_back({{"text", "done"}});
    test::write_file(dir.path / "cassette.json", json{{"replies", replies}}.dump());
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = {"scripted", "example_c"};
    cfg.plugin_tables["scripted"] = json{{"cassette", (dir.path / "cassette.json").string()}, {"delta_chars", 4096}}.dump();
    auto app = test::start(cfg);

    int acknowledged = 0;
    agent::RunControls controls;
    controls.on_event = [&](const agent::TurnEvent& e) {
        if (e.kind != agent::TurnEvent::Kind::tool_result) return;
        if (++acknowledged == 3)  // the disk is full from here on
            REQUIRE(app->stores().sqlite()->exec("PRAGMA max_page_count = " + std::to_string(count(*app, "PRAGMA page_count"))));
    };
    auto out = app->runner().run({"fill the disk", "full", agent::Mode::execute, "{}"}, controls);
    INFO(out.error);
    CHECK_FALSE(out.ok());
    CHECK(out.stop_reason == StopReason::store_failure);
    CHECK_THAT(out.error, Contains("full"));

    CHECK(text(*app, "PRAGMA integrity_check") == "ok");
    // Every step the run reported done before the disk filled is in the store.
    CHECK(count(*app, "SELECT COUNT(*) FROM messages WHERE conversation = 'full' AND json_extract(body, '$.role') = 'tool'") >= 3);

    // Room again: the host goes on.
    REQUIRE(app->stores().sqlite()->exec("PRAGMA max_page_count = 1073741823"));
    test::write_file(dir.path / "cassette.json", json{{"replies", {{{"text", "back"}}}}}.dump());
    auto again = app->runner().run({"are you there", "after", agent::Mode::execute, "{}"}, {});
    CHECK(again.ok());
}

TEST_CASE("disk full for real: the CLI on a tmpfs that fills up mid-run", "[faults][store]") {
    // A private mount namespace needs root (CAP_SYS_ADMIN): CI has it; elsewhere the case says so.
    if (test::run_command("unshare -m true").exit_code != 0) {
        WARN("skipped: cannot make a private mount namespace here (run as root)");
        return;
    }
    test::TempDir dir;
    json replies = json::array();
    for (int i = 0; i < 40; ++i)
        replies.push_back({{"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", std::string(30000, static_cast<char>('a' + i % 26))}}}}}}});
    replies.push_back({{"text", "done"}});
    test::write_file(dir.path / "cassette.json", json{{"replies", replies}}.dump());
    std::string data = (dir.path / "data").string(), out = (dir.path / "out").string(), config = (dir.path / "agenthost.toml").string();
    test::write_file(config, "data_dir = \"" + data + "\"\ndefault_plugin_dirs = false\nenabled_plugins = [\"scripted\", \"example_c\"]\n"
                             "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS "\"]\n[plugins.scripted]\ncassette = \"" +
                             (dir.path / "cassette.json").string() + "\"\ndelta_chars = 4096\n");
    std::filesystem::create_directories(data);
    std::filesystem::create_directories(out);
    // In the namespace: a small tmpfs as data_dir, the run that fills it, a copy of the database
    // files for the checks below, then more room and a second run.
    std::string cli = "'" + std::string(test::cli()) + "' --config '" + config + "'";
    auto r = test::run_command("unshare -m sh -c \"mount -t tmpfs -o size=600k tmpfs '" + data + "' && "
                               "{ " + cli + " run --conversation full 'fill the disk' > '" + out + "/run.out' 2> '" + out + "/run.err'; echo \\$? > '" + out + "/run.rc'; } && "
                               "cp '" + data + "'/agenthost.db* '" + out + "/' && "
                               "mount -o remount,size=16m '" + data + "' && "
                               "{ " + cli + " run --conversation after 'are you there' > '" + out + "/again.out' 2> '" + out + "/again.err'; echo \\$? > '" + out + "/again.rc'; }\"");
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
    auto db = store::Database::open(std::filesystem::path(out) / "agenthost.db");
    REQUIRE(db.ok());
    auto scalar = [&](const std::string& sql) {
        auto stmt = (*db)->prepare(sql);
        return stmt && stmt->step() ? stmt->text(0) : std::string();
    };
    CHECK(scalar("PRAGMA integrity_check") == "ok");
    CHECK(std::stoi(scalar("SELECT COUNT(*) FROM messages WHERE conversation = 'full' AND json_extract(body, '$.role') = 'tool'")) >= acknowledged);

    CHECK(test::read_file(out + "/again.rc") == "0\n");  // room again: the host goes on
}
