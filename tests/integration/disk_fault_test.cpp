// The disk fills up in the middle of a run (SQLite's max_page_count makes the database full, as a
// full file system would): the run stops with a clear store_failure, the database stays intact,
// every step acknowledged before stays, and the host works again once there is room.
#include "unit/test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

int64_t count(cli::HostApp& app, const std::string& sql) {
    return app.database().read([&](store::Database& db) -> int64_t {
        auto stmt = db.prepare(sql);
        return stmt && stmt->step() ? stmt->integer(0) : -1;
    });
}

std::string text(cli::HostApp& app, const std::string& sql) {
    return app.database().read([&](store::Database& db) -> std::string {
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
            REQUIRE(app->database().exec("PRAGMA max_page_count = " + std::to_string(count(*app, "PRAGMA page_count"))));
    };
    auto out = app->runner().run({"fill the disk", "full", agent::Mode::execute, "{}"}, controls);
    INFO(out.error);
    CHECK_FALSE(out.ok);
    CHECK(out.stop_reason == "store_failure");
    CHECK_THAT(out.error, Contains("full"));

    CHECK(text(*app, "PRAGMA integrity_check") == "ok");
    // Every step the run reported done before the disk filled is in the store.
    CHECK(count(*app, "SELECT COUNT(*) FROM messages WHERE conversation = 'full' AND json_extract(body, '$.role') = 'tool'") >= 3);

    // Room again: the host goes on.
    REQUIRE(app->database().exec("PRAGMA max_page_count = 1073741823"));
    test::write_file(dir.path / "cassette.json", json{{"replies", {{{"text", "back"}}}}}.dump());
    auto again = app->runner().run({"are you there", "after", agent::Mode::execute, "{}"}, {});
    CHECK(again.ok);
}
