#include "plugins/manifest.hpp"
#include "plugins/manifest_cache.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <nlohmann/json.hpp>

using namespace agenthost;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

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

TEST_CASE("manifest cache: a checked manifest is kept for the next start, and read again once its file changes",
          "[unit][manifest]") {
    test::TempDir dir;
    const fs::path toml = dir.path / "p" / "plugin.toml";
    const fs::path cache_file = dir.path / "plugin-manifests";
    test::write_file(toml, std::string(kValid) +
                               "[settings.limit]\ntype = \"integer\"\ndefault = 5\n"
                               "[permissions]\nnetwork = [\"loopback\"]\nread = [\"{data}\"]\n");
    auto fresh = plugins::read_manifest(toml);
    REQUIRE(fresh.ok());
    {
        plugins::ManifestCache cache(cache_file);
        auto read = cache.read(toml);
        REQUIRE(read.ok());
        cache.save();
    }
    REQUIRE(fs::exists(cache_file));
    auto replace_in = [](const fs::path& file, const std::string& from, const std::string& to) {
        std::string text = test::read_file(file);
        REQUIRE(text.find(from) != std::string::npos);
        text.replace(text.find(from), from.size(), to);
        test::write_file(file, text);
    };

    SECTION("the next start takes every field from the cache") {
        plugins::ManifestCache cache(cache_file);
        auto kept = cache.read(toml);
        REQUIRE(kept.ok());
        CHECK(cache.from_cache() == 1);
        CHECK(kept->file == toml);
        CHECK(kept->name == fresh->name);
        CHECK(kept->kind == fresh->kind);
        CHECK(kept->library == fresh->library);
        CHECK(kept->abi_major == fresh->abi_major);
        CHECK(kept->abi_minor == fresh->abi_minor);
        CHECK(kept->version == fresh->version);
        CHECK(kept->description == fresh->description);
        CHECK(kept->default_config_json == fresh->default_config_json);
        CHECK(kept->settings_schema_json == fresh->settings_schema_json);
        REQUIRE(kept->permissions);
        CHECK(kept->permissions->network == fresh->permissions->network);
        CHECK(kept->permissions->read == fresh->permissions->read);
    }
    SECTION("a cache edited by hand is not used") {
        replace_in(cache_file, "6:A demo,", "6:Cached,");
        plugins::ManifestCache again(cache_file);
        CHECK(again.read(toml)->description == "A demo");
        CHECK(again.from_cache() == 0);
    }
    SECTION("an edited manifest is read again") {
        replace_in(toml, "A demo", "Edited");
        plugins::ManifestCache cache(cache_file);
        CHECK(cache.read(toml)->description == "Edited");
        CHECK(cache.from_cache() == 0);
    }
    SECTION("another build's cache is not used") {
        std::string cache = test::read_file(cache_file);
        cache[cache.find(',') - 1] ^= 1;  // the last character of the host's identity, the file's first value
        test::write_file(cache_file, cache);
        plugins::ManifestCache again(cache_file);
        CHECK(again.read(toml)->description == "A demo");
        CHECK(again.from_cache() == 0);
    }
    SECTION("a damaged cache is an empty one, never an error") {
        for (const std::string& damaged :
             std::vector<std::string>{"not the host's", "agenthost plugin manifests 1\n999999:short,",
                                      "agenthost plugin manifests 1\n", std::string(5u << 20, '[')}) {
            test::write_file(cache_file, damaged);
            plugins::ManifestCache again(cache_file);
            auto read = again.read(toml);
            REQUIRE(read.ok());
            CHECK(read->description == "A demo");
        }
    }
    SECTION("a cache cut short is not used") {
        std::string cache = test::read_file(cache_file);
        test::write_file(cache_file, cache.substr(0, cache.size() - 3));
        plugins::ManifestCache again(cache_file);
        auto read = again.read(toml);
        REQUIRE(read.ok());
        CHECK(read->description == "A demo");
        CHECK(again.from_cache() == 0);
    }
    SECTION("a manifest with a problem is never kept: its error shows at every start") {
        test::write_file(toml, "name = \"Bad!\"\n");
        for (int start = 0; start < 2; ++start) {
            plugins::ManifestCache cache(cache_file);
            auto read = cache.read(toml);
            REQUIRE_FALSE(read.ok());
            CHECK_THAT(read.error().message, Contains("must match"));
            cache.save();
        }
        CHECK(test::read_file(cache_file).find(toml.string()) == std::string::npos);
    }
}
