// The spine's turn loop with the scripted provider and the C example plugin.
#include "agent/turn_runner.hpp"
#include "unit/test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {
struct Run {
    agent::TurnOutcome outcome;
    std::vector<agent::TurnEvent> events;
};
Run run(const json& cassette, int max_iterations = 20) {
    test::TempDir dir;
    test::write_file(dir.path / "cassette.json", cassette.dump());
    auto cfg = test::config(dir.path, false);
    cfg.plugin_tables["scripted"] = json{{"cassette", (dir.path / "cassette.json").string()}}.dump();
    auto app = test::start(cfg);
    agent::TurnRunner runner(app->registry(), "scripted");
    Run r;
    r.outcome = runner.run({"please", "conv", "system", max_iterations}, [&](const agent::TurnEvent& e) { r.events.push_back(e); });
    return r;
}
}  // namespace

TEST_CASE("turn: tool calls run and their results reach the model until it answers", "[turn]") {
    auto r = run({{"replies", {{{"tool_calls", {{{"name", "add"}, {"arguments", {{"a", 1}, {"b", 2}}}}, {{"name", "echo"}, {"arguments", "{\"text\":\"x\"}"}}}}},
                               {{"text", "The answer is 3."}}}}});
    REQUIRE(r.outcome.ok);
    CHECK(r.outcome.stop_reason == "answered");
    CHECK(r.outcome.answer == "The answer is 3.");
    std::vector<std::string> seen;
    for (const auto& e : r.events)
        if (e.kind == agent::TurnEvent::Kind::tool_result) seen.push_back(e.tool + "=" + e.text);
    CHECK(seen == std::vector<std::string>{"add=3", "echo=x"});
}

TEST_CASE("turn: bad calls give the model an error result and the loop goes on", "[turn]") {
    auto r = run({{"replies", {{{"tool_calls", {{{"name", "no_such_tool"}}, {{"name", "echo"}, {"arguments", "not json"}}}}},
                               {{"text", "recovered"}}}}});
    REQUIRE(r.outcome.ok);
    int errors = 0;
    for (const auto& e : r.events) errors += e.kind == agent::TurnEvent::Kind::tool_result && e.is_error;
    CHECK(errors == 2);
}

TEST_CASE("turn: provider errors and the iteration cap end the turn with a cause", "[turn]") {
    auto limited = run({{"fallback", {{"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", "again"}}}}}}}}}, 3);
    CHECK_FALSE(limited.outcome.ok);
    CHECK(limited.outcome.stop_reason == "iteration_limit");
    CHECK_THAT(limited.outcome.error, Contains("3 iterations"));

    auto failed = run({{"replies", {{{"error", {{"type", "auth"}, {"message", "bad key"}}}}}}});
    CHECK_FALSE(failed.outcome.ok);
    CHECK(failed.outcome.stop_reason == "auth");
    CHECK_THAT(failed.outcome.error, Contains("bad key"));
}
