#include "plugins/manifest.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <nlohmann/json.hpp>

using namespace agenthost;
using Catch::Matchers::Contains;

namespace {
Result<plugins::Manifest> manifest(const test::TempDir& dir, const std::string& text) {
    test::write_file(dir.path / "p" / "plugin.toml", text);
    return plugins::read_manifest(dir.path / "p" / "plugin.toml");
}
const char* kValid =
    "name = \"demo\"\nkind = \"tool\"\nlibrary = \"demo.so\"\nabi = \"1.3\"\nversion = \"2.0.1\"\n"
    "description = \"A demo\"\n[default_config]\nlimit = 5\n";
}  // namespace

TEST_CASE("manifest: a valid plugin.toml", "[unit][manifest]") {
    test::TempDir dir;
    auto m = manifest(dir, kValid);
    REQUIRE(m.ok());
    CHECK(m->name == "demo");
    CHECK(m->kind == plugins::PluginKind::tool);
    CHECK(m->library == dir.path / "p" / "demo.so");
    CHECK(m->abi_major == 1);
    CHECK(m->abi_minor == 3);
    CHECK(m->version == "2.0.1");
    CHECK(nlohmann::json::parse(m->default_config_json)["limit"] == 5);
}

TEST_CASE("manifest: every fault of a file is reported at once, one line each", "[unit][manifest]") {
    test::TempDir dir;
    auto m = manifest(dir,
                      "name = \"Demo!\"\nkind = \"gadget\"\nlibrary = \"../d.so\"\nversion = 1\nextra = 1\n"
                      "[settings.limit]\ntype = \"integr\"\n[settings.depth]\ntype = \"integer\"\nminimun = 1\n");
    REQUIRE_FALSE(m.ok());
    const std::string& all = m.error().message;
    INFO(all);
    for (const char* expect : {":5: field 'extra'", "field 'abi' is missing", ":4: field 'version' must be a string",
                               ":1: field 'name'", ":2: field 'kind'", ":3: field 'library'", ":7: field 'settings.limit.type'",
                               ":10: field 'settings.depth.minimun' is not a setting keyword"})
        CHECK_THAT(all, Contains(expect));
    CHECK(std::count(all.begin(), all.end(), '\n') == 7);  // eight problems, a line each
}

TEST_CASE("manifest: every fault names the file, the line and the field", "[unit][manifest]") {
    test::TempDir dir;
    struct Case {
        std::string text, expect;
    } cases[] = {
        {"name = \"demo\"\nkind = \"tool\"\nlibrary = \"demo.so\"\nversion = \"1\"\n", "field 'abi' is missing"},
        {"name = \"Demo!\"\nkind = \"tool\"\nlibrary = \"d.so\"\nabi = \"1.0\"\nversion = \"1\"\n", ":1: field 'name'"},
        {"name = \"demo\"\nkind = \"gadget\"\nlibrary = \"d.so\"\nabi = \"1.0\"\nversion = \"1\"\n", ":2: field 'kind'"},
        {"name = \"demo\"\nkind = \"tool\"\nlibrary = \"../d.so\"\nabi = \"1.0\"\nversion = \"1\"\n", ":3: field 'library'"},
        {"name = \"demo\"\nkind = \"tool\"\nlibrary = \"d.so\"\nabi = \"one\"\nversion = \"1\"\n", ":4: field 'abi'"},
        {"name = \"demo\"\nkind = \"tool\"\nlibrary = \"d.so\"\nabi = \"1.0\"\nversion = 1\n",
         ":5: field 'version' must be a string"},
        {"name = \"demo\"\nkind = \"tool\"\nlibrary = \"d.so\"\nabi = \"1.0\"\nversion = \"1\"\nextra = 1\n",
         ":6: field 'extra'"},
        {"name = \"demo\"\nkind = \"tool\n", "plugin.toml:2"},
        // A misspelt settings keyword would silently lose its rule; a default that breaks its own
        // rule says so about the default, showing the value.
        {"name = \"demo\"\nkind = \"tool\"\nlibrary = \"d.so\"\nabi = \"1.0\"\nversion = \"1\"\n[settings.max_notes]\ntype = "
         "\"integer\"\n"
         "minimun = 1\n",
         ":8: field 'settings.max_notes.minimun' is not a setting keyword (did you mean 'minimum'?)"},
        {"name = \"demo\"\nkind = \"tool\"\nlibrary = \"d.so\"\nabi = \"1.0\"\nversion = \"1\"\n[settings.max_notes]\ntype = "
         "\"integer\"\n"
         "minimum = 1\ndefault = 0\n",
         "field 'settings.max_notes.default' does not fit its own declaration: must be at least 1 (got 0)"},
    };
    for (const auto& c : cases) {
        auto m = manifest(dir, c.text);
        INFO(c.text);
        REQUIRE_FALSE(m.ok());
        CHECK(m.error().code == "manifest_invalid");
        CHECK_THAT(m.error().message, Contains("plugin.toml") && Contains(c.expect));
    }
}
