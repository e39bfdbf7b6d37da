// Provider plugins get one instance per provider table, created with that table's settings: a
// plugin that needs base_url to start works through [providers.NAME], and the permissions'
// {setting:base_url} is resolved per instance from the table it was created with.
#include "support/loopback_server.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

struct Tables {
    test::TempDir dir;
    test::LoopbackServer model_server;
    config::Config cfg;
    std::shared_ptr<std::string> says = std::make_shared<std::string>("hello");  // what the server answers

    explicit Tables(const std::string& isolation) {
        model_server.http.Get(
            "/hello", [says = says](const httplib::Request&, httplib::Response& res) { res.set_content(*says, "text/plain"); });
        model_server.start();
        cfg = test::config(dir.path, true);
        cfg.enabled_plugins = {"table_provider", "scripted"};
        config::ProviderSettings fake;
        fake.name = "fake";
        fake.use = "table_provider";
        fake.base_url = model_server.url();
        cfg.providers["fake"] = fake;
        cfg.plugin_tables["table_provider"] = json{{"isolation", isolation}}.dump();
    }

    agent::TurnOutcome ask(app::HostApp& app, const std::string& provider) {
        agent::TurnRequest request{"hi", "c-" + provider, agent::Mode::execute, "{}"};
        request.provider = provider;
        return app.runner().run(request, {});
    }
};

}  // namespace

TEST_CASE("provider tables: a provider that needs base_url starts from its own providers table only",
          "[integration][providers]") {
    std::string in_process_said;
    for (const char* isolation : {"in-process", "process", "sandbox"}) {
        if (std::string(isolation) == "sandbox" && !test::kernel_can_sandbox()) continue;
        INFO(isolation);
        Tables t(isolation);
        auto app = test::start(t.cfg);
        // The plugin loaded: no instance was made without a table's settings.
        for (const auto& p : app->registry().plugins())
            if (p.name == "table_provider") CHECK(p.status == plugins::PluginStatus::loaded);

        // The table's instance reached its server through the host: {setting:base_url} resolved
        // from the table, the only network grant it has.
        auto answered = t.ask(*app, "fake");
        INFO(answered.error);
        REQUIRE(answered.ok());
        CHECK(answered.answer == "reached: hello");

        // Asked for by its plugin name, the instance made from [plugins.table_provider] alone
        // cannot start, and the error says why.
        auto bare = t.ask(*app, "table_provider");
        CHECK_FALSE(bare.ok());
        CHECK_THAT(bare.error, Contains("base_url is not set"));
        // The same words and status in process, in a process of its own and sandboxed.
        std::string said = bare.error;
        if (auto at = said.find(" (in its own process)"); at != std::string::npos) said.erase(at, 21);
        if (in_process_said.empty())
            in_process_said = said;
        else
            CHECK(said == in_process_said);
    }
}

TEST_CASE("provider tables: an answer that breaks the exchange rules fails in words, never as success or a cancel",
          "[integration][providers]") {
    // An outside try: a provider that emitted nothing was a completed run with an empty answer, and
    // text after the STOP joined the answer (a malformed TOOL_CALL: example_provider_test).
    for (const char* isolation : {"in-process", "process"}) {
        INFO(isolation);
        Tables t(isolation);
        auto app = test::start(t.cfg);

        *t.says = "be silent";
        auto silent = t.ask(*app, "fake");
        CHECK_FALSE(silent.ok());
        CHECK(silent.stop_reason == StopReason::provider_failure);
        CHECK_THAT(silent.error, Contains("ended its answer without a STOP or ERROR event"));

        *t.says = "talk past the end";
        auto past = t.ask(*app, "fake");
        INFO(past.error);
        REQUIRE(past.ok());
        CHECK(past.answer == "the answer");
    }
}
