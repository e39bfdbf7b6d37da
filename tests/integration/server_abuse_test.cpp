// `agenthost serve` tried as a hostile web page, a careless client and an impatient user would
// (issue #18), on 127.0.0.1 only and each case bounded in time: auth on by default (generated token,
// login URL, cookie), DNS rebinding (foreign Host), CSRF (cross-site text/plain POSTs), deep and
// wrong-typed JSON, JSON-RPC type errors on /mcp, chunked bodies over the limit, request smuggling,
// slowloris, full run slots, provider errors mapped like OpenAI's API, and retries by the official
// openai client that never start a second run (x-should-retry, Idempotency-Key).
#include "server/run_hub.hpp"
#include "support/test_support.hpp"
#include "test_paths.h"

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <csignal>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

extern char** environ;

using Catch::Matchers::Contains;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kToken = "abuse-test-token-3f9a1c";

json cassette() {
    auto call = [](const std::string& name, json args) { return json{{"tool_calls", {{{"name", name}, {"arguments", args}}}}}; };
    auto fail = [](const std::string& type, const std::string& message, int times) {
        json e{{"error", {{"type", type}, {"message", message}}}};
        if (type == "rate_limit") e["error"]["retry_after"] = 0.05;
        return json(std::vector<json>(static_cast<size_t>(times), e));
    };
    return {{"rules",
             {{{"match", "add"}, {"replies", {call("add", {{"a", 2}, {"b", 3}}), {{"text", "2 + 3 = 5."}}}}},
              {{"match", "delete"}, {"replies", {call("delete_item", {{"name", "old"}}), {{"text", "Deleted it."}}}}},
              {{"match", "slow"}, {"replies", {{{"delay_ms", 20000}, {"text", "too late"}}}}},
              {{"match", "steps"},
               {"replies",
                {{{"delay_ms", 300}, {"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", "one"}}}}}}},
                 {{"delay_ms", 300}, {"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", "two"}}}}}}},
                 {{"text", "two steps done"}}}}},
              // Each kind of provider error; the retried kinds fail on every one of the host's attempts.
              {{"match", "auth-fail"}, {"replies", fail("auth", "invalid x-api-key", 1)}},
              {{"match", "rate-fail"}, {"replies", fail("rate_limit", "slow down", 2)}},
              {{"match", "model-fail"}, {"replies", fail("model_unavailable", "model gpt-17 does not exist", 1)}},
              {{"match", "context-fail"}, {"replies", fail("context_too_large", "prompt is too long", 1)}},
              {{"match", "outage-fail"}, {"replies", fail("transient", "unexpected HTTP 503 from upstream", 2)}},
              {{"match", "timeout-fail"}, {"replies", fail("timeout", "the request to http://upstream timed out", 2)}}}},
            {"fallback", {{"text", "fallback answer"}}}};
}

// A running `agenthost serve` (stderr in serve.log), SIGTERM when the test ends.
struct Served {
    test::TempDir dir;
    std::string config;
    int port = test::free_port();
    pid_t pid = -1;

    // `server`: the [server] table's keys (none: no [server] table); `env`: NAME=VALUE set for serve.
    explicit Served(const std::optional<std::string>& server = "token_env = \"ABUSE_TEST_TOKEN\"\n",
                    const std::string& extra = "", bool start_now = true) {
        test::write_file(dir.path / "cassette.json", cassette().dump());
        config = (dir.path / "agenthost.toml").string();
        test::write_file(config, "data_dir = \"" + (dir.path / "data").string() +
                                     "\"\ndefault_plugin_dirs = false\n"
                                     "enabled_plugins = [\"scripted\", \"example_c\", \"agent_tools\"]\n"
                                     "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                                     "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_FIXTURE_PLUGIN_DIR
                                     "\"]\n"
                                     "[provider]\nuse = \"scripted\"\nretry_attempts = 2\nretry_base_ms = 20\n"
                                     "[plugins.scripted]\ncassette = \"" +
                                     (dir.path / "cassette.json").string() + "\"\n" +
                                     (server ? "[server]\nshutdown_grace_seconds = 2\n" + *server : std::string()) + extra);
        if (start_now) start();
    }
    ~Served() { stop(); }

    std::string log() const { return test::read_file(dir.path / "serve.log"); }

    void start(const std::string& listen_host = "127.0.0.1") {
        ::setenv("ABUSE_TEST_TOKEN", kToken, 1);
        std::string listen = listen_host + ":" + std::to_string(port);
        std::string log = (dir.path / "serve.log").string();
        std::vector<std::string> args{test::cli(), "--config", config, "serve", "--listen", listen};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t files;
        posix_spawn_file_actions_init(&files);
        posix_spawn_file_actions_addopen(&files, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        REQUIRE(posix_spawn(&pid, argv[0], &files, nullptr, argv.data(), environ) == 0);
        posix_spawn_file_actions_destroy(&files);
        httplib::Client c("127.0.0.1", port);
        for (int i = 0; i < 1200; ++i) {  // 30 s: a sanitizer's build on a loaded machine starts slowly
            if (auto r = c.Get("/health"); r && r->status == 200) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(25));
        }
        FAIL("agenthost serve did not start: " << test::read_file(log));
    }

    int stop() { return test::terminate(pid); }

    std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }

    httplib::Client client(const std::string& token = kToken) const {
        httplib::Client c("127.0.0.1", port);
        if (!token.empty()) c.set_bearer_token_auth(token);
        c.set_read_timeout(30, 0);
        return c;
    }

    json post(const std::string& path, const json& body, int expect) const {
        auto r = client().Post(path, body.dump(), "application/json");
        REQUIRE(r);
        INFO(path << " → " << r->status << " " << r->body);
        CHECK(r->status == expect);
        return r->body.empty() ? json() : json::parse(r->body);
    }

    json get(const std::string& path) const {
        auto r = client().Get(path);
        REQUIRE(r);
        INFO(path << " → " << r->body);
        REQUIRE(r->status == 200);
        return json::parse(r->body);
    }

    json wait_run(int64_t run, std::initializer_list<const char*> states) const {
        for (int i = 0; i < 400; ++i) {
            json r = get("/api/runs/" + std::to_string(run));
            for (const char* s : states)
                if (r["status"] == s && !r["executing"].get<bool>()) return r;
            std::this_thread::sleep_for(std::chrono::milliseconds(25));
        }
        FAIL("run " << run << " never reached the expected status");
        return {};
    }

    json runs() const {
        auto r = test::run_command("'" + std::string(test::cli()) + "' --config '" + config + "' runs --json");
        REQUIRE(r.exit_code == 0);
        return json::parse(r.out);
    }

    long threads() const { return rss_kib("Threads:"); }

    long rss_kib(const char* field = "VmRSS:") const {
        std::ifstream in("/proc/" + std::to_string(pid) + "/status");
        for (std::string line; std::getline(in, line);)
            if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::strlen(field));
        return -1;
    }
};

// A raw connection to the server: what a hostile client sends, byte for byte.
struct Raw {
    int fd = -1;
    explicit Raw(int port) {
        fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(static_cast<uint16_t>(port));
        REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        timeval tv{5, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    ~Raw() {
        if (fd >= 0) ::close(fd);
    }
    bool send(const std::string& data) {
        size_t sent = 0;
        while (sent < data.size()) {
            ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
            if (n <= 0) return false;
            sent += static_cast<size_t>(n);
        }
        return true;
    }
    // Everything the server sends until it closes (or `wait` passes, or `until` has come).
    std::string read_all(std::chrono::milliseconds wait = std::chrono::milliseconds(5000), std::string_view until = {}) {
        std::string out;
        auto deadline = Clock::now() + wait;
        char buf[65536];
        while (Clock::now() < deadline && (until.empty() || out.find(until) == std::string::npos)) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) continue;
            ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            out.append(buf, static_cast<size_t>(n));
        }
        return out;
    }
};

// A POST whose head and first 288 KiB of body have come (past the gate's kGateBodyBytes, so a
// serving thread reads it) and whose rest never does: it holds a serving thread.
// With `expect_continue` the server answers "100 Continue" once it has read the head, which tells
// a test the connection is no longer idle.
void send_served_stalled(Raw& raw, const std::string& token, bool expect_continue = false) {
    raw.send("POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token +
             (expect_continue ? "\r\nExpect: 100-continue" : "") +
             "\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{\"message\": \"" +
             std::string(288 << 10, 'x'));
}

int count(const std::string& text, const std::string& what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

int status_of(const std::string& response) { return response.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(response.c_str() + 9) : 0; }

}  // namespace

TEST_CASE("serve abuse: auth is on by default — a generated token, a login URL, a cookie, Bearer for APIs",
          "[integration][server][abuse]") {
    ::unsetenv("AGENTHOST_TOKEN");
    Served s(std::nullopt);  // no [server] table at all
    auto token_file = s.dir.path / "data" / "server-token";
    std::string token = test::read_file(token_file);
    REQUIRE(token.size() == 64);
    struct stat st {};
    REQUIRE(::stat(token_file.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK_THAT(s.log(), Contains("/login?token=" + token));

    auto anonymous = s.client("");
    auto denied = anonymous.Get("/api/conversations");
    REQUIRE(denied);
    CHECK(denied->status == 401);
    // RFC 9728: the 401 says where the resource's metadata is (MCP clients read it to learn how to authenticate).
    CHECK_THAT(denied->get_header_value("WWW-Authenticate"),
               Catch::Matchers::StartsWith("Bearer realm=\"agenthost\", resource_metadata=\"http://127.0.0.1:") &&
                   Catch::Matchers::EndsWith("/.well-known/oauth-protected-resource\""));
    CHECK(anonymous.Get("/v1/models")->status == 401);
    CHECK(anonymous.Post("/api/chat", json{{"message", "please add"}}.dump(), "application/json")->status == 401);
    CHECK(anonymous.Get("/health")->status == 200);
    CHECK(anonymous.Get("/readyz")->status != 401);
    CHECK(s.client("wrong-token-of-the-same-length-wrong-token-of-the-same-length-xx").Get("/api/conversations")->status == 401);
    CHECK(s.client(token).Get("/api/conversations")->status == 200);

    // The panel's login: a wrong token sets nothing (a browser goes back to the panel's form); the
    // right one sets an HttpOnly, SameSite=Strict cookie and hands the page a second secret for the
    // X-Agenthost-Session header. Both are needed.
    auto wrong = anonymous.Get("/login?token=nope");
    CHECK(wrong->status == 401);
    CHECK_FALSE(wrong->has_header("Set-Cookie"));
    auto wrong_browser = anonymous.Get("/login?token=nope", {{"Accept", "text/html"}});
    CHECK(wrong_browser->status == 303);
    CHECK(wrong_browser->get_header_value("Location") == "/?login=failed");
    auto login = anonymous.Get("/login?token=" + token);
    REQUIRE(login);
    CHECK(login->status == 200);
    CHECK(login->get_header_value("Cache-Control") == "no-store");
    CHECK_THAT(login->body, Contains("/panel/login.js"));
    std::string cookie = login->get_header_value("Set-Cookie");
    CHECK_THAT(cookie, Contains("HttpOnly") && Contains("SameSite=Strict") && Contains("Path=/"));
    std::string pair = cookie.substr(0, cookie.find(';'));
    std::string marker = "name=\"agenthost-session\" content=\"";
    size_t at = login->body.find(marker);
    REQUIRE(at != std::string::npos);
    std::string session = login->body.substr(at + marker.size(), 64);
    httplib::Headers panel{{"Cookie", pair}, {"X-Agenthost-Session", session}};
    CHECK(anonymous.Get("/api/conversations", panel)->status == 200);
    // Outside try: browsers send a host's cookies to every port of it, so another local server the
    // user visits could replay the cookie. Alone it opens nothing, nor does the header alone.
    CHECK(anonymous.Get("/api/conversations", {{"Cookie", pair}})->status == 401);
    CHECK(anonymous.Get("/api/conversations", {{"X-Agenthost-Session", session}})->status == 401);
    CHECK(anonymous.Post("/api/chat", {{"Cookie", pair}}, json{{"message", "replayed"}}.dump(), "application/json")->status ==
          401);
    // The session counts only on the server's own pages: a page of another origin gets nothing.
    httplib::Headers foreign = panel;
    foreign.emplace("Origin", "http://localhost:9999");
    CHECK(anonymous.Get("/api/conversations", foreign)->status == 401);
    // Neither secret is the token (nor its hex), nor works as the bearer token.
    std::string secret = pair.substr(pair.find('=') + 1);
    for (const std::string& value : {secret, session}) {
        CHECK(value.find(token) == std::string::npos);
        std::string hex;
        for (unsigned char c : token) hex += "0123456789abcdef"[c >> 4], hex += "0123456789abcdef"[c & 15];
        CHECK(value != hex);
        CHECK(s.client(value).Get("/api/conversations")->status == 401);
    }
    // The panel's form posts the token (not in a URL, so not in the browser's history).
    auto form = anonymous.Post("/login", {{"Origin", s.url()}}, "token=" + token, "application/x-www-form-urlencoded");
    REQUIRE(form);
    CHECK(form->status == 200);
    CHECK(form->has_header("Set-Cookie"));
    auto form_wrong = anonymous.Post("/login", {{"Accept", "text/html"}}, "token=nope", "application/x-www-form-urlencoded");
    CHECK(form_wrong->get_header_value("Location") == "/?login=failed");
    // A form of another site cannot post it, and no other route takes a form body.
    CHECK(anonymous.Post("/login", {{"Origin", "https://evil.example"}}, "token=" + token, "application/x-www-form-urlencoded")
              ->status == 403);
    CHECK(anonymous.Post("/api/chat", panel, "message=hi", "application/x-www-form-urlencoded")->status == 415);

    // The same token after a restart, and the panel's session with it: a restart logs nobody out
    // (an outside try: every restart asked the person to log in again, losing what they typed).
    // $AGENTHOST_TOKEN, when set, is the token instead, and a new token ends every session.
    s.stop();
    s.start();
    CHECK(test::read_file(token_file) == token);
    CHECK(s.client(token).Get("/api/conversations")->status == 200);
    CHECK(anonymous.Get("/api/conversations", panel)->status == 200);
    s.stop();
    ::setenv("AGENTHOST_TOKEN", "from-the-environment-0123456789", 1);
    s.start();
    ::unsetenv("AGENTHOST_TOKEN");
    CHECK(s.client("from-the-environment-0123456789").Get("/api/conversations")->status == 200);
    CHECK(s.client(token).Get("/api/conversations")->status == 401);
    CHECK(s.client("").Get("/api/conversations", panel)->status == 401);
    CHECK_THAT(s.log(), Contains("/login?token=$AGENTHOST_TOKEN"));
}

TEST_CASE("serve abuse: a token_env naming an unset variable refuses to start, auth = \"none\" only on loopback",
          "[integration][server][abuse]") {
    Served unset("token_env = \"ABUSE_NEVER_SET\"\n", "", false);
    ::unsetenv("ABUSE_NEVER_SET");
    auto r = test::run_command("'" + std::string(test::cli()) + "' --config '" + unset.config +
                               "' serve --listen 127.0.0.1:" + std::to_string(unset.port));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("ABUSE_NEVER_SET") && Contains("unset or empty") && Contains("export ABUSE_NEVER_SET="));

    // A second server cannot share a port another one listens on (no SO_REUSEPORT): it fails at once.
    Served first;
    auto second = test::run_command("'" + std::string(test::cli()) + "' --config '" + first.config +
                                    "' serve --listen 127.0.0.1:" + std::to_string(first.port));
    CHECK(second.exit_code != 0);
    CHECK_THAT(second.err, Contains("cannot listen on 127.0.0.1:" + std::to_string(first.port)));

    Served open("auth = \"none\"\n", "", false);
    auto exposed = test::run_command("'" + std::string(test::cli()) + "' --config '" + open.config +
                                     "' serve --listen 0.0.0.0:" + std::to_string(open.port));
    CHECK(exposed.exit_code == 2);
    CHECK_THAT(exposed.err, Contains("auth = \"none\""));
    open.start();
    CHECK(open.client("").Get("/api/conversations")->status == 200);
    CHECK_THAT(open.log(), Contains("WARNING: no authentication"));
    // Without auth, the browser defences still hold: a cross-site page cannot start a run.
    auto csrf =
        open.client("").Post("/api/chat", {{"Origin", "https://evil.example"}}, "{\"message\": \"please add\"}", "text/plain");
    CHECK(csrf->status == 403);
    CHECK(open.runs().empty());
}

TEST_CASE("serve abuse: cross-site requests (CSRF) and foreign Hosts (DNS rebinding) are refused on every route",
          "[integration][server][abuse]") {
    Served s(
        "token_env = \"ABUSE_TEST_TOKEN\"\nallowed_hosts = [\"agent.home\"]\nallowed_origins = [\"https://panel.example\"]\n", "",
        false);
    test::write_file(s.dir.path / "web" / "index.html", "<!doctype html><title>panel</title>");
    test::write_file(s.dir.path / "web" / "vendor" / "renderer.js", "// renderer");
    test::write_file(s.config, test::read_file(s.config) + "web_dir = \"" + (s.dir.path / "web").string() + "\"\n");
    s.start();
    auto c = s.client();
    // A cross-site "simple request": text/plain, from another origin. Refused, no run started.
    auto csrf = c.Post("/api/chat", {{"Origin", "https://evil.example"}}, "{\"message\": \"please add\"}", "text/plain");
    REQUIRE(csrf);
    CHECK(csrf->status == 403);
    CHECK(json::parse(csrf->body)["error"]["code"] == "origin_not_allowed");
    auto plain = c.Post("/api/chat", "{\"message\": \"please add\"}", "text/plain");  // no Origin: still not JSON
    CHECK(plain->status == 415);
    auto form = c.Post("/api/chat", "message=please+add", "application/x-www-form-urlencoded");
    CHECK(form->status == 415);
    CHECK(s.runs().empty());

    // A paused run: the cross-site approve is refused and the tool never runs.
    json paused = s.post("/api/chat", {{"message", "delete the old one"}, {"conversation", "approvals"}}, 200);
    int64_t run = paused["run"];
    s.wait_run(run, {"paused"});
    std::string approve = "/api/runs/" + std::to_string(run) + "/approve";
    CHECK(c.Post(approve, {{"Origin", "https://evil.example"}}, "{}", "text/plain")->status == 403);
    CHECK(c.Post(approve, {{"Origin", "null"}}, "{}", "application/json")->status == 403);
    CHECK(c.Post(approve, {{"Sec-Fetch-Site", "cross-site"}}, "{}", "application/json")->status == 403);
    CHECK(c.Post(approve, "{}", "text/plain")->status == 415);
    CHECK(s.get("/api/runs/" + std::to_string(run))["status"] == "paused");
    // The same origin and the configured one are accepted.
    CHECK(c.Post(approve, {{"Origin", s.url()}}, "{}", "application/json")->status == 202);
    CHECK(s.wait_run(run, {"completed"})["answer"] == "Deleted it.");

    // DNS rebinding: another name resolved to 127.0.0.1.
    auto rebound = c.Get("/v1/models", {{"Host", "evil.example:" + std::to_string(s.port)}});
    CHECK(rebound->status == 421);
    CHECK(json::parse(rebound->body)["error"]["code"] == "host_not_allowed");
    CHECK(c.Get("/memory/state", {{"Host", "evil.example"}})->status == 421);
    CHECK(c.Delete("/api/conversations/approvals", {{"Host", "evil.example"}})->status == 421);
    CHECK(c.Get("/api/conversations/approvals")->status == 200);  // still there
    CHECK(c.Get("/v1/models", {{"Host", "localhost:" + std::to_string(s.port)}})->status == 200);
    CHECK(c.Get("/v1/models", {{"Host", "agent.home:" + std::to_string(s.port)}})->status == 200);  // allowed_hosts
    CHECK(c.Get("/v1/models", {{"Host", "192.168.1.20:" + std::to_string(s.port)}})->status ==
          200);  // an IP literal cannot be rebound
    CHECK(c.Get("/v1/models", {{"Host", "[::1]:" + std::to_string(s.port)}})->status == 200);
    CHECK(c.Delete("/api/conversations/approvals", {{"Origin", "https://evil.example"}})->status == 403);
    CHECK(c.Get("/api/chat?run=" + std::to_string(run), {{"Origin", "https://evil.example"}})->status == 403);  // an event stream
    CHECK(c.Delete("/api/conversations/approvals", {{"Origin", "https://panel.example"}})->status == 204);      // allowed_origins

    // Security headers on the API and the panel; no open CORS, even when asked.
    auto models = c.Get("/v1/models", {{"Origin", "https://evil.example"}});
    CHECK(models->get_header_value("X-Content-Type-Options") == "nosniff");
    CHECK(models->get_header_value("Referrer-Policy") == "no-referrer");
    CHECK_THAT(models->get_header_value("Content-Security-Policy"), Contains("frame-ancestors 'none'"));
    CHECK_FALSE(models->has_header("Access-Control-Allow-Origin"));
    auto preflight = c.Options("/api/chat", {{"Origin", "https://evil.example"}, {"Access-Control-Request-Method", "POST"}});
    CHECK_FALSE(preflight->has_header("Access-Control-Allow-Origin"));
    auto panel = c.Get("/");
    CHECK_THAT(panel->get_header_value("Content-Security-Policy"),
               Contains("frame-ancestors 'none'") && Contains("script-src 'self'"));
    CHECK(panel->get_header_value_count("Content-Security-Policy") == 1);
    CHECK(panel->get_header_value("X-Content-Type-Options") == "nosniff");
    CHECK(c.Get("/panel/vendor")->status == 404);  // a directory is never listed
    CHECK(c.Get("/panel/..%2fagenthost.toml")->status == 404);
    // A file unchanged since the browser's copy is not sent again (its ETag), and the 304 carries the
    // panel's policy: a browser takes a 304's headers into the copy it keeps.
    std::string etag = panel->get_header_value("ETag");
    REQUIRE_FALSE(etag.empty());
    auto again = c.Get("/", {{"If-None-Match", etag}});
    CHECK(again->status == 304);
    CHECK(again->body.empty());
    CHECK_THAT(again->get_header_value("Content-Security-Policy"), Contains("script-src 'self'"));
    CHECK(c.Get("/", {{"If-None-Match", "\"other\""}})->status == 200);
}

TEST_CASE("serve abuse: conversation ids are bounded and plain, so none reaches a terminal or a log as a weapon",
          "[integration][server][abuse]") {
    Served s;
    auto c = s.client();
    for (const std::string& id :
         {std::string(3u << 20, 'A'), std::string("x\n\x1b[31mred"), std::string("a b"), std::string("\"quoted\"")}) {
        auto chat = c.Post("/api/chat", json{{"message", "please add"}, {"conversation", id}}.dump(), "application/json");
        REQUIRE(chat);
        CHECK(chat->status == 400);
        CHECK_THAT(chat->body, Contains("conversation id"));
        auto v1 = c.Post(
            "/v1/chat/completions",
            json{{"model", "agenthost"}, {"conversation", id}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}.dump(),
            "application/json");
        CHECK(v1->status == 400);
    }
    CHECK(s.runs().empty());
    CHECK(
        c.Post("/api/chat", json{{"message", "please add"}, {"conversation", "user@home:chat-1.2_b"}}.dump(), "application/json")
            ->status == 200);
    auto cli = test::run_command("'" + std::string(test::cli()) + "' --config '" + s.config + "' run --conversation 'a b' hi");
    CHECK(cli.exit_code == 2);
    CHECK_THAT(cli.err, Contains("--conversation: a conversation id holds only"));
}

TEST_CASE("serve abuse: deep JSON, wrong types and JSON-RPC type errors get a 400, never a crash",
          "[integration][server][abuse]") {
    Served s;
    auto c = s.client();
    std::string deep = std::string(100000, '[') + std::string(100000, ']');
    std::string deep_object;
    for (int i = 0; i < 100000; ++i) deep_object += "{\"a\":";
    deep_object += "1" + std::string(100000, '}');
    for (const char* path : {"/api/chat", "/v1/chat/completions", "/memory/clear-session", "/api/runs/1/approve"}) {
        for (const std::string* body : {&deep, &deep_object}) {
            auto r = c.Post(path, *body, "application/json");
            REQUIRE(r);
            INFO(path << " " << r->body);
            CHECK(r->status == 400);
        }
    }
    auto deep_chat = c.Post("/api/chat", deep, "application/json");
    CHECK(json::parse(deep_chat->body)["error"]["code"] == "json_too_deep");
    auto deep_mcp = c.Post("/mcp", deep_object, "application/json");
    CHECK(deep_mcp->status == 400);
    CHECK(json::parse(deep_mcp->body)["error"]["code"] == -32700);
    CHECK(c.Get("/health")->status == 200);

    // Wrong types: a 400 naming the field.
    auto field = [&](const std::string& path, const json& body, const std::string& name) {
        auto r = c.Post(path, body.dump(), "application/json");
        REQUIRE(r);
        INFO(path << " " << r->body);
        CHECK(r->status == 400);
        CHECK_THAT(json::parse(r->body)["error"]["message"].get<std::string>(), Contains("\"" + name + "\""));
    };
    json messages = json::array({{{"role", "user"}, {"content", "please add"}}});
    field("/api/chat", {{"message", 42}}, "message");
    field("/api/chat", {{"message", "hi"}, {"conversation", json::array()}}, "conversation");
    field("/api/chat", {{"message", "hi"}, {"context", "x"}}, "context");
    field("/api/chat", {{"message", "hi"}, {"mode", 1}}, "mode");
    field("/v1/chat/completions", {{"model", 42}, {"messages", messages}}, "model");
    field("/v1/chat/completions", {{"stream", "yes"}, {"messages", messages}}, "stream");
    field("/v1/chat/completions", {{"messages", messages}, {"stream_options", {{"include_usage", "yes"}}}}, "include_usage");
    field("/v1/chat/completions", {{"messages", json::array({{{"role", 7}, {"content", "x"}}})}}, "role");
    field("/memory/clear-session", {{"conversation", 5}}, "conversation");
    CHECK(c.Post("/api/chat", "[1, 2]", "application/json")->status == 400);
    CHECK(c.Post("/api/chat", "{\"message\": \"\xff\xfe\"}", "application/json")->status == 400);  // not UTF-8
    CHECK(s.runs().empty());

    // JSON-RPC on /mcp: wrong types are -32600 (Invalid Request), bare values too.
    auto rpc = [&](const std::string& body) {
        auto r = c.Post("/mcp", body, "application/json");
        REQUIRE(r);
        INFO(body << " → " << r->status << " " << r->body);
        json reply = json::parse(r->body);
        CHECK(r->status == 400);
        return reply["error"]["code"].get<int>();
    };
    CHECK(rpc(R"({"jsonrpc":"2.0","id":7,"method":42})") == -32600);
    CHECK(rpc(R"({"jsonrpc":2,"id":7,"method":"initialize"})") == -32600);
    CHECK(rpc(R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})") == -32600);
    CHECK(rpc("123") == -32600);
    CHECK(rpc("null") == -32600);
    CHECK(rpc("[]") == -32600);
    CHECK(rpc("{\"jsonrpc\":") == -32700);
    // params.name of the wrong type on the SSE (progress) path: answered, the server goes on.
    json init{{"jsonrpc", "2.0"},
              {"id", 1},
              {"method", "initialize"},
              {"params",
               {{"protocolVersion", "2025-11-25"},
                {"capabilities", json::object()},
                {"clientInfo", {{"name", "raw"}, {"version", "0"}}}}}};
    auto ok = c.Post("/mcp", init.dump(), "application/json");
    REQUIRE(ok);
    std::string session = ok->get_header_value("Mcp-Session-Id");
    auto bad_name = c.Post("/mcp", {{"Mcp-Session-Id", session}, {"Accept", "application/json, text/event-stream"}},
                           R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":42,"_meta":{"progressToken":5}}})",
                           "application/json");
    REQUIRE(bad_name);
    CHECK_THAT(bad_name->body, Contains("\"id\":9") && Contains("\"error\""));
    CHECK(c.Get("/health")->status == 200);
    CHECK(s.pid > 0);
    CHECK(::kill(s.pid, 0) == 0);  // alive
}

TEST_CASE("serve abuse: a chunked body over max_body_bytes is refused (413) unread, smuggling framings are refused",
          "[integration][server][abuse]") {
    Served s;
    auto head = [&](const std::string& path, const std::string& framing) {
        return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.port) + "\r\nAuthorization: Bearer " + kToken +
               "\r\nContent-Type: application/json\r\n" + framing + "\r\n";
    };
    // A small chunked body is read and served.
    {
        Raw raw(s.port);
        std::string body = R"({"message": "please add", "conversation": "chunked"})";
        char size[16];
        std::snprintf(size, sizeof size, "%zx", body.size());
        REQUIRE(raw.send(head("/api/chat", "Transfer-Encoding: chunked\r\n") + size + "\r\n" + body + "\r\n0\r\n\r\n"));
        std::string reply = raw.read_all();
        CHECK(status_of(reply) == 200);
        CHECK_THAT(reply, Contains("\"conversation\":\"chunked\""));
    }
    // 200 MB chunked: the server stops reading at the limit and answers 413; its memory hardly moves.
    long rss_before = s.rss_kib(), peak_before = s.rss_kib("VmHWM:");
    size_t sent = 0;
    std::string reply;
    auto started = Clock::now();
    {
        Raw raw(s.port);
        REQUIRE(raw.send(head("/api/chat", "Transfer-Encoding: chunked\r\n")));
        std::string chunk = "10000\r\n" + std::string(0x10000, 'a') + "\r\n";
        while (sent < (200u << 20) && raw.send(chunk)) sent += 0x10000;
        reply = raw.read_all(std::chrono::milliseconds(2000));
    }
    double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    long rss_after = s.rss_kib(), peak_after = s.rss_kib("VmHWM:");
    std::fprintf(stderr,
                 "[figures] chunked 200 MB: client got %zu MB out before the server stopped reading, %.2f s; server RSS %ld → "
                 "%ld KiB, peak %ld → %ld KiB; reply: %.60s\n",
                 sent >> 20, seconds, rss_before, rss_after, peak_before, peak_after, reply.c_str());
    CHECK(sent < (200u << 20));  // the server stopped reading
    if (!reply.empty()) CHECK(status_of(reply) == 413);
    CHECK(peak_after - peak_before < 64 * 1024);  // far less than the 200 MB offered
    CHECK(s.client().Get("/health")->status == 200);
    CHECK(s.runs().size() == 1);  // only the small chunked chat

    // A chunk's size line is bounded as a head is: an extension of megabytes (no token needed on
    // /login) is refused after 64 KiB, not kept whole.
    for (const char* path : {"/api/chat", "/login"}) {
        long peak_start = s.rss_kib("VmHWM:");
        Raw raw(s.port);
        std::string head = std::string("POST ") + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + kToken +
                           "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nb;e=";
        raw.send(head);
        std::string extension(1 << 20, 'a');
        size_t pushed = 0;
        for (int i = 0; i < 16 && raw.send(extension); ++i) pushed += extension.size();
        std::string refused = raw.read_all(std::chrono::milliseconds(3000));
        INFO(path << " → " << refused.substr(0, 200) << "; pushed " << pushed);
        if (!refused.empty()) CHECK(status_of(refused) == 400);
        CHECK(s.rss_kib("VmHWM:") - peak_start < 8 * 1024);  // far less than the 16 MiB offered
        CHECK(s.client().Get("/health")->status == 200);
    }
    CHECK(s.runs().size() == 1);

    // A declared length over the limit: 413 before a byte of the body is read.
    {
        Raw raw(s.port);
        REQUIRE(raw.send(head("/api/chat", "Content-Length: 209715200\r\n")));
        std::string r = raw.read_all(std::chrono::milliseconds(2000));
        CHECK(status_of(r) == 413);
    }
    // Smuggling: Content-Length and Transfer-Encoding together. One 400, the connection closed, the
    // request hidden in the body never answered.
    {
        Raw raw(s.port);
        std::string hidden =
            "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + std::string(kToken) + "\r\n\r\n";
        REQUIRE(raw.send(head("/api/chat", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n") + "0\r\n\r\n" + hidden));
        std::string r = raw.read_all(std::chrono::milliseconds(3000));
        CHECK(status_of(r) == 400);
        CHECK_THAT(r, Contains("ambiguous_length"));
        CHECK(count(r, "HTTP/1.1 ") == 1);
        CHECK_THAT(r, !Contains("\"object\":\"list\""));
    }
    for (const std::string& framing :
         {std::string("Transfer-Encoding: chunked, identity\r\n"), std::string("Transfer-Encoding: xchunked\r\n"),
          std::string("Content-Length: 5\r\nContent-Length: 6\r\n"), std::string("Content-Length: -1\r\n"),
          std::string("Content-Length: 0x10\r\n")}) {
        Raw raw(s.port);
        REQUIRE(raw.send(head("/api/chat", framing) + "hello"));
        std::string r = raw.read_all(std::chrono::milliseconds(3000));
        INFO(framing << " → " << r.substr(0, 200));
        CHECK((status_of(r) == 400 || status_of(r) == 501));
        CHECK(count(r, "HTTP/1.1 ") == 1);
    }
    // Which name was meant is never guessed: two Host headers, or none on HTTP/1.1, are refused.
    for (const std::string& request :
         {"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nAuthorization: Bearer " + std::string(kToken) +
              "\r\n\r\n",
          "GET /v1/models HTTP/1.1\r\nAuthorization: Bearer " + std::string(kToken) + "\r\n\r\n"}) {
        Raw raw(s.port);
        REQUIRE(raw.send(request));
        std::string r = raw.read_all(std::chrono::milliseconds(3000));
        CHECK(status_of(r) == 400);
        CHECK_THAT(r, Contains("invalid_host"));
    }
    // A body left unread after a refusal is never read as a second request (one request per connection).
    {
        Raw raw(s.port);
        std::string hidden =
            "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + std::string(kToken) + "\r\n\r\n";
        REQUIRE(raw.send("POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: " +
                         std::to_string(hidden.size()) + "\r\n\r\n" + hidden));
        std::string r = raw.read_all(std::chrono::milliseconds(3000));
        CHECK(count(r, "HTTP/1.1 ") == 1);
        CHECK_THAT(r, !Contains("\"object\":\"list\""));
    }
    // Chunked on a route without a body, or a POST to no route: refused, nothing read (the POST's
    // body comes whole first: the connection gate waits for a POST's body before any route is
    // looked up, and it only peeks).
    {
        Raw raw(s.port);
        REQUIRE(raw.send("DELETE /api/conversations/x HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"));
        CHECK(status_of(raw.read_all(std::chrono::milliseconds(2000))) == 400);
    }
    {
        Raw raw(s.port);
        REQUIRE(raw.send(head("/nowhere", "Transfer-Encoding: chunked\r\n") + "0\r\n\r\n"));
        CHECK(status_of(raw.read_all(std::chrono::milliseconds(2000))) == 404);
    }
    CHECK(s.client().Get("/health")->status == 200);
}

TEST_CASE("serve abuse: slowloris — 400 slow sockets while /health and /readyz still answer", "[integration][server][abuse]") {
    Served s;
    std::vector<std::unique_ptr<Raw>> slow;
    for (int i = 0; i < 400; ++i) {
        slow.push_back(std::make_unique<Raw>(s.port));
        slow.back()->send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n");  // the headers never end
    }
    std::vector<double> ms;
    auto until = Clock::now() + std::chrono::seconds(8);
    int round = 0;
    while (Clock::now() < until) {
        for (size_t i = round % 4; i < slow.size(); i += 4)
            slow[i]->send("X-Slow-" + std::to_string(round) + ": 1\r\n");  // a line a second each
        auto t0 = Clock::now();
        auto health = httplib::Client("127.0.0.1", s.port).Get("/health");
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        REQUIRE(health);
        CHECK(health->status == 200);
        auto ready = s.client().Get("/readyz");
        REQUIRE(ready);
        CHECK(ready->status == 200);
        ++round;
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    std::sort(ms.begin(), ms.end());
    std::fprintf(
        stderr,
        "[figures] slowloris 400 sockets: /health p50 %.1f ms, max %.1f ms over %zu probes; server threads %ld, RSS %ld KiB\n",
        ms[ms.size() / 2], ms.back(), ms.size(), s.threads(), s.rss_kib());
    CHECK(ms.back() < 1000);
    slow.clear();
}

TEST_CASE("serve abuse: 2000 idle sockets and 1100 sending a byte a second hold no thread and /health answers at once",
          "[integration][server][abuse]") {
    Served s("token_env = \"ABUSE_TEST_TOKEN\"\nmax_connections_per_address = 10000\n");
    const long threads_before = s.threads();
    std::vector<std::unique_ptr<Raw>> idle, slow;
    for (int i = 0; i < 2000; ++i) idle.push_back(std::make_unique<Raw>(s.port));
    for (int i = 0; i < 1100; ++i) {
        slow.push_back(std::make_unique<Raw>(s.port));
        slow.back()->send("G");
    }
    std::vector<double> ms;
    auto until = Clock::now() + std::chrono::seconds(6);
    for (int round = 0; Clock::now() < until; ++round) {
        for (auto& raw : slow) raw->send(round % 2 ? "E" : "X");  // a byte a second each, the head never ends
        for (int probe = 0; probe < 4; ++probe) {
            auto t0 = Clock::now();
            auto health = httplib::Client("127.0.0.1", s.port).Get("/health");
            ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
            REQUIRE(health);
            CHECK(health->status == 200);
            std::this_thread::sleep_for(std::chrono::milliseconds(250));
        }
    }
    const long threads = s.threads();
    std::sort(ms.begin(), ms.end());
    std::fprintf(stderr,
                 "[figures] 2,000 idle + 1,100 slow sockets: /health p50 %.1f ms, max %.1f ms over %zu probes; server threads "
                 "%ld → %ld, RSS %ld KiB\n",
                 ms[ms.size() / 2], ms.back(), ms.size(), threads_before, threads, s.rss_kib());
    CHECK(ms.back() < 1000);
    CHECK(threads < threads_before + 20);  // waiting for a head costs no thread
    // Heads that never end are answered 408 by their deadline (10 s), idle sockets too.
    std::string r = slow.front()->read_all(std::chrono::milliseconds(8000));
    CHECK(status_of(r) == 408);
    CHECK(idle.front()->read_all(std::chrono::milliseconds(2000)).find("408") != std::string::npos);
}

TEST_CASE("serve abuse: bodies sent a byte at a time hold no thread, a trickle past the gate is dropped, 100-continue works",
          "[integration][server][abuse]") {
    Served s("token_env = \"ABUSE_TEST_TOKEN\"\nmax_connections = 16\nmax_connections_per_address = 10000\n");
    const long threads_before = s.threads();
    // 300 requests whose heads are whole and whose bodies come a byte a second: with 16 serving
    // threads, a request of another client is answered at once all the same.
    const std::string head = "POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + std::string(kToken) +
                             "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n";
    std::vector<std::unique_ptr<Raw>> slow;
    for (int i = 0; i < 300; ++i) {
        slow.push_back(std::make_unique<Raw>(s.port));
        slow.back()->send(head + "{");
    }
    std::vector<double> ms;
    for (int round = 0; round < 4; ++round) {
        for (auto& raw : slow) raw->send(" ");
        auto t0 = Clock::now();
        auto models = s.client().Get("/v1/models");
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        REQUIRE(models);
        CHECK(models->status == 200);
        std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    }
    const long threads = s.threads();
    std::sort(ms.begin(), ms.end());
    std::fprintf(
        stderr,
        "[figures] 300 bodies a byte a second, 16 serving threads: GET /v1/models max %.1f ms; server threads %ld → %ld\n",
        ms.back(), threads_before, threads);
    CHECK(ms.back() < 1000);
    CHECK(threads < threads_before + 20);  // waiting for a body costs no thread
    // A body that never comes whole is answered 408 by its deadline (10 s after its head). (Only the
    // newest 64 wait: 4 × max_connections, the oldest were closed to make room.)
    std::string r = slow.back()->read_all(std::chrono::milliseconds(9000));
    CHECK(status_of(r) == 408);
    CHECK_THAT(r, Contains("the request's body did not arrive within 10 seconds"));
    slow.clear();

    // Past the gate (its first 256 KiB came at once) the rest must keep coming: a trickle is dropped
    // after the grace of 10 s, and its thread is free again.
    Raw trickle(s.port);
    send_served_stalled(trickle, kToken);
    auto t0 = Clock::now();
    std::string dropped;
    while (Clock::now() - t0 < std::chrono::seconds(25)) {
        if (!trickle.send("x")) break;
        dropped = trickle.read_all(std::chrono::milliseconds(1000));
        pollfd p{trickle.fd, POLLIN | POLLRDHUP, 0};
        if (!dropped.empty() || (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP)))) break;  // answered or closed
    }
    const double held = std::chrono::duration<double>(Clock::now() - t0).count();
    INFO(dropped);
    CHECK(status_of(dropped) == 408);
    CHECK_THAT(dropped, Contains("came too slowly"));
    std::fprintf(stderr, "[figures] a body trickling past the gate held its thread %.1f s\n", held);
    CHECK(held < 20);  // the grace, and a second per 64 KiB that came

    // A client that waits for "100 Continue" before its body gets one, then its answer.
    Raw polite(s.port);
    const std::string body = R"({"messages":[{"role":"user","content":"hello"}],"model":"agenthost"})";
    polite.send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + std::string(kToken) +
                "\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " + std::to_string(body.size()) +
                "\r\n\r\n");
    std::string interim;
    for (int i = 0; i < 30 && interim.find("\r\n\r\n") == std::string::npos; ++i) {
        char buf[256];
        pollfd p{polite.fd, POLLIN, 0};
        if (::poll(&p, 1, 100) > 0) {
            ssize_t n = ::recv(polite.fd, buf, sizeof buf, 0);
            if (n <= 0) break;
            interim.append(buf, static_cast<size_t>(n));
        }
    }
    CHECK(interim.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0) == 0);
    polite.send(body);
    std::string answer = polite.read_all(std::chrono::milliseconds(10000));
    INFO(answer);
    CHECK_THAT(answer, Contains("HTTP/1.1 200"));
    CHECK_THAT(answer, Contains("chat.completion"));
}

TEST_CASE("serve abuse: large bodies sent together stay within max_memory_mb, the rest are told to retry",
          "[integration][server][abuse]") {
    // The budget: 80 MiB over what an idle server holds here (an instrumented build holds far more).
    long idle_kib = 0;
    {
        Served probe;
        idle_kib = probe.rss_kib();
    }
    const long budget_mib = idle_kib / 1024 + 80;
    Served s("token_env = \"ABUSE_TEST_TOKEN\"\nmax_memory_mb = " + std::to_string(budget_mib) + "\n");
    const long peak_before = s.rss_kib("VmHWM:");
    const std::string message(3900 << 10, 'm');
    std::vector<std::thread> clients;
    std::mutex mutex;
    std::map<int, int> statuses;
    std::vector<std::string> refusals;
    for (int i = 0; i < 16; ++i)
        clients.emplace_back([&, i] {
            auto c = s.client();
            c.set_read_timeout(std::chrono::seconds(60));
            auto r = c.Post("/api/chat", json{{"message", message}, {"conversation", "big-" + std::to_string(i)}}.dump(),
                            "application/json");
            std::lock_guard lock(mutex);
            ++statuses[r ? r->status : 0];
            if (r && r->status == 503) refusals.push_back(r->body + " Retry-After: " + r->get_header_value("Retry-After"));
        });
    for (auto& t : clients) t.join();
    const long peak = s.rss_kib("VmHWM:");
    std::fprintf(stderr,
                 "[figures] 16 concurrent 3.9 MiB /api/chat bodies, max_memory_mb = %ld: %d admitted, %d refused 503; server "
                 "peak RSS %ld → %ld KiB\n",
                 budget_mib, statuses[200], statuses[503], peak_before, peak);
    // Each answered, or (under load) reset: a refused client that goes on sending its 3.9 MiB body
    // after the answer is read and dropped for 1 MiB or half a second, then closed.
    CHECK(statuses[200] + statuses[503] + statuses[0] == 16);
    CHECK(statuses[503] >= statuses[0]);
    CHECK(statuses[200] >= 1);
    CHECK(statuses[503] >= 1);
    for (const auto& r : refusals) {
        CHECK_THAT(r, Contains("server_memory_budget") && Contains("max_memory_mb") && Contains("Retry-After: 2"));
    }
#ifndef __SANITIZE_ADDRESS__                 // AddressSanitizer's quarantine and shadow memory are outside what the budget prices
    CHECK(peak < (budget_mib + 16) * 1024);  // within the budget, give or take what is measured between checks
#endif
    CHECK(s.client().Get("/health")->status == 200);
}

TEST_CASE("serve abuse: one address's connections are capped — idle ones go first, then new ones get 503",
          "[integration][server][abuse]") {
    Served s("token_env = \"ABUSE_TEST_TOKEN\"\nmax_connections_per_address = 20\n");
    // 20 idle connections fill the address's share; each new one closes the oldest idle one.
    std::vector<std::unique_ptr<Raw>> idle;
    for (int i = 0; i < 20; ++i) idle.push_back(std::make_unique<Raw>(s.port));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto health = httplib::Client("127.0.0.1", s.port).Get("/health");
    REQUIRE(health);
    CHECK(health->status == 200);
    CHECK(idle.front()->read_all(std::chrono::milliseconds(1000)).empty());  // closed without an answer
    idle.clear();
    // 20 requests being served (the rest of their bodies never comes) leave no idle one to close:
    // a new connection is refused with a clear answer, and /health works again once they end.
    std::vector<std::unique_ptr<Raw>> busy;
    for (int i = 0; i < 20; ++i) {
        busy.push_back(std::make_unique<Raw>(s.port));
        send_served_stalled(*busy.back(), kToken, true);
    }
    // Under load the server may not have read every head yet, and a connection whose head is still
    // unread counts as idle: wait until each has been told to continue.
    for (auto& b : busy) REQUIRE_THAT(b->read_all(std::chrono::milliseconds(10000), "100 Continue"), Contains("100 Continue"));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Raw extra(s.port);
    extra.send("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + std::string(kToken) + "\r\n\r\n");
    std::string refused = extra.read_all(std::chrono::milliseconds(3000));
    INFO(refused);
    CHECK(status_of(refused) == 503);
    CHECK_THAT(refused, Contains("too_many_connections"));
    CHECK_THAT(refused, Contains("max_connections_per_address"));
    CHECK_THAT(refused, Contains("Retry-After: 1"));
    // A probe from the same address is answered all the same: one client holding the address's
    // share cannot fail another's health check.
    for (const char* probe : {"/health", "/readyz"}) {
        Raw raw(s.port);
        raw.send(std::string("GET ") + probe + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        CHECK(status_of(raw.read_all(std::chrono::milliseconds(3000))) == 200);
    }
    busy.clear();
    bool answered = false;
    for (int i = 0; i < 100 && !answered; ++i) {
        auto again = httplib::Client("127.0.0.1", s.port).Get("/health");
        answered = again && again->status == 200;
        if (!answered) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK(answered);
}

TEST_CASE("serve abuse: with every serving thread busy, /health and /readyz are still answered", "[integration][server][abuse]") {
    Served s("token_env = \"ABUSE_TEST_TOKEN\"\nmax_connections = 16\n");
    std::vector<std::unique_ptr<Raw>> busy;
    for (int i = 0; i < 24; ++i) {  // 16 served, 8 queued behind them
        busy.push_back(std::make_unique<Raw>(s.port));
        send_served_stalled(*busy.back(), kToken);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (const char* path : {"/health", "/readyz"}) {
        auto t0 = Clock::now();
        auto r = s.client().Get(path);
        REQUIRE(r);
        CHECK(r->status == 200);
        CHECK(Clock::now() - t0 < std::chrono::seconds(1));
    }
}

TEST_CASE("serve abuse: full run slots answer 429 with Retry-After at once, and /health still answers",
          "[integration][server][abuse]") {
    Served s("token_env = \"ABUSE_TEST_TOKEN\"\nmax_concurrent_runs = 1\nmax_waiting_runs = 1\n");
    json first = s.post("/api/chat", {{"message", "slow please"}, {"conversation", "a"}}, 200);
    // The second waits for the slot (it holds its request); the rest are answered at once.
    std::atomic<int> second_status{0};
    std::thread second([&] {
        second_status = s.client()
                            .Post("/api/chat", json{{"message", "please add"}, {"conversation", "b"}}.dump(), "application/json")
                            ->status;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::vector<std::thread> crowd;
    std::atomic<int> refused{0}, slow_answers{0};
    for (int i = 0; i < 20; ++i)
        crowd.emplace_back([&, i] {
            auto t0 = Clock::now();
            auto r = s.client().Post("/api/chat",
                                     json{{"message", "please add"}, {"conversation", "crowd-" + std::to_string(i)}}.dump(),
                                     "application/json");
            if (r && r->status == 429 && r->get_header_value("Retry-After") == "1" &&
                r->get_header_value("x-should-retry") == "true" && json::parse(r->body)["error"]["code"] == "too_many_runs")
                ++refused;
            if (Clock::now() - t0 > std::chrono::seconds(2)) ++slow_answers;
        });
    for (auto& t : crowd) t.join();
    CHECK(refused == 20);
    CHECK(slow_answers == 0);
    auto t0 = Clock::now();
    CHECK(s.client().Get("/health")->status == 200);
    CHECK(Clock::now() - t0 < std::chrono::seconds(1));
    s.post("/api/runs/" + std::to_string(first["run"].get<int64_t>()) + "/cancel", json::object(), 202);
    second.join();
    CHECK(second_status == 200);
    CHECK(s.runs().size() == 2);  // the slow one and the one that waited; none of the refused
}

TEST_CASE("serve abuse: provider errors map like OpenAI's API, the openai client's default retries make exactly one run each",
          "[peer][server][abuse]") {
    Served s;
    const std::vector<std::string> kinds{"auth-fail", "rate-fail", "model-fail", "context-fail", "outage-fail", "timeout-fail"};
    auto r = test::run_command("node '" + std::string(test::source_dir()) + "/tests/peers/openai_errors.mjs' " + s.url() + " " +
                               kToken + " '" + json(kinds).dump() + "'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    json out = json::parse(r.out);
    INFO(out.dump(2));
    json expected{{"auth-fail", {401, "provider_auth", "AuthenticationError"}},
                  {"rate-fail", {429, "rate_limit_exceeded", "RateLimitError"}},
                  {"model-fail", {404, "model_not_found", "NotFoundError"}},
                  {"context-fail", {400, "context_length_exceeded", "BadRequestError"}},
                  {"outage-fail", {502, "provider_unavailable", "InternalServerError"}},
                  {"timeout-fail", {504, "provider_timeout", "InternalServerError"}}};
    for (const auto& kind : kinds) {
        json seen = out["obeying"][kind];
        CHECK(seen["status"] == expected[kind][0]);
        CHECK(seen["code"] == expected[kind][1]);
        CHECK(seen["name"] == expected[kind][2]);
        CHECK(seen["should_retry"] == "false");
        CHECK(seen["attempts"] == 1);  // x-should-retry: false kept the client from retrying
        // A client that ignores x-should-retry retries with the request's Idempotency-Key: same answer, no new run.
        json ignoring = out["ignoring"][kind];
        CHECK(ignoring["status"] == expected[kind][0]);
        CHECK(ignoring["keys"] == 1);  // one key for the request and all its retries
        CHECK(ignoring["key"].is_string());
    }
    CHECK(out["obeying"]["rate-fail"]["retry_after"] == "30");
    CHECK(out["ignoring"]["outage-fail"]["attempts"] == 3);       // it did retry …
    CHECK(out["ignoring"]["outage-fail"]["replayed"] == "true");  // … and got the first run's outcome
    json runs = s.runs();
    CHECK(runs.size() == kinds.size() * 2);  // exactly one run per request, whatever the retries
    std::map<std::string, int> per_prompt;
    for (const auto& run : runs) ++per_prompt[run["prompt"].get<std::string>()];
    for (const auto& kind : kinds) CHECK(per_prompt[kind] == 2);  // one per pass

    // The /api route's run ends with the same error code.
    json failed = s.post("/api/chat", {{"message", "auth-fail"}}, 200);
    json ended = s.wait_run(failed["run"], {"failed"});
    CHECK(ended["error_code"] == "PROVIDER_AUTH");
}

TEST_CASE("serve abuse: a repeated Idempotency-Key returns the first run's outcome, 409 while it runs, 422 with another body",
          "[integration][server][abuse]") {
    Served s;
    auto c = s.client();
    json ask{{"model", "agenthost"}, {"messages", json::array({{{"role", "user"}, {"content", "please add"}}})}};
    auto first = c.Post("/v1/chat/completions", {{"Idempotency-Key", "k-1"}}, ask.dump(), "application/json");
    REQUIRE(first);
    REQUIRE(first->status == 200);
    auto again = c.Post("/v1/chat/completions", {{"Idempotency-Key", "k-1"}}, ask.dump(), "application/json");
    REQUIRE(again);
    CHECK(again->status == 200);
    CHECK(again->get_header_value("Idempotent-Replayed") == "true");
    CHECK(json::parse(again->body)["id"] == json::parse(first->body)["id"]);
    CHECK(json::parse(again->body)["choices"][0]["message"]["content"] == "2 + 3 = 5.");
    json other = ask;
    other["messages"][0]["content"] = "please add again";
    auto reused = c.Post("/v1/chat/completions", {{"Idempotency-Key", "k-1"}}, other.dump(), "application/json");
    CHECK(reused->status == 422);
    CHECK(json::parse(reused->body)["error"]["code"] == "idempotency_key_reused");
    CHECK(s.runs().size() == 1);

    // While the first request's run goes on: 409 with Retry-After; afterwards its outcome.
    json steps{{"model", "agenthost"}, {"messages", json::array({{{"role", "user"}, {"content", "two steps"}}})}};
    std::string first_steps;
    std::thread running([&] {
        first_steps =
            s.client().Post("/v1/chat/completions", {{"Idempotency-Key", "k-2"}}, steps.dump(), "application/json")->body;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto busy = c.Post("/v1/chat/completions", {{"Idempotency-Key", "k-2"}}, steps.dump(), "application/json");
    CHECK(busy->status == 409);
    CHECK(busy->get_header_value("Retry-After") == "1");
    CHECK_FALSE(busy->has_header("Idempotent-Replayed"));  // nothing was replayed
    CHECK(json::parse(busy->body)["error"]["code"] == "idempotency_key_in_progress");
    running.join();
    auto done = c.Post("/v1/chat/completions", {{"Idempotency-Key", "k-2"}}, steps.dump(), "application/json");
    CHECK(done->status == 200);
    CHECK(json::parse(done->body)["id"] == json::parse(first_steps)["id"]);
    CHECK(json::parse(done->body)["choices"][0]["message"]["content"] == "two steps done");
    // A streamed request repeated: the first run's answer as a stream.
    json streamed = steps;
    streamed["stream"] = true;
    streamed["messages"][0]["content"] = "please add";
    auto s1 = c.Post("/v1/chat/completions", {{"Idempotency-Key", "k-3"}}, streamed.dump(), "application/json");
    auto s2 = c.Post("/v1/chat/completions", {{"Idempotency-Key", "k-3"}}, streamed.dump(), "application/json");
    CHECK_THAT(s1->body, Contains("data: [DONE]"));
    CHECK_THAT(s2->body, Contains("2 + 3 = 5.") && Contains("data: [DONE]"));
    CHECK(s2->get_header_value("Idempotent-Replayed") == "true");

    // /api/chat: the same key names the same run.
    auto a1 = c.Post("/api/chat", {{"Idempotency-Key", "k-4"}}, json{{"message", "please add"}}.dump(), "application/json");
    auto a2 = c.Post("/api/chat", {{"Idempotency-Key", "k-4"}}, json{{"message", "please add"}}.dump(), "application/json");
    CHECK(a1->status == 200);
    CHECK(a2->status == 200);
    CHECK(json::parse(a1->body)["run"] == json::parse(a2->body)["run"]);
    s.wait_run(json::parse(a1->body)["run"], {"completed"});
    CHECK(s.runs().size() == 4);  // add, two steps, the stream, the chat: no repeat started one
}

TEST_CASE("serve abuse: a run's kept events stay within run_events_mb, a reader who missed some gets one gap",
          "[integration][server][abuse]") {
    agenthost::server::RunChannel channel("c", 64 << 10);  // 64 KiB
    std::string piece(1000, 'x');
    for (uint64_t seq = 1; seq <= 1000; ++seq) channel.push({seq, "token", json{{"seq", seq}, {"text", piece}}.dump()});
    CHECK(channel.bytes() <= (64u << 10));  // ~1 MB pushed, 64 KiB kept
    bool done = false;
    auto from_start = channel.after(0, std::chrono::milliseconds(0), done);
    REQUIRE(from_start.size() > 10);
    CHECK(from_start[0].name == "gap");  // what was dropped is named, never silently skipped
    json gap = json::parse(from_start[0].data);
    CHECK(gap["from"] == 1);
    CHECK(gap["to"].get<uint64_t>() + 1 == from_start[1].seq);
    CHECK(from_start[0].seq == gap["to"].get<uint64_t>());  // Last-Event-ID moves past the gap
    CHECK(from_start.back().seq == 1000);
    for (size_t i = 2; i < from_start.size(); ++i) CHECK(from_start[i].seq == from_start[i - 1].seq + 1);  // no hole after it
    // A reader that kept up gets no gap.
    auto recent = channel.after(995, std::chrono::milliseconds(0), done);
    REQUIRE(recent.size() == 5);
    CHECK(recent[0].name == "token");
    // One event bigger than the whole budget is still delivered (the newest always stays).
    channel.push({1001, "tool_result", std::string(200 << 10, 'y')});
    auto last = channel.after(1000, std::chrono::milliseconds(0), done);
    REQUIRE(last.size() == 1);
    CHECK(last[0].seq == 1001);
}

TEST_CASE("serve: a run continued after a restart tells a reader of the events sent before it, once",
          "[integration][server][abuse]") {
    // A run resumed after a crash numbers its events past every id its dead process may have sent
    // (a block per recovery); the ids before are in no channel of this process.
    agenthost::server::RunChannel channel("c", 1 << 20);
    const uint64_t first = 1'000'000'001;
    for (uint64_t seq = first; seq < first + 3; ++seq) channel.push({seq, "token", json{{"text", "t"}}.dump()});
    bool done = false;
    auto fresh = channel.after(0, std::chrono::milliseconds(0), done);
    REQUIRE(fresh.size() == 4);
    CHECK(fresh[0].name == "gap");
    json gap = json::parse(fresh[0].data);
    CHECK(gap["from"] == 1);
    // The ids just before the first are the last ending's (an error, an end): superseded by the
    // continuation, never a reason for a gap.
    CHECK(gap["to"] == first - 1 - agenthost::agent::kEndingEvents);
    CHECK_THAT(gap["message"].get<std::string>(), Catch::Contains("before the run was resumed"));
    CHECK(fresh[1].seq == first);
    // A reader reconnecting with the last id it saw before the crash gets the gap, then the rest.
    auto reconnect = channel.after(15, std::chrono::milliseconds(0), done);
    REQUIRE(reconnect.size() == 4);
    CHECK(json::parse(reconnect[0].data)["from"] == 16);
    // One that already read past the gap gets none.
    CHECK(channel.after(first, std::chrono::milliseconds(0), done).size() == 2);
    // Nor one that saw everything up to the last ending (its error event, or its end): after a
    // shutdown the server resumes the run and such a reader missed nothing.
    CHECK(channel.after(first - 2, std::chrono::milliseconds(0), done).size() == 3);
    CHECK(channel.after(first - 3, std::chrono::milliseconds(0), done).size() == 3);
    CHECK(channel.after(first - 4, std::chrono::milliseconds(0), done).size() == 4);
    // A new run's channel starts at 1: no gap.
    agenthost::server::RunChannel plain("d", 1 << 20);
    plain.push({1, "token", "{}"});
    auto all = plain.after(0, std::chrono::milliseconds(0), done);
    REQUIRE(all.size() == 1);
    CHECK(all[0].name == "token");
}

TEST_CASE("serve abuse: wide JSON is refused unparsed, control characters in headers are refused and never logged raw",
          "[integration][server][abuse]") {
    Served s;
    // 4 MiB of empty objects would take over 100 MiB parsed: refused by its value count, memory flat.
    std::string wide = "[";
    while (wide.size() < (3u << 20)) wide += "{},";
    wide += "{}]";
    long before = s.rss_kib("VmHWM:");
    for (const char* path : {"/api/chat", "/v1/chat/completions", "/memory/clear-session"}) {
        auto r = s.client().Post(path, wide, "application/json");
        REQUIRE(r);
        INFO(path << " → " << r->body);
        CHECK(r->status == 400);
        CHECK_THAT(r->body, Contains("json_too_many_values") && Contains("100000 values"));
    }
    auto rpc = s.client().Post("/mcp", wide, "application/json");
    REQUIRE(rpc);
    CHECK(rpc->status == 400);
    CHECK_THAT(rpc->body, Contains("-32700") && Contains("100000 values"));
    CHECK(s.rss_kib("VmHWM:") - before < 40 * 1024);  // the bodies themselves, never their parsed form
    // A wide object that fits (a real request's size) is still read.
    s.post("/api/chat", {{"message", "please add"}, {"context", {{"a", 1}, {"b", 2}}}}, 200);

    // The parser's message names the place, not the library.
    auto broken = s.client().Post("/api/chat", R"({"message":"hi"} xyz)", "application/json");
    REQUIRE(broken);
    CHECK(broken->status == 400);
    CHECK_THAT(broken->body, Contains("line 1, column") && !Contains("json.exception"));

    // A NUL or a line break in a header the server decides on is refused, and logs stay one line each.
    for (const std::string& header :
         {std::string("Authorization: Bearer ") + kToken + "%00garbage", std::string("Host: evil%0aFORGED-LINE"),
          std::string("Origin: https://x.example%0ainfo FORGED-LINE%1b[31m")}) {
        Raw raw(s.port);
        std::string host = header.rfind("Host:", 0) == 0 ? "" : "Host: 127.0.0.1\r\n";
        REQUIRE(raw.send("POST /api/chat HTTP/1.1\r\n" + host + header +
                         "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"));
        std::string response = raw.read_all(std::chrono::milliseconds(3000));
        INFO(header << " → " << response);
        CHECK((status_of(response) == 400 || status_of(response) == 401 || status_of(response) == 403 ||
               status_of(response) == 421));
        CHECK(status_of(response) != 200);
    }
    std::string log = s.log();
    CHECK_THAT(log, !Contains("\nFORGED-LINE") && !Contains("\ninfo FORGED-LINE") && !Contains("\x1b[31m"));

    // What no route answers, in words.
    auto nowhere = s.client().Get("/api/runs/2/approve");
    REQUIRE(nowhere);
    CHECK(nowhere->status == 404);
    CHECK_THAT(nowhere->body, Contains("no route GET /api/runs/2/approve"));
    Raw raw(s.port);
    REQUIRE(raw.send("GET /health?x=a?b HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));  // an unencoded ? in a value
    std::string malformed = raw.read_all(std::chrono::milliseconds(3000));
    CHECK(status_of(malformed) == 400);
    CHECK_THAT(malformed, Contains("malformed_request") && !Contains("\"HTTP 400\""));
    // A run id is a run id: not rounded, padded or clamped into another run.
    for (const char* query : {"1.5", "+1", "01", "-1"}) {
        auto r = s.client().Get(std::string("/api/chat?run=") + query);
        REQUIRE(r);
        INFO(query << " → " << r->body);
        CHECK(r->status == 400);
        CHECK_THAT(r->body, Contains("invalid_run"));
    }
    auto huge = s.client().Get("/api/runs/99999999999999999999");
    REQUIRE(huge);
    CHECK(huge->status == 404);
    CHECK_THAT(huge->body, Contains("there is no run 99999999999999999999"));
    CHECK(s.client().Get("/api/runs/01")->status == 404);
    // A cross-site request without an Origin is refused naming what gave it away; /mcp names its own setting.
    auto cross = s.client().Post("/api/chat", {{"Sec-Fetch-Site", "cross-site"}}, "{}", "application/json");
    REQUIRE(cross);
    CHECK(cross->status == 403);
    CHECK_THAT(cross->body, Contains("Sec-Fetch-Site"));
    auto mcp = s.client().Post("/mcp", {{"Origin", "https://evil.example"}}, "{}", "application/json");
    REQUIRE(mcp);
    CHECK(mcp->status == 403);
    CHECK_THAT(mcp->body, Contains("[mcp] allowed_origins"));
}

TEST_CASE("serve abuse: header floods are refused 431 before parsing, with no token, and memory stays flat",
          "[integration][server][abuse]") {
    Served s;
    auto head_with = [](size_t fields, size_t field_bytes) {
        std::string head = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
        std::string value(field_bytes, 'v');
        for (size_t i = 0; i < fields; ++i) head += "X-F" + std::to_string(i) + ": " + value + "\r\n";
        return head + "\r\n";
    };
    // 100 header lines are fine (with Host: 101 is one too many).
    {
        Raw ok(s.port);
        REQUIRE(ok.send(head_with(99, 10)));
        CHECK_THAT(ok.read_all(), Contains("HTTP/1.1 200"));
    }
    for (size_t fields : {101u, 10000u}) {
        INFO(fields << " headers");
        Raw flood(s.port);
        flood.send(head_with(fields, 10));
        std::string reply = flood.read_all();
        CHECK_THAT(reply, Contains("HTTP/1.1 431") && Contains("headers_too_large") && Contains("header lines"));
    }
    {
        Raw big(s.port);  // one 70 KiB header
        big.send(head_with(1, 70 << 10));
        CHECK_THAT(big.read_all(), Contains("HTTP/1.1 431") && Contains("KiB"));
    }
    {
        Raw line(s.port);  // one 9 KB header line: past what the HTTP library reads (it said 400 malformed_request)
        line.send(head_with(1, 9000));
        CHECK_THAT(line.read_all(), Contains("HTTP/1.1 431") && Contains("header line"));
    }
    // 100 parallel floods of 100,000 headers (1.4 MB each): each refused; the server's peak grows by
    // what it peeks (64 KiB a connection), never by what the library would have kept.
    long peak_before = s.rss_kib("VmHWM:");
    std::atomic<int> refused{0};
    std::vector<std::thread> floods;
    const std::string huge = head_with(100000, 2);
    for (int i = 0; i < 100; ++i)
        floods.emplace_back([&] {
            Raw c(s.port);
            c.send(huge);
            if (c.read_all().find("HTTP/1.1 431") != std::string::npos) ++refused;
        });
    for (auto& t : floods) t.join();
    long peak_after = s.rss_kib("VmHWM:");
    std::fprintf(
        stderr,
        "[figures] 100 parallel floods of 100,000 headers (%zu KB each): %d answered 431; server peak RSS %ld -> %ld KiB\n",
        huge.size() >> 10, refused.load(), peak_before, peak_after);
    CHECK(refused.load() >= 95);  // a client may see its reset before the answer when the kernel drops its unread bytes
    CHECK(peak_after - peak_before < 50 * 1024);
    CHECK_THAT(s.log(), Contains("request refused before parsing: too_many_headers"));
    // Still serving.
    auto health = s.client().Get("/health");
    REQUIRE(health);
    CHECK(health->status == 200);
}

TEST_CASE("serve abuse: a head that never ends is answered 408, and the server goes on", "[integration][server][abuse]") {
    Served s;
    Raw slow(s.port);
    REQUIRE(slow.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
    auto started = Clock::now();
    // A byte every second keeps the library's between-bytes timeout from firing: the whole head has
    // a deadline of its own (10 s).
    std::string reply;
    for (int i = 0; i < 14 && reply.empty(); ++i) {
        slow.send("X");
        reply = slow.read_all(std::chrono::milliseconds(1000));
    }
    double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    CHECK_THAT(reply, Contains("HTTP/1.1 408") && Contains("request_timeout"));
    // Written by the connection gate, it carries the headers every answer carries all the same.
    for (const char* header : {"X-Content-Type-Options: nosniff", "Referrer-Policy: no-referrer", "X-Frame-Options: DENY",
                               "Cross-Origin-Resource-Policy: same-origin", "Content-Security-Policy: default-src 'none'"})
        CHECK_THAT(reply, Contains(header));
    CHECK(seconds < 13);
    CHECK(s.client().Get("/health")->status == 200);
}

TEST_CASE("serve abuse: a body is read one way: a key given twice or a NUL byte after the value is refused",
          "[integration][server][abuse]") {
    Served s;
    auto send = [&](const std::string& body) {
        auto r = s.client().Post("/api/chat", body, "application/json");
        REQUIRE(r);
        return std::make_pair(r->status, r->body);
    };
    auto [dup_status, dup_body] = send(R"({"message":"hello","message":"destroy"})");
    CHECK(dup_status == 400);
    CHECK_THAT(dup_body, Contains("duplicate_key") && Contains("\\\"message\\\" appears twice"));
    auto [nul_status, nul_body] = send(std::string(R"({"message":"hello"})") + '\0' + R"({"message":"destroy"})");
    CHECK(nul_status == 400);
    CHECK_THAT(nul_body, Contains("invalid_json") && Contains("NUL byte"));
    // Nothing ran.
    CHECK(s.runs().empty());
    // The same on /mcp: a parse error, never a call.
    httplib::Headers mcp_headers{{"Accept", "application/json, text/event-stream"}};
    auto cli = s.client();
    auto mcp = cli.Post(
        "/mcp", mcp_headers,
        std::string(R"({"jsonrpc":"2.0","id":1,"method":"ping"})") + '\0' + R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})",
        "application/json");
    REQUIRE(mcp);
    CHECK(mcp->status == 400);
    CHECK_THAT(mcp->body, Contains("-32700"));
}

TEST_CASE("serve abuse: a client that leaves takes its work with it", "[integration][server][abuse]") {
    Served s("token_env = \"ABUSE_TEST_TOKEN\"\nmax_concurrent_runs = 1\nmax_waiting_runs = 8\n");
    json first = s.post("/api/chat", {{"message", "slow please"}, {"conversation", "a"}}, 200);
    // Six requests wait for the slot, and their clients give up; one more waits and stays.
    auto request = [&](const std::string& path, const json& body) {
        std::string text = body.dump();
        return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + std::string(kToken) +
               "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text;
    };
    std::vector<std::unique_ptr<Raw>> leaving;
    for (int i = 0; i < 3; ++i) {
        leaving.push_back(std::make_unique<Raw>(s.port));
        leaving.back()->send(request("/api/chat", {{"message", "please add"}, {"conversation", "gone-" + std::to_string(i)}}));
        leaving.push_back(std::make_unique<Raw>(s.port));
        leaving.back()->send(request("/v1/chat/completions", {{"model", "agenthost"},
                                                              {"conversation", "gone-c-" + std::to_string(i)},
                                                              {"messages", {{{"role", "user"}, {"content", "please add"}}}}}));
    }
    std::atomic<int> staying_status{0};
    std::thread staying([&] {
        staying_status =
            s.client()
                .Post("/api/chat", json{{"message", "please add"}, {"conversation", "stays"}}.dump(), "application/json")
                ->status;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK_THAT(s.client().Get("/metrics")->body, Contains("agenthost_runs_waiting 7"));
    leaving.clear();  // they give up
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    // Their places and their requests go at once, not when the slot frees: only the one that stayed waits.
    CHECK_THAT(s.client().Get("/metrics")->body, Contains("agenthost_runs_waiting 1"));
    s.post("/api/runs/" + std::to_string(first["run"].get<int64_t>()) + "/cancel", json::object(), 202);
    staying.join();
    CHECK(staying_status == 200);
    // Let any abandoned request that would still start do so.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    json runs = s.runs();
    std::vector<std::string> conversations;
    for (const auto& r : runs) conversations.push_back(r["conversation"]);
    INFO(runs.dump());
    CHECK(runs.size() == 2);  // the slow one and the one whose client stayed; none of the six that left
    CHECK(std::count(conversations.begin(), conversations.end(), "stays") == 1);

    // A completion whose client leaves mid-run without an Idempotency-Key is cancelled, streamed
    // or not (a stream's client is seen leaving while no event is written); one with a key goes on.
    for (int variant : {0, 1, 2}) {
        const bool keyed = variant == 1, stream = variant == 2;
        INFO((keyed ? "with a key" : stream ? "streamed, without a key" : "without a key"));
        std::string conversation = keyed ? "keyed-slow" : stream ? "stream-slow" : "plain-slow";
        auto raw = std::make_unique<Raw>(s.port);
        std::string text = json{{"model", "agenthost"},
                                {"conversation", conversation},
                                {"stream", stream},
                                {"messages", {{{"role", "user"}, {"content", "slow please"}}}}}
                               .dump();
        raw->send("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + std::string(kToken) +
                  "\r\nContent-Type: application/json\r\n" + (keyed ? "Idempotency-Key: k-slow\r\n" : "") +
                  "Content-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text);
        int64_t run = 0;
        for (int i = 0; i < 100 && run == 0; ++i) {
            for (const auto& r : s.runs())
                if (r["conversation"] == conversation) run = r["id"];
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        REQUIRE(run != 0);
        raw.reset();  // the client leaves
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        json state = s.get("/api/runs/" + std::to_string(run));
        if (keyed) {
            CHECK(state["status"] == "running");
            s.post("/api/runs/" + std::to_string(run) + "/cancel", json::object(), 202);
        } else {
            CHECK(state["status"] == "cancelled");
        }
    }
}

TEST_CASE("serve abuse: /mcp refuses null and fractional request ids with a 400, and counts its tool calls",
          "[integration][server][abuse]") {
    Served s;
    httplib::Headers headers{{"Accept", "application/json, text/event-stream"}, {"MCP-Protocol-Version", "2026-07-28"}};
    auto cli = s.client();
    for (const std::string id : {"null", "1.5", "1180591620717411303424", "1e308"}) {
        INFO("id " << id);
        auto r = cli.Post("/mcp", headers, R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"ping"})", "application/json");
        REQUIRE(r);
        CHECK(r->status == 400);
        CHECK_THAT(r->body, Contains("-32600") && Contains("string or an integer"));
    }
    auto ok = cli.Post("/mcp", headers, R"({"jsonrpc":"2.0","id":7,"method":"ping"})", "application/json");
    REQUIRE(ok);
    CHECK(ok->status == 200);
    // A session, as MCP clients make one, then a call in it.
    httplib::Headers plain{{"Accept", "application/json, text/event-stream"}};
    auto init = cli.Post("/mcp", plain,
                         R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
                         R"("capabilities":{},"clientInfo":{"name":"t","version":"1"}}})",
                         "application/json");
    REQUIRE(init);
    REQUIRE(init->status == 200);
    plain.emplace("Mcp-Session-Id", init->get_header_value("Mcp-Session-Id"));
    cli.Post("/mcp", plain, R"({"jsonrpc":"2.0","method":"notifications/initialized"})", "application/json");
    auto call = cli.Post("/mcp", plain,
                         R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})",
                         "application/json");
    REQUIRE(call);
    CHECK(call->status == 200);
    INFO(call->body);
    auto metrics = cli.Get("/metrics");
    REQUIRE(metrics);
    CHECK_THAT(metrics->body, Contains("agenthost_tool_calls_total{tool=\"echo\",outcome=\"ok\"} 1"));
}
