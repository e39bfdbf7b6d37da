// The HTTP server in process: what its own lifecycle promises, apart from any route.
#include "server/http_server.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <thread>

using namespace agenthost;

TEST_CASE("http server: a stop that comes before serving starts (a signal during start-up) is not lost",
          "[integration][server]") {
    test::TempDir dir;
    auto app = test::start(test::config(dir.path, false));
    auto opened = server::HttpServer::open(*app);
    REQUIRE(opened);
    server::HttpServer& server = **opened;
    server.shutdown();  // SIGTERM arrived while the host was still starting
    const std::string listen = "127.0.0.1:" + std::to_string(test::free_port());
    auto served = std::async(std::launch::async, [&] { return server.serve(listen); });
    const bool ended = served.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
    if (!ended) server.shutdown();  // serving now: this stop is seen, so the test ends either way
    CHECK(ended);
    CHECK(served.get());
}
