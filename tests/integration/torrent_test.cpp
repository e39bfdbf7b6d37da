// The torrent plugin: search against loopback Knaben and Torznab fixtures (errors, paging,
// missing magnets, merging), and qBittorrent against the real qbittorrent-nox (login, bans, adds,
// filters, deletes, session expiry, a completed download reported, torrent://downloads read live),
// and an agent that finds and downloads "number 2".
#include "isolation/sandbox.hpp"
#include "test_paths.h"
#include "integration/qbittorrent_fixture.hpp"
#include "support/loopback_server.hpp"

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <ctime>
#include <map>
#include <mutex>
#include <thread>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

const std::string kHashA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const std::string kHashB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const std::string kHashC = "cccccccccccccccccccccccccccccccccccccccc";

// Knaben (POST /v1) and Torznab (GET /api, /api2) on 127.0.0.1.
struct SearchFixture {
    int port = 0;
    std::mutex mutex;
    json last_knaben;
    std::string last_torznab_query;
    int caps_requests = 0;

    SearchFixture() {
        loopback.http.Post("/v1", [this](const httplib::Request& req, httplib::Response& res) {
            json body = json::parse(req.body, nullptr, false);
            {
                std::lock_guard lock(mutex);
                last_knaben = body;
            }
            if (req.get_header_value("Content-Type") != "application/json" || !body.is_object()) {
                res.status = 400;
                return;
            }
            std::string q = body.value("query", "");
            if (q == "__500") {
                res.status = 500;
                res.set_content("oops", "text/plain");
                return;
            }
            if (q == "__429") {
                res.status = 429;
                res.set_header("Retry-After", "7");
                return;
            }
            if (q == "__slow") std::this_thread::sleep_for(std::chrono::milliseconds(1500));
            json hits = json::array({
                {{"title", "Ubuntu 24.04 Desktop amd64 ISO"},
                 {"hash", kHashA},
                 {"bytes", 6114656256},
                 {"seeders", 900},
                 {"peers", 950},
                 {"date", "2024-04-25T10:00:00Z"},
                 {"tracker", "OneTracker"},
                 {"magnetUrl", "magnet:?xt=urn:btih:" + kHashA + "&dn=ubuntu-desktop"}},
                {{"title", "Ubuntu 24.04 Server amd64 ISO"},
                 {"hash", kHashB},
                 {"bytes", 2754981888},
                 {"seeders", 400},
                 {"peers", 420},
                 {"date", "2024-04-25T11:00:00Z"},
                 {"tracker", "TwoTracker"},
                 {"magnetUrl", nullptr}},
                {{"title", "Ubuntu Budgie 24.04"},
                 {"hash", nullptr},
                 {"bytes", 3221225472},
                 {"seeders", 3},
                 {"peers", 4},
                 {"date", "2024-04-26T09:00:00Z"},
                 {"tracker", "ThreeTracker"},
                 {"magnetUrl", nullptr},
                 {"link", "http://127.0.0.1:1/budgie.torrent"}},
            });
            size_t from = body.value("from", 0), size = body.value("size", 150);
            json page = json::array();
            for (size_t i = from; i < hits.size() && page.size() < size; ++i) page.push_back(hits[i]);
            res.set_content(json{{"total", {{"relation", "eq"}, {"value", hits.size()}}}, {"hits", page}}.dump(),
                            "application/json");
        });
        auto torznab = [this](const httplib::Request& req, httplib::Response& res) {
            {
                std::lock_guard lock(mutex);
                last_torznab_query = req.path + "?" + req.get_param_value("q") + "&cat=" + req.get_param_value("cat") +
                                     "&limit=" + req.get_param_value("limit") + "&offset=" + req.get_param_value("offset");
                if (req.get_param_value("t") == "caps") ++caps_requests;
            }
            auto error = [&](int code, const std::string& description) {
                res.set_content("<?xml version=\"1.0\" encoding=\"UTF-8\"?><error code=\"" + std::to_string(code) +
                                    "\" description=\"" + description + "\"/>",
                                "application/xml");
            };
            if (req.get_param_value("apikey") != "secret-key") return error(100, "Incorrect user credentials");
            std::string t = req.get_param_value("t");
            if (t == "caps") {
                // /api3 is an indexer that gives one result per request, so reading more pages it.
                std::string max = req.path == "/api3" ? "1" : "25";
                res.set_content(R"(<caps><server title="fixture"/><limits max=")" + max +
                                    R"(" default="20"/><searching><search available="yes" supportedParams="q"/></searching>
                    <categories><category id="2000" name="Movies"/><category id="5000" name="TV"/></categories></caps>)",
                                "application/xml");
                return;
            }
            if (t != "search") return error(202, "No such function");
            if (req.get_param_value("q") == "__429") {
                res.status = 429;
                res.set_header("Retry-After", "30");
                return;
            }
            // Newznab error codes, in an HTTP 200 body as the spec has it.
            if (req.get_param_value("q") == "__201") return error(201, "Incorrect parameter");
            if (req.get_param_value("q") == "__202") return error(202, "No such function");
            if (req.get_param_value("q") == "__203") return error(203, "Function not available");
            if (req.get_param_value("q") == "__broken") {
                res.set_content("<rss><channel><item><title>unclosed", "application/rss+xml");
                return;
            }
            std::string indexer = req.path == "/api" ? "first" : req.path == "/api2" ? "second" : "third";
            std::vector<std::string> items = {
                R"(<item><title>Ubuntu 24.04 Desktop amd64 ISO</title><guid>1</guid><pubDate>Thu, 25 Apr 2024 10:00:00 +0000</pubDate><size>6114656256</size>
  <enclosure url="http://127.0.0.1:1/a.torrent" length="6114656256" type="application/x-bittorrent"/>
  <torznab:attr name="category" value="2000"/><torznab:attr name="category" value="2040"/>
  <torznab:attr name="seeders" value=")" +
                    std::string(indexer == "first" ? "800" : "950") + R"("/><torznab:attr name="leechers" value="50"/>
  <torznab:attr name="infohash" value=")" +
                    kHashA + R"("/></item>)",
                R"(<item><title>Ubuntu &amp; Friends 24.04</title><guid>2</guid><pubDate>Fri, 26 Apr 2024 10:00:00 +0000</pubDate>
  <torznab:attr name="size" value="1048576"/><torznab:attr name="seeders" value="12"/><torznab:attr name="peers" value="20"/>
  <torznab:attr name="magneturl" value="magnet:?xt=urn:btih:)" +
                    kHashC + R"(&amp;dn=friends"/></item>)"};
            // The page asked for: `offset` and `limit` over the two items.
            size_t offset = std::strtoul(req.get_param_value("offset").c_str(), nullptr, 10);
            size_t limit = req.has_param("limit") ? std::strtoul(req.get_param_value("limit").c_str(), nullptr, 10) : 20;
            std::string page;
            for (size_t i = offset; i < items.size() && i < offset + limit; ++i) page += items[i];
            res.set_content(R"(<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:torznab="http://torznab.com/schemas/2015/feed"><channel><title>)" +
                                indexer + "</title>" + page + "</channel></rss>",
                            "application/rss+xml");
        };
        loopback.http.Get("/api", torznab);
        loopback.http.Get("/api2", torznab);
        loopback.http.Get("/api3", torznab);
        port = loopback.start();
    }
    std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port) + path; }
    test::LoopbackServer loopback;  // last: it stops before the members its handlers use go
};

std::string text(const json& result) {
    return result["content"].is_string() ? result["content"].get<std::string>() : result["content"].dump();
}

std::unique_ptr<app::HostApp> start_torrent(const test::TempDir& dir, json table,
                                            std::vector<std::string> plugins = {"torrent"}) {
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = std::move(plugins);
    cfg.plugin_tables["torrent"] = table.dump();
    return test::start(cfg);
}

}  // namespace

TEST_CASE("torrent search: Knaben results are numbered, remembered, and errors are clear", "[peer][torrent]") {
    SearchFixture site;
    test::TempDir dir;
    auto app = start_torrent(dir, {{"knaben_url", site.url("/v1")}, {"timeout_ms", 1000}});
    // Without a qBittorrent (no qbittorrent_url) only the search is offered: no download tool
    // that could only answer "not configured".
    std::vector<std::string> offered;
    for (const auto& t : *app->registry().tools())
        if (t.plugin == "torrent") offered.push_back(t.name);
    CHECK(offered == std::vector<std::string>{"find_torrent", "get_torrent_by_index"});

    auto found = test::call_tool(*app, "find_torrent", {{"query", "ubuntu iso"}, {"category", "movies"}, {"limit", 3}}, "c1");
    INFO(found.dump());
    REQUIRE_FALSE(found.value("is_error", false));
    CHECK_THAT(text(found), Contains("1. Ubuntu 24.04 Desktop amd64 ISO — 5.7 GiB, 900 seeders") &&
                                Contains("2. Ubuntu 24.04 Server") && Contains("3. Ubuntu Budgie"));
    {
        std::lock_guard lock(site.mutex);
        CHECK(site.last_knaben["query"] == "ubuntu iso");
        CHECK(site.last_knaben["categories"] == json::array({3000000}));
        CHECK(site.last_knaben["order_by"] == "seeders");
    }
    // Remembered in the conversation, numbered, with the topic set.
    json stored = json::parse(**app->memory().store().get("c1", "search_results"));
    REQUIRE(stored.size() == 3);
    CHECK(stored[1]["index"] == 2);
    CHECK(stored[1]["magnet"] ==
          "magnet:?xt=urn:btih:" + kHashB + "&dn=Ubuntu%2024.04%20Server%20amd64%20ISO");  // built from the hash
    CHECK_THAT(**app->memory().store().get("c1", "topic"), Contains("choosing a torrent"));

    auto second = test::call_tool(*app, "get_torrent_by_index", {{"index", 2}}, "c1");
    CHECK_THAT(text(second), Contains("Ubuntu 24.04 Server") && Contains("magnet:?xt=urn:btih:" + kHashB));
    CHECK(test::call_tool(*app, "get_torrent_by_index", {{"index", 9}}, "c1")["error_code"] == "not_found");
    CHECK(test::call_tool(*app, "get_torrent_by_index", {{"index", 1}}, "other")["error_code"] == "no_results");

    auto few = test::call_tool(*app, "find_torrent", {{"query", "ubuntu"}, {"min_seeders", 100}}, "c2");
    CHECK(json::parse(**app->memory().store().get("c2", "search_results")).size() == 2);

    // Pages number on from the last one and extend the list that numbers refer to.
    auto first_page = test::call_tool(*app, "find_torrent", {{"query", "ubuntu"}, {"limit", 1}}, "c3");
    CHECK_THAT(text(first_page), Contains("1. Ubuntu 24.04 Desktop") && Contains("page 2 shows the next ones"));
    auto second_page = test::call_tool(*app, "find_torrent", {{"query", "ubuntu"}, {"limit", 1}, {"page", 2}}, "c3");
    CHECK_THAT(text(second_page), Contains("2. Ubuntu 24.04 Server"));
    CHECK_THAT(text(second_page), !Contains("Desktop"));
    CHECK(json::parse(**app->memory().store().get("c3", "search_results")).size() == 2);
    CHECK_THAT(text(test::call_tool(*app, "get_torrent_by_index", {{"index", 1}}, "c3")), Contains("Desktop"));
    CHECK_THAT(text(test::call_tool(*app, "get_torrent_by_index", {{"index", 2}}, "c3")), Contains("Server"));
    auto past_the_end = test::call_tool(*app, "find_torrent", {{"query", "ubuntu"}, {"limit", 1}, {"page", 4}}, "c3");
    CHECK_THAT(text(past_the_end), Contains("No more torrents") && Contains("after result 3"));
    CHECK(json::parse(**app->memory().store().get("c3", "search_results")).size() == 2);  // the list is kept
    test::call_tool(*app, "find_torrent", {{"query", "ubuntu budgie"}, {"limit", 1}, {"page", 2}}, "c3");
    CHECK(json::parse(**app->memory().store().get("c3", "search_results")).size() == 1);  // another search starts anew
    CHECK(json::parse(**app->memory().store().get("c3", "search_results"))[0]["index"] == 2);

    auto broken = test::call_tool(*app, "find_torrent", {{"query", "__500"}});
    CHECK(broken["error_code"] == "backend_error");
    CHECK_THAT(text(broken), Contains("HTTP 500"));
    auto limited = test::call_tool(*app, "find_torrent", {{"query", "__429"}});
    CHECK(limited["error_code"] == "rate_limited");
    CHECK_THAT(text(limited), Contains("retry after 7 s"));
    auto slow = test::call_tool(*app, "find_torrent", {{"query", "__slow"}});
    CHECK(slow["error_code"] == "search_timeout");
}

TEST_CASE("torrent search: Torznab indexers are searched together and merged by infohash", "[peer][torrent]") {
    SearchFixture site;
    test::TempDir dir;
    ::setenv("TORZNAB_TEST_KEY", "secret-key", 1);
    ::setenv("TORZNAB_WRONG_KEY", "nope", 1);
    json indexers = json::array({{{"name", "first"}, {"url", site.url("/api")}, {"api_key_env", "TORZNAB_TEST_KEY"}},
                                 {{"name", "second"}, {"url", site.url("/api2")}, {"api_key_env", "TORZNAB_TEST_KEY"}}});
    auto app = start_torrent(dir, {{"search", "torznab"}, {"torznab", indexers}});
    auto found = test::call_tool(*app, "find_torrent", {{"query", "ubuntu"}, {"category", "tv"}});
    INFO(found.dump());
    REQUIRE_FALSE(found.value("is_error", false));
    json results = found["structured"]["results"];
    REQUIRE(results.size() == 2);  // the same desktop ISO from both indexers is one result
    CHECK(results[0]["title"] == "Ubuntu 24.04 Desktop amd64 ISO");
    CHECK(results[0]["seeders"] == 950);
    CHECK(results[0]["peers"] == 1000);  // seeders + leechers
    CHECK_THAT(results[0]["source"].get<std::string>(), Contains("first") && Contains("second"));
    CHECK(results[0]["magnet"].get<std::string>().rfind("magnet:?xt=urn:btih:" + kHashA, 0) == 0);
    CHECK(results[1]["title"] == "Ubuntu & Friends 24.04");
    CHECK(results[1]["infohash"] == kHashC);  // from the magnet
    CHECK(results[1]["bytes"] == 1048576);
    {
        std::lock_guard lock(site.mutex);
        CHECK_THAT(site.last_torznab_query, Contains("cat=5000") && Contains("limit=25"));  // capped by t=caps' max
    }
    test::call_tool(*app, "find_torrent", {{"query", "ubuntu"}, {"category", "books"}});
    {
        std::lock_guard lock(site.mutex);
        CHECK_THAT(site.last_torznab_query, Contains("cat=&"));  // 7000 is not in the indexer's caps: search all
        CHECK(site.caps_requests == 2);                          // once per indexer, not per search
    }
    CHECK(test::call_tool(*app, "find_torrent", {{"query", "__429"}})["error_code"] == "rate_limited");
    for (auto [query, words] : {std::pair{"__201", "parameter was refused"},
                                {"__202", "does not know this search function"},
                                {"__203", "switched off"}}) {
        auto refused = test::call_tool(*app, "find_torrent", {{"query", query}});
        CHECK(refused["error_code"] == "bad_request");
        CHECK_THAT(text(refused), Contains(words));
    }
    auto broken = test::call_tool(*app, "find_torrent", {{"query", "__broken"}});
    CHECK(broken["error_code"] == "backend_error");
    CHECK_THAT(text(broken), Contains("malformed XML"));

    // An indexer that gives one result per request is paged through with offset.
    test::TempDir paged_dir;
    auto paged = start_torrent(
        paged_dir, {{"search", "torznab"},
                    {"torznab", {{{"name", "third"}, {"url", site.url("/api3")}, {"api_key_env", "TORZNAB_TEST_KEY"}}}}});
    auto both = test::call_tool(*paged, "find_torrent", {{"query", "ubuntu"}});
    CHECK(both["structured"]["results"].size() == 2);
    {
        std::lock_guard lock(site.mutex);
        CHECK_THAT(site.last_torznab_query, Contains("limit=1&offset=2"));  // the third read found the end
    }

    test::TempDir other;
    auto wrong = start_torrent(
        other, {{"search", "torznab"},
                {"torznab", {{{"name", "first"}, {"url", site.url("/api")}, {"api_key_env", "TORZNAB_WRONG_KEY"}}}}});
    auto refused = test::call_tool(*wrong, "find_torrent", {{"query", "ubuntu"}});
    CHECK(refused["error_code"] == "auth_failed");
    CHECK_THAT(text(refused), Contains("error 100") && Contains("TORZNAB_WRONG_KEY"));
}

TEST_CASE("torrent + qBittorrent: the real daemon", "[peer][torrent][qbittorrent]") {
    test::TempDir qdir, dir;
    test::QbtOptions options;
    options.session_timeout_seconds = 2;
    test::Qbittorrent qbt(qdir.path, options);
    INFO("qbittorrent-nox must be installed (scripts/install-deps installs it)");
    REQUIRE(qbt.running());
    ::setenv("QBT_TEST_PASSWORD", "test-pass-123", 1);
    json table{{"qbittorrent_url", qbt.url()}, {"password_env", "QBT_TEST_PASSWORD"}, {"poll_seconds", 1}};
    if (isolation::kernel_support().landlock_abi >= 1) {
        // Sandboxed, with the operator's grant: what the plugin declares (qBittorrent, the default
        // Knaben address, the password's variable) and the folder of the local .torrent it adds.
        table["isolation"] = "sandbox";
        table["permissions"] = {{"read", {dir.path.string()}},
                                {"network", {"loopback", "api.knaben.org:443"}},
                                {"environment", {"QBT_TEST_PASSWORD"}}};
    }
    auto app = start_torrent(dir, table);

    const std::string magnet = "magnet:?xt=urn:btih:" + kHashA + "&dn=ubuntu-desktop";
    auto added = test::call_tool(*app, "add_torrent", {{"source", magnet}}, "c1");
    INFO(added.dump());
    REQUIRE_FALSE(added.value("is_error", false));
    auto again = test::call_tool(*app, "add_torrent", {{"source", magnet}}, "c1");
    CHECK(again["error_code"] == "rejected");  // "Fails.": the same hash

    auto paused = test::call_tool(*app, "add_torrent",
                                  {{"source", "magnet:?xt=urn:btih:" + kHashB + "&dn=server"},
                                   {"category", "tv"},
                                   {"tags", {"a", "b"}},
                                   {"paused", true},
                                   {"folder", (qdir.path / "tv").string()}});
    REQUIRE_FALSE(paused.value("is_error", false));

    auto all = test::call_tool(*app, "list_torrents", json::object());
    REQUIRE(all["structured"]["torrents"].size() == 2);
    CHECK_THAT(text(all), Contains("fetching metadata"));
    auto tv = test::call_tool(*app, "list_torrents", {{"category", "tv"}});
    REQUIRE(tv["structured"]["torrents"].size() == 1);
    json server = tv["structured"]["torrents"][0];
    CHECK(server["state"] == "pausedDL");
    CHECK(server["tags"] == "a, b");
    CHECK(server["save_path"].get<std::string>().find((qdir.path / "tv").string()) == 0);
    CHECK(test::call_tool(*app, "list_torrents", {{"filter", "paused"}})["structured"]["torrents"].size() == 1);
    CHECK(test::call_tool(*app, "list_torrents", {{"filter", "active"}})["structured"]["torrents"].size() ==
          1);  // metaDL is active, pausedDL not
    CHECK_THAT(text(test::call_tool(*app, "list_categories", json::object())), Contains("tv"));
    CHECK_FALSE(test::call_tool(*app, "create_category", {{"name", "movies"}}).value("is_error", false));
    CHECK(test::call_tool(*app, "create_category", {{"name", "movies"}})["error_code"] == "exists");

    CHECK_THAT(text(test::call_tool(*app, "torrent_details", {{"torrent", "server"}})), Contains(kHashB));
    CHECK(test::call_tool(*app, "torrent_details", {{"torrent", "nothing-like-this"}})["error_code"] == "not_found");
    CHECK_FALSE(test::call_tool(*app, "resume_torrents", {{"torrents", {"server"}}}).value("is_error", false));

    // An invalid torrent file: qBittorrent answers 415.
    test::write_file(dir.path / "bad.torrent", "this is not bencode");
    auto bad = test::call_tool(*app, "add_torrent", {{"source", (dir.path / "bad.torrent").string()}});
    CHECK(bad["error_code"] == "invalid_torrent");
    CHECK(test::call_tool(*app, "add_torrent", {{"source", "not a link"}})["error_code"] == "invalid_argument");
    CHECK(test::call_tool(*app, "add_torrent", {{"source", magnet}, {"folder", "/tmp/../etc"}})["error_code"] ==
          "invalid_argument");

    // The session expires (SessionTimeout 2 s): the next call logs in again by itself.
    std::this_thread::sleep_for(std::chrono::milliseconds(3500));
    CHECK(test::call_tool(*app, "list_torrents", json::object())["structured"]["torrents"].size() == 2);

    // A complete download: the data is already in place, qBittorrent checks it and seeds; the
    // poll tells the conversation.
    std::string data(40000, 'x');
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i * 7 % 26);
    test::write_file(dir.path / "done" / "data.bin", data);
    test::write_file(dir.path / "data.torrent", test::make_torrent("data.bin", data));
    auto complete = test::call_tool(
        *app, "add_torrent", {{"source", (dir.path / "data.torrent").string()}, {"folder", (dir.path / "done").string()}}, "c9");
    INFO(complete.dump());
    REQUIRE_FALSE(complete.value("is_error", false));
    CHECK(complete["structured"]["hash"].get<std::string>().size() == 40);             // learnt from qBittorrent's list
    CHECK(**app->memory().store().get("c9", "topic") == "\"downloading: data.bin\"");  // the topic follows the workflow
    std::vector<memory::PostedEvent> events;
    for (int i = 0; i < 150 && events.empty(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        events = app->memory().store().take_events("c9");
    }
    REQUIRE(events.size() == 1);
    CHECK_THAT(events[0].body, Contains("Download finished: data.bin"));
    CHECK(**app->memory().store().get("c9", "topic") == "\"downloaded: data.bin\"");
    auto completed = test::call_tool(*app, "list_torrents", {{"filter", "completed"}});
    REQUIRE(completed["structured"]["torrents"].size() == 1);
    CHECK(completed["structured"]["torrents"][0]["name"] == "data.bin");

    // Delete (destructive: the tool is flagged so), files kept unless asked.
    CHECK(app->registry().find_tool("delete_torrents")->needs_approval);
    CHECK_FALSE(test::call_tool(*app, "delete_torrents", {{"torrents", {"all"}}}).value("is_error", false));
    CHECK(test::call_tool(*app, "list_torrents", json::object())["structured"]["torrents"].empty());
    CHECK(test::fs::exists(dir.path / "done" / "data.bin"));

    // Nothing said anywhere contains the password.
    for (const auto& call : {added, again, paused, all, bad}) CHECK(call.dump().find("test-pass-123") == std::string::npos);
}

TEST_CASE("torrent: torrent://downloads lists the tracked downloads live, newest first, a finished one once",
          "[peer][torrent][qbittorrent]") {
    test::TempDir qdir, dir;
    test::Qbittorrent qbt(qdir.path);
    REQUIRE(qbt.running());
    ::setenv("QBT_TEST_PASSWORD", "test-pass-123", 1);
    auto app =
        start_torrent(dir, {{"qbittorrent_url", qbt.url()}, {"password_env", "QBT_TEST_PASSWORD"}, {"poll_seconds", 3600}});
    plugins::CallInput none;
    auto read = [&](app::HostApp& host) {
        auto doc = host.registry().read_resource("torrent://downloads", none);
        REQUIRE(doc);
        json contents = json::parse(*doc)["contents"][0];
        CHECK(contents["mimeType"] == "application/json");
        return json::parse(contents["text"].get<std::string>());
    };
    json listed = json::parse(app->registry().resources(none));
    REQUIRE(listed.size() == 1);
    CHECK(listed[0]["uri"] == "torrent://downloads");
    CHECK(listed[0]["name"] == "Downloads");
    CHECK(listed[0]["mimeType"] == "application/json");
    json empty = read(*app);
    CHECK(empty["downloads"] == json::array());
    CHECK(empty["stale"] == false);

    const int64_t start = static_cast<int64_t>(std::time(nullptr));
    const std::string magnet = "magnet:?xt=urn:btih:" + kHashA + "&dn=ubuntu-desktop";
    REQUIRE_FALSE(test::call_tool(*app, "add_torrent", {{"source", magnet}}, "c1").value("is_error", false));
    json first = read(*app);
    INFO(first.dump());
    REQUIRE(first["downloads"].size() == 1);
    json fetching = first["downloads"][0];
    CHECK(fetching["hash"] == kHashA);
    CHECK(fetching["name"] == "ubuntu-desktop");
    CHECK(fetching["conversation"] == "c1");
    CHECK(fetching["state"] == "fetching metadata");  // read live: the poll has not run
    CHECK(fetching["save_path"].get<std::string>().find(qbt.downloads.string()) == 0);
    CHECK(fetching["done"] == false);
    CHECK(fetching["finished_at"].is_null());
    CHECK(fetching["eta_seconds"].is_null());  // unknown while there is no metadata
    CHECK(fetching["added_at"].get<int64_t>() >= start);
    CHECK(fetching["progress"] == 0.0);
    CHECK(first["stale"] == false);
    CHECK_FALSE(first.contains("error"));
    CHECK(first["updated_at"].get<int64_t>() >= start);

    // A torrent whose data is already in its folder: qBittorrent checks it and seeds, and the read
    // that first sees it complete (or the poll) tells the conversation, once.
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // added a second later: listed first
    std::string data(40000, 'x');
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i * 7 % 26);
    test::write_file(dir.path / "done" / "data.bin", data);
    test::write_file(dir.path / "data.torrent", test::make_torrent("data.bin", data));
    REQUIRE_FALSE(test::call_tool(*app, "add_torrent",
                                  {{"source", (dir.path / "data.torrent").string()}, {"folder", (dir.path / "done").string()}},
                                  "c9")
                      .value("is_error", false));
    json finished;
    for (int i = 0; i < 150; ++i) {
        finished = read(*app);
        if (finished["downloads"][0]["done"] == true) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    INFO(finished.dump());
    REQUIRE(finished["downloads"].size() == 2);
    json done = finished["downloads"][0];
    CHECK(done["name"] == "data.bin");
    REQUIRE(done["done"] == true);
    CHECK(done["progress"] == 1.0);
    CHECK(done["size_bytes"] == 40000);
    CHECK(done["save_path"].get<std::string>().find((dir.path / "done").string()) == 0);
    CHECK(done["finished_at"].get<int64_t>() >= done["added_at"].get<int64_t>());
    CHECK(done["eta_seconds"].is_null());
    CHECK(done["eta"] == "");
    CHECK_THAT(done["state"].get<std::string>(), Contains("seeding") || Contains("completed"));
    CHECK(finished["downloads"][1]["hash"] == kHashA);
    read(*app);  // more reads see it done: nothing more is said
    read(*app);
    auto events = app->memory().store().take_events("c9");
    REQUIRE(events.size() == 1);
    CHECK_THAT(events[0].body, Contains("Download finished: data.bin"));
    CHECK(**app->memory().store().get("c9", "topic") == "\"downloaded: data.bin\"");
    CHECK(app->memory().store().take_events("c1").empty());

    // qBittorrent out of reach: the last values read, said to be stale, and why.
    app.reset();
    auto away = start_torrent(
        dir, {{"qbittorrent_url", "http://127.0.0.1:9"}, {"password_env", "QBT_TEST_PASSWORD"}, {"timeout_ms", 1000}});
    json stale = read(*away);
    INFO(stale.dump());
    CHECK(stale["stale"] == true);
    CHECK_THAT(stale["error"].get<std::string>(), Contains("qBittorrent could not be read") && Contains("values last read"));
    REQUIRE(stale["downloads"].size() == 2);
    CHECK(stale["downloads"][0]["name"] == "data.bin");
    CHECK(stale["downloads"][0]["done"] == true);
    CHECK(stale["downloads"][0]["finished_at"] == done["finished_at"]);
    CHECK(stale["updated_at"].is_null());  // not read since this host started
    CHECK(away->memory().store().take_events("c9").empty());
}

TEST_CASE("torrent + qBittorrent: a refused password is not retried", "[peer][torrent][qbittorrent]") {
    test::TempDir qdir, dir;
    test::QbtOptions options;
    options.max_auth_failures = 2;
    options.ban_seconds = 5;
    test::Qbittorrent qbt(qdir.path, options);
    REQUIRE(qbt.running());
    ::setenv("QBT_WRONG_PASSWORD", "not-the-password", 1);
    auto app = start_torrent(dir, {{"qbittorrent_url", qbt.url()}, {"password_env", "QBT_WRONG_PASSWORD"}});
    for (int i = 0; i < 5; ++i) {
        auto r = test::call_tool(*app, "list_torrents", json::object());
        CHECK(r["error_code"] == "auth_failed");
        CHECK_THAT(text(r), Contains("not trying again"));
        CHECK(text(r).find("not-the-password") == std::string::npos);
    }
    // A later process (the next command, the service) does not send the refused password again:
    // qBittorrent counts failures per address across processes, and would ban at the second.
    app.reset();
    auto later = start_torrent(dir, {{"qbittorrent_url", qbt.url()}, {"password_env", "QBT_WRONG_PASSWORD"}});
    for (int i = 0; i < 3; ++i) {
        auto r = test::call_tool(*later, "list_torrents", json::object());
        CHECK(r["error_code"] == "auth_failed");
        CHECK_THAT(text(r), Contains("refused this username and password before") && Contains("QBT_WRONG_PASSWORD"));
    }
    later.reset();
    // One failed attempt only, so qBittorrent has not banned us: the right password still works.
    httplib::Client c("127.0.0.1", qbt.port);
    auto login = c.Post("/api/v2/auth/login", "username=admin&password=test-pass-123", "application/x-www-form-urlencoded");
    REQUIRE(login);
    CHECK(login->body == "Ok.");
    // A changed password is tried (and, right, forgets the refusal).
    ::setenv("QBT_WRONG_PASSWORD", "test-pass-123", 1);
    auto fixed = start_torrent(dir, {{"qbittorrent_url", qbt.url()}, {"password_env", "QBT_WRONG_PASSWORD"}});
    CHECK_FALSE(test::call_tool(*fixed, "list_torrents", json::object()).contains("error_code"));
}

TEST_CASE("torrent + qBittorrent: an unset password is never sent, and without one only the WebUI's bypass is used",
          "[peer][torrent][qbittorrent]") {
    test::TempDir qdir, dir, open_dir, open_qdir;
    test::QbtOptions options;
    options.max_auth_failures = 1;  // one empty password sent would ban the address
    options.ban_seconds = 30;
    test::Qbittorrent qbt(qdir.path, options);
    REQUIRE(qbt.running());
    ::unsetenv("QBT_UNSET_PASSWORD");
    auto app = start_torrent(dir, {{"qbittorrent_url", qbt.url()}, {"password_env", "QBT_UNSET_PASSWORD"}});
    for (int i = 0; i < 3; ++i) {
        auto r = test::call_tool(*app, "list_torrents", json::object());
        CHECK(r["error_code"] == "password_unset");
        CHECK_THAT(text(r), Contains("QBT_UNSET_PASSWORD is not set") && Contains("agenthost doctor"));
    }
    httplib::Client c("127.0.0.1", qbt.port);
    auto login = c.Post("/api/v2/auth/login", "username=admin&password=test-pass-123", "application/x-www-form-urlencoded");
    REQUIRE(login);
    CHECK(login->body == "Ok.");  // no failed login was counted: not banned

    // A qBittorrent that lets loopback clients in without a password is used without one.
    test::QbtOptions bypass;
    bypass.local_host_auth = false;
    test::Qbittorrent open(open_qdir.path, bypass);
    REQUIRE(open.running());
    auto open_app = start_torrent(open_dir, {{"qbittorrent_url", open.url()}, {"password_env", "QBT_UNSET_PASSWORD"}});
    auto listed = test::call_tool(*open_app, "list_torrents", json::object());
    CHECK_FALSE(listed.contains("error_code"));
    bool logged_in = false;  // doctor agrees: the bypass lets this address in without a password
    for (const auto& check : open_app->registry().health("torrent"))
        if (check.name == "qBittorrent") logged_in = check.ok;
    CHECK(logged_in);
}

TEST_CASE("torrent: an agent finds ubuntu and downloads number 2 into downloads", "[peer][torrent][qbittorrent]") {
    SearchFixture site;
    test::TempDir qdir, dir;
    test::Qbittorrent qbt(qdir.path);
    REQUIRE(qbt.running());
    ::setenv("QBT_TEST_PASSWORD", "test-pass-123", 1);
    auto call = [](const std::string& name, json args) {
        return json{{"tool_calls", {{{"name", name}, {"arguments", std::move(args)}}}}};
    };
    json cassette{{"replies",
                   {call("find_torrent", {{"query", "ubuntu iso"}}),
                    {{"text", "I found 3; which one?"}},
                    call("add_torrent_by_index", {{"index", 2}, {"folder", "downloads"}}),
                    call("list_torrents", json::object()),
                    {{"text", "Number 2 is downloading."}}}}};
    test::write_file(dir.path / "cassette.json", cassette.dump());
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = {"scripted", "folders", "torrent"};
    cfg.plugin_tables["scripted"] = json{{"cassette", (dir.path / "cassette.json").string()}}.dump();
    cfg.plugin_tables["folders"] = json{{"folders", {{"downloads", (qdir.path / "media").string()}}}}.dump();
    cfg.plugin_tables["torrent"] =
        json{{"knaben_url", site.url("/v1")}, {"qbittorrent_url", qbt.url()}, {"password_env", "QBT_TEST_PASSWORD"}}.dump();
    auto app = test::start(cfg);
    agent::RunControls controls;
    std::vector<std::string> results;
    controls.on_event = [&](const agent::TurnEvent& e) {
        if (const auto* r = e.as<agent::events::ToolResult>()) results.push_back(r->content);
    };
    REQUIRE(app->runner().run({"find ubuntu iso", "media", agent::Mode::execute, "{}"}, controls).ok());
    REQUIRE(app->runner().run({"download number 2 into downloads", "media", agent::Mode::execute, "{}"}, controls).ok());
    REQUIRE(results.size() == 3);
    CHECK_THAT(results[1], Contains("Ubuntu 24.04 Server") && Contains(qdir.path.string() + "/media"));
    CHECK_THAT(results[2], Contains("Ubuntu 24.04 Server amd64 ISO") && Contains("fetching metadata"));

    // In the real qBittorrent, with the folder's save path.
    httplib::Client c("127.0.0.1", qbt.port);
    auto login = c.Post("/api/v2/auth/login", "username=admin&password=test-pass-123", "application/x-www-form-urlencoded");
    REQUIRE(login);
    std::string cookie = login->get_header_value("Set-Cookie");
    auto listed = c.Get("/api/v2/torrents/info", {{"Cookie", cookie.substr(0, cookie.find(';'))}});
    REQUIRE(listed);
    json torrents = json::parse(listed->body);
    REQUIRE(torrents.size() == 1);
    CHECK(torrents[0]["hash"] == kHashB);
    CHECK(torrents[0]["save_path"].get<std::string>().find(qdir.path.string() + "/media") == 0);
}

TEST_CASE("torrent: doctor's checks log in to the real qBittorrent and search each indexer",
          "[peer][torrent][qbittorrent][doctor]") {
    SearchFixture site;
    test::TempDir qdir, dir, dir2, dir3;
    test::Qbittorrent qbt(qdir.path, test::QbtOptions{});
    REQUIRE(qbt.running());
    auto by_name = [](const std::vector<plugins::HealthCheck>& checks) {
        std::map<std::string, plugins::HealthCheck> out;
        for (const auto& c : checks) out[c.name] = c;
        return out;
    };
    // Everything up: green, with what was found.
    ::setenv("QBT_DOCTOR_PASSWORD", "test-pass-123", 1);
    auto app = start_torrent(
        dir, {{"knaben_url", site.url("/v1")}, {"qbittorrent_url", qbt.url()}, {"password_env", "QBT_DOCTOR_PASSWORD"}});
    auto green = by_name(app->registry().health("torrent"));
    REQUIRE(green.count("qBittorrent"));
    CHECK(green["qBittorrent"].ok);
    CHECK_THAT(green["qBittorrent"].detail, Contains("logged in to " + qbt.url()) && Contains("qBittorrent v"));
    REQUIRE(green.count("indexer knaben"));
    CHECK(green["indexer knaben"].ok);

    // The password variable unset, and the indexer down: each says what to fix, nothing is tried blind.
    ::unsetenv("QBT_DOCTOR_UNSET");
    auto unset = start_torrent(dir2, {{"knaben_url", "http://127.0.0.1:9/v1"},
                                      {"timeout_ms", 1000},
                                      {"qbittorrent_url", qbt.url()},
                                      {"password_env", "QBT_DOCTOR_UNSET"}});
    auto red = by_name(unset->registry().health("torrent"));
    CHECK_FALSE(red["qBittorrent"].ok);
    CHECK_THAT(red["qBittorrent"].detail, Contains("QBT_DOCTOR_UNSET is not set"));
    CHECK_FALSE(red["indexer knaben"].ok);

    // qBittorrent not running at that address.
    auto down = start_torrent(dir3, {{"knaben_url", site.url("/v1")},
                                     {"qbittorrent_url", "http://127.0.0.1:9"},
                                     {"timeout_ms", 1000},
                                     {"password_env", "QBT_DOCTOR_PASSWORD"}});
    auto gone = by_name(down->registry().health("torrent"));
    CHECK_FALSE(gone["qBittorrent"].ok);
    CHECK_FALSE(gone["qBittorrent"].detail.empty());
}

TEST_CASE("torrent: the media-automation example's config makes doctor green against the real qBittorrent",
          "[peer][torrent][qbittorrent][doctor]") {
    SearchFixture site;
    test::TempDir qdir, home;
    test::Qbittorrent qbt(qdir.path, test::QbtOptions{});
    REQUIRE(qbt.running());
    // The example as shipped, with this machine's places substituted: data, media folders, the
    // qBittorrent and Knaben addresses, and the scripted model instead of Ollama.
    std::string text = test::read_file(std::string(test::source_dir()) + "/examples/media-automation/agenthost.toml");
    auto replace = [&](const std::string& from, const std::string& to) {
        size_t at = text.find(from);
        REQUIRE(at != std::string::npos);
        text.replace(at, from.size(), to);
    };
    replace("data_dir = \"/var/lib/agenthost\"",
            "data_dir = \"" + (home.path / "data").string() +
                "\"\n"
                "default_plugin_dirs = false\nplugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS "\"]");
    replace("enabled_plugins = [\"ollama\",", "enabled_plugins = [\"scripted\",");
    replace("use = \"ollama\"\nmodel = \"qwen3:8b\"", "use = \"scripted\"");
    replace("http://127.0.0.1:8081", qbt.url());
    replace("search = \"knaben\"", "search = \"knaben\"\nknaben_url = \"" + site.url("/v1") + "\"");
    text += "\n[plugins.scripted]\ncassette = \"" + std::string(test::source_dir()) + "/examples/offline-demo/cassette.json\"\n";
    for (std::string folder : {"downloads", "movies", "tv", "music"}) {
        std::filesystem::create_directories(home.path / "media" / folder);
        size_t at;
        while ((at = text.find("/srv/media/" + folder)) != std::string::npos)
            text.replace(at, ("/srv/media/" + folder).size(), (home.path / "media" / folder).string());
    }
    test::write_file(home.path / "agenthost.toml", text);
    std::string doctor = std::string("'") + test::cli() + "' --config '" + (home.path / "agenthost.toml").string() + "' doctor";
    auto green = test::run_command("QBITTORRENT_PASSWORD=test-pass-123 " + doctor);
    INFO(green.out << green.err);
    CHECK(green.exit_code == 0);
    CHECK_THAT(green.out, Contains("ok   qBittorrent: logged in to " + qbt.url()) && Contains("ok   indexer knaben") &&
                              Contains("ok   folder downloads"));
    // The password forgotten: doctor says so, and is not green.
    auto red = test::run_command("env -u QBITTORRENT_PASSWORD " + doctor);
    CHECK(red.exit_code == 1);
    CHECK_THAT(red.out, Contains("FAIL qBittorrent: QBITTORRENT_PASSWORD is not set"));
    auto empty = test::run_command("QBITTORRENT_PASSWORD= " + doctor);  // set, but to nothing: said so, never sent
    CHECK(empty.exit_code == 1);
    CHECK_THAT(empty.out, Contains("FAIL qBittorrent: QBITTORRENT_PASSWORD is empty"));
    // The recipe's secrets file named by secrets_file: the CLI reads it as the unit does, and the
    // plugin logs in with the password from it.
    test::write_file(home.path / "secrets.env", "# the service's secrets\nexport QBITTORRENT_PASSWORD='test-pass-123'\n");
    text.replace(text.find("/etc/agenthost/secrets.env"), std::string("/etc/agenthost/secrets.env").size(),
                 (home.path / "secrets.env").string());
    test::write_file(home.path / "agenthost.toml", text);
    auto from_file = test::run_command("env -u QBITTORRENT_PASSWORD " + doctor);
    INFO(from_file.out << from_file.err);
    CHECK(from_file.exit_code == 0);
    CHECK_THAT(from_file.out,
               Contains("ok   qBittorrent: logged in to " + qbt.url()) &&
                   Contains("secrets:   " + (home.path / "secrets.env").string() + ": QBITTORRENT_PASSWORD from the file") &&
                   !Contains("test-pass-123"));
}
