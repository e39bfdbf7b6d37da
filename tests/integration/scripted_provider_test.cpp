// The scripted provider, driven through the real provider ABI.
#include "support/test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

struct Events {
    std::vector<std::pair<int, std::string>> list;
    std::string text() const {
        std::string t;
        for (const auto& [type, payload] : list)
            if (type == AH_EVENT_TEXT) t += payload;
        return t;
    }
    std::vector<json> of(int wanted) const {
        std::vector<json> out;
        for (const auto& [type, payload] : list)
            if (type == wanted) out.push_back(json::parse(payload));
        return out;
    }
    size_t count(int wanted) const {
        return std::count_if(list.begin(), list.end(), [&](const auto& e) { return e.first == wanted; });
    }
};

Events chat(app::HostApp& app, const std::string& conversation, const std::string& user_message,
            const std::string& call_id = "") {
    Events events;
    ah_event_sink sink{sizeof(ah_event_sink), &events, [](void* ctx, int32_t type, ah_str payload) -> ah_status {
                           static_cast<Events*>(ctx)->list.emplace_back(type, std::string(payload.data, payload.len));
                           return AH_OK;
                       }};
    plugins::CallInput in;
    in.conversation_id = conversation;
    in.call_id = call_id;
    in.arguments_json = json{
        {"messages", {{{"role", "system"}, {"content", "s"}}, {{"role", "user"}, {"content", user_message}}}},
        {"tools",
         json::array()}}.dump();
    auto status = app.registry().chat("scripted", in, sink);
    REQUIRE(status.ok());
    CHECK(*status == AH_OK);
    return events;
}

std::unique_ptr<app::HostApp> with_cassette(const test::TempDir& dir, const json& cassette, int delta_chars = 3) {
    test::write_file(dir.path / "cassette.json", cassette.dump());
    auto cfg = test::config(dir.path, false);
    cfg.plugin_tables["scripted"] =
        json{{"cassette", (dir.path / "cassette.json").string()}, {"delta_chars", delta_chars}}.dump();
    return test::start(cfg);
}

}  // namespace

TEST_CASE("scripted: replies play in order, text streamed in UTF-8-safe deltas", "[integration][scripted]") {
    test::TempDir dir;
    auto app = with_cassette(
        dir, {{"replies",
               {{{"text", "héllo wörld ✓"}, {"reasoning", "thinking"}},
                {{"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", "hi"}}}}}}},
                {{"text", "both"},
                 {"tool_calls", {{{"name", "add"}, {"arguments", "{\"a\":1,\"b\":2}"}}, {{"name", "echo"}, {"id", "mine"}}}}}}}});
    Events first = chat(*app, "c1", "hi");
    CHECK(first.text() == "héllo wörld ✓");
    CHECK(first.count(AH_EVENT_TEXT) > 3);
    for (const auto& [type, payload] : first.list)
        if (type == AH_EVENT_TEXT) CHECK(json::accept(json(payload).dump()));  // every delta is valid UTF-8
    CHECK(first.count(AH_EVENT_REASONING) >= 1);
    CHECK(first.of(AH_EVENT_STOP).at(0)["reason"] == "end");
    CHECK(first.count(AH_EVENT_USAGE) == 1);

    Events second = chat(*app, "c1", "hi");
    auto calls = second.of(AH_EVENT_TOOL_CALL);
    REQUIRE(calls.size() == 1);
    CHECK(calls[0]["name"] == "echo");
    CHECK(calls[0]["arguments"]["text"] == "hi");
    CHECK_FALSE(calls[0]["id"].get<std::string>().empty());
    CHECK(second.of(AH_EVENT_STOP).at(0)["reason"] == "tool_calls");

    Events third = chat(*app, "c1", "hi");
    CHECK(third.text() == "both");
    auto both = third.of(AH_EVENT_TOOL_CALL);
    REQUIRE(both.size() == 2);
    CHECK(both[0]["arguments"] == "{\"a\":1,\"b\":2}");  // passed as recorded; the runner decodes it
    CHECK(both[1]["id"] == "mine");

    Events exhausted = chat(*app, "c1", "hi");
    auto errors = exhausted.of(AH_EVENT_ERROR);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0]["type"] == "bad_request");
    CHECK_THAT(errors[0]["message"].get<std::string>(), Contains("no reply left") && Contains("fallback"));
}

TEST_CASE("scripted: progress is per conversation", "[integration][scripted]") {
    test::TempDir dir;
    auto app = with_cassette(dir, {{"replies", {{{"text", "one"}}, {{"text", "two"}}}}});
    CHECK(chat(*app, "a", "x").text() == "one");
    CHECK(chat(*app, "b", "x").text() == "one");
    CHECK(chat(*app, "a", "x").text() == "two");
    CHECK(chat(*app, "b", "x").text() == "two");
}

TEST_CASE("scripted: a model call asked again (a resumed run) gets the same reply, a retried error moves on",
          "[integration][scripted]") {
    test::TempDir dir;
    auto app = with_cassette(
        dir, {{"replies", {{{"text", "one"}}, {{"error", {{"type", "transient"}}}}, {{"text", "two"}}, {{"text", "three"}}}}});
    CHECK(chat(*app, "c", "x", "c-1-llm-0").text() == "one");
    CHECK(chat(*app, "c", "x", "c-1-llm-0").text() == "one");  // the host died during that call; resume asks again
    CHECK(chat(*app, "c", "y", "c-1-llm-1").text().empty());   // the transient error …
    CHECK(chat(*app, "c", "y", "c-1-llm-1").text() == "two");  // … and the host's retry gets the next reply
    CHECK(chat(*app, "c", "z", "c-1-llm-2").text() == "three");
}

TEST_CASE("scripted: rules match the last user message, fallback answers when nothing else applies", "[integration][scripted]") {
    test::TempDir dir;
    auto app = with_cassette(
        dir, {{"rules", {{{"match", "weather|rain"}, {"replies", {{{"text", "sunny"}}, {{"text", "still sunny"}}}}}}},
              {"replies", {{{"text", "default"}}}},
              {"fallback", {{"text", "fallback"}}}});
    CHECK(chat(*app, "c", "What's the WEATHER?").text() == "sunny");
    CHECK(chat(*app, "c", "hello").text() == "default");
    CHECK(chat(*app, "c", "rain?").text() == "still sunny");
    CHECK(chat(*app, "c", "rain?").text() == "fallback");
    CHECK(chat(*app, "c", "anything").text() == "fallback");
    CHECK(chat(*app, "other", "rain").text() == "sunny");
}

TEST_CASE("scripted: typed errors and delays replay", "[integration][scripted]") {
    test::TempDir dir;
    auto app = with_cassette(
        dir, {{"replies", {{{"error", {{"type", "rate_limit"}, {"retry_after", 1}}}}, {{"delay_ms", 120}, {"text", "late"}}}}});
    auto errors = chat(*app, "c", "x").of(AH_EVENT_ERROR);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0]["type"] == "rate_limit");
    CHECK(errors[0]["retry_after"] == 1);
    auto start = std::chrono::steady_clock::now();
    CHECK(chat(*app, "c", "x").text() == "late");
    CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(120));
}

TEST_CASE("scripted: a bad cassette stops the plugin with a message naming the fault", "[integration][scripted]") {
    test::TempDir dir;
    struct Case {
        json cassette;
        const char* expect;
    } cases[] = {
        {{{"replies", {{{"text", 5}}}}}, "replies[0].text"},
        {{{"replies", {{{"error", {{"type", "oops"}}}}}}}, "replies[0].error.type"},
        {{{"rules", {{{"match", "(unclosed"}, {"replies", json::array()}}}}}, "rules[0].match"},
        {{{"replys", json::array()}}, "unknown key 'replys'"},
        {{{"replies", {{{"tool_calls", {{{"arguments", {}}}}}}}}}, "tool_calls[0]"},
    };
    for (const auto& c : cases) {
        INFO(c.cassette.dump());
        test::write_file(dir.path / "bad.json", c.cassette.dump());
        auto cfg = test::config(dir.path, false);
        cfg.plugin_tables["scripted"] = json{{"cassette", (dir.path / "bad.json").string()}}.dump();
        auto app = test::start(cfg);
        const plugins::PluginInfo* scripted = nullptr;
        for (const auto& p : app->registry().plugins())
            if (p.name == "scripted") scripted = &p;
        REQUIRE(scripted);
        REQUIRE(scripted->error.has_value());
        CHECK(scripted->error->code == "create_failed");
        CHECK_THAT(scripted->error->message, Contains("bad.json") && Contains(c.expect));
    }
}

TEST_CASE("scripted: without a cassette every chat explains how to configure one", "[integration][scripted]") {
    test::TempDir dir;
    auto app = test::start(test::config(dir.path, false));
    auto errors = chat(*app, "c", "x").of(AH_EVENT_ERROR);
    REQUIRE(errors.size() == 1);
    CHECK_THAT(errors[0]["message"].get<std::string>(), Contains("[plugins.scripted] cassette"));
}

TEST_CASE("scripted: doctor's check says what a cassette holds, and a placeholder answers but is not ready",
          "[integration][scripted]") {
    test::TempDir dir;
    auto app = with_cassette(dir, {{"replies", {{{"text", "a"}}}},
                                   {"rules", {{{"match", "x"}, {"replies", {{{"text", "b"}}, {{"text", "c"}}}}}}},
                                   {"fallback", {{"text", "d"}}}});
    auto checks = app->registry().health("scripted");
    REQUIRE(checks.size() == 1);
    CHECK(checks[0].ok);
    CHECK(checks[0].detail == "1 reply, 1 rule (2 replies), a fallback");
    CHECK(app->queue().check("scripted").ready);

    test::TempDir other;
    auto placeholder = with_cassette(
        other, {{"placeholder", "no model is configured yet: set [provider]"}, {"fallback", {{"text", "welcome"}}}});
    CHECK(chat(*placeholder, "c", "hello").text() == "welcome");  // it still answers
    auto failing = placeholder->registry().health("scripted");
    REQUIRE(failing.size() == 1);
    CHECK_FALSE(failing[0].ok);
    CHECK(failing[0].name == "model");
    CHECK_THAT(failing[0].detail, Contains("no model is configured yet"));
    auto readiness = placeholder->queue().check("scripted");
    CHECK_FALSE(readiness.ready);
    CHECK_THAT(readiness.message, Contains("no model is configured yet"));
}

TEST_CASE("scripted: a turn of read-only tool steps syncs the disk once a step, the provider's progress riding along",
          "[integration][scripted]") {
    test::TempDir dir;
    constexpr int kSteps = 6;
    json replies = json::array();
    for (int i = 0; i < kSteps; ++i)
        replies.push_back({{"text", "step"}, {"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", std::to_string(i)}}}}}}});
    replies.push_back({{"text", "done"}});
    test::write_file(dir.path / "cassette.json", json{{"replies", replies}}.dump());
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = {"scripted", "example_c"};
    cfg.plugin_tables["scripted"] = json{{"cassette", (dir.path / "cassette.json").string()}}.dump();
    auto app = test::start(cfg);
    auto synced = [&] { return app->storage().write_stats().value().synced_commits; };
    const uint64_t before = synced();
    const plugins::KvReads reads_before = app->registry().services().run_kv().reads();
    auto out = app->runner().run({"go", "c1", agent::Mode::execute, "{}"}, {});
    REQUIRE(out.ok());
    REQUIRE(out.tool_calls == kSteps);
    const uint64_t syncs = synced() - before;
    CAPTURE(syncs);
    // The run's start and first checkpoint, one per step (the reply, its call's intent and the
    // provider's progress wait for the call's result) and the end: the progress written during each
    // of the 7 model calls is no commit of its own to sync (it was: 16 syncs).
    CHECK(syncs <= kSteps + 3);
    // The provider reads its progress at each of its 7 calls: the store answers the first, the
    // run's copy of what it wrote the six others (on PostgreSQL, six round trips fewer).
    const plugins::KvReads reads = app->registry().services().run_kv().reads();
    CHECK(reads.from_store - reads_before.from_store == 1);
    CHECK(reads.from_run - reads_before.from_run == kSteps);
    // And the progress is kept, with the steps.
    auto progress = app->storage().plugin_kv().get("scripted", "progress/c1");
    REQUIRE(progress);
    REQUIRE(progress->has_value());
    CHECK_THAT(**progress, Contains("answered"));
}
