// The server's thread pool: jobs past its size wait their turn, and shutdown runs what was queued
// and waits for its (detached) threads to end.
#include "server/worker_pool.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

using agenthost::server::WorkerPool;

TEST_CASE("worker pool: at most its size at once, every queued job runs, shutdown waits for them", "[unit][server]") {
    std::atomic<int> running{0}, most{0}, done{0};
    {
        WorkerPool pool(0, 4);
        for (int i = 0; i < 40; ++i)
            REQUIRE(pool.enqueue([&] {
                int now = ++running;
                for (int seen = most; now > seen && !most.compare_exchange_weak(seen, now);) {
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
                --running;
                ++done;
            }));
        CHECK(pool.threads() <= 4);
        pool.shutdown();
        CHECK(done == 40);  // queued jobs ran before shutdown returned
        CHECK(pool.threads() == 0);
        CHECK_FALSE(pool.enqueue([&] { ++done; }));
    }
    CHECK(most <= 4);
    CHECK(most >= 2);
    CHECK(done == 40);
}

TEST_CASE("worker pool: destroyed while a job runs, it waits for the job", "[unit][server]") {
    std::atomic<bool> finished{false};
    {
        WorkerPool pool(1, 2);
        pool.enqueue([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            finished = true;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(finished);
}
