// Fallback chains end to end: the run's provider (the OpenAI adapter, against a scripted server on
// a real socket) answers the first step and then fails past its retries; the step goes on with the
// chain's next provider (the scripted plugin), the switch is an event, a queue figure and a record
// in the checkpoint, and no tool runs twice.
#include "integration/provider_wires.hpp"

#include <catch2/catch.hpp>

#include <fstream>

using namespace test::providers;
using Catch::Matchers::Contains;

namespace {

struct FallbackRun {
    agent::TurnOutcome out;
    std::vector<agent::events::ProviderSwitch> switches;
    std::vector<std::string> results;  // the tool results, in order
    size_t primary_requests = 0;
    uint64_t fallbacks_counted = 0;
    nlohmann::json answered_by;
    std::vector<agent::events::ProviderSwitch> next_run_switches;  // a second run of the same host
    bool next_run_ok = false;
    size_t primary_requests_after_next = 0;
};

// A turn of three model calls: the OpenAI server answers the first with a call of add(40, 2) and has
// nothing for later requests (a 500, retried once); the chain's "backup" replays the rest.
FallbackRun run_with_fallback(int cooldown_s) {
    test::TempDir cassette_dir;
    const auto cassette = cassette_dir.path / "backup.json";
    std::ofstream(cassette) << json{
        {"replies",
         {{{"tool_calls", {{{"name", "add"}, {"arguments", {{"a", 1}, {"b", 2}}}}}}}, {{"text", "Both sums are done."}}}},
        {"fallback",
         {{"text",
           "Still here."}}}}.dump();
    Harness h(openai_wire(), 1, [&](config::Config& cfg) {
        cfg.enabled_plugins.push_back("scripted");
        cfg.provider.retry_attempts = 2;
        cfg.provider.fallback = {"backup"};
        cfg.provider.fallback_cooldown_s = cooldown_s;
        config::ProviderSettings& backup = cfg.providers["backup"];
        backup.name = "backup";
        backup.use = "scripted";
        cfg.plugin_tables["scripted"] = json{{"cassette", cassette.string()}}.dump();
    });
    h.push_stream(h.wire.tools({{"add", {{"a", 40}, {"b", 2}}}}));
    FallbackRun r;
    agent::RunControls controls;
    controls.on_event = [&](const agent::TurnEvent& e) {
        if (const auto* s = e.as<agent::events::ProviderSwitch>()) r.switches.push_back(*s);
        if (const auto* t = e.as<agent::events::ToolResult>()) r.results.push_back(t->content);
    };
    r.out = h.app->runner().run({"add 40 and 2, then 1 and 2", "fallback", agent::Mode::execute, "{}"}, controls);
    r.primary_requests = h.server.requests_to(h.wire.chat_path);
    for (const auto& lane : h.app->queue().stats())
        if (lane.provider == "openai") r.fallbacks_counted = lane.fallbacks;
    auto checkpoint = h.app->runs().last_checkpoint(r.out.run).value();
    if (checkpoint) r.answered_by = json::parse(checkpoint->state_json).value("answered_by", json::object());
    // The next run of the same host, while the first provider cools down: its first step goes to
    // the backup at once (the cassette's fallback answers), and says so.
    agent::RunControls next;
    next.on_event = [&](const agent::TurnEvent& e) {
        if (const auto* s = e.as<agent::events::ProviderSwitch>()) r.next_run_switches.push_back(*s);
    };
    r.next_run_ok = h.app->runner().run({"and now?", "fallback-2", agent::Mode::execute, "{}"}, next).ok();
    r.primary_requests_after_next = h.server.requests_to(h.wire.chat_path);
    return r;
}

}  // namespace

TEST_CASE("fallback: a provider that goes down mid-turn hands the step to the next of its chain, no tool run twice",
          "[integration][providers]") {
    FallbackRun r = run_with_fallback(60);
    INFO(r.out.error);
    REQUIRE(r.out.ok());
    CHECK(r.out.answer == "Both sums are done.");
    CHECK(r.out.tool_calls == 2);  // add(40, 2) by the first provider's reply, add(1, 2) by the backup's: once each
    CHECK(r.results == std::vector<std::string>{"42", "3"});
    REQUIRE(r.switches.size() == 1);  // the backup keeps the turn while the first provider cools down
    CHECK(r.switches[0].from == "openai");
    CHECK(r.switches[0].to == "backup");
    CHECK_THAT(r.switches[0].reason, Contains("'openai'") && Contains("transient") && Contains("going on with backup"));
    CHECK(r.primary_requests == 3);  // the first step, then the failing one and its one retry (none by the next run)
    CHECK(r.fallbacks_counted == 1);
    CHECK(r.next_run_ok);
    CHECK(r.primary_requests_after_next == r.primary_requests);
    REQUIRE(r.next_run_switches.size() == 1);
    CHECK(r.next_run_switches[0].to == "backup");
    CHECK_THAT(r.next_run_switches[0].reason, Contains("openai failed recently"));
    // Which steps the fallback answered, in the checkpoint a resume reads (the last one is the
    // step before the answer that ended the run).
    CHECK(r.answered_by == json{{"2", "backup"}});
}

TEST_CASE("fallback: after its cool-down the run's own provider is asked again, and the switch back is said",
          "[integration][providers]") {
    FallbackRun r = run_with_fallback(0);
    INFO(r.out.error);
    REQUIRE(r.out.ok());
    CHECK(r.out.tool_calls == 2);
    REQUIRE(r.switches.size() == 3);
    CHECK((r.switches[0].from == "openai" && r.switches[0].to == "backup"));
    CHECK((r.switches[1].from == "backup" && r.switches[1].to == "openai"));  // cool-down over: tried first again
    CHECK_THAT(r.switches[1].reason, Contains("cool-down"));
    CHECK((r.switches[2].from == "openai" && r.switches[2].to == "backup"));
    CHECK(r.primary_requests == 5);  // the first step, then two failing steps of two attempts each
    CHECK(r.fallbacks_counted == 2);
}
