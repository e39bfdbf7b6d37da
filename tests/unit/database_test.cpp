// The database's writer: group commit (concurrent writes share commits, each still all-or-nothing
// and durable when write() returns), nested writes refused, prepared statements reused.
#include "store/database.hpp"
#include "unit/test_support.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

using namespace agenthost;

namespace {

int64_t count(store::Database& db, const std::string& sql) {
    return db.read([&](store::Database& d) {
        auto stmt = d.prepare(sql);
        return stmt && stmt->step() ? stmt->integer(0) : -1;
    });
}

Status insert(store::Database& db, const std::string& key, const std::string& value = "v") {
    auto stmt = db.prepare("INSERT INTO plugin_kv (plugin, key, value) VALUES ('t', ?1, ?2)");
    if (!stmt) return stmt.error();
    return stmt->bind(1, key).bind(2, value).run();
}

// `threads` writers at once, each making `writes` calls of write_one(thread, index, key "thread-index").
template <typename WriteOne>
void write_at_once(int threads, int writes, WriteOne write_one) {
    std::vector<std::thread> writers;
    writers.reserve(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t)
        writers.emplace_back([&, t] {
            for (int i = 0; i < writes; ++i) write_one(t, i, std::to_string(t) + "-" + std::to_string(i));
        });
    for (auto& w : writers) w.join();
}

}  // namespace

TEST_CASE("database: concurrent writes share commits, and one that fails rolls back alone", "[store]") {
    test::TempDir dir;
    auto db = store::Database::open(dir.path / "group.db");
    REQUIRE(db);
    const auto before = (*db)->write_stats();  // opening wrote the schema
    constexpr int kThreads = 16, kWrites = 40;
    std::atomic<int> failed_as_asked{0}, other_failures{0};
    write_at_once(kThreads, kWrites, [&](int, int i, const std::string& key) {
        // Every fifth write inserts its row, then fails: its row must not survive, while the writes
        // committed in the same group keep theirs.
        bool fail = i % 5 == 0;
        Status s = (*db)->write([&](store::Database& d) -> Status {
            if (auto st = insert(d, key); !st) return st;
            if (fail) return Error{"test", "asked to fail"};
            return Ok{};
        });
        if (!s && s.error().code == "test")
            ++failed_as_asked;
        else if (!s)
            ++other_failures;
        // Durable when write() returns: this connection reads it at once.
        if (s) CHECK(count(**db, "SELECT COUNT(*) FROM plugin_kv WHERE key = '" + key + "'") == 1);
    });
    CHECK(other_failures == 0);
    CHECK(failed_as_asked == kThreads * kWrites / 5);
    CHECK(count(**db, "SELECT COUNT(*) FROM plugin_kv") == kThreads * kWrites * 4 / 5);
    auto after = (*db)->write_stats();
    uint64_t writes = after.writes - before.writes, commits = after.commits - before.commits;
    INFO("writes " << writes << ", commits " << commits);
    CHECK(writes == static_cast<uint64_t>(kThreads * kWrites * 4 / 5));
    // 16 writers at once share commits: fewer commits than writes (one each would be equal).
    CHECK(commits < writes);
}

TEST_CASE("database: a write inside a write is refused, not deadlocked", "[store]") {
    test::TempDir dir;
    auto db = store::Database::open(dir.path / "nested.db");
    REQUIRE(db);
    Status inner = Ok{};
    Status outer = (*db)->write([&](store::Database& d) -> Status {
        if (auto st = insert(d, "outer"); !st) return st;
        inner = d.write([](store::Database& again) { return insert(again, "inner"); });
        return Ok{};
    });
    CHECK(outer);
    REQUIRE_FALSE(inner);
    CHECK(inner.error().message.find("inside another write") != std::string::npos);
    CHECK(count(**db, "SELECT COUNT(*) FROM plugin_kv") == 1);
}

TEST_CASE("database: a reused statement starts clean, and one left mid-read holds no lock", "[store]") {
    test::TempDir dir;
    auto db = store::Database::open(dir.path / "reuse.db");
    REQUIRE(db);
    for (const char* key : {"a", "b", "c"}) REQUIRE((*db)->write([&](store::Database& d) { return insert(d, key); }));
    // Read one row of three and drop the statement: it goes back for reuse, reset.
    (*db)->read([](store::Database& d) {
        auto stmt = d.prepare("SELECT key FROM plugin_kv ORDER BY key");
        REQUIRE(stmt);
        REQUIRE(stmt->step());
        CHECK(stmt->text(0) == "a");
        return 0;
    });
    // Another connection can write (no read transaction was left open), and the reused statement
    // reads from the first row again.
    auto other = store::Database::open(dir.path / "reuse.db");
    REQUIRE(other);
    REQUIRE((*other)->write([](store::Database& d) { return insert(d, "d"); }));
    (*db)->read([](store::Database& d) {
        auto stmt = d.prepare("SELECT key FROM plugin_kv ORDER BY key");
        REQUIRE(stmt);
        std::string keys;
        while (stmt->step()) keys += stmt->text(0);
        CHECK(keys == "abcd");
        return 0;
    });
    // A bound value does not carry over to the next use.
    auto missing = (*db)->read([](store::Database& d) {
        auto stmt = d.prepare("SELECT COUNT(*) FROM plugin_kv WHERE key = ?1");
        stmt->step();
        return stmt->integer(0);
    });
    CHECK(missing == 0);
}

TEST_CASE("database: when the disk fills during a group, a write is reported committed exactly when it was", "[store]") {
    test::TempDir dir;
    auto db = store::Database::open(dir.path / "full.db");
    REQUIRE(db);
    // A database that may not grow past about 1 MB: large rows from many writers fill it mid-group,
    // and SQLite then rolls back the whole transaction, not only the failing write's savepoint.
    REQUIRE((*db)->exec("PRAGMA max_page_count = 250"));
    constexpr int kThreads = 12, kWrites = 20;
    std::vector<std::vector<bool>> committed(kThreads, std::vector<bool>(kWrites, false));
    write_at_once(kThreads, kWrites, [&](int t, int i, const std::string& key) {
        committed[t][i] =
            static_cast<bool>((*db)->write([&](store::Database& d) { return insert(d, key, std::string(20000, 'x')); }));
    });
    int reported = 0, mismatched = 0;
    for (int t = 0; t < kThreads; ++t)
        for (int i = 0; i < kWrites; ++i) {
            bool there = count(**db, "SELECT COUNT(*) FROM plugin_kv WHERE key = '" + std::to_string(t) + "-" +
                                         std::to_string(i) + "'") == 1;
            reported += committed[t][i];
            if (there != committed[t][i]) ++mismatched;
        }
    INFO("writes reported committed: " << reported << " of " << kThreads * kWrites);
    CHECK(reported > 0);
    CHECK(reported < kThreads * kWrites);  // the disk did fill
    CHECK(mismatched == 0);
}
