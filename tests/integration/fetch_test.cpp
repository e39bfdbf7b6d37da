// The fetch plugin against a real HTTP server on 127.0.0.1 (allowlisted), and the SSRF guard
// against a table of hostile URLs (no allowlist).
#include "isolation/sandbox.hpp"
#include "support/test_support.hpp"
#include "support/loopback_server.hpp"

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <thread>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

struct Site {
    int port = 0;
    std::atomic<size_t> huge_sent{0};
    std::atomic<int> hits{0};

    Site() {
        loopback.http.set_pre_routing_handler([this](const httplib::Request&, httplib::Response&) {
            ++hits;
            return httplib::Server::HandlerResponse::Unhandled;
        });
        loopback.http.Get("/page", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(R"(<!doctype html><html><head><title>Kelce &amp; Swift</title><style>body{color:red}</style>
              <script>alert("tracking")</script></head><body><nav><a href="/home">Home</a> | Menu</nav>
              <header>Site banner</header><h1>The story</h1><p>They met in <b>2023</b>. Read <a href="/more?x=1">more here</a>.</p>
              <ul><li>First point</li><li>Second point</li></ul><pre>code  block</pre><footer>Copyright</footer>
              <noscript>enable js</noscript></body></html>)",
                            "text/html; charset=utf-8");
        });
        loopback.http.Get("/json", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(R"({"a":1,"b":[1,2]})", "application/json");
        });
        loopback.http.Get("/long", [](const httplib::Request&, httplib::Response& res) {
            std::string text;
            for (int i = 0; i < 3000; ++i) text += "line " + std::to_string(i) + " ünïcödé\n";
            res.set_content(text, "text/plain; charset=utf-8");
        });
        loopback.http.Get("/huge", [this](const httplib::Request&, httplib::Response& res) {
            res.set_chunked_content_provider("text/plain", [this](size_t, httplib::DataSink& sink) {
                static const std::string block(64 * 1024, 'x');
                if (huge_sent > (size_t(10) << 30)) return false;  // "10 GB"
                huge_sent += block.size();
                return sink.write(block.data(), block.size());
            });
        });
        loopback.http.Get("/slow", [](const httplib::Request&, httplib::Response& res) {
            res.set_chunked_content_provider("text/plain", [](size_t, httplib::DataSink& sink) {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                return sink.write("tick ", 5);
            });
        });
        loopback.http.Get("/image", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(std::string("\x89PNG\r\n", 6), "image/png");
        });
        loopback.http.Get("/missing", [](const httplib::Request&, httplib::Response& res) {
            res.status = 404;
            res.set_content("no such page", "text/plain");
        });
        loopback.http.Get("/error", [](const httplib::Request&, httplib::Response& res) {
            res.status = 500;
            res.set_content("boom", "text/plain");
        });
        loopback.http.Get("/redirect-ok", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/page"); });
        loopback.http.Get("/redirect-private", [](const httplib::Request&, httplib::Response& res) {
            res.set_redirect("http://169.254.169.254/latest/meta-data/");
        });
        loopback.http.Get("/redirect-loop",
                          [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/redirect-loop"); });
        loopback.http.Get("/robots.txt", [](const httplib::Request&, httplib::Response& res) {
            res.set_content("User-agent: *\nDisallow: /private\n", "text/plain");
        });
        loopback.http.Get("/private",
                          [](const httplib::Request&, httplib::Response& res) { res.set_content("secret", "text/plain"); });
        port = loopback.start();
    }
    std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port) + path; }
    test::LoopbackServer loopback;  // last: it stops before the members its handlers use go
};

std::unique_ptr<app::HostApp> start(const test::TempDir& dir, const json& table) {
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = {"fetch"};
    cfg.plugin_tables["fetch"] = table.dump();
    return test::start(cfg);
}

std::string code(const json& r) { return r.value("error_code", "ok"); }

}  // namespace

TEST_CASE("fetch: HTML becomes readable Markdown with links kept and chrome removed, JSON is pretty, pages",
          "[integration][fetch]") {
    Site site;
    test::TempDir dir;
    // Sandboxed (where the kernel can): the web and no files, as it declares.
    json table{{"allow_hosts", {"127.0.0.1"}}, {"page_chars", 1000}};
    if (isolation::kernel_support().landlock_abi >= 1) table["isolation"] = "sandbox";
    auto app = start(dir, table);
    auto page = test::call_tool(*app, "fetch", {{"url", site.url("/page")}});
    REQUIRE(code(page) == "ok");
    std::string text = page["content"];
    CHECK_THAT(text, Contains("# Kelce & Swift") && Contains("# The story") && Contains("They met in **2023**."));
    CHECK_THAT(text, Contains("[more here](" + site.url("/more?x=1") + ")"));
    CHECK_THAT(text, Contains("- First point") && Contains("```\ncode  block\n```"));
    for (const char* gone : {"alert", "color:red", "Home", "Site banner", "Copyright", "enable js"})
        CHECK_THAT(text, !Contains(gone));
    auto plain = test::call_tool(*app, "fetch", {{"url", site.url("/page")}, {"format", "text"}});
    CHECK_THAT(plain["content"].get<std::string>(), Contains("more here (" + site.url("/more?x=1") + ")") && !Contains("**"));
    auto raw = test::call_tool(*app, "fetch", {{"url", site.url("/page")}, {"format", "raw"}});
    CHECK_THAT(raw["content"].get<std::string>(), Contains("<script>"));

    auto data = test::call_tool(*app, "fetch", {{"url", site.url("/json")}});
    CHECK_THAT(data["content"].get<std::string>(), Contains("\"b\": [\n    1,"));

    auto first = test::call_tool(*app, "fetch", {{"url", site.url("/long")}});
    REQUIRE(code(first) == "ok");
    size_t next = first["structured"]["next_index"];
    CHECK(next <= 1000);
    CHECK_THAT(first["content"].get<std::string>(), Contains("start_index=" + std::to_string(next)));
    auto second = test::call_tool(*app, "fetch", {{"url", site.url("/long")}, {"start_index", next}});
    CHECK(second["structured"]["start_index"] == next);
    CHECK_NOTHROW(json(second["content"].get<std::string>()).dump());  // cut on character boundaries
}

TEST_CASE("fetch: byte limit while streaming, cancel, redirects, binary types and HTTP errors", "[integration][fetch]") {
    Site site;
    test::TempDir dir;
    auto app = start(dir, {{"allow_hosts", {"127.0.0.1"}}, {"max_redirects", 3}});
    auto huge = test::call_tool(*app, "fetch", {{"url", site.url("/huge")}, {"max_bytes", 200000}});
    REQUIRE(code(huge) == "ok");
    CHECK(huge["structured"]["truncated"] == true);
    CHECK_THAT(huge["content"].get<std::string>(), Contains("stopped at 200000 bytes"));
    CHECK(site.huge_sent.load() < (size_t(64) << 20));  // the server was stopped, not drained

    ah_cancel cancel;
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        cancel.cancel();
    });
    auto started = std::chrono::steady_clock::now();
    auto slow = test::call_tool(*app, "fetch", {{"url", site.url("/slow")}}, "c1", &cancel);
    canceller.join();
    CHECK(code(slow) == "cancelled");
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(3));

    auto redirected = test::call_tool(*app, "fetch", {{"url", site.url("/redirect-ok")}});
    CHECK(code(redirected) == "ok");
    CHECK(redirected["structured"]["url"] == site.url("/page"));
    auto private_hop = test::call_tool(*app, "fetch", {{"url", site.url("/redirect-private")}});
    CHECK(code(private_hop) == "forbidden");
    CHECK_THAT(private_hop["content"].get<std::string>(), Contains("169.254.169.254"));
    CHECK(code(test::call_tool(*app, "fetch", {{"url", site.url("/redirect-loop")}})) == "too_many_redirects");

    auto image = test::call_tool(*app, "fetch", {{"url", site.url("/image")}});
    CHECK(code(image) == "binary_content");
    CHECK_THAT(image["content"].get<std::string>(), Contains("image/png"));
    auto missing = test::call_tool(*app, "fetch", {{"url", site.url("/missing")}});
    CHECK(code(missing) == "http_error");
    CHECK_THAT(missing["content"].get<std::string>(), Contains("404"));
    CHECK_THAT(test::call_tool(*app, "fetch", {{"url", site.url("/error")}})["content"].get<std::string>(), Contains("500"));
}

TEST_CASE("fetch: robots.txt is respected when configured", "[integration][fetch]") {
    Site site;
    test::TempDir dir;
    auto polite = start(dir, {{"allow_hosts", {"127.0.0.1"}}, {"respect_robots", true}});
    CHECK(code(test::call_tool(*polite, "fetch", {{"url", site.url("/private")}})) == "robots_disallowed");
    CHECK(code(test::call_tool(*polite, "fetch", {{"url", site.url("/page")}})) == "ok");
}

TEST_CASE("fetch: the SSRF guard refuses every hostile URL unless allowlisted", "[integration][fetch]") {
    Site site;
    test::TempDir dir;
    auto app = start(dir, json::object());  // no allowlist
    std::string p = std::to_string(site.port);
    std::vector<std::string> hostile{site.url("/page"),
                                     "http://localhost:" + p + "/page",
                                     "http://localhost.:" + p + "/page",
                                     "http://2130706433:" + p + "/",
                                     "http://0177.0.0.1:" + p + "/",
                                     "http://0x7f.0.0.1:" + p + "/",
                                     "http://0x7f000001:" + p + "/",
                                     "http://127.1:" + p + "/",
                                     "http://127.0.1:" + p + "/",
                                     "http://[::1]:" + p + "/",
                                     "http://[::ffff:127.0.0.1]:" + p + "/",
                                     "http://[::ffff:7f00:1]:" + p + "/",
                                     "http://[0:0:0:0:0:ffff:127.0.0.1]/",
                                     "http://[::]/",
                                     "http://[64:ff9b::7f00:1]/",
                                     "http://[2002:7f00:1::]/",
                                     "http://169.254.169.254/latest/meta-data/",
                                     "http://[fe80::1]/",
                                     "http://[fc00::1]/",
                                     "http://[fd12:3456::1]/",
                                     "http://10.0.0.1/",
                                     "http://192.168.1.1/",
                                     "http://172.16.0.1/",
                                     "http://100.64.0.1/",
                                     "http://0.0.0.0:" + p + "/",
                                     "http://224.0.0.1/",
                                     "http://255.255.255.255/",
                                     "http://user:pass@example.com/",
                                     "http://example.com@127.0.0.1:" + p + "/",
                                     "http://127.0.0.1:" + p + "#@example.com/",
                                     "file:///etc/passwd",
                                     "gopher://127.0.0.1:70/",
                                     "ftp://example.com/",
                                     "dict://127.0.0.1:11211/",
                                     "HTTP://LOCALHOST:" + p + "/page",
                                     "http://[::ffff:a9fe:a9fe]/"};
    REQUIRE(hostile.size() >= 20);
    int before = site.hits;
    for (const auto& url : hostile) {
        INFO("url: " << url);
        auto r = test::call_tool(*app, "fetch", {{"url", url}});
        CHECK(r["is_error"] == true);
        std::string c = code(r);
        CHECK((c == "forbidden" || c == "invalid_url"));
    }
    CHECK(site.hits == before);  // not one of them reached the server

    test::TempDir other;
    auto allowed = start(other, {{"allow_hosts", {"127.0.0.1"}}});
    CHECK(code(test::call_tool(*allowed, "fetch", {{"url", site.url("/page")}})) == "ok");
    CHECK(code(test::call_tool(*allowed, "fetch", {{"url", "http://10.0.0.1/"}})) == "forbidden");
}
