// The memory backend's contract, checked against every backend: the SQLite backend, the PostgreSQL
// one (on a real server the tests start) and the in-memory one the loop tests use.
#include "agent/fake_memory.hpp"
#include "sqlite/sqlite_backend.hpp"
#include "support/postgres_server.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>

using namespace agenthost;
using namespace agenthost::memory;

namespace {

struct SqliteMemory {
    SqliteMemory() {
        auto opened = sqlite::open_backend(dir.path / "memory.db", sqlite::Durability::full, 30);
        REQUIRE(opened);
        store = std::move(*opened);
    }
    MemoryBackend& backend() { return store->memory; }
    test::TempDir dir;
    std::unique_ptr<sqlite::SqliteBackend> store;
};

struct PostgresMemory {
    PostgresMemory() : store(test::open_postgres_backend()) {}
    MemoryBackend& backend() { return store->memory; }
    std::unique_ptr<postgres::PgBackend> store;
};

struct MapMemory {
    MemoryBackend& backend() { return memory; }
    test::FakeMemory memory;
};

}  // namespace

TEMPLATE_TEST_CASE("memory backend: entries are per conversation, an empty value deletes, clear counts", "[peer][memory_backend]",
                   SqliteMemory, PostgresMemory, MapMemory) {
    TestType holder;
    MemoryBackend& m = holder.backend();
    REQUIRE(m.get("c1", "topic"));  // read, and found empty
    CHECK_FALSE(*m.get("c1", "topic"));
    REQUIRE(m.set("c1", "topic", R"("films")"));
    REQUIRE(m.set("c1", "plan", "[]"));
    REQUIRE(m.set("c2", "topic", R"("music")"));
    REQUIRE(m.set("", "long", "1"));
    CHECK(**m.get("c1", "topic") == R"("films")");
    REQUIRE(m.set("c1", "topic", R"("books")"));  // overwritten
    CHECK(**m.get("c1", "topic") == R"("books")");
    auto entries = m.entries("c1");
    REQUIRE(entries.size() == 2);
    CHECK(entries[0].key == "plan");  // ordered by key
    CHECK(entries[1].key == "topic");
    REQUIRE(m.set("c1", "plan", ""));
    CHECK_FALSE(*m.get("c1", "plan"));
    auto cleared = m.clear("c1");
    REQUIRE(cleared);
    CHECK(*cleared == 1);
    CHECK(m.entries("c1").empty());
    CHECK(**m.get("c2", "topic") == R"("music")");  // other conversations and long-term memory stay
    CHECK(**m.get("", "long") == "1");
}

TEMPLATE_TEST_CASE("memory backend: posted events are taken once, oldest first, with those for every conversation",
                   "[peer][memory_backend]", SqliteMemory, PostgresMemory, MapMemory) {
    TestType holder;
    MemoryBackend& m = holder.backend();
    REQUIRE(m.post_event("c1", "torrent", R"({"n":1})"));
    REQUIRE(m.post_event("", "torrent", R"({"n":2})"));
    REQUIRE(m.post_event("c2", "torrent", R"({"n":3})"));
    auto pending = m.pending_events("c1");  // seen without being taken
    REQUIRE(pending.size() == 2);
    CHECK(pending[0].body == R"({"n":1})");
    CHECK(m.pending_events("c1").size() == 2);
    auto first = m.take_events("c1");
    REQUIRE(first.size() == 2);
    CHECK(first[0].body == R"({"n":1})");
    CHECK(first[1].body == R"({"n":2})");
    CHECK(first[0].plugin == "torrent");
    CHECK(first[0].id < first[1].id);
    CHECK(m.take_events("c1").empty());  // shown once
    CHECK(m.pending_events("c1").empty());
    auto other = m.take_events("c2");
    REQUIRE(other.size() == 1);  // the broadcast one went to c1 already
    CHECK(other[0].body == R"({"n":3})");
}

TEMPLATE_TEST_CASE("memory backend: a fact is stored once, listed newest first and removed by id", "[peer][memory_backend]",
                   SqliteMemory, PostgresMemory, MapMemory) {
    TestType holder;
    MemoryBackend& m = holder.backend();
    auto a = m.add_fact("the NAS is at 10.0.0.5");
    auto b = m.add_fact("films go to /media/films");
    REQUIRE(a);
    REQUIRE(b);
    auto again = m.add_fact("the NAS is at 10.0.0.5");
    REQUIRE(again);
    CHECK(*again == *a);
    auto all = m.facts();
    REQUIRE(all.size() == 2);
    CHECK(all[0].text == "films go to /media/films");
    CHECK(m.remove_fact(*a).value());
    CHECK_FALSE(m.remove_fact(*a).value());
    REQUIRE(m.facts().size() == 1);
}
