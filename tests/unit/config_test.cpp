#include "config/config.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>

using namespace agenthost;
using Catch::Matchers::Contains;

namespace {
Result<config::Config> parse(const std::string& text) { return config::parse(text, "agenthost.toml", "/etc/ah"); }
}  // namespace

TEST_CASE("config: the documented example parses into typed settings", "[unit][config]") {
    ::setenv("AH_TEST_KEY", "sk-secret", 1);
    auto c = parse(R"(
data_dir = "/srv/agenthost"
plugin_dirs = ["/opt/my-plugins", "relative"]
[provider]
use = "scripted"
model = "m1"
api_key_env = "AH_TEST_KEY"
[plugins.scripted]
cassette = "examples/offline-demo/cassette.json"
nested = { depth = 2, list = [1, 2.5, true] }
[tools.delete_nodes]
needs_approval = true
destructive = false
[limits]
execute_iterations = 500
explore_iterations = 7
)");
    REQUIRE(c.ok());
    CHECK(c->data_dir == "/srv/agenthost");
    REQUIRE(c->plugin_dirs.size() >= 2);
    CHECK(c->plugin_dirs[0] == "/opt/my-plugins");
    CHECK(c->plugin_dirs[1] == "/etc/ah/relative");  // relative to the config file's folder
    CHECK(c->plugin_dirs.size() == 2 + config::default_plugin_dirs(c->data_dir).size());
    CHECK(c->plugin_dirs.back() == "/srv/agenthost/plugins");  // the user's own follow data_dir
    CHECK(c->provider.use == "scripted");
    CHECK(c->provider.model == "m1");
    CHECK(c->provider.api_key == "sk-secret");
    auto table = nlohmann::json::parse(c->plugin_tables.at("scripted"));
    CHECK(table["cassette"] == "examples/offline-demo/cassette.json");
    CHECK(table["nested"]["list"][1] == 2.5);
    CHECK(c->tools.at("delete_nodes").needs_approval == true);
    CHECK(c->tools.at("delete_nodes").destructive == false);
    CHECK_FALSE(c->tools.at("delete_nodes").read_only.has_value());
    CHECK(c->limits.execute_iterations == 500);
    CHECK(c->limits.explore_iterations == 7);
    CHECK(c->limits.plan_iterations == 200);
}

TEST_CASE("config: unknown keys name file, line and key", "[unit][config]") {
    auto c = parse("data_dir = \"/x\"\n\n[provider]\nuse = \"scripted\"\nmodle = \"typo\"\n");
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code == "config_unknown_key");
    CHECK_THAT(c.error().message, Contains("agenthost.toml:5") && Contains("provider.modle") && Contains("model"));

    auto top = parse("colour = 1\n");
    REQUIRE_FALSE(top.ok());
    CHECK_THAT(top.error().message, Contains("agenthost.toml:1") && Contains("'colour'"));
}

TEST_CASE("config: wrong types and ranges are errors with their position", "[unit][config]") {
    auto c = parse("[limits]\nexecute_iterations = \"many\"\n");
    REQUIRE_FALSE(c.ok());
    CHECK_THAT(c.error().message, Contains(":2") && Contains("limits.execute_iterations") && Contains("integer"));

    auto range = parse("[limits]\nplan_iterations = 0\n");
    REQUIRE_FALSE(range.ok());
    CHECK_THAT(range.error().message, Contains("between 1 and"));

    auto table = parse("provider = \"openai\"\n");
    REQUIRE_FALSE(table.ok());
    CHECK_THAT(table.error().message, Contains("expected a table"));

    auto plugin = parse("[plugins]\nscripted = 3\n");
    REQUIRE_FALSE(plugin.ok());
    CHECK_THAT(plugin.error().message, Contains("plugins.scripted"));

    auto level = parse("log_level = \"loud\"\n");
    REQUIRE_FALSE(level.ok());
    CHECK_THAT(level.error().message, Contains("log_level") && Contains("\"warn\" (the default)"));

    auto isolation = parse("third_party_isolation = \"sandboxed\"\n");
    REQUIRE_FALSE(isolation.ok());
    CHECK_THAT(isolation.error().message, Contains(":1") && Contains("third_party_isolation") && Contains("\"sandbox\""));
    auto sandboxed = parse("third_party_isolation = \"sandbox\"\nlog_level = \"debug\"\n");
    REQUIRE(sandboxed.ok());
    CHECK(sandboxed->third_party_isolation == Isolation::sandbox);
    CHECK(sandboxed->log_level == config::LogLevel::debug);
}

TEST_CASE("config: TOML syntax errors give line and column", "[unit][config]") {
    auto c = parse("[provider]\nuse = \"scripted\n");
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code == "config_syntax");
    CHECK_THAT(c.error().message, Contains("agenthost.toml:2:"));
}

TEST_CASE("config: the api key never appears in what is parsed from the file", "[unit][config]") {
    ::unsetenv("AH_TEST_ABSENT");
    auto c = parse("[provider]\nuse = \"openai\"\napi_key_env = \"AH_TEST_ABSENT\"\n");
    REQUIRE(c.ok());
    CHECK(c->provider.api_key.empty());
    CHECK(c->provider.api_key_env == "AH_TEST_ABSENT");
}

TEST_CASE("config: defaults follow XDG and the lookup order is --config, $AGENTHOST_CONFIG, ./agenthost.toml", "[unit][config]") {
    test::TempDir dir;
    ::setenv("XDG_DATA_HOME", (dir.path / "xdg").c_str(), 1);
    CHECK(config::defaults().data_dir == dir.path / "xdg" / "agenthost");
    auto dirs = config::default_plugin_dirs(config::defaults().data_dir);
    CHECK(std::find(dirs.begin(), dirs.end(), dir.path / "xdg" / "agenthost" / "plugins") != dirs.end());
    ::unsetenv("XDG_DATA_HOME");

    auto missing = config::locate(std::string((dir.path / "nope.toml").string()));
    REQUIRE_FALSE(missing.ok());
    CHECK_THAT(missing.error().message, Contains("nope.toml") && Contains("--config"));

    test::write_file(dir.path / "env.toml", "log_level = \"info\"\n");
    ::setenv("AGENTHOST_CONFIG", (dir.path / "env.toml").c_str(), 1);
    auto from_env = config::locate(std::nullopt);
    REQUIRE(from_env.ok());
    CHECK(**from_env == dir.path / "env.toml");
    auto cli_wins = config::locate(std::string((dir.path / "env.toml").string()));
    REQUIRE(cli_wins.ok());
    ::setenv("AGENTHOST_CONFIG", (dir.path / "gone.toml").c_str(), 1);
    auto env_missing = config::locate(std::nullopt);
    REQUIRE_FALSE(env_missing.ok());
    CHECK_THAT(env_missing.error().message, Contains("$AGENTHOST_CONFIG"));
    ::unsetenv("AGENTHOST_CONFIG");

    auto loaded = config::load_file(dir.path / "env.toml");
    REQUIRE(loaded.ok());
    CHECK(loaded->log_level == config::LogLevel::info);
    CHECK(loaded->source == (dir.path / "env.toml").string());
}

TEST_CASE("config: enabled and disabled plugins", "[unit][config]") {
    auto c = parse("enabled_plugins = [\"a\", \"b\"]\ndisabled_plugins = [\"b\"]\n");
    REQUIRE(c.ok());
    CHECK(c->plugin_enabled("a"));
    CHECK_FALSE(c->plugin_enabled("b"));
    CHECK_FALSE(c->plugin_enabled("c"));
    CHECK(config::defaults().plugin_enabled("anything"));
}

TEST_CASE("config: the hosted OpenAI-compatible presets name their server and their key's variable", "[unit][config]") {
    struct Hosted {
        const char* preset;
        const char* base_url;
        const char* key_env;
    };
    const Hosted hosted[] = {
        {"openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"},
        {"groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"},
        {"together", "https://api.together.xyz/v1", "TOGETHER_API_KEY"},
        {"mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"},
        {"fireworks", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"},
    };
    for (const Hosted& h : hosted) {
        INFO(h.preset);
        ::unsetenv(h.key_env);
        auto c = parse(std::string("[provider]\npreset = \"") + h.preset + "\"\nmodel = \"some-model\"\n");
        REQUIRE(c);
        CHECK(c->provider.use == "openai");
        CHECK(c->provider.base_url == h.base_url);
        CHECK(c->provider.api_key_env == h.key_env);
        // Without its key a hosted server cannot be asked: doctor and every model call say which variable.
        auto missing = config::missing_api_key(c->provider);
        REQUIRE(missing);
        CHECK_THAT(*missing, Contains(h.key_env) && Contains(h.base_url));
        ::setenv(h.key_env, "sk-test", 1);
        auto keyed = parse(std::string("[provider]\npreset = \"") + h.preset + "\"\n");
        REQUIRE(keyed);
        CHECK(keyed->provider.api_key == "sk-test");
        ::unsetenv(h.key_env);
    }
}

TEST_CASE("config: the gemini and bedrock presets, and azure, which needs its resource's address", "[unit][config]") {
    auto gemini = parse("[provider]\npreset = \"gemini\"\nmodel = \"gemini-2.5-flash\"\n");
    REQUIRE(gemini);
    CHECK(gemini->provider.use == "gemini");
    CHECK(gemini->provider.base_url == "https://generativelanguage.googleapis.com/v1beta");
    CHECK(gemini->provider.api_key_env == "GEMINI_API_KEY");

    // Bedrock's plugin finds the AWS credentials itself: no key variable is required of the table.
    auto bedrock = parse("[provider]\npreset = \"bedrock\"\nmodel = \"amazon.nova-pro-v1:0\"\n");
    REQUIRE(bedrock);
    CHECK(bedrock->provider.use == "bedrock");
    CHECK(bedrock->provider.base_url == "https://bedrock-runtime.us-east-1.amazonaws.com");
    CHECK(bedrock->provider.api_key_env.empty());
    CHECK_FALSE(config::missing_api_key(bedrock->provider));

    auto bare = parse("[provider]\npreset = \"azure\"\nmodel = \"gpt-4.1\"\n");
    REQUIRE_FALSE(bare);
    CHECK_THAT(bare.error().message, Contains("provider.base_url") && Contains("openai.azure.com/openai/v1"));
    auto azure =
        parse("[provider]\npreset = \"azure\"\nbase_url = \"https://contoso.openai.azure.com/openai/v1\"\nmodel = \"gpt-4.1\"\n");
    REQUIRE(azure);
    CHECK(azure->provider.use == "openai");
    CHECK(azure->provider.api_key_env == "AZURE_OPENAI_API_KEY");
}

TEST_CASE("config: presets fill a provider, explicit keys win, named providers are read", "[unit][config]") {
    ::setenv("DEEPSEEK_API_KEY", "sk-deep", 1);
    auto c = parse(R"(
[provider]
preset = "deepseek"
model = "deepseek-chat"
concurrency = 4
retry_attempts = 6

[providers.local]
preset = "ollama"
model = "qwen3:8b"
base_url = "http://gpu-box:11434"

[providers.claude]
use = "anthropic"
model = "claude-sonnet-4"
timeout_ms = 120000
)");
    REQUIRE(c);
    CHECK(c->provider.use == "openai");
    CHECK(c->provider.name == "openai");
    CHECK(c->provider.base_url == "https://api.deepseek.com/v1");
    CHECK(c->provider.api_key == "sk-deep");
    CHECK(c->provider.concurrency == 4);
    CHECK(c->provider.retry_attempts == 6);
    REQUIRE(c->providers.size() == 2);
    CHECK(c->providers.at("local").use == "ollama");
    CHECK(c->providers.at("local").base_url == "http://gpu-box:11434");  // explicit beats the preset
    CHECK(c->providers.at("claude").timeout_ms == 120000);
    CHECK(c->provider_named("claude") == &c->providers.at("claude"));
    CHECK(c->provider_named("") == &c->provider);
    CHECK(c->provider_named("openai") == &c->provider);
    CHECK(c->provider_named("nope") == nullptr);

    auto bad = parse("[provider]\npreset = \"gpt-local\"\n");
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.error().message,
               Contains("agenthost.toml:2") && Contains("unknown preset 'gpt-local'") && Contains("ollama-openai"));
    auto clash = parse("[provider]\nuse = \"openai\"\n[providers.openai]\nuse = \"openai\"\n");
    REQUIRE_FALSE(clash);
    CHECK_THAT(clash.error().message, Contains("providers.openai"));
    auto zero = parse("[provider]\nconcurrency = 0\n");
    REQUIRE_FALSE(zero);
    CHECK_THAT(zero.error().message, Contains("provider.concurrency"));
}

TEST_CASE("config: a wrong word names itself, a near choice and every choice, and problems come in line order",
          "[unit][config]") {
    // Sections read in another order than written ([agent] before [store] here): reported by line.
    auto bad = parse("[agent]\ndefault_mode = \"exec\"\n[store]\nbackend = \"postgres\"\n[limits]\nplan_iterations = 0\n");
    REQUIRE_FALSE(bad);
    const std::string& m = bad.error().message;
    CHECK_THAT(m, Contains("agenthost.toml:2: key 'agent.default_mode': \"exec\" is unknown (did you mean 'execute'?)"));
    CHECK_THAT(m, Contains("\"postgres\" is unknown (did you mean 'postgresql'?): use \"sqlite\""));
    CHECK_THAT(m, Contains("must be between 1 and 1000000, not 0"));
    CHECK(m.find("agenthost.toml:2:") < m.find("agenthost.toml:4:"));
    CHECK(m.find("agenthost.toml:4:") < m.find("agenthost.toml:6:"));
}

TEST_CASE("config: a fallback chain names configured providers and ways a model call fails", "[unit][config]") {
    auto c = parse(R"(
[provider]
use = "openai"
fallback = ["local"]
fallback_on = ["auth"]
fallback_cooldown_s = 5

[providers.local]
use = "ollama"
fallback = ["openai"]
)");
    REQUIRE(c);
    CHECK(c->provider.fallback == std::vector<std::string>{"local"});
    CHECK(c->provider.fallback_on == std::vector<std::string>{"auth"});
    CHECK(c->provider.fallback_cooldown_s == 5);
    CHECK(c->providers.at("local").fallback == std::vector<std::string>{"openai"});
    CHECK(c->providers.at("local").fallback_cooldown_s == 60);

    auto unknown = parse("[provider]\nuse = \"openai\"\nfallback = [\"clod\"]\n");
    REQUIRE_FALSE(unknown);
    CHECK_THAT(unknown.error().message, Contains("agenthost.toml:3") && Contains("provider.fallback") && Contains("'clod'") &&
                                            Contains("configured: openai"));
    auto itself = parse("[provider]\nuse = \"openai\"\n[providers.b]\nuse = \"openai\"\nfallback = [\"b\"]\n");
    REQUIRE_FALSE(itself);
    CHECK_THAT(itself.error().message, Contains("providers.b.fallback") && Contains("itself"));
    auto reason = parse("[provider]\nuse = \"openai\"\nfallback_on = [\"sometimes\"]\n");
    REQUIRE_FALSE(reason);
    CHECK_THAT(reason.error().message, Contains("provider.fallback_on") && Contains("'sometimes'") && Contains("rate_limit"));
}
