// Plugin permissions as data: what a manifest or an operator may write, how placeholders resolve,
// when a declaration asks for more than a grant, what the host's HTTP check allows, and what the
// sandbox makes of a grant on kernels with and without each feature.
#include "isolation/sandbox.hpp"
#include "plugins/http_client.hpp"
#include "plugins/manifest.hpp"
#include "plugins/permissions.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

plugins::Grant grant_of(const json& table, const json& settings = json::object(),
                        const std::string& data = "/var/lib/ah/plugins/p") {
    auto parsed = plugins::parse_permissions(table.dump(), "plugin.toml:9");
    REQUIRE(parsed);
    auto resolved = plugins::resolve(*parsed, {data, settings.dump()});
    REQUIRE(resolved);
    return *resolved;
}

std::string error_of(const json& table) {
    auto parsed = plugins::parse_permissions(table.dump(), "plugin.toml:9");
    REQUIRE_FALSE(parsed);
    return parsed.error().message;
}

}  // namespace

TEST_CASE("permissions: mistakes are refused with the field, the value and the expected form", "[unit][permissions]") {
    CHECK_THAT(error_of({{"netwrok", json::array()}}),
               Contains("plugin.toml:9: permissions.netwrok is not a permission") && Contains("did you mean 'network'"));
    CHECK_THAT(error_of({{"read", {"data/cache"}}}), Contains("\"data/cache\" is not an absolute path or a placeholder"));
    CHECK_THAT(error_of({{"read", "/srv"}}), Contains("permissions.read must be an array of strings"));
    CHECK_THAT(error_of({{"network", {"example.com"}}}),
               Contains("\"example.com\" is not a destination") && Contains("HOST:PORT"));
    CHECK_THAT(error_of({{"network", {"127.0.0.1:70000"}}}), Contains("is not a destination"));
    CHECK_THAT(error_of({{"environment", {"NOT-A-NAME"}}}), Contains("is not a variable name"));
    CHECK_THAT(error_of({{"processes", "yes"}}), Contains("must be true or false"));
    CHECK_THAT(error_of(json::array()), Contains("must be a table"));
}

TEST_CASE("permissions: every mistake of a table is reported at once, one line each", "[unit][permissions]") {
    const std::string all = error_of(
        {{"netwrok", json::array()}, {"read", {"data/cache", "/srv", 7}}, {"environment", {"NOT-A-NAME"}}, {"processes", "yes"}});
    CHECK_THAT(all, Contains("permissions.netwrok is not a permission") && Contains("\"data/cache\" is not an absolute path") &&
                        Contains("permissions.read must hold only strings (found 7)") &&
                        Contains("\"NOT-A-NAME\" is not a variable name") && Contains("must be true or false"));
    CHECK(std::count(all.begin(), all.end(), '\n') == 4);  // five problems, five lines
}

TEST_CASE("permissions: placeholders resolve against the plugin's data folder and settings", "[unit][permissions]") {
    json settings{{"folders", {{"movies", "/srv/movies"}, {"tv", "/srv/tv/"}}},
                  {"database", "/srv/graph/graph.db"},
                  {"qbittorrent_url", "http://127.0.0.1:8081/"},
                  {"knaben_url", "https://api.knaben.org/v1"},
                  {"torznab", {{{"name", "jackett"}, {"url", "http://[::1]:9117/api"}, {"api_key_env", "JACKETT_KEY"}}}},
                  {"password_env", "QBT_PASSWORD"}};
    auto g =
        grant_of({{"read", {"{setting:folders}", "/etc/ssl/certs"}},
                  {"write", {"{data}", "{data}/cache", "{setting_folder:database}"}},
                  {"network", {"{setting:qbittorrent_url}", "{setting:knaben_url}", "{setting:torznab.url}", "loopback:9000"}},
                  {"environment", {"{setting:password_env}", "{setting:torznab.api_key_env}", "HOME_DIR"}},
                  {"processes", true}},
                 settings);
    CHECK(g.read == std::vector<std::filesystem::path>{"/srv/movies", "/srv/tv", "/etc/ssl/certs"});
    CHECK(g.write == std::vector<std::filesystem::path>{"/var/lib/ah/plugins/p", "/var/lib/ah/plugins/p/cache", "/srv/graph"});
    REQUIRE(g.network.size() == 4);
    CHECK(plugins::describe(g.network[0]) == "127.0.0.1:8081");
    CHECK(plugins::describe(g.network[1]) == "api.knaben.org:443");
    CHECK(plugins::describe(g.network[2]) == "[::1]:9117");
    CHECK(plugins::describe(g.network[3]) == "loopback:9000");
    CHECK(g.environment == std::vector<std::string>{"QBT_PASSWORD", "JACKETT_KEY", "HOME_DIR"});
    CHECK(g.processes);

    // A setting that holds no destination is named, with its value.
    auto parsed = plugins::parse_permissions(json{{"network", {"{setting:qbittorrent_url}"}}}.dump(), "m");
    REQUIRE(parsed);
    auto bad = plugins::resolve(*parsed, {"/d", json{{"qbittorrent_url", "not a url"}}.dump()});
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.error().message, Contains("setting 'qbittorrent_url' holds \"not a url\""));
    // An unset or empty setting grants nothing.
    CHECK(grant_of({{"read", {"{setting:missing}"}}}, json{{"other", ""}}).read.empty());
}

TEST_CASE("permissions: a declaration within the operator's grant passes, anything beyond is named", "[unit][permissions]") {
    auto granted =
        grant_of({{"read", {"/srv"}}, {"write", {"/srv/downloads"}}, {"network", {"loopback", "api.example.com:443"}}});
    CHECK(plugins::exceeding(grant_of({{"read", {"/srv/movies", "/srv/downloads/x"}},
                                       {"write", {"/srv/downloads/new"}},
                                       {"network", {"127.0.0.1:8081", "localhost:80", "[::1]:1", "api.example.com:443"}}}),
                             granted)
              .empty());
    auto beyond = plugins::exceeding(grant_of({{"read", {"/etc"}},
                                               {"write", {"/srv/movies"}},
                                               {"network", {"api.example.com:80", "any"}},
                                               {"environment", {"TOKEN"}},
                                               {"processes", true}}),
                                     granted);
    REQUIRE(beyond.size() == 6);
    CHECK(beyond[0] == "read /etc (granted: /srv, /srv/downloads)");
    CHECK(beyond[1] == "write /srv/movies (granted: /srv/downloads)");
    CHECK(beyond[2] == "connect to api.example.com:80 (granted: loopback, api.example.com:443)");
    CHECK(beyond[3] == "connect to any (granted: loopback, api.example.com:443)");
    CHECK(beyond[4] == "read the environment variable TOKEN (granted: none)");
    CHECK(beyond[5] == "start programs (granted: processes = false)");
    // "/srv2" is not under "/srv": paths compare by component, not by prefix.
    CHECK(plugins::exceeding(grant_of({{"read", {"/srv2"}}}), granted).size() == 1);
}

TEST_CASE("permissions: the host's HTTP check allows exactly the granted destinations", "[unit][permissions]") {
    auto g = grant_of({{"network", {"loopback:8081", "api.example.com:443", "*:8443"}}});
    CHECK(plugins::allows_connect(g, "127.0.0.1", 8081));
    CHECK(plugins::allows_connect(g, "127.9.9.9", 8081));
    CHECK(plugins::allows_connect(g, "[::1]", 8081));
    CHECK(plugins::allows_connect(g, "LOCALHOST", 8081));
    CHECK_FALSE(plugins::allows_connect(g, "127.0.0.1", 8082));
    CHECK_FALSE(plugins::allows_connect(g, "10.0.0.1", 8081));
    CHECK(plugins::allows_connect(g, "API.example.com", 443));
    CHECK_FALSE(plugins::allows_connect(g, "evil.example.com", 443));
    CHECK(plugins::allows_connect(g, "anything.org", 8443));
    CHECK_FALSE(plugins::allows_connect(grant_of(json::object()), "127.0.0.1", 80));
    CHECK(plugins::allows_connect(grant_of({{"network", {"any"}}}), "203.0.113.9", 25));
    CHECK(plugins::is_loopback_host("::ffff:127.0.0.1"));
    CHECK_FALSE(plugins::is_loopback_host("128.0.0.1"));
}

namespace {
// libcurl's own reading of a URL's host and port, as the http-client module reads it.
std::optional<plugins::HostPort> curl_reading(const std::string& url) {
    CURLU* parts = curl_url();
    std::optional<plugins::HostPort> out;
    char* host = nullptr;
    char* port = nullptr;
    if (curl_url_set(parts, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
        curl_url_get(parts, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(parts, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
        std::string h(host);
        if (h.size() > 1 && h.front() == '[') h = h.substr(1, h.size() - 2);
        out = plugins::HostPort{h, std::atoi(port)};
    }
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(parts);
    return out;
}
}  // namespace

TEST_CASE("permissions: a URL setting's host and port read without libcurl are libcurl's reading", "[unit][permissions]") {
    // Plain forms (read by the host itself) and near misses (left to libcurl): every answer is
    // libcurl's, so a grant and the request it allows read a URL the same way.
    for (const std::string url : {"http://127.0.0.1:8080",
                                  "http://localhost:8080/api/v2",
                                  "https://api.example.com",
                                  "http://api.example.com/",
                                  "https://torznab.example.org:9117/api?t=search&q=x#frag",
                                  "http://Example.COM:80",
                                  "http://a-b.c-d.example",
                                  "http://example.com.",
                                  "http://127.1",
                                  "http://0x7f.1",
                                  "http://0x7f000001",
                                  "http://2130706433",
                                  "http://127.0.0.01",
                                  "http://256.0.0.1",
                                  "http://1.2.3.4.5",
                                  "http://example.com:0",
                                  "http://example.com:65536",
                                  "http://example.com:080",
                                  "http://example.com:",
                                  "http://user:pw@example.com",
                                  "http://[::1]:8080",
                                  "http://ex%61mple.com",
                                  "http://exa mple.com",
                                  "http://example.com\\@evil.com",
                                  "HTTP://example.com",
                                  "http://ex_ample.com",
                                  "http://-example.com",
                                  "http://example..com",
                                  "http://.example.com",
                                  "http://12.example",
                                  "http://example.123",
                                  "http://ümlaut.example",
                                  "ftp://example.com",
                                  "http://",
                                  "http://:80",
                                  "https://example.com:443/path with space"}) {
        INFO(url);
        auto theirs = curl_reading(url);
        auto ours = plugins::url_host_port(url);
        REQUIRE(ours.has_value() == theirs.has_value());
        if (ours) {
            CHECK(ours->host == theirs->host);
            CHECK(ours->port == theirs->port);
        }
        if (auto plain = plugins::plain_url_host_port(url)) {  // read without libcurl: the same
            REQUIRE(theirs);
            CHECK(plain->host == theirs->host);
            CHECK(plain->port == theirs->port);
        }
    }
    // The forms settings hold are read without libcurl (the module is not loaded for them).
    for (const char* url : {"http://127.0.0.1:8080", "http://localhost:8080/api/v2", "https://api.example.com",
                            "https://torznab.example.org:9117/api?t=search&q=x#frag", "http://Example.COM:80"}) {
        INFO(url);
        CHECK(plugins::plain_url_host_port(url));
    }
    for (const char* url :
         {"http://127.1", "http://0x7f.1", "http://user:pw@example.com", "http://[::1]:8080", "http://ex%61mple.com"})
        CHECK_FALSE(plugins::plain_url_host_port(url));
}

TEST_CASE("sandbox: rules from a grant, and what a kernel without each feature refuses", "[unit][permissions]") {
    auto rules = isolation::sandbox_rules(grant_of({{"read", {"/srv"}}, {"network", {"127.0.0.1:8081", "api.example.com:443"}}}),
                                          "/opt/plugins/p");
    CHECK(rules.read == std::vector<std::string>{"/opt/plugins/p", "/srv"});
    CHECK(rules.tcp_ports == std::vector<int>{8081, 443});
    CHECK_FALSE(rules.any_network);
    CHECK(rules.datagrams);  // api.example.com must be resolved
    CHECK_FALSE(isolation::sandbox_rules(grant_of({{"network", {"127.0.0.1:8081"}}}), "/p").datagrams);
    auto any = isolation::sandbox_rules(grant_of({{"network", {"loopback", "127.0.0.1:8081"}}}), "/p");
    CHECK(any.any_network);  // "loopback" is every port: TCP port rules cannot narrow it
    CHECK(any.tcp_ports.empty());

    auto round_trip = isolation::sandbox_rules_from_json(isolation::to_json(rules));
    REQUIRE(round_trip);
    CHECK(round_trip->tcp_ports == rules.tcp_ports);
    CHECK(round_trip->read == rules.read);

    CHECK(isolation::unenforceable(rules, {7, true}).empty());
    CHECK_THAT(isolation::unenforceable(rules, {3, true}).at(0),
               Contains("TCP port rules need Landlock ABI 4") && Contains("ABI 3"));
    CHECK(isolation::unenforceable(any, {3, true}).empty());  // all or nothing needs no port rules
    auto none = isolation::unenforceable(rules, {0, false});
    REQUIRE(none.size() == 2);
    CHECK_THAT(none[0], Contains("need Landlock"));
    CHECK_THAT(none[1], Contains("seccomp"));
    CHECK_THAT(isolation::describe(isolation::KernelSupport{0, true}), Contains("refused here"));
    CHECK_THAT(isolation::describe(isolation::KernelSupport{7, true}), Contains("TCP ports") && Contains("signals"));

    // The environment: the basics and the granted names, never the host's other variables.
    isolation::SandboxRules with_env;
    with_env.environment = {"QBT_PASSWORD"};
    std::string vars[] = {"PATH=/usr/bin", "OPENAI_API_KEY=sk-secret", "QBT_PASSWORD=pw", "LC_ALL=C", "AGENTHOST_TOKEN=t"};
    char* environ_vars[] = {vars[0].data(), vars[1].data(), vars[2].data(), vars[3].data(), vars[4].data(), nullptr};
    CHECK(isolation::sandbox_environment(with_env, environ_vars) ==
          std::vector<std::string>{"PATH=/usr/bin", "QBT_PASSWORD=pw", "LC_ALL=C"});
}

TEST_CASE("permissions: a placeholder naming an undeclared setting, or a value of the wrong kind, is refused by name",
          "[unit][permissions]") {
    const std::string head =
        "name = \"p\"\nkind = \"tool\"\nlibrary = \"p.so\"\nabi = \"1.0\"\nversion = \"1\"\n"
        "[settings.server_url]\ntype = \"string\"\ndefault = \"\"\n";
    auto typo = plugins::parse_manifest(head + "[permissions]\nnetwork = [\"{setting:server_ur}\"]\n", "/p/plugin.toml");
    REQUIRE_FALSE(typo);
    CHECK_THAT(typo.error().message,
               Contains("plugin.toml:9: field 'permissions' names the setting 'server_ur', which [settings] does "
                        "not declare (did you mean 'server_url'?)"));
    CHECK(plugins::parse_manifest(head + "[permissions]\nnetwork = [\"{setting:server_url}\"]\n", "/p/plugin.toml"));

    auto parsed = plugins::parse_permissions(json{{"network", {"{setting:port}"}}, {"read", {"{setting:name}"}}}.dump(), "m");
    REQUIRE(parsed);
    auto number = plugins::resolve(*parsed, {"/d", json{{"port", 8080}}.dump()});
    REQUIRE_FALSE(number);
    CHECK_THAT(number.error().message, Contains("setting 'port' holds \"8080\", which is neither an http(s) URL nor HOST:PORT"));
    auto relative = plugins::resolve(*parsed, {"/d", json{{"name", "movies"}}.dump()});
    REQUIRE_FALSE(relative);
    CHECK_THAT(relative.error().message, Contains("gives \"movies\", which is not an absolute path"));
}

TEST_CASE("permissions: below the plugin's own write grant, links are not followed (it may have planted them)",
          "[unit][permissions]") {
    namespace fs = std::filesystem;
    fs::path root = fs::temp_directory_path() / ("ah-links-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "real" / "media");
    fs::create_directories(root / "data");
    fs::create_directory_symlink(root / "real" / "media", root / "media");  // the operator's link: followed
    fs::create_directory_symlink("/", root / "data" / "cache");             // planted under a write grant: kept
    auto g = grant_of({{"read", {"{data}/cache", (root / "media").string()}}, {"write", {"{data}"}}}, json::object(),
                      (root / "data").string());
    CHECK(g.read == std::vector<fs::path>{fs::canonical(root / "data") / "cache", fs::canonical(root / "real" / "media")});
    // The same through another spelling of the write grant (/var/run → /run): still not followed.
    fs::create_directory_symlink(root / "data", root / "alias");
    auto aliased =
        grant_of({{"write", {"{data}", (root / "alias" / "cache").string()}}}, json::object(), (root / "data").string());
    CHECK(aliased.write == std::vector<fs::path>{fs::canonical(root / "data"), fs::canonical(root / "data") / "cache"});
    fs::remove_all(root);
}
