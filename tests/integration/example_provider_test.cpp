// The C provider example (examples/c-provider-plugin), run as its author and operator would: the
// agenthost binary with an agenthost.toml naming it, against a local fake model server speaking the
// example's NDJSON lines, in process and sandboxed, as [provider] and as [providers.NAME].
#include "support/test_support.hpp"
#include "test_paths.h"
#include "support/wire_server.hpp"

#include "agent/turn_runner.hpp"
#include "app/host_app.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

test::CannedResponse ndjson(std::vector<std::string> lines, int status = 200) {
    test::CannedResponse r;
    r.status = status;
    r.content_type = "application/x-ndjson";
    for (auto& line : lines) r.chunks.push_back(line + "\n");
    return r;
}

// The two answers of a one-tool turn: call example_c's echo, then say what it returned.
void push_echo_turn(test::WireServer& model) {
    model.push("/chat", ndjson({R"({"reasoning": "the user wants an echo"})",
                                R"({"tool_call": {"id": "c1", "name": "echo", "arguments": {"text": "h\u00e9llo"}}})",
                                R"({"stop": "tool_calls"})"}));
    model.push("/chat", ndjson({R"({"text": "The echo "})", R"({"text": "said h\u00e9llo"})",
                                R"({"usage": {"input_tokens": 40, "output_tokens": 6}})", R"({"stop": "end"})"}));
}

struct Operator {
    test::TempDir home;
    std::string config_path = (home.path / "agenthost.toml").string();

    // Writes agenthost.toml: the build's plugins and the examples, plus `tables`.
    void configure(const std::string& tables) {
        test::write_file(config_path, "default_plugin_dirs = false\ndata_dir = \"" + (home.path / "data").string() +
                                          "\"\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                                          "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS "\"]\n" +
                                          tables);
    }
    test::CommandResult cli(const std::string& args) {
        return test::run_command("cd '" + home.path.string() + "' && EXAMPLE_MODEL_KEY=sk-example XDG_DATA_HOME='" +
                                 home.path.string() + "' AGENTHOST_CONFIG= '" + test::cli() + "' --config '" + config_path +
                                 "' " + args + " < /dev/null");
    }
};

std::string provider_table(const std::string& header, const std::string& base_url) {
    return header + "\nuse = \"example_provider_c\"\nbase_url = \"" + base_url +
           "\"\nmodel = \"tiny\"\napi_key_env = \"EXAMPLE_MODEL_KEY\"\n";
}

// Checks one echo turn went through the example: the answer, the tool, and what the server saw.
void check_echo_turn(Operator& op, test::WireServer& model, const std::string& run_args) {
    auto r = op.cli("run " + run_args + " 'echo hello back to me'");
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("The echo said h\xc3\xa9llo"));
    CHECK_THAT(r.err, Contains("echo"));

    auto seen = model.requests();
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].method == "POST");
    CHECK(seen[0].path == "/chat");
    CHECK(seen[0].headers["x-model"] == "tiny");
    CHECK(seen[0].headers["authorization"] == "Bearer sk-example");
    auto first = json::parse(seen[0].body);  // the canonical request, as the host sent it
    CHECK(first["messages"].back()["content"] == "echo hello back to me");
    CHECK(first["stream"] == true);
    CHECK(!first["tools"].empty());
    auto second = json::parse(seen[1].body);
    auto& tool_message = second["messages"].back();
    CHECK(tool_message["role"] == "tool");
    CHECK(tool_message["tool_call_id"] == "c1");
    CHECK_THAT(tool_message["content"].get<std::string>(), Contains("h\xc3\xa9llo"));
}

}  // namespace

TEST_CASE("example C provider: a turn with a tool call as the default provider, in process", "[integration][example_provider]") {
    test::WireServer model;
    Operator op;
    op.configure(provider_table("[provider]", model.url()));
    push_echo_turn(model);
    check_echo_turn(op, model, "");

    // doctor asks the server for its models through list_models.
    model.push("/models", ndjson({R"([{"id": "tiny"}, {"id": "large"}])"}));
    auto doctor = op.cli("doctor");
    INFO(doctor.out << doctor.err);
    CHECK_THAT(doctor.out + doctor.err, Contains("example_provider_c"));
    CHECK(model.requests_to("/models") >= 1);
}

TEST_CASE("example C provider: sandboxed, granted only its table's base_url", "[integration][example_provider]") {
    if (!test::kernel_can_sandbox()) return;
    test::WireServer model;
    Operator op;
    op.configure(provider_table("[provider]", model.url()) + "[plugins.example_provider_c]\nisolation = \"sandbox\"\n");
    auto listed = op.cli("plugins");
    INFO(listed.out << listed.err);
    CHECK_THAT(listed.out, Contains("network: 127.0.0.1:" + std::to_string(model.port())));
    push_echo_turn(model);
    check_echo_turn(op, model, "");
}

TEST_CASE("example C provider: as a named provider table, each table its own settings, no bare instance",
          "[integration][example_provider]") {
    test::WireServer model;
    Operator op;
    // [plugins.example_provider_c] holds no base_url: an instance created from it alone would fail
    // its create(). The default provider points at a port nothing listens on and is never asked.
    op.configure(provider_table("[provider]", "http://127.0.0.1:9") + provider_table("[providers.local]", model.url()) +
                 "[plugins.example_provider_c]\ntimeout_ms = 30000\n");
    push_echo_turn(model);
    check_echo_turn(op, model, "--provider local");
    // `plugins` says where each table's instance may connect (it showed "network: none").
    auto listed = op.cli("plugins");
    CHECK_THAT(listed.out, Contains("network for [providers.local]: 127.0.0.1:" + std::to_string(model.port())));
}

TEST_CASE("example C provider: refusals and broken answers end typed, in words", "[integration][example_provider]") {
    test::WireServer model;
    Operator op;
    op.configure(provider_table("[provider]", model.url()) + "retry_attempts = 3\nretry_base_ms = 10\n");

    SECTION("401 is an auth error, not retried") {
        model.push("/chat", ndjson({R"({"detail": "bad key"})"}, 401));
        auto r = op.cli("run hi");
        CHECK(r.exit_code != 0);
        CHECK_THAT(r.err, Contains("bad key"));
        CHECK(model.requests_to("/chat") == 1);
    }
    SECTION("a 503 and a line it cannot read are retried, then the answer arrives") {
        model.push("/chat", ndjson({"busy"}, 503));
        model.push("/chat", ndjson({R"({"text": "half"})", R"(<html>oops</html>)"}));
        model.push("/chat", ndjson({R"({"text": "whole"})", R"({"stop": "end"})"}));
        auto r = op.cli("run hi");
        INFO(r.out << r.err);
        CHECK(r.exit_code == 0);
        CHECK_THAT(r.out, Contains("whole"));
        CHECK(model.requests_to("/chat") == 3);
    }
    SECTION("a stream that ends without its stop line is an error, never a silent end") {
        for (int i = 0; i < 3; ++i) model.push("/chat", ndjson({R"({"text": "cut off"})"}));
        auto r = op.cli("run hi");
        CHECK(r.exit_code != 0);
        CHECK_THAT(r.err, Contains("the stream ended before its reply was complete"));
    }
    SECTION("a tool call the host cannot read fails the answer in words, not as the user's cancel") {
        model.push("/chat", ndjson({R"({"tool_call": {"id": "c1", "arguments": {}}})", R"({"stop": "tool_calls"})"}));
        auto r = op.cli("run hi");
        INFO(r.err);
        CHECK(r.exit_code != 0);
        CHECK(r.exit_code != 130);
        CHECK_THAT(r.err, Contains("sent a TOOL_CALL event the host cannot read"));
    }
    SECTION("a provider table's values are checked against the plugin's declared settings at start") {
        // An outside try: base_url without a scheme and timeout_ms below the manifest's minimum
        // passed in a provider table (refused only in [plugins.NAME]) and failed at the first call.
        op.configure(
            "[provider]\nuse = \"example_provider_c\"\nmodel = \"tiny\"\nbase_url = \"127.0.0.1:8711\"\n"
            "timeout_ms = 500\n");
        auto r = op.cli("run hi");
        CHECK(r.exit_code == 2);
        CHECK_THAT(r.err, Contains("agenthost.toml:7: [provider] base_url must match the pattern ^https?://") &&
                              Contains("agenthost.toml:8: [provider] timeout_ms must be at least 1000"));
        CHECK(model.requests().empty());
    }
    SECTION("no base_url: the operator is told where to put it") {
        op.configure("[provider]\nuse = \"example_provider_c\"\nmodel = \"tiny\"\n");
        auto r = op.cli("run hi");
        CHECK(r.exit_code != 0);
        CHECK_THAT(r.err, Contains("base_url is not set: add base_url"));
    }
}

TEST_CASE("example C provider: isolated, a model slower than isolation_timeout_ms answers within its own timeout_ms",
          "[integration][example_provider]") {
    // An outside try: under isolation a model call was stopped at isolation_timeout_ms (default
    // 120 s, below the providers' 600 s) and blamed on the plugin, not retried.
    test::WireServer model;
    Operator op;
    op.configure(provider_table("[provider]", model.url()) +
                 "timeout_ms = 8000\n[plugins.example_provider_c]\nisolation = \"process\"\nisolation_timeout_ms = 1000\n");
    auto slow = ndjson({R"({"text": "slow "})", R"({"text": "but whole"})", R"({"stop": "end"})"});
    slow.chunk_delay_ms = 1000;  // about 3 s in all: past isolation_timeout_ms, within timeout_ms
    model.push("/chat", slow);
    auto r = op.cli("run hi");
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("slow but whole"));
    CHECK(model.requests_to("/chat") == 1);
}

TEST_CASE("example C provider: in its own process, the answer streams as it arrives", "[integration][example_provider]") {
    // An outside try: sandboxed, a provider's three pieces a second apart all reached the user at
    // the end, because the host handed an isolated plugin its HTTP body only once complete.
    using Clock = std::chrono::steady_clock;
    for (const char* isolation : {"process", "sandbox"}) {
        if (std::string(isolation) == "sandbox" && !test::kernel_can_sandbox()) continue;
        INFO(isolation);
        test::WireServer model;
        test::TempDir dir;
        auto cfg = test::config(dir.path, false);
        cfg.plugin_dirs = {AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS};
        cfg.enabled_plugins = {"example_provider_c"};
        cfg.provider.use = cfg.provider.name = "example_provider_c";
        cfg.provider.base_url = model.url();
        cfg.provider.model = "tiny";
        cfg.plugin_tables["example_provider_c"] = json{{"isolation", isolation}}.dump();
        auto slow = ndjson({R"({"text": "one "})", R"({"text": "two "})", R"({"text": "three"})", R"({"stop": "end"})"});
        slow.chunk_delay_ms = 700;
        model.push("/chat", slow);
        auto app = test::start(cfg);

        std::vector<std::pair<std::string, Clock::time_point>> pieces;
        agenthost::agent::RunControls controls;
        controls.on_event = [&](const agenthost::agent::TurnEvent& e) {
            if (const auto* text = e.as<agenthost::agent::events::Text>()) pieces.emplace_back(text->delta, Clock::now());
        };
        agenthost::agent::TurnRequest request{"count", "c-stream", agenthost::agent::Mode::execute, "{}"};
        auto outcome = app->runner().run(request, controls);
        INFO(outcome.error);
        REQUIRE(outcome.ok());
        CHECK(outcome.answer == "one two three");
        REQUIRE(pieces.size() >= 2);
        // The first piece was shown while the rest was still coming: over a second before the last.
        CHECK(pieces.back().second - pieces.front().second > std::chrono::milliseconds(1000));
    }
}
