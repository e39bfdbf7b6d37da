// Memory read once per turn (memory/cached_memory.hpp) and the change signals hosts wait on
// (store/change_signals.hpp), against a counting in-memory store.
#include "agent/fake_memory.hpp"
#include "memory/cached_memory.hpp"
#include "store/change_signals.hpp"

#include <catch2/catch.hpp>

#include <thread>

using namespace agenthost;
using memory::CachedMemory;

TEST_CASE("cached memory: a turn reads its conversation's entries and the facts once, and reads its own writes", "[unit]") {
    test::FakeMemory store;
    REQUIRE(store.set("c", "plan", R"(["a"])"));
    REQUIRE(store.set("c", "session", R"({"goal":"g"})"));
    REQUIRE(store.add_fact("the sky is blue"));
    CachedMemory cache(store);
    {
        auto held = cache.hold("c");
        const int before = store.reads();
        for (int step = 0; step < 10; ++step) {  // what a turn's steps read
            CHECK(cache.get("c", "plan").value() == R"(["a"])");
            CHECK_FALSE(cache.get("c", "missing").value());
            CHECK(cache.entries("c").size() == 2);
            CHECK(cache.facts().size() == 1);
        }
        CHECK(store.reads() - before == 2);  // the entries and the facts, once each

        REQUIRE(cache.set("c", "plan", R"(["b"])"));
        REQUIRE(cache.set("c", "added", "1"));
        REQUIRE(cache.set("c", "session", ""));  // an empty value deletes
        CHECK(cache.get("c", "plan").value() == R"(["b"])");
        CHECK(cache.get("c", "added").value() == "1");
        CHECK_FALSE(cache.get("c", "session").value());
        auto entries = cache.entries("c");
        REQUIRE(entries.size() == 2);
        CHECK(entries[0].key == "added");  // still ordered by key, as the store orders them
        CHECK(entries[1].key == "plan");
        REQUIRE(cache.add_fact("water is wet"));
        CHECK(cache.facts().size() == 2);  // a fact written drops the copy
        CHECK(store.reads() - before == 3);

        // Another conversation, not held, and writes made around the cache: read from the store.
        REQUIRE(store.set("other", "k", "1"));
        CHECK(cache.get("other", "k").value() == "1");
        REQUIRE(store.set("c", "plan", R"(["by another process"])"));
        CHECK(cache.get("c", "plan").value() == R"(["b"])");  // seen from the next turn on
    }
    auto next = cache.hold("c");
    CHECK(cache.get("c", "plan").value() == R"(["by another process"])");
}

TEST_CASE("cached memory: outside a turn every read goes to the store, and a failed read is never kept", "[unit]") {
    test::FakeMemory store;
    REQUIRE(store.set("c", "plan", R"(["a"])"));
    CachedMemory cache(store);
    const int before = store.reads();
    CHECK(cache.get("c", "plan").value() == R"(["a"])");
    CHECK(cache.get("c", "plan").value() == R"(["a"])");
    CHECK(store.reads() - before == 2);

    auto held = cache.hold("c");
    store.fail_reads(true);
    auto failed = cache.get("c", "plan");
    REQUIRE_FALSE(failed);  // an error, never an empty entry a changer would write over
    CHECK(failed.error().code == "store_io");
    CHECK_FALSE(cache.read_facts());
    store.fail_reads(false);
    CHECK(cache.get("c", "plan").value() == R"(["a"])");  // read again, then kept
    const int kept = store.reads();
    CHECK(cache.get("c", "plan").value() == R"(["a"])");
    CHECK(store.reads() == kept);

    // Two holds of one conversation (a turn inside a turn): the copy lives until the last ends.
    {
        auto inner = cache.hold("c");
        CHECK(cache.get("c", "plan").value() == R"(["a"])");
    }
    const int after_inner = store.reads();
    CHECK(cache.get("c", "plan").value() == R"(["a"])");
    CHECK(store.reads() == after_inner);
}

TEST_CASE("cached memory: clearing a held conversation empties its copy", "[unit]") {
    test::FakeMemory store;
    REQUIRE(store.set("c", "plan", R"(["a"])"));
    CachedMemory cache(store);
    auto held = cache.hold("c");
    CHECK(cache.entries("c").size() == 1);
    CHECK(cache.clear("c").value() == 1);
    CHECK(cache.entries("c").empty());
    CHECK_FALSE(cache.get("c", "plan").value());
}

TEST_CASE("change signals: a waiter sees a change raised after it looked, and a timeout when none comes", "[unit]") {
    store::ChangeSignals signals;
    const uint64_t seen = signals.count(store::Change::run_events, 7);
    CHECK_FALSE(signals.wait(store::Change::run_events, 7, seen, std::chrono::milliseconds(1)));
    std::thread teller([&] { signals.raise(store::Change::run_events, 7); });
    CHECK(signals.wait(store::Change::run_events, 7, seen, std::chrono::seconds(30)));
    teller.join();
    // Raised before the wait began: the wait returns at once, nothing is missed.
    const uint64_t now = signals.count(store::Change::cancel_requested);
    signals.raise(store::Change::cancel_requested);
    CHECK(signals.wait(store::Change::cancel_requested, 0, now, std::chrono::seconds(30)));
    // Every count moves when changes may have gone untold.
    const uint64_t waiting = signals.count(store::Change::run_waiting);
    const uint64_t events = signals.count(store::Change::run_events, 12345);
    signals.raise_all();
    CHECK(signals.count(store::Change::run_waiting) != waiting);
    CHECK(signals.count(store::Change::run_events, 12345) != events);
    CHECK_FALSE(signals.live());
}
