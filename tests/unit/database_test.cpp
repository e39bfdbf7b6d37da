// The database's writer: group commit (concurrent writes share commits, each still all-or-nothing
// and durable when write() returns), nested writes refused, prepared statements reused, values held
// for the next write's transaction.
#include "sqlite/database.hpp"
#include "sqlite/keyed_values.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include <atomic>
#include <thread>

using namespace agenthost;

namespace {

int64_t count(sqlite::Database& db, const std::string& sql) {
    return db.read([&](sqlite::Database& d) {
        auto stmt = d.prepare(sql);
        return stmt && stmt->step() ? stmt->integer(0) : -1;
    });
}

Status insert(sqlite::Database& db, const std::string& key, const std::string& value = "v") {
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

// Counts the syncs SQLite asks of the files it opens while it lives: a VFS around the default one,
// made the default, forwarding every file method and counting xSync.
class SyncCounter {
public:
    SyncCounter() : base_(sqlite3_vfs_find(nullptr)) {
        vfs_ = *base_;
        vfs_.zName = "sync-counter";
        vfs_.szOsFile = static_cast<int>(sizeof(File)) + base_->szOsFile;
        vfs_.pAppData = this;
        vfs_.xOpen = &open;
        sqlite3_vfs_register(&vfs_, 1);
    }
    ~SyncCounter() {
        sqlite3_vfs_unregister(&vfs_);
        sqlite3_vfs_register(base_, 1);
    }
    SyncCounter(const SyncCounter&) = delete;
    SyncCounter& operator=(const SyncCounter&) = delete;
    int syncs() const { return syncs_.load(); }

private:
    struct File {
        sqlite3_file base;
        SyncCounter* counter;
        sqlite3_file* real() { return reinterpret_cast<sqlite3_file*>(this + 1); }
    };
    static sqlite3_file* real(sqlite3_file* f) { return reinterpret_cast<File*>(f)->real(); }
    static const sqlite3_io_methods* methods(sqlite3_file* f) { return real(f)->pMethods; }

    static int open(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags, int* out_flags) {
        auto* self = static_cast<SyncCounter*>(vfs->pAppData);
        auto* ours = reinterpret_cast<File*>(file);
        ours->counter = self;
        int rc = self->base_->xOpen(self->base_, name, ours->real(), flags, out_flags);
        ours->base.pMethods = ours->real()->pMethods ? &kMethods : nullptr;
        return rc;
    }
    static int sync(sqlite3_file* f, int flags) {
        ++reinterpret_cast<File*>(f)->counter->syncs_;
        return methods(f)->xSync(real(f), flags);
    }
    static constexpr sqlite3_io_methods kMethods = {
        3,
        [](sqlite3_file* f) { return methods(f)->xClose(real(f)); },
        [](sqlite3_file* f, void* b, int n, sqlite3_int64 o) { return methods(f)->xRead(real(f), b, n, o); },
        [](sqlite3_file* f, const void* b, int n, sqlite3_int64 o) { return methods(f)->xWrite(real(f), b, n, o); },
        [](sqlite3_file* f, sqlite3_int64 size) { return methods(f)->xTruncate(real(f), size); },
        &sync,
        [](sqlite3_file* f, sqlite3_int64* size) { return methods(f)->xFileSize(real(f), size); },
        [](sqlite3_file* f, int lock) { return methods(f)->xLock(real(f), lock); },
        [](sqlite3_file* f, int lock) { return methods(f)->xUnlock(real(f), lock); },
        [](sqlite3_file* f, int* out) { return methods(f)->xCheckReservedLock(real(f), out); },
        [](sqlite3_file* f, int op, void* arg) { return methods(f)->xFileControl(real(f), op, arg); },
        [](sqlite3_file* f) { return methods(f)->xSectorSize(real(f)); },
        [](sqlite3_file* f) { return methods(f)->xDeviceCharacteristics(real(f)); },
        [](sqlite3_file* f, int page, int size, int extend, void volatile** out) {
            return methods(f)->xShmMap(real(f), page, size, extend, out);
        },
        [](sqlite3_file* f, int offset, int n, int flags) { return methods(f)->xShmLock(real(f), offset, n, flags); },
        [](sqlite3_file* f) { methods(f)->xShmBarrier(real(f)); },
        [](sqlite3_file* f, int remove) { return methods(f)->xShmUnmap(real(f), remove); },
        [](sqlite3_file* f, sqlite3_int64 o, int n, void** out) { return methods(f)->xFetch(real(f), o, n, out); },
        [](sqlite3_file* f, sqlite3_int64 o, void* p) { return methods(f)->xUnfetch(real(f), o, p); },
    };

    sqlite3_vfs* base_;
    sqlite3_vfs vfs_{};
    std::atomic<int> syncs_{0};
};

}  // namespace

TEST_CASE("database: with full durability a write syncs the disk unless it may wait for the next one", "[unit][store]") {
    SyncCounter counter;
    test::TempDir dir;
    auto db = sqlite::Database::open(dir.path / "flush.db");
    REQUIRE(db);
    auto syncs_of = [&](const std::string& key, store::Flush flush) {
        int before = counter.syncs();
        REQUIRE((*db)->write([&](sqlite::Database& d) { return insert(d, key); }, flush));
        return counter.syncs() - before;
    };
    CHECK(syncs_of("a", store::Flush::now) >= 1);
    CHECK(syncs_of("b", store::Flush::with_next) == 0);
    CHECK(syncs_of("c", store::Flush::now) >= 1);  // the setting goes back: the next write syncs (and carries b)
    CHECK(count(**db, "SELECT COUNT(*) FROM plugin_kv") == 3);
    auto stats = (*db)->write_stats();
    CHECK(stats.commits - stats.synced_commits == 1);

    // "process" durability never syncs a commit.
    auto fast = sqlite::Database::open(dir.path / "process.db", sqlite::Durability::process);
    REQUIRE(fast);
    int before = counter.syncs();
    REQUIRE((*fast)->write([&](sqlite::Database& d) { return insert(d, "p"); }));
    CHECK(counter.syncs() == before);
}

TEST_CASE("database: a group syncs when any write in it must be on disk now", "[unit][store]") {
    test::TempDir dir;
    auto db = sqlite::Database::open(dir.path / "group-flush.db");
    REQUIRE(db);
    const auto before = (*db)->write_stats();
    // The first write holds the commit until two more wait behind it; those two then commit as one
    // group: one may wait for the disk, the other may not, so the group syncs.
    std::atomic<bool> first_leading{false};
    std::atomic<int> failed{0};
    auto write = [&](const std::string& key, store::Flush flush, bool hold) {
        Status s = (*db)->write(
            [&](sqlite::Database& d) {
                first_leading = true;
                while (hold && (*db)->write_stats().waiting < 2) std::this_thread::yield();
                return insert(d, key);
            },
            flush);
        if (!s) ++failed;
    };
    std::thread first(write, "first", store::Flush::with_next, true);
    while (!first_leading) std::this_thread::yield();
    std::thread deferred(write, "deferred", store::Flush::with_next, false);
    std::thread durable(write, "durable", store::Flush::now, false);
    for (auto* t : {&first, &deferred, &durable}) t->join();
    CHECK(failed == 0);
    const auto after = (*db)->write_stats();
    CHECK(after.writes - before.writes == 3);
    CHECK(after.commits - before.commits == 2);                // the first alone, then the two together
    CHECK(after.synced_commits - before.synced_commits == 1);  // only the group with a write that may not wait
}

TEST_CASE("database: concurrent writes share commits, and one that fails rolls back alone", "[unit][store]") {
    test::TempDir dir;
    auto db = sqlite::Database::open(dir.path / "group.db");
    REQUIRE(db);
    const auto before = (*db)->write_stats();  // opening wrote the schema
    constexpr int kThreads = 16, kWrites = 40;
    std::atomic<int> failed_as_asked{0}, other_failures{0};
    write_at_once(kThreads, kWrites, [&](int, int i, const std::string& key) {
        // Every fifth write inserts its row, then fails: its row must not survive, while the writes
        // committed in the same group keep theirs.
        bool fail = i % 5 == 0;
        Status s = (*db)->write([&](sqlite::Database& d) -> Status {
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

TEST_CASE("database: a write inside a write is refused, not deadlocked", "[unit][store]") {
    test::TempDir dir;
    auto db = sqlite::Database::open(dir.path / "nested.db");
    REQUIRE(db);
    Status inner = Ok{};
    Status outer = (*db)->write([&](sqlite::Database& d) -> Status {
        if (auto st = insert(d, "outer"); !st) return st;
        inner = d.write([](sqlite::Database& again) { return insert(again, "inner"); });
        return Ok{};
    });
    CHECK(outer);
    REQUIRE_FALSE(inner);
    CHECK(inner.error().message.find("inside another write") != std::string::npos);
    CHECK(count(**db, "SELECT COUNT(*) FROM plugin_kv") == 1);
}

TEST_CASE("database: a reused statement starts clean, and one left mid-read holds no lock", "[unit][store]") {
    test::TempDir dir;
    auto db = sqlite::Database::open(dir.path / "reuse.db");
    REQUIRE(db);
    for (const char* key : {"a", "b", "c"}) REQUIRE((*db)->write([&](sqlite::Database& d) { return insert(d, key); }));
    // Read one row of three and drop the statement: it goes back for reuse, reset.
    (*db)->read([](sqlite::Database& d) {
        auto stmt = d.prepare("SELECT key FROM plugin_kv ORDER BY key");
        REQUIRE(stmt);
        REQUIRE(stmt->step());
        CHECK(stmt->text(0) == "a");
        return 0;
    });
    // Another connection can write (no read transaction was left open), and the reused statement
    // reads from the first row again.
    auto other = sqlite::Database::open(dir.path / "reuse.db");
    REQUIRE(other);
    REQUIRE((*other)->write([](sqlite::Database& d) { return insert(d, "d"); }));
    (*db)->read([](sqlite::Database& d) {
        auto stmt = d.prepare("SELECT key FROM plugin_kv ORDER BY key");
        REQUIRE(stmt);
        std::string keys;
        while (stmt->step()) keys += stmt->text(0);
        CHECK(keys == "abcd");
        return 0;
    });
    // A bound value does not carry over to the next use.
    auto missing = (*db)->read([](sqlite::Database& d) {
        auto stmt = d.prepare("SELECT COUNT(*) FROM plugin_kv WHERE key = ?1");
        stmt->step();
        return stmt->integer(0);
    });
    CHECK(missing == 0);
}

TEST_CASE("database: when the disk fills during a group, a write is reported committed exactly when it was", "[unit][store]") {
    test::TempDir dir;
    auto db = sqlite::Database::open(dir.path / "full.db");
    REQUIRE(db);
    // A database that may not grow past about 1 MB: large rows from many writers fill it mid-group,
    // and SQLite then rolls back the whole transaction, not only the failing write's savepoint.
    REQUIRE((*db)->exec("PRAGMA max_page_count = 250"));
    constexpr int kThreads = 12, kWrites = 20;
    std::vector<std::vector<bool>> committed(kThreads, std::vector<bool>(kWrites, false));
    write_at_once(kThreads, kWrites, [&](int t, int i, const std::string& key) {
        committed[t][i] =
            static_cast<bool>((*db)->write([&](sqlite::Database& d) { return insert(d, key, std::string(20000, 'x')); }));
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

TEST_CASE("database: a value held for the next write is read at once and commits with that write, or not at all",
          "[unit][store]") {
    test::TempDir dir;
    auto db = sqlite::Database::open(dir.path / "joined.db");
    REQUIRE(db);
    auto stored = [&](const std::string& key) { return count(**db, "SELECT COUNT(*) FROM plugin_kv WHERE key = '" + key + "'"); };
    const uint64_t opening_commits = (*db)->write_stats().commits;  // the schema's
    auto commits = [&] { return (*db)->write_stats().commits - opening_commits; };
    {
        sqlite::KeyedValues values(**db, "plugin_kv", "plugin");
        REQUIRE(values.set("p", "progress", "1", store::Flush::with_next_write));
        CHECK(values.read("p", "progress").value() == std::optional<std::string>("1"));  // the plugin reads its own write
        CHECK(stored("progress") == 0);                                                  // no commit of its own
        CHECK(commits() == 0);

        // The next write fails: nothing of its transaction commits, and the value is still held.
        REQUIRE_FALSE((*db)->write([](sqlite::Database&) -> Status { return Error{"step_failed", "the step failed"}; }));
        CHECK(stored("progress") == 0);
        CHECK(values.read("p", "progress").value() == std::optional<std::string>("1"));

        // The next write that commits carries it, in its one commit.
        REQUIRE(values.set("p", "progress", "2", store::Flush::with_next_write));  // replaces the one held
        REQUIRE((*db)->write([](sqlite::Database& d) { return insert(d, "step"); }));
        CHECK(stored("progress") == 1);
        CHECK(stored("step") == 1);
        CHECK(commits() == 1);
        CHECK(count(**db, "SELECT COUNT(*) FROM plugin_kv WHERE key = 'progress' AND value = '2'") == 1);

        // A write of its own replaces a held value; a value still held when the store closes is written then.
        REQUIRE(values.set("p", "progress", "3", store::Flush::with_next_write));
        REQUIRE(values.set("p", "progress", "4", store::Flush::now));
        CHECK(values.read("p", "progress").value() == std::optional<std::string>("4"));
        REQUIRE(values.set("p", "last", "5", store::Flush::with_next_write));
        // A value too large to write later is refused now, rather than failing every write after it.
        auto too_large =
            values.set("p", "big", std::string(store::HeldValues::kMaxHeldBytes + 1, 'x'), store::Flush::with_next_write);
        REQUIRE_FALSE(too_large);
        CHECK(too_large.error().code == "value_too_large");
        CHECK_FALSE(values.read("p", "big").value().has_value());
    }
    CHECK(count(**db, "SELECT COUNT(*) FROM plugin_kv WHERE key = 'progress' AND value = '4'") == 1);
    CHECK(count(**db, "SELECT COUNT(*) FROM plugin_kv WHERE key = 'last' AND value = '5'") == 1);
}
