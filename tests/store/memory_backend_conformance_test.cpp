// The memory backend's contract, checked against every backend: the SQLite backend, the PostgreSQL
// one (on a real server the tests start) and the in-memory one the loop tests use.
#include "agent/fake_memory.hpp"
#include "postgres/pg_sql.hpp"
#include "sqlite/sqlite_backend.hpp"
#include "sqlite/sqlite_sql.hpp"
#include "support/postgres_server.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>

#include <type_traits>

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
    store::RunJournal& journal() { return store->journal; }
    // The conversation's rows in the table itself (what another process reads).
    int64_t stored_rows(std::string_view conversation) {
        return store->db->read([&](sqlite::Database& db) {
            sqlite::SqliteSql sql(db);
            return sql.first_integer("SELECT COUNT(*) FROM memory WHERE conversation = ?1", {conversation}).value().value_or(-1);
        });
    }
    test::TempDir dir;
    std::unique_ptr<sqlite::SqliteBackend> store;
};

struct PostgresMemory {
    PostgresMemory() : store(test::open_postgres_backend()) {}
    MemoryBackend& backend() { return store->memory; }
    store::RunJournal& journal() { return store->journal; }
    int64_t stored_rows(std::string_view conversation) {
        return store->session.with([&](postgres::Connection& db) {
            postgres::PgSql sql(db);
            return sql.first_integer("SELECT COUNT(*) FROM memory WHERE conversation = ?1", {conversation}).value().value_or(-1);
        });
    }
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

TEMPLATE_TEST_CASE(
    "memory backend: an entry held for the next write is read back at once and written by the journal's next write",
    "[peer][memory_backend]", SqliteMemory, PostgresMemory) {
    TestType holder;
    MemoryBackend& m = holder.backend();
    REQUIRE(m.set("c1", "topic", R"("films")"));
    REQUIRE(m.set("c1", "tools_loaded", R"(["graph"])", store::Flush::with_next_write));
    REQUIRE(m.set("c1", "active", R"("g1")", store::Flush::with_next_write));
    CHECK(holder.stored_rows("c1") == 1);  // held, not written
    CHECK(**m.get("c1", "tools_loaded") == R"(["graph"])");
    auto entries = m.entries("c1");
    REQUIRE(entries.size() == 3);
    CHECK(entries[0].key == "active");
    CHECK(entries[1].key == "tools_loaded");
    CHECK(entries[2].key == "topic");
    auto turn = m.read_turn("c1");
    REQUIRE(turn);
    REQUIRE(turn->entries.size() == 3);
    CHECK(turn->entries[1].value_json == R"(["graph"])");
    const std::string prompt = R"({"role":"user","content":"hi"})";
    REQUIRE(holder.journal().begin_run("c9", agenthost::Mode::execute, "p", "hi", prompt));
    CHECK(holder.stored_rows("c1") == 3);  // carried by the journal's write
    CHECK(**m.get("c1", "active") == R"("g1")");
    // A held entry a clear removes is never written.
    REQUIRE(m.set("c2", "topic", R"("music")", store::Flush::with_next_write));
    REQUIRE(m.clear("c2"));
    CHECK(m.entries("c2").empty());
    REQUIRE(holder.journal().begin_run("c8", agenthost::Mode::execute, "p", "hi", prompt));
    CHECK(holder.stored_rows("c2") == 0);
    // A delete is written at once, held or not.
    REQUIRE(m.set("c1", "topic", "", store::Flush::with_next_write));
    CHECK(holder.stored_rows("c1") == 2);
    CHECK_FALSE(*m.get("c1", "topic"));
    CHECK(m.entries("c1").size() == 2);
}

TEMPLATE_TEST_CASE("memory backend: entries are listed in byte order of their keys", "[peer][memory_backend]", SqliteMemory,
                   PostgresMemory, MapMemory) {
    TestType holder;
    MemoryBackend& m = holder.backend();
    if constexpr (std::is_same_v<TestType, PostgresMemory>)  // a database whose text sorts as English does
        REQUIRE(holder.store->session.with([](postgres::Connection& db) {
            return db.exec(R"(ALTER TABLE memory ALTER COLUMN key TYPE TEXT COLLATE "en-x-icu")");
        }));
    for (const char* key : {"tasks", "task_stack", "Topic", "topic", "z"}) REQUIRE(m.set("c1", key, "1"));
    std::vector<std::string> keys;
    for (const auto& e : m.entries("c1")) keys.push_back(e.key);
    CHECK(keys == std::vector<std::string>{"Topic", "task_stack", "tasks", "topic", "z"});
    auto turn = m.read_turn("c1");
    REQUIRE(turn);
    REQUIRE(turn->entries.size() == 5);
    CHECK(turn->entries[1].key == "task_stack");
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
