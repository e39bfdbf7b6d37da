// One SQLite database file shared by the host's stores: WAL, a busy timeout and immediate write
// transactions, so the CLI and a running server can use it at once. Thread-safe.
//
// Writes commit in groups: while one transaction commits (its fsync), the writes that arrive queue
// up, and the next commit takes them all at once, each in its own savepoint. Every write is still
// durable before write() returns; concurrent runs just share the fsyncs, the way databases commit
// groups. Prepared statements are kept for reuse, one idle copy per SQL text.
#pragma once

#include "common/result.hpp"
#include "store/flush.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace agenthost::sqlite {

// The newest schema this build knows. A database with a higher version is refused, untouched.
inline constexpr int kSchemaVersion = 9;
// The SQL that migration `version` runs (1 … kSchemaVersion), for tests that build old databases.
const char* migration_sql(int version);

// When a committed write is safe: `full` survives a power cut, `process` a killed process.
enum class Durability { full, process };

class Statement;

class Database {
    struct Key {};  // lets only open() construct, while still going through make_unique

public:
    Database(Key, sqlite3* db, std::filesystem::path file, Durability durability)
        : db_(db), file_(std::move(file)), durability_(durability) {}
    static Result<std::unique_ptr<Database>> open(const std::filesystem::path& file, Durability durability = Durability::full);
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    // Runs `body` inside an immediate write transaction and returns once it is committed (durable as
    // the database's Durability and `flush` say: a group syncs when any write in it must be on disk
    // now). A body that returns an error changes nothing: its savepoint is rolled back, while the
    // other writes of its group commit. Serialised with every other use of this connection. A body
    // must not call write() itself.
    Status write(const std::function<Status(Database&)>& body, store::Flush flush = store::Flush::now);
    // write() for a body that returns a Result<T>: its value once committed, or the body's or the
    // commit's error.
    template <typename Body>
    auto write_returning(Body&& body, store::Flush flush = store::Flush::now) -> decltype(body(std::declval<Database&>())) {
        decltype(body(std::declval<Database&>())) out = Error{};
        Status committed = write(
            [&](Database& db) -> Status {
                out = body(db);  // a body runs again when its group failed: the last answer counts
                return out ? Status(Ok{}) : Status(out.error());
            },
            flush);
        if (!committed) return committed.error();
        return out;
    }
    // Runs `body` without a transaction (for reads), on a reading connection of its own: reads see
    // what is committed and go on while a write commits. Inside a write body, on the writer's
    // connection (seeing the write).
    template <typename F>
    auto read(F&& body) {
        Reader reader(*this);
        if (reader.connection) return body(*reader.connection);
        std::lock_guard lock(mutex_);
        return body(*this);
    }

    // What a store holds in memory to write in the transaction of the next write (any body's,
    // whoever queued it) instead of committing on its own: store::Flush::with_next_write.
    class JoinedWrites {
    public:
        virtual ~JoinedWrites() = default;
        // Writes what it holds, inside that transaction: an error fails the whole group (nothing of
        // it commits), and what is held waits for the next write.
        virtual Status write_joined(Database& db) = 0;
        // The transaction committed: what write_joined wrote is no longer held.
        virtual void joined_committed() = 0;
    };
    // `writes` holds something for the next write. It is called once by that write; it must call
    // forget_joined before it is destroyed.
    void join_next_write(JoinedWrites& writes);
    void forget_joined(JoinedWrites& writes);

    Status exec(const std::string& sql);
    Result<Statement> prepare(const std::string& sql);
    std::string last_error() const;
    int64_t changes() const;  // rows changed by the last statement
    const std::filesystem::path& file() const { return file_; }

    // What /metrics tells of the writer: writes committed, the commits they took, how many of those
    // synced the disk, and the writes waiting now for the commit in progress (the one place the
    // store limits concurrency).
    struct WriteStats {
        uint64_t writes = 0, commits = 0, synced_commits = 0, waiting = 0;
    };
    WriteStats write_stats();
    // Gives back the page cache memory of this connection and of the idle reading ones (pages are
    // read again from the file when needed): for a server going idle after a burst.
    void release_memory();

private:
    struct QueuedWrite;
    // A reading connection, taken from the idle ones (or opened, up to kMaxReaders) for one read and
    // given back after it; none (the writer's connection is used) inside a write, on a reading
    // connection itself, or when no reader could be opened.
    struct Reader {
        explicit Reader(Database& db);
        ~Reader();
        Reader(const Reader&) = delete;
        Reader& operator=(const Reader&) = delete;
        Database& owner;
        std::unique_ptr<Database> connection;
    };
    static constexpr size_t kMaxReaders = 4;
    Status migrate();
    // Runs a group of queued writes in one transaction (the caller is the group's leader).
    void commit_group(const std::vector<QueuedWrite*>& group);
    // Runs the joined writes and then the group's bodies in the open transaction; false when the
    // transaction must be rolled back (every write's result says why).
    bool run_group(const std::vector<QueuedWrite*>& group, const std::vector<JoinedWrites*>& joined);
    std::vector<JoinedWrites*> take_joined();
    void rejoin(const std::vector<JoinedWrites*>& joined);
    Status control(const std::string& sql);
    // Sets whether the next commit syncs the log (synchronous FULL or NORMAL), when it differs.
    Status sync_commits(bool sync);
    // A statement back from use: reset and kept idle for its SQL, or finalised.
    void release(sqlite3_stmt* stmt);
    friend class Statement;

    sqlite3* db_;
    std::filesystem::path file_;
    Durability durability_;
    bool syncing_ = false;        // the connection's synchronous setting is FULL (set in open)
    std::recursive_mutex mutex_;  // the connection

    std::mutex queue_mutex_;  // the writes waiting for a commit …
    std::condition_variable queue_changed_;
    std::vector<QueuedWrite*> queue_;
    bool committing_ = false;                   // … while a leader commits a group
    std::atomic<std::thread::id> committer_{};  // the leader's thread, so a nested write is refused
    std::atomic<uint64_t> writes_{0}, commits_{0}, synced_commits_{0};
    std::mutex joined_mutex_;  // never held while a joined write runs
    std::vector<JoinedWrites*> joined_;

    bool reading_only_ = false;  // a reading connection of another Database
    std::mutex readers_mutex_;
    std::condition_variable reader_returned_;
    std::vector<std::unique_ptr<Database>> idle_readers_;
    size_t readers_open_ = 0;

    std::mutex statements_mutex_;
    std::unordered_map<std::string, sqlite3_stmt*> idle_statements_;
};

// A prepared statement; binds are 1-based, columns 0-based.
class Statement {
public:
    // `owner`: the database that keeps the statement for reuse when it is done.
    Statement(sqlite3_stmt* stmt, Database& owner) : stmt_(stmt), owner_(&owner) {}
    Statement(Statement&& other) noexcept : stmt_(std::exchange(other.stmt_, nullptr)), owner_(other.owner_) {}
    Statement& operator=(Statement&&) = delete;
    ~Statement();

    Statement& bind(int index, std::string_view text);  // copied: the text may go before the statement runs
    // Not copied: for large values (a tool result, a message) that outlive the statement's run. SQLite
    // reads them while it steps; a copy would put one more of a 60 MB result in RAM.
    Statement& bind_borrowed(int index, std::string_view text);
    Statement& bind(int index, int64_t value);
    Statement& bind_real(int index, double value);
    Statement& bind_null(int index);
    // true while a row is available; false when done. Errors surface through run()/ok().
    bool step();
    Status run();  // steps to completion
    std::string text(int column) const;
    int64_t integer(int column) const;
    double real(int column) const;
    bool is_null(int column) const;
    bool failed() const { return failed_; }
    // Ok, or why the last step failed: "store_conflict" when a unique index refused the row,
    // "store_sql" otherwise.
    Status status() const;

private:
    sqlite3_stmt* stmt_;
    Database* owner_;
    bool failed_ = false;
    bool conflict_ = false;  // the failure was a unique index's refusal
    std::string error_;
    friend class Database;
};

}  // namespace agenthost::sqlite
