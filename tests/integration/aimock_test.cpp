// The adapters against an independent implementation of their wire formats: the npm
// package @copilotkit/aimock (pinned in tests/peers), so a protocol misreading shared by an adapter
// and our own test servers is caught.
#include "support/test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <memory>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// aimock on 127.0.0.1 with our fixtures; stopped (SIGTERM) when the test ends.
struct Aimock {
    int port = test::free_port();
    std::unique_ptr<test::Process> process;

    explicit Aimock(const test::fs::path& fixtures) {
        std::string cli = std::string(test::source_dir()) + "/tests/peers/node_modules/@copilotkit/aimock/dist/cli.js";
        INFO("run scripts/install-peers (npm ci in tests/peers) to install aimock");
        REQUIRE(test::fs::exists(cli));
        process = std::make_unique<test::Process>(std::vector<std::string>{"node", cli, "--host", "127.0.0.1", "--port",
                                                                           std::to_string(port), "--fixtures", fixtures.string(),
                                                                           "--log-level", "warn"});
        if (!process->wait_for_port(port)) FAIL("aimock did not start on port " << port << " (is Node.js >= 20.15 installed?)");
    }
};

struct Events {
    llm::ChatOutcome outcome;
    std::string text;
    std::vector<json> calls;
    std::string stop;
};

Events chat(app::HostApp& app, const std::string& provider, const std::string& prompt) {
    json request{{"model", ""},
                 {"messages", {{{"role", "system"}, {"content", "You are a test."}}, {{"role", "user"}, {"content", prompt}}}},
                 {"tools", {{{"name", "get_weather"}, {"description", "weather"}, {"parameters", {{"type", "object"}}}}}},
                 {"max_tokens", 50},
                 {"stream", true}};
    plugins::CallInput call;
    call.conversation_id = "aimock";
    call.arguments_json = request.dump();
    Events e;
    llm::ChatCallbacks callbacks;
    callbacks.on_event = [&](int32_t type, std::string_view data) -> ah_status {
        if (type == AH_EVENT_TEXT) e.text += data;
        if (type == AH_EVENT_TOOL_CALL) e.calls.push_back(json::parse(data));
        if (type == AH_EVENT_STOP) e.stop = json::parse(data)["reason"];
        return AH_OK;
    };
    e.outcome = app.queue().chat(provider, call, callbacks);
    return e;
}

}  // namespace

TEST_CASE("aimock: openai, anthropic, ollama, gemini, responses and bedrock adapters against an independent server",
          "[peer][providers][aimock]") {
    test::TempDir dir;
    test::write_file(
        dir.path / "fixtures" / "agent.json",
        json{{"fixtures",
              {{{"match", {{"userMessage", "hello"}}}, {"response", {{"content", "Hello from aimock!"}}}},
               {{"match", {{"userMessage", "weather"}}},
                {"response",
                 {{"toolCalls",
                   {{{"name", "get_weather"}, {"arguments", {{"city", "Paris"}, {"days", 2}}}},
                    {{"name", "get_time"}, {"arguments", {{"zone", "UTC"}}}}}}}}},
               {{"match", {{"userMessage", "limit"}}},
                {"response", {{"error", {{"message", "Rate limit exceeded"}, {"type", "rate_limit_error"}}}, {"status", 429}}}}}}}
            .dump());
    Aimock server(dir.path / "fixtures");
    std::string base = "http://127.0.0.1:" + std::to_string(server.port);

    auto cfg = test::config(dir.path, false);
    const std::vector<std::string> plugins{"openai", "anthropic", "ollama", "gemini", "openai_responses", "bedrock"};
    cfg.enabled_plugins = plugins;
    const std::map<std::string, std::string> suffix{{"openai", "/v1"}, {"gemini", "/v1beta"}, {"openai_responses", "/v1"}};
    for (const std::string& plugin : plugins) {
        config::ProviderSettings p;
        p.name = std::string("via-") + plugin;
        p.use = plugin;
        p.base_url = base + (suffix.count(plugin) ? suffix.at(plugin) : "");
        p.model = "gpt-4o";
        p.retry_attempts = 1;
        if (plugin == "bedrock") p.api_key = "bedrock-api-key";  // a bearer key: no region or signature to agree on
        cfg.providers[p.name] = p;
    }
    auto app = test::start(cfg);

    for (const std::string& plugin : plugins) {
        std::string provider = "via-" + plugin;
        INFO("adapter: " << plugin);
        auto hello = chat(*app, provider, "hello");
        REQUIRE(hello.outcome.ok);
        CHECK(hello.text == "Hello from aimock!");
        CHECK(hello.stop == "end");

        auto weather = chat(*app, provider, "weather");
        REQUIRE(weather.outcome.ok);
        REQUIRE(weather.calls.size() == 2);
        CHECK(weather.calls[0]["name"] == "get_weather");
        CHECK(weather.calls[0]["arguments"] == json{{"city", "Paris"}, {"days", 2}});
        CHECK(weather.calls[1]["arguments"] == json{{"zone", "UTC"}});
        CHECK(weather.stop == "tool_calls");

        auto limited = chat(*app, provider, "limit");
        CHECK_FALSE(limited.outcome.ok);
        CHECK(limited.outcome.error_type == "rate_limit");

        if (plugin != "gemini") CHECK(app->queue().check(provider).ready);  // aimock lists gpt-4o (not for Gemini)
    }
    auto readiness = app->queue().check("via-openai");
    CHECK(std::find(readiness.models.begin(), readiness.models.end(), "gpt-4") != readiness.models.end());
}
