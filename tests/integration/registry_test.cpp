#include "tools/policy.hpp"
#include "support/plugin_fixtures.hpp"
#include "support/test_support.hpp"
#include "test_paths.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <thread>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {
const plugins::PluginInfo& info(app::HostApp& app, const std::string& name) {
    for (const auto& p : app.registry().plugins())
        if (p.name == name) return p;
    FAIL("plugin " << name << " is not listed");
    throw std::logic_error("unreachable");
}

// The C example plugin's library in dir/plugins/example_c beside `manifest` as its plugin.toml;
// returns the plugin folder to put in plugin_dirs.
std::string own_example_c(const test::TempDir& dir, const std::string& manifest) {
    const test::fs::path plugin = dir.path / "plugins" / "example_c";
    test::fs::create_directories(plugin);
    test::fs::copy_file(test::fs::path(AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS) / "example_c" / "example_c.so",
                        plugin / "example_c.so");
    test::write_file(plugin / "plugin.toml", manifest);
    return (dir.path / "plugins").string();
}
}  // namespace

TEST_CASE("registry: every broken fixture is listed with its cause and the rest load", "[integration][registry]") {
    test::TempDir dir;
    auto app = test::start(test::config(dir.path, true));

    struct Expect {
        const char* plugin;
        const char* code;
        const char* text;
    } broken[] = {
        {"no_manifest", "manifest_missing", "plugin.toml is missing"},
        {"bad_toml", "manifest_invalid", "plugin.toml:2"},
        {"bad_field", "manifest_invalid", "field 'kind'"},
        {"missing_library", "library_missing", "missing_library.so"},
        {"not_elf", "not_shared_object", "not_elf.so"},
        {"no_entry", "entry_missing", "ah_plugin_init_v1"},
        {"abi_major", "abi_mismatch", "ABI 2.0"},
        {"abi_lie", "abi_mismatch", "major 2"},
        {"create_fails", "create_failed", "the API token is missing"},
    };
    for (const auto& b : broken) {
        INFO(b.plugin);
        const auto& p = info(*app, b.plugin);
        CHECK(p.status == plugins::PluginStatus::failed);
        REQUIRE(p.error.has_value());
        CHECK(p.error->code == b.code);
        CHECK_THAT(p.error->message, Contains(b.text));
    }
    // A tool name another plugin already has costs only that tool, named with the plugin that has it.
    const auto& dup = info(*app, "duplicate_tool");
    CHECK(dup.status == plugins::PluginStatus::loaded);
    CHECK(dup.tools == std::vector<std::string>{"duplicate_own"});
    REQUIRE(dup.refused_tools.size() == 1);
    CHECK(dup.refused_tools[0].name == "echo");
    CHECK_THAT(dup.refused_tools[0].reason, Contains("example_c"));

    // A tool nobody offers, while tool plugins failed to load: the answer names them (an outside
    // try saw "there is no tool 'go_greet'" with no word of the plugin that failed).
    tools::CallSite site;
    auto unknown = tools::decide(app->catalogue(), std::nullopt, "go_greet", json::object(), site);
    CHECK(unknown.why == tools::Refused::unknown_tool);
    CHECK_THAT(unknown.message, Contains("failed to load") && Contains("'create_fails'") && Contains("agenthost plugins"));

    for (const char* good : {"example_c", "scripted", "newer_minor", "service_probe"}) {
        INFO(good);
        CHECK(info(*app, good).status == plugins::PluginStatus::loaded);
    }
    // The host keeps working: tools of healthy plugins run.
    CHECK(test::call_tool(*app, "echo", {{"text", "still here"}})["content"] == "still here");
}

TEST_CASE("registry: a plugin built against a newer minor loads and sees the older host", "[integration][registry]") {
    test::TempDir dir;
    auto app = test::start(test::config(dir.path, true));
    {
        test::TempDir healthy;  // every tool plugin loaded: an unknown tool is just unknown
        auto fine = test::start(test::config(healthy.path, false));
        CHECK(fine->registry().unloaded_tool_plugins_hint().empty());
    }
    const auto& p = info(*app, "newer_minor");
    CHECK(p.abi == "1.7");
    REQUIRE(p.tools == std::vector<std::string>{"future_probe"});
    auto tool = app->registry().find_tool("future_probe");
    REQUIRE(tool);
    CHECK(tool->hints & AH_TOOL_READ_ONLY);
    auto result = test::call_tool(*app, "future_probe", json::object());
    CHECK(result["content"] == "host minor " + std::to_string(AH_ABI_MINOR) + ", schedule slot absent");
}

TEST_CASE("registry: a manifest abi the library disagrees with is a warning naming both and the fix",
          "[integration][registry][abi]") {
    // An outside try saw abi = "1.2" load silently beside a 1.4 descriptor, `plugins` showing 1.2;
    // then the same in its own process, where the host never reads the descriptor itself.
    std::string isolation = GENERATE(as<std::string>{}, "in-process", "process");
    INFO(isolation);
    test::TempDir dir;
    auto cfg = test::config(dir.path, false);
    cfg.plugin_dirs = {own_example_c(
        dir, "name = \"example_c\"\nkind = \"tool\"\nlibrary = \"example_c.so\"\nabi = \"1.2\"\nversion = \"1.0.0\"\n")};
    cfg.plugin_tables["example_c"] = json{{"isolation", isolation}}.dump();
    auto app = test::start(cfg);
    const auto& p = info(*app, "example_c");
    CHECK(p.status == plugins::PluginStatus::loaded);
    CHECK(p.abi == AH_ABI_VERSION_STRING);  // what runs, not what the manifest claims
    REQUIRE(p.warnings.size() == 1);
    CHECK_THAT(p.warnings[0], Contains("plugin.toml says abi = \"1.2\"") && Contains("built against agenthost.h 1.") &&
                                  Contains("set abi = \"" AH_ABI_VERSION_STRING "\""));
}

TEST_CASE("registry: a path a manifest's default gives reaches the plugin resolved, as the operator's does",
          "[integration][registry]") {
    // An outside try: default = "results.txt" reached the plugin as it was, and a permission
    // naming the setting refused it as no absolute path.
    test::TempDir dir;
    auto cfg = test::config(dir.path, false);
    cfg.plugin_dirs = {
        own_example_c(dir, "name = \"example_c\"\nkind = \"tool\"\nlibrary = \"example_c.so\"\nabi = \"" AH_ABI_VERSION_STRING
                           "\"\nversion = \"1.0.0\"\n"
                           "[settings.results]\ntype = \"string\"\nformat = \"path\"\ndefault = \"results.txt\"\n"
                           "[settings.extra]\ntype = \"string\"\nformat = \"path\"\ndefault = \"\"\n"
                           "[permissions]\nread = [\"{setting:results}\"]\n")};
    cfg.base_dir = dir.path / "etc";
    auto app = test::start(cfg);
    const auto& p = info(*app, "example_c");
    REQUIRE(p.status == plugins::PluginStatus::loaded);
    json given = json::parse(p.effective_config_json);
    CHECK(given["results"] == (dir.path / "etc" / "results.txt").string());
    CHECK(given["extra"] == "");  // an empty default means none: it stays empty
}

TEST_CASE("registry: a plugin built from the oldest supported SDK header (1.0) loads and runs", "[integration][registry][abi]") {
    for (const char* isolation : {"in-process", "process"}) {
        INFO(isolation);
        test::TempDir dir;
        auto cfg = test::config(dir.path, true);
        cfg.enabled_plugins = {"oldest_sdk"};
        cfg.plugin_tables["oldest_sdk"] = json{{"isolation", isolation}}.dump();
        auto app = test::start(cfg);
        const auto& p = info(*app, "oldest_sdk");
        CHECK(p.status == plugins::PluginStatus::loaded);
        CHECK(p.abi == "1.0");
        REQUIRE(app->registry().find_tool("old_remember") != nullptr);
        CHECK(test::call_tool(*app, "old_remember", {{"text", "hello"}})["content"] == "remembered by a 1.0 plugin");
        plugins::CallInput none;
        CHECK(app->registry().context(none).empty());  // the slots it does not have are not called
    }
}

TEST_CASE("registry: the C example plugin's tools", "[integration][registry]") {
    test::TempDir dir;
    auto app = test::start(test::config(dir.path, false));
    CHECK(test::call_tool(*app, "echo", {{"text", "quote \" and \\ and ünï 🙂"}})["content"] ==
          "quote \" and \\ and ünï 🙂");
    auto sum = test::call_tool(*app, "add", {{"a", 0.1}, {"b", 0.2}});
    CHECK(sum["structured"]["sum"].get<double>() == Approx(0.3));
    CHECK(test::call_tool(*app, "add", {{"a", 2}, {"b", 40}})["content"] == "42");
    auto bad = test::call_tool(*app, "add", {{"a", "two"}, {"b", 1}});
    CHECK(bad["is_error"] == true);
    CHECK(bad["error_code"] == "invalid_arguments");
    CHECK(test::call_tool(*app, "echo", {{"text", 5}})["is_error"] == true);
    CHECK(test::call_tool(*app, "nonexistent", json::object())["error_code"] == "unknown_tool");
}

TEST_CASE("registry: plugin failures become error results the model can read", "[integration][registry]") {
    test::TempDir dir;
    auto app = test::start(test::config(dir.path, true));
    auto thrown = test::call_tool(*app, "probe_throw", json::object());
    CHECK(thrown["is_error"] == true);
    CHECK_THAT(thrown["content"].get<std::string>(), Contains("probe exploded"));
    auto broken = test::call_tool(*app, "probe_break", json::object());
    CHECK(broken["error_code"] == "plugin_failure");
    CHECK_THAT(broken["content"].get<std::string>(), Contains("service_probe"));
    auto bad_args = test::call_tool(*app, "probe_kv", json::object());  // missing "op": the helper's json::at throws
    CHECK(bad_args["is_error"] == true);
    // and the plugin still answers afterwards
    CHECK(test::call_tool(*app, "probe_config", json::object())["is_error"] == false);  // normalised: always a boolean
}

TEST_CASE("registry: policy from hints and agenthost.toml overrides", "[integration][registry]") {
    test::TempDir dir;
    auto cfg = test::config(dir.path, true);
    cfg.tools["probe_config"].needs_approval = true;
    cfg.tools["probe_http"].read_only = true;
    cfg.tools["probe_wait"].enabled = false;
    cfg.disabled_plugins = {"duplicate_tool"};
    auto app = test::start(cfg);
    auto& r = app->registry();
    REQUIRE(r.find_tool("probe_delete"));
    CHECK(r.find_tool("probe_delete")->needs_approval);  // destructive by its hints
    CHECK(r.find_tool("probe_config")->needs_approval);
    CHECK(r.find_tool("probe_http")->hints & AH_TOOL_READ_ONLY);
    CHECK(r.find_tool("probe_http")->hints & AH_TOOL_OPEN_WORLD);
    CHECK_FALSE(r.find_tool("probe_kv")->needs_approval);
    CHECK(r.find_tool("probe_wait") == nullptr);
    CHECK(info(*app, "duplicate_tool").status == plugins::PluginStatus::disabled);
}

TEST_CASE("registry: context hooks contribute to the prompt", "[integration][registry]") {
    test::TempDir dir;
    auto app = test::start(test::config(dir.path, true));
    plugins::CallInput in;
    in.conversation_id = "conv-7";
    CHECK_THAT(app->registry().context(in), Contains("service_probe context for conv-7"));
}

TEST_CASE("registry: a plugin found twice loads once", "[integration][registry]") {
    test::TempDir dir;
    auto cfg = test::config(dir.path, false);
    std::filesystem::create_directories(dir.path / "copy");
    std::filesystem::copy(std::filesystem::path(AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS) / "example_c",
                          dir.path / "copy" / "example_c", std::filesystem::copy_options::recursive);
    cfg.plugin_dirs.push_back(dir.path / "copy");
    auto app = test::start(cfg);
    int loaded = 0, duplicates = 0;
    for (const auto& p : app->registry().plugins()) {
        if (p.name != "example_c") continue;
        loaded += p.status == plugins::PluginStatus::loaded;
        duplicates += p.error && p.error->code == "duplicate_plugin";
    }
    CHECK(loaded == 1);
    CHECK(duplicates == 1);
}

TEST_CASE("registry: a plugin's tools change while the host runs (tools_changed)", "[integration][registry]") {
    test::TempDir dir;
    auto app = test::start(test::config(dir.path, true));
    std::atomic<int> heard{0};
    int listener = app->registry().add_tools_listener([&] { ++heard; });
    auto before = app->registry().tools();  // a snapshot stays as it was
    REQUIRE_FALSE(app->registry().find_tool("probe_extra"));

    CHECK(test::call_tool(*app, "probe_grow", json::object())["content"] == AH_OK);
    for (int i = 0; i < 500 && !app->registry().find_tool("probe_extra"); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(app->registry().find_tool("probe_extra"));
    for (int i = 0; i < 100 && heard == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(heard == 1);
    CHECK(app->registry().tools()->size() == before->size() + 1);
    CHECK(std::none_of(before->begin(), before->end(), [](const plugins::ToolInfo& t) { return t.name == "probe_extra"; }));
    CHECK(app->registry().find_tool("probe_extra")->hints & AH_TOOL_READ_ONLY);
    CHECK(test::call_tool(*app, "probe_extra", json::object())["content"] == "extra tool here");
    CHECK(app->registry().find_tool("probe_kv"));  // the plugin's other tools stay

    // Saying so again without a change is not news.
    CHECK(test::call_tool(*app, "probe_grow", json::object())["content"] == AH_OK);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(heard == 1);
    app->registry().remove_tools_listener(listener);
}

TEST_CASE(
    "registry: a manifest whose kind is not the library's names both in words, and a plugin folder with no plugin is warned of",
    "[integration][registry]") {
    test::TempDir dir;
    test::provider_manifest_beside_tool_library(dir.path / "plugins");
    std::filesystem::create_directories(dir.path / "empty");
    auto cfg = test::config(dir.path / "data", false);
    cfg.plugin_dirs = {dir.path / "plugins", dir.path / "empty", dir.path / "missing"};
    config::ProviderSettings table;  // a provider plugin is opened once a table names it
    table.name = "misnamed";
    table.use = "duplicate_tool";
    cfg.providers[table.name] = table;
    auto app = test::start(cfg);
    const auto& p = info(*app, "duplicate_tool");
    REQUIRE(p.error);
    CHECK(p.error->code == "kind_mismatch");
    CHECK_THAT(p.error->message, Contains("is a tool plugin") && Contains("says kind = \"provider\"") && !Contains("kind 1"));
    const auto& warnings = app->config_problems().warnings;
    auto warned = [&](const std::string& what) {
        return std::any_of(warnings.begin(), warnings.end(),
                           [&](const std::string& w) { return w.find(what) != std::string::npos; });
    };
    CHECK(warned((dir.path / "empty").string() + ", but no plugin is in it"));
    CHECK(warned((dir.path / "missing").string() + ", which is not a folder"));
    CHECK_FALSE(warned((dir.path / "plugins").string() + ","));
}

TEST_CASE("registry: built-in tools follow the tools.NAME tables of agenthost.toml as plugin tools do",
          "[integration][registry]") {
    test::TempDir dir;
    auto cfg = test::config(dir.path, true);
    cfg.tools["push_task"].needs_approval = true;
    cfg.tools["remember_fact"].enabled = false;
    cfg.tools["probe_config"].needs_approval = true;  // a plugin tool, for comparison
    auto app = test::start(cfg);
    CHECK(app->config_problems().errors.empty());  // a disabled built-in is still a tool the file may name
    auto& catalogue = app->catalogue();
    auto push = catalogue.find("push_task", tools::Scope::agent);
    REQUIRE(push);
    CHECK(push->needs_approval);
    CHECK_FALSE(catalogue.find("remember_fact", tools::Scope::agent));
    bool listed = false;
    for (const auto& t : catalogue.all(tools::Scope::agent)) listed = listed || t.name == "remember_fact";
    CHECK_FALSE(listed);
    // The one decision: both ask a person first.
    tools::CallSite site;
    for (const char* name : {"push_task", "probe_config"}) {
        auto verdict = tools::decide(catalogue, catalogue.find(name, tools::Scope::agent), name, nlohmann::json::object(), site);
        INFO(name);
        CHECK(verdict.kind == tools::Verdict::Kind::ask);
    }
    auto gone = tools::decide(catalogue, catalogue.find("remember_fact", tools::Scope::agent), "remember_fact",
                              nlohmann::json::object(), site);
    CHECK(gone.kind == tools::Verdict::Kind::refuse);
    // Without overrides nothing changes: a built-in runs without asking.
    auto pop = catalogue.find("pop_task", tools::Scope::agent);
    REQUIRE(pop);
    CHECK_FALSE(pop->needs_approval);
}
