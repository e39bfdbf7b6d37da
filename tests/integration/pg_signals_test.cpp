// PostgreSQL at scale (#49): hosts told of each other's changes through LISTEN/NOTIFY instead of
// polling, a pool of connections per store, and a provider's state carried by the step's
// transaction. Stores with different lease owners in one test process stand for hosts.
#include "support/postgres_server.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>
#include <thread>

using namespace agenthost;

namespace {

const char* kPrompt = R"({"role":"user","content":"hi"})";
constexpr auto kPatience = std::chrono::seconds(20);  // only ever waited out when the behaviour is broken

bool becomes_live(store::ChangeSignals& signals) {
    auto until = std::chrono::steady_clock::now() + kPatience;
    while (!signals.live() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return signals.live();
}

}  // namespace

TEST_CASE(
    "postgres: a host is told of another host's run events, cancel requests and runs left for takeover, also after a restart",
    "[peer][postgres]") {
    std::string url = test::fresh_postgres_database();
    auto a = test::open_postgres_backend(url, "host-a:1:1");
    auto b = test::open_postgres_backend(url, "host-b:2:1");
    REQUIRE(becomes_live(b->signals));

    auto run = a->journal.begin_run("c", Mode::execute, "scripted", "hi", kPrompt);
    REQUIRE(run);
    uint64_t seen = b->signals.count(store::Change::run_events, run->id);
    REQUIRE(a->events.append({{run->id, 1, "token", R"({"text":"x"})"}}));
    CHECK(b->signals.wait(store::Change::run_events, run->id, seen, kPatience));

    seen = b->signals.count(store::Change::cancel_requested);
    REQUIRE(b->cancels.request(run->id));
    CHECK(a->signals.wait(store::Change::cancel_requested, 0, seen, kPatience));  // the host executing it
    CHECK(a->cancels.take_mine() == std::vector<int64_t>{run->id});

    seen = b->signals.count(store::Change::run_waiting);
    store::RunEnd handed_over;
    handed_over.stop_reason = StopReason::interrupted;
    REQUIRE(a->journal.end_run(run->id, handed_over));
    CHECK(b->signals.wait(store::Change::run_waiting, 0, seen, kPatience));

    // The database restarts: the listener is not live while it is down, listens again after, and
    // every count moves (notifications sent meanwhile are lost, so waiters look again).
    seen = b->signals.count(store::Change::run_events, run->id);
    test::stop_postgres();
    CHECK(b->signals.wait(store::Change::run_events, run->id, seen, kPatience));
    test::restart_postgres();
    REQUIRE(becomes_live(b->signals));
    // A's idle connections were ended by the restart: found out before use, not by a failed write.
    auto second = a->journal.begin_run("c2", Mode::execute, "scripted", "hi", kPrompt);
    INFO((second ? "" : second.error().message));
    REQUIRE(second);
    seen = b->signals.count(store::Change::run_events, second->id);
    REQUIRE(a->events.append({{second->id, 1, "token", R"({"text":"y"})"}}));
    CHECK(b->signals.wait(store::Change::run_events, second->id, seen, kPatience));
}

TEST_CASE("postgres: a store's pool serves four callers at once and makes a fifth wait for a connection", "[peer][postgres]") {
    auto store = test::open_postgres_backend();
    std::atomic<int> inside{0}, most{0};
    auto body = [&](postgres::Connection& db) -> Status {
        int now = ++inside;
        for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
        }
        // Stays until four callers are inside at once (they cannot be, with one connection).
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (most.load() < 4 && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        auto rows = db.exec("SELECT 1");
        --inside;
        if (!rows) return rows.error();
        return Ok{};
    };
    std::vector<std::thread> callers;
    callers.reserve(5);
    std::atomic<int> done{0};
    for (int i = 0; i < 5; ++i)
        callers.emplace_back([&] {
            if (store->session.with(body)) ++done;
        });
    for (auto& t : callers) t.join();
    CHECK(done == 5);
    CHECK(most == 4);  // four at once, never five
    CHECK(store->session.open_connections() == postgres::Session::kDefaultConnections);
}

TEST_CASE("postgres: a provider's state held for the next write is read back at once and lands with the step's transaction",
          "[peer][postgres]") {
    std::string url = test::fresh_postgres_database();
    auto a = test::open_postgres_backend(url, "host-a:1:1");
    auto b = test::open_postgres_backend(url, "host-b:2:1");
    REQUIRE(a->plugin_kv.set("scripted", "progress", "1", store::Flush::with_next_write));
    CHECK(a->plugin_kv.get("scripted", "progress").value() == "1");  // read back from what is held
    CHECK_FALSE(b->plugin_kv.get("scripted", "progress").value());   // not written yet
    auto run = a->journal.begin_run("c", Mode::execute, "scripted", "hi", kPrompt);
    REQUIRE(run);
    CHECK(b->plugin_kv.get("scripted", "progress").value() == "1");  // carried by the journal's write

    // A write that fails takes nothing with it: what it carried waits for the next one.
    REQUIRE(a->plugin_kv.set("scripted", "progress", "2", store::Flush::with_next_write));
    store::StepWrite step;
    step.messages = {{store::MessageKind::step, R"({"role":"assistant","content":"x"})"}};
    step.state_json = R"({"iteration":1})";
    REQUIRE_FALSE(a->journal.write_step(run->id + 1000, step));  // no such run: refused, rolled back
    CHECK(b->plugin_kv.get("scripted", "progress").value() == "1");
    CHECK(a->plugin_kv.get("scripted", "progress").value() == "2");
    REQUIRE(a->journal.write_step(run->id, step));
    CHECK(b->plugin_kv.get("scripted", "progress").value() == "2");
}

TEST_CASE("postgres: writes carrying the same held values at once wait for each other, never deadlock", "[peer][postgres]") {
    // Four callers (the pool's size) each hold a memory entry and a provider state that the others
    // hold too, joined in opposite orders, and write at once: every write carries all of them.
    auto store = test::open_postgres_backend();
    std::atomic<int> failed{0};
    std::string first_failure;
    std::mutex failure_mutex;
    std::vector<std::thread> callers;
    callers.reserve(4);
    for (int t = 0; t < 4; ++t)
        callers.emplace_back([&, t] {
            for (int i = 0; i < 60; ++i) {
                const std::string value = std::to_string(i);
                auto held_memory = [&] {
                    return store->memory.set("shared", "tools_loaded", value, store::Flush::with_next_write);
                };
                auto held_state = [&] {
                    return store->plugin_kv.set("scripted", "progress", value, store::Flush::with_next_write);
                };
                const bool memory_first = (t + i) % 2 == 0;
                Status held = memory_first ? held_memory() : held_state();
                if (held) held = memory_first ? held_state() : held_memory();
                Status wrote = held ? Status(Ok{}) : held;
                if (wrote) {
                    auto run = store->journal.begin_run("c" + std::to_string(t) + "-" + value, Mode::execute, "p", "hi", kPrompt);
                    if (!run) wrote = run.error();
                }
                if (!wrote && failed++ == 0) {
                    std::lock_guard lock(failure_mutex);
                    first_failure = wrote.error().message;
                }
            }
        });
    for (auto& c : callers) c.join();
    INFO(first_failure);
    CHECK(failed == 0);
}

TEST_CASE("postgres: a turn looks for posted events only once one may be there, and takes each once", "[peer][postgres]") {
    std::string url = test::fresh_postgres_database();
    auto a = test::open_postgres_backend(url, "host-a:1:1");
    auto b = test::open_postgres_backend(url, "host-b:2:1");
    REQUIRE(becomes_live(b->signals));
    CHECK(b->memory.take_events("c").empty());  // looked: none is left anywhere

    // Written behind the store's back (no notification): B does not look, so it does not see it.
    REQUIRE(b->session.with([](postgres::Connection& db) -> Status {
        auto done = db.exec("INSERT INTO events (conversation, plugin, body) VALUES ('c', 'behind', '{}')");
        if (!done) return done.error();
        return Ok{};
    }));
    CHECK(b->memory.take_events("c").empty());

    // A posts through the store: B is told, looks, and takes both, oldest first.
    const uint64_t seen = b->signals.count(store::Change::events_posted);
    REQUIRE(a->memory.post_event("c", "torrent", R"({"done":"x"})"));
    REQUIRE(b->signals.wait(store::Change::events_posted, 0, seen, kPatience));
    auto taken = b->memory.take_events("c");
    REQUIRE(taken.size() == 2);
    CHECK(taken[0].plugin == "behind");
    CHECK(taken[1].plugin == "torrent");
    CHECK(a->memory.take_events("c").empty());  // each once, on one host

    // An event posted for another conversation is left for that one's turn.
    const uint64_t before_other = b->signals.count(store::Change::events_posted);
    REQUIRE(a->memory.post_event("other", "torrent", "{}"));
    REQUIRE(b->signals.wait(store::Change::events_posted, 0, before_other, kPatience));
    CHECK(b->memory.take_events("c").empty());
    CHECK(b->memory.take_events("other").size() == 1);
}
