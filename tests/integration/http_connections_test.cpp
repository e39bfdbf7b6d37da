// Kept HTTP connections (plugins/http_client.hpp): a plugin instance's requests to one origin skip
// the handshakes, but never at the price of a wrong answer, a request sent twice that must not be,
// or a wait longer than the request's own deadline. Against tests/support/raw_http_server.hpp,
// whose answers say which connection carried them ("c1" for the first one accepted).
#include "plugins/http_client.hpp"
#include "support/raw_http_server.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <future>
#include <thread>

using namespace agenthost;
using nlohmann::json;
using Answer = test::RawHttpServer::Answer;
using After = test::RawHttpServer::After;

namespace {

struct Got {
    ah_status status = AH_OK;
    int code = 0;
    std::string body;
};

struct Ask {
    std::string method = "GET";
    uint32_t flags = 0;
    uint32_t timeout_ms = 0;
    std::string resolve_to;
    std::string body;
};

Ask post(uint32_t flags = 0) {
    Ask how;
    how.method = "POST";
    how.flags = flags;
    return how;
}
Ask within(uint32_t timeout_ms) {
    Ask how;
    how.timeout_ms = timeout_ms;
    return how;
}
Ask pinned_to(std::string address) {
    Ask how;
    how.resolve_to = std::move(address);
    return how;
}

Got ask(plugins::KeptConnections& kept, const std::string& url, const Ask& how = {}) {
    Got got;
    plugins::HttpCallbacks callbacks;
    callbacks.on_head = [&](int32_t code, std::string_view) {
        got.code = code;
        return AH_OK;
    };
    callbacks.on_body = [&](std::string_view chunk) {
        got.body.append(chunk);
        return AH_OK;
    };
    ah_http_request request{};
    request.struct_size = sizeof request;
    request.method = {how.method.data(), how.method.size()};
    request.url = {url.data(), url.size()};
    request.flags = how.flags;
    request.timeout_ms = how.timeout_ms;
    request.resolve_to = {how.resolve_to.data(), how.resolve_to.size()};
    request.body = {how.body.data(), how.body.size()};
    got.status = plugins::http_perform(request, callbacks, &kept);
    return got;
}

// Answers with the connection's name; `path` decides the rest.
test::RawHttpServer::Handler by_path(std::function<Answer(const test::RawHttpServer::Request&, Answer)> tweak) {
    return [tweak](const test::RawHttpServer::Request& r) { return tweak(r, Answer{"c" + std::to_string(r.connection)}); };
}

test::RawHttpServer::Handler plain() {
    return by_path([](const auto&, Answer a) { return a; });
}

bool has_path(const test::RawHttpServer::Request& r, const std::string& path) {
    return r.head.find(" " + path + " ") != std::string::npos;
}

}  // namespace

TEST_CASE("kept connections: one origin's requests that may be sent twice share a connection", "[integration][http]") {
    test::RawHttpServer server(plain());
    plugins::KeptConnections kept;
    CHECK(ask(kept, server.url("/a")).body == "c1");
    CHECK(ask(kept, server.url("/b")).body == "c1");
    CHECK(ask(kept, server.url("/c"), post(AH_HTTP_REPLAYABLE)).body == "c1");
    // A POST not marked replayable never rides on a kept connection (libcurl would send it again
    // on a new one if the kept one turned out closed), but the connection it opened is kept.
    CHECK(ask(kept, server.url("/d"), post()).body == "c2");
    CHECK(ask(kept, server.url("/e")).body == "c2");
    CHECK(ask(kept, server.url("/f")).body == "c2");
    CHECK(server.connections_accepted() == 2);
    // A pool of its own: another instance's requests open their own connection.
    plugins::KeptConnections other;
    CHECK(ask(other, server.url("/g")).body == "c3");
}

TEST_CASE("kept connections: two requests in flight never share one", "[integration][http]") {
    test::RawHttpServer server(by_path([](const auto& r, Answer a) {
        if (has_path(r, "/slow")) std::this_thread::sleep_for(std::chrono::milliseconds(300));
        return a;
    }));
    plugins::KeptConnections kept;
    CHECK(ask(kept, server.url("/warm")).body == "c1");
    auto first = std::async(std::launch::async, [&] { return ask(kept, server.url("/slow")); });
    auto second = std::async(std::launch::async, [&] { return ask(kept, server.url("/slow")); });
    Got a = first.get(), b = second.get();
    CHECK(a.status == AH_OK);
    CHECK(b.status == AH_OK);
    CHECK(a.body != b.body);
    CHECK(server.connections_accepted() == 2);
    // Both came back: the next requests find them, and open nothing.
    CHECK(ask(kept, server.url("/after")).status == AH_OK);
    CHECK(ask(kept, server.url("/after")).status == AH_OK);
    CHECK(server.connections_accepted() == 2);
}

TEST_CASE("kept connections: bytes a server sent after its answer never become the next answer", "[integration][http]") {
    test::RawHttpServer server(by_path([](const auto& r, Answer a) {
        if (r.connection == 1) a.after = After::stray_bytes;  // a whole second answer, unasked
        return a;
    }));
    plugins::KeptConnections kept;
    CHECK(ask(kept, server.url("/first")).body == "c1");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the stray answer arrives while idle
    Got next = ask(kept, server.url("/second"));
    CHECK(next.status == AH_OK);
    CHECK(next.body == "c2");
    CHECK(ask(kept, server.url("/third")).body == "c2");
}

TEST_CASE("kept connections: one that went silent costs the request its own deadline, not more", "[integration][http]") {
    test::RawHttpServer server(by_path([](const auto& r, Answer a) {
        if (r.connection == 1) a.after = After::go_silent;  // as if a middlebox dropped it
        return a;
    }));
    plugins::KeptConnections kept;
    CHECK(ask(kept, server.url("/first")).body == "c1");
    auto start = std::chrono::steady_clock::now();
    CHECK(ask(kept, server.url("/lost"), within(1000)).status == AH_ERR_TIMEOUT);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));  // the default would be 600 s
    // The failed request's connection is not kept: the retry opens a new one and is answered.
    CHECK(ask(kept, server.url("/retry"), within(1000)).body == "c2");
}

TEST_CASE("kept connections: a retry after 429 or 5xx starts on a new connection", "[integration][http]") {
    test::RawHttpServer server(by_path([](const auto& r, Answer a) {
        if (has_path(r, "/busy")) a.status = 429;
        if (has_path(r, "/broken")) a.status = 503;
        return a;
    }));
    plugins::KeptConnections kept;
    CHECK(ask(kept, server.url("/busy")).code == 429);
    CHECK(ask(kept, server.url("/ok")).body == "c2");
    CHECK(ask(kept, server.url("/broken")).code == 503);
    CHECK(ask(kept, server.url("/ok")).body == "c3");
    CHECK(ask(kept, server.url("/ok")).body == "c3");  // a 200 leaves it kept
}

TEST_CASE("kept connections: closed by the server, pinned, or after the instance went", "[integration][http]") {
    test::RawHttpServer server(by_path([](const auto& r, Answer a) {
        if (has_path(r, "/bye")) a.after = After::close;
        return a;
    }));
    plugins::KeptConnections kept;
    CHECK(ask(kept, server.url("/bye")).body == "c1");
    Got after_close = ask(kept, server.url("/x"));  // not an error: a new connection
    CHECK(after_close.status == AH_OK);
    CHECK(after_close.body == "c2");
    // A request pinned to an address gets a connection of its own, never kept.
    CHECK(ask(kept, server.url("/pinned"), pinned_to("127.0.0.1")).body == "c3");
    CHECK(ask(kept, server.url("/x")).body == "c2");
    // The instance is destroyed: its connections close and none is kept any more.
    kept.close();
    CHECK(ask(kept, server.url("/x")).body == "c4");
    CHECK(ask(kept, server.url("/x")).body == "c5");
}

TEST_CASE("kept connections: one idle past the limit is closed then, not at the next request", "[integration][http]") {
    test::RawHttpServer server(plain());
    plugins::KeptConnections kept(std::chrono::milliseconds(300));
    CHECK(ask(kept, server.url("/a")).body == "c1");
    CHECK(ask(kept, server.url("/b")).body == "c1");
    // No request follows: the host sits idle, and the server sees the connection closed.
    for (int i = 0; i < 100 && server.connections_closed_by_client() == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(server.connections_closed_by_client() == 1);
    CHECK(ask(kept, server.url("/c")).body == "c2");
    CHECK(ask(kept, server.url("/d")).body == "c2");  // kept again, as before
}

TEST_CASE("kept connections: a plugin's requests through the host service reuse its connection", "[integration][http]") {
    test::TempDir dir;
    test::RawHttpServer server(plain());
    auto app = test::start(test::config(dir.path, true));
    auto body = [&](const json& args) { return test::call_tool(*app, "probe_http", args)["content"]["body"]; };
    CHECK(body({{"url", server.url("/one")}}) == "c1");
    CHECK(body({{"url", server.url("/two")}}) == "c1");
    CHECK(body({{"url", server.url("/three")}, {"method", "POST"}, {"flags", AH_HTTP_REPLAYABLE}}) == "c1");
    CHECK(body({{"url", server.url("/four")}, {"method", "POST"}}) == "c2");
}

TEST_CASE("kept connections: a server without TCP_NODELAY is not held up by delayed ACKs", "[integration][http]") {
    // Head and body written apart with Nagle on: the body waits until the head is acknowledged. On
    // a kept connection Linux delays that ACK by 40 ms (at least) unless the client asks for it at
    // once, so the median below is either well under 40 ms or at least 40 ms.
    test::RawHttpServer server(
        [](const test::RawHttpServer::Request& r) {
            Answer a{"c" + std::to_string(r.connection) + std::string(2046, ' ')};  // a model call's size
            a.in_two_writes = true;
            return a;
        },
        false);
    plugins::KeptConnections kept;
    Ask model_call = post(AH_HTTP_REPLAYABLE);
    model_call.body = std::string(4096, 'x');  // as big as a model call's: sent in two pieces
    std::vector<double> ms;
    for (int i = 0; i < 15; ++i) {
        auto start = std::chrono::steady_clock::now();
        CHECK(ask(kept, server.url("/"), model_call).body.substr(0, 3) == "c1 ");
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::nth_element(ms.begin(), ms.begin() + 7, ms.end());
    INFO("median " << ms[7] << " ms");
    CHECK(ms[7] < 40);
}
