// The LLM queue (llm/llm_queue): one lane per provider instance, fair across sessions, a rate limit
// pausing the whole lane, and cancellation while a request waits. Over the real OpenAI adapter and a
// scripted server on loopback (integration/provider_wires.hpp).
#include "integration/provider_wires.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

using namespace agenthost;
using namespace test::providers;
using Clock = std::chrono::steady_clock;

TEST_CASE("llm queue: concurrency 1 serialises sessions, a rate limit pauses every session", "[integration][providers][queue]") {
    Harness h(openai_wire());
    test::CannedResponse slow = canned(200, "text/event-stream");
    slow.chunks = openai_wire().text({"one"});
    slow.chunk_delay_ms = 40;
    h.push(slow);
    slow.chunks = openai_wire().text({"two"});
    h.push(slow);
    Harness::Result a, b;
    Clock::time_point a_done;
    std::thread first([&] {
        a = h.chat(nullptr, "session-a");
        a_done = Clock::now();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    b = h.chat(nullptr, "session-b");
    first.join();
    REQUIRE(a.outcome.ok);
    REQUIRE(b.outcome.ok);
    // With one slot, b's request reached the server only once a's whole stream had been read.
    auto requests = h.server.requests();
    REQUIRE(requests.size() == 2);
    CHECK(requests[1].at >= a_done - std::chrono::milliseconds(5));

    // A 429 seen by one session holds the lane for all: the other session waits out the pause too.
    Harness limited(openai_wire());
    limited.push_error({429, "slow down", "rate_limit_exceeded"}, {{"Retry-After", "1"}});
    limited.push_stream(openai_wire().text({"a"}));
    limited.push_stream(openai_wire().text({"b"}));
    Harness::Result x, y;
    auto t0 = Clock::now();
    std::thread rate_limited([&] { x = limited.chat(nullptr, "session-x"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // x has seen the 429 and paused the lane
    y = limited.chat(nullptr, "session-y");
    double y_done = std::chrono::duration<double>(Clock::now() - t0).count();
    rate_limited.join();
    CHECK(x.outcome.ok);
    CHECK(y.outcome.ok);
    CHECK(y.outcome.attempts == 1);  // y never hit the limit itself …
    CHECK(y_done >= 0.95);           // … but waited for the pause
}

TEST_CASE("llm queue: requests are served fairly across sessions", "[integration][providers][queue]") {
    Harness h(openai_wire());
    test::CannedResponse slow = canned(200, "text/event-stream");
    slow.chunk_delay_ms = 30;
    for (const char* word : {"a1", "a2", "a3", "b1"}) {
        slow.chunks = openai_wire().text({word});
        h.push(slow);
    }
    std::vector<std::string> order;
    std::mutex m;
    auto session = [&](const std::string& name, int requests) {
        for (int i = 0; i < requests; ++i) {
            auto r = h.chat(nullptr, name);
            std::lock_guard lock(m);
            order.push_back(name);
        }
    };
    std::thread a([&] { session("a", 3); });
    std::this_thread::sleep_for(std::chrono::milliseconds(60));  // a is running its first request
    std::thread b([&] { session("b", 1); });
    a.join();
    b.join();
    REQUIRE(order.size() == 4);
    // b arrived while a's first request ran: it is served before a's later ones, not after all of them.
    CHECK(std::find(order.begin(), order.end(), "b") - order.begin() <= 2);
}

TEST_CASE("llm queue: a request cancelled while waiting for its turn leaves at once", "[integration][providers][queue]") {
    Harness h(openai_wire());
    test::CannedResponse endless = canned(200, "text/event-stream");
    endless.chunks = {openai_wire().text({"holding the only slot"})[0]};
    endless.endless = true;
    h.push(endless);
    ah_cancel stop_first, stop_waiting;
    Harness::Result first;
    std::thread holder([&] { first = h.chat(&stop_first, "holder"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // the holder streams; the lane is full
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        stop_waiting.cancel();
    });
    auto started = Clock::now();
    auto waiting = h.chat(&stop_waiting, "waiter");
    double waited = std::chrono::duration<double>(Clock::now() - started).count();
    canceller.join();
    CHECK(waiting.outcome.error_type == "cancelled");
    CHECK(waiting.outcome.attempts == 1);
    CHECK(waited < 1.5);
    CHECK(h.server.requests_to("/v1/chat/completions") == 1);  // the waiter never reached the server
    stop_first.cancel();
    holder.join();
    CHECK(first.outcome.error_type == "cancelled");
}
