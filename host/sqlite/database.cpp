#include "sqlite/database.hpp"

#include "store/store_error.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <exception>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace agenthost::sqlite {
using store::Flush;
namespace fs = std::filesystem;

// Schema migrations, indexed by the version they produce. Only ever append.
static const char* const kMigrations[] = {
    nullptr,
    // 1: plugin key-value store, agent memory (per conversation and long-term), posted events.
    "CREATE TABLE plugin_kv (plugin TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
    "  updated_at INTEGER NOT NULL DEFAULT (unixepoch()), PRIMARY KEY (plugin, key)) WITHOUT ROWID;"
    "CREATE TABLE memory (conversation TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
    "  updated_at INTEGER NOT NULL DEFAULT (unixepoch()), PRIMARY KEY (conversation, key)) WITHOUT ROWID;"
    "CREATE TABLE events (id INTEGER PRIMARY KEY, conversation TEXT NOT NULL, plugin TEXT NOT NULL,"
    "  body TEXT NOT NULL, created_at INTEGER NOT NULL DEFAULT (unixepoch()), delivered INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX events_pending ON events (delivered, conversation);",
    // 2: long-term facts and the conversation transcript (one row per message, append-only).
    "CREATE TABLE facts (id INTEGER PRIMARY KEY, text TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL DEFAULT (unixepoch()));"
    "CREATE TABLE messages (id INTEGER PRIMARY KEY, conversation TEXT NOT NULL, turn INTEGER NOT NULL,"
    "  kind TEXT NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL DEFAULT (unixepoch()));"
    "CREATE INDEX messages_by_conversation ON messages (conversation, turn, id);",
    // 3: durable runs — conversations, runs with a lease, per-step checkpoints, the tool journal;
    // messages learn their run and keep a tool's full result beside what the model was shown.
    "CREATE TABLE conversations (id TEXT PRIMARY KEY, created_at REAL NOT NULL, updated_at REAL NOT NULL);"
    "INSERT INTO conversations SELECT conversation, MIN(created_at), MAX(created_at) FROM messages GROUP BY conversation;"
    "CREATE TABLE runs (id INTEGER PRIMARY KEY, conversation TEXT NOT NULL, turn INTEGER NOT NULL, status TEXT NOT NULL,"
    "  mode TEXT NOT NULL, provider TEXT NOT NULL, prompt TEXT NOT NULL, stop_reason TEXT, error_code TEXT, error TEXT,"
    "  answer TEXT, iterations INTEGER NOT NULL DEFAULT 0, tool_calls INTEGER NOT NULL DEFAULT 0,"
    "  input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0, started_at REAL NOT NULL,"
    "  updated_at REAL NOT NULL, ended_at REAL, lease_owner TEXT, lease_until REAL);"
    "CREATE INDEX runs_by_conversation ON runs (conversation, id);"
    "CREATE INDEX runs_by_status ON runs (status);"
    "ALTER TABLE messages ADD COLUMN run INTEGER;"
    "ALTER TABLE messages ADD COLUMN result TEXT;"
    "CREATE INDEX messages_by_run ON messages (run, id);"
    "CREATE TABLE checkpoints (id INTEGER PRIMARY KEY, run INTEGER NOT NULL, step INTEGER NOT NULL,"
    "  last_message INTEGER NOT NULL, state TEXT NOT NULL, created_at REAL NOT NULL);"
    "CREATE INDEX checkpoints_by_run ON checkpoints (run, step);"
    "CREATE TABLE tool_journal (run INTEGER NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL, arguments TEXT NOT NULL,"
    "  status TEXT NOT NULL, result TEXT, error_code TEXT, started_at REAL NOT NULL, finished_at REAL,"
    "  PRIMARY KEY (run, call_id)) WITHOUT ROWID;",
    // 4: conversations may be named (empty: never named).
    "ALTER TABLE conversations ADD COLUMN title TEXT NOT NULL DEFAULT '';",
    // 5: a step writes fewer pages. A run keeps only its latest checkpoint (resume reads nothing
    // older), in its own row, replaced in place by the UPDATE every step makes anyway; messages are
    // found by their run's conversation and turn (one run per turn), so their second index goes.
    "ALTER TABLE runs ADD COLUMN checkpoint TEXT;"
    "ALTER TABLE runs ADD COLUMN checkpoint_step INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE runs ADD COLUMN checkpoint_message INTEGER NOT NULL DEFAULT 0;"
    // The run's inputs (a client's history, the request context), stored once, not in every checkpoint.
    "ALTER TABLE runs ADD COLUMN inputs TEXT;"
    "UPDATE runs SET (checkpoint, checkpoint_step, checkpoint_message) = (SELECT state, step, last_message FROM checkpoints"
    "  WHERE run = runs.id ORDER BY step DESC LIMIT 1) WHERE id IN (SELECT run FROM checkpoints);"
    "DROP TABLE checkpoints;"
    "DROP INDEX messages_by_run;",
    // 6: ids are never given twice. Without AUTOINCREMENT SQLite hands out the largest id + 1, so
    // deleting the newest conversation gave its run id to the next run (and a client asking for
    // that run saw the deleted one's events); the tables are rebuilt with it. `recoveries` counts
    // the times the run was found abandoned by its process: a resumed run numbers its events past
    // any its dead process may have sent (agent/turn_loop.cpp). A run keeps the Idempotency-Key it
    // was started with, written with it, and one key starts one run (store/run_journal.hpp, RunKey).
    "CREATE TABLE runs_v6 (id INTEGER PRIMARY KEY AUTOINCREMENT, conversation TEXT NOT NULL, turn INTEGER NOT NULL,"
    "  status TEXT NOT NULL, mode TEXT NOT NULL, provider TEXT NOT NULL, prompt TEXT NOT NULL, stop_reason TEXT,"
    "  error_code TEXT, error TEXT, answer TEXT, iterations INTEGER NOT NULL DEFAULT 0, tool_calls INTEGER NOT NULL DEFAULT 0,"
    "  input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0, started_at REAL NOT NULL,"
    "  updated_at REAL NOT NULL, ended_at REAL, lease_owner TEXT, lease_until REAL, checkpoint TEXT,"
    "  checkpoint_step INTEGER NOT NULL DEFAULT 0, checkpoint_message INTEGER NOT NULL DEFAULT 0, inputs TEXT,"
    "  recoveries INTEGER NOT NULL DEFAULT 0, idempotency_key TEXT, idempotency_print INTEGER);"
    "INSERT INTO runs_v6 (id, conversation, turn, status, mode, provider, prompt, stop_reason, error_code, error, answer,"
    "  iterations, tool_calls, input_tokens, output_tokens, started_at, updated_at, ended_at, lease_owner, lease_until,"
    "  checkpoint, checkpoint_step, checkpoint_message, inputs)"
    "  SELECT id, conversation, turn, status, mode, provider, prompt, stop_reason, error_code, error, answer,"
    "  iterations, tool_calls, input_tokens, output_tokens, started_at, updated_at, ended_at, lease_owner, lease_until,"
    "  checkpoint, checkpoint_step, checkpoint_message, inputs FROM runs;"
    "DROP TABLE runs;"
    "ALTER TABLE runs_v6 RENAME TO runs;"
    "CREATE INDEX runs_by_conversation ON runs (conversation, id);"
    "CREATE INDEX runs_by_status ON runs (status);"
    "CREATE UNIQUE INDEX runs_by_idempotency_key ON runs (idempotency_key) WHERE idempotency_key IS NOT NULL;"
    "CREATE TABLE events_v6 (id INTEGER PRIMARY KEY AUTOINCREMENT, conversation TEXT NOT NULL, plugin TEXT NOT NULL,"
    "  body TEXT NOT NULL, created_at INTEGER NOT NULL DEFAULT (unixepoch()), delivered INTEGER NOT NULL DEFAULT 0);"
    "INSERT INTO events_v6 SELECT id, conversation, plugin, body, created_at, delivered FROM events;"
    "DROP TABLE events;"
    "ALTER TABLE events_v6 RENAME TO events;"
    "CREATE INDEX events_pending ON events (delivered, conversation);",
    // 7: who started a run (RunOrigin): a server resumes the runs it started by itself after a
    // crash or a restart; runs stored before were the terminal's as far as anyone knows.
    "ALTER TABLE runs ADD COLUMN origin TEXT NOT NULL DEFAULT 'cli';",
    // 8: the takeover pass (every few seconds) finds waiting and abandoned runs in indexes alone.
    // stop_reason, origin and the lease come after the prompt in a row, and reading them walked a
    // large prompt's overflow pages: each pass read every failed run's prompt again. The first
    // index starts with status, so it serves what runs_by_status did.
    "DROP INDEX runs_by_status;"
    "CREATE INDEX runs_waiting ON runs (status, origin, stop_reason);"
    "CREATE INDEX runs_leases ON runs (status, lease_owner, lease_until);",
    // 9: the model a run asked for, and the turn it follows (a branch: an edited prompt or a
    // regenerated answer follows an earlier turn than the newest). NULL: the turn before.
    "ALTER TABLE runs ADD COLUMN model TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE runs ADD COLUMN after_turn INTEGER;",
};

const char* migration_sql(int version) { return version >= 1 && version <= kSchemaVersion ? kMigrations[version] : nullptr; }

namespace {

// An exclusive advisory lock (flock) held for the life of the object; released by the kernel if
// the process dies. A file that cannot be locked (read-only place) simply is not waited on.
class SetupLock {
public:
    explicit SetupLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
        if (fd_ >= 0) ::flock(fd_, LOCK_EX);
    }
    ~SetupLock() {
        if (fd_ >= 0) ::close(fd_);  // closing releases the lock
    }
    SetupLock(const SetupLock&) = delete;
    SetupLock& operator=(const SetupLock&) = delete;

private:
    int fd_;
};

}  // namespace

Result<std::unique_ptr<Database>> Database::open(const fs::path& file, Durability durability) {
    std::error_code ec;
    const bool new_dir = file.has_parent_path() && !fs::exists(file.parent_path(), ec);
    if (file.has_parent_path()) fs::create_directories(file.parent_path(), ec);
    if (ec)
        return store::store_error(store::StoreFault::open, "cannot create directory " + file.parent_path().string() + ": " +
                                                               ec.message() + "; set data_dir to a writable place");
    // Transcripts, memory and tool results are the user's: a new data folder and database are
    // theirs alone (SQLite gives its -wal and -shm files the database's mode). Existing ones keep
    // whatever mode the operator chose.
    if (new_dir) fs::permissions(file.parent_path(), fs::perms::owner_all, fs::perm_options::replace, ec);
    if (int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600); fd >= 0) ::close(fd);  // new: 0600
    sqlite3* raw = nullptr;
    int rc = sqlite3_open_v2(file.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
    if (rc != SQLITE_OK) {
        std::string why = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
        sqlite3_close(raw);
        return store::store_error(store::StoreFault::open, "cannot open database " + file.string() + ": " + why);
    }
    auto db = std::make_unique<Database>(Key{}, raw, file, durability);
    sqlite3_busy_timeout(raw, 5000);
    // Setting up (WAL mode, migrations) takes locks SQLite does not wait for, so processes opening
    // the database at the same moment take turns through an advisory lock on a file beside it.
    SetupLock setup(file.string() + ".setup-lock");
    // FULL syncs the log at every commit (a step survives a power cut); NORMAL survives a killed process.
    const char* sync = durability == Durability::full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL";
    for (const char* pragma : {"PRAGMA journal_mode=WAL", sync, "PRAGMA foreign_keys=ON"}) {
        if (auto s = db->exec(pragma); !s) return s.error();
    }
    db->syncing_ = durability == Durability::full;
    if (auto s = db->migrate(); !s) return s.error();
    return db;
}

void Database::release_memory() {
    {
        std::lock_guard lock(mutex_);
        sqlite3_db_release_memory(db_);
    }
    std::lock_guard lock(readers_mutex_);
    for (const auto& reader : idle_readers_) sqlite3_db_release_memory(reader->db_);
}

Database::Reader::Reader(Database& db) : owner(db) {
    if (db.reading_only_ || db.committer_.load() == std::this_thread::get_id()) return;
    std::unique_lock lock(db.readers_mutex_);
    db.reader_returned_.wait(lock, [&] { return !db.idle_readers_.empty() || db.readers_open_ < kMaxReaders; });
    if (!db.idle_readers_.empty()) {
        connection = std::move(db.idle_readers_.back());
        db.idle_readers_.pop_back();
        return;
    }
    ++db.readers_open_;
    lock.unlock();
    sqlite3* raw = nullptr;
    int rc = sqlite3_open_v2(db.file_.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(raw, 5000);
        connection = std::make_unique<Database>(Key{}, raw, db.file_, db.durability_);
        connection->reading_only_ = true;
        return;
    }
    sqlite3_close(raw);
    lock.lock();
    --db.readers_open_;
    db.reader_returned_.notify_one();
}

Database::Reader::~Reader() {
    if (!connection) return;
    {
        std::lock_guard lock(owner.readers_mutex_);
        owner.idle_readers_.push_back(std::move(connection));
    }
    owner.reader_returned_.notify_one();
}

Database::~Database() {
    // The read connections close first: SQLite checkpoints and removes the write-ahead log only when
    // the last connection to close may write (a read-only one left last kept a 4 MB log on disk).
    idle_readers_.clear();
    for (auto& [sql, stmt] : idle_statements_) sqlite3_finalize(stmt);
    sqlite3_close_v2(db_);
}

std::string Database::last_error() const { return sqlite3_errmsg(db_); }

int64_t Database::changes() const { return sqlite3_changes64(db_); }

Status Database::exec(const std::string& sql) {
    std::lock_guard lock(mutex_);
    char* message = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
        std::string why = message ? message : last_error();
        sqlite3_free(message);
        return store::store_error(store::StoreFault::sql, "database " + file_.string() + ": " + why);
    }
    return Ok{};
}

Result<Statement> Database::prepare(const std::string& sql) {
    {
        std::lock_guard lock(statements_mutex_);
        if (auto idle = idle_statements_.find(sql); idle != idle_statements_.end()) {
            sqlite3_stmt* stmt = idle->second;
            idle_statements_.erase(idle);
            return Statement(stmt, *this);
        }
    }
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) !=
        SQLITE_OK)
        return store::store_error(store::StoreFault::sql, "database " + file_.string() + ": " + last_error());
    return Statement(stmt, *this);
}

void Database::release(sqlite3_stmt* stmt) {
    sqlite3_reset(stmt);  // a statement left mid-read would hold its read transaction open
    sqlite3_clear_bindings(stmt);
    std::lock_guard lock(statements_mutex_);
    if (!idle_statements_.emplace(sqlite3_sql(stmt), stmt).second) sqlite3_finalize(stmt);  // a copy is idle already
}

// A write waiting in the queue: its body, and what became of it once its group committed.
struct Database::QueuedWrite {
    const std::function<Status(Database&)>* body;
    Flush flush;
    Status result = Ok{};
    bool done = false;
};

Status Database::write(const std::function<Status(Database&)>& body, Flush flush) {
    if (committer_.load() == std::this_thread::get_id())
        return store::store_error(store::StoreFault::sql,
                                  "database " + file_.string() + ": a write was started inside another write");
    QueuedWrite mine{&body, flush};
    std::unique_lock lock(queue_mutex_);
    queue_.push_back(&mine);
    // Either a leader commits this write with its group, or this writer leads the next group.
    queue_changed_.wait(lock, [&] { return mine.done || !committing_; });
    if (mine.done) return mine.result;
    std::vector<QueuedWrite*> group;
    group.swap(queue_);
    committing_ = true;
    lock.unlock();
    commit_group(group);
    lock.lock();
    committing_ = false;
    for (QueuedWrite* w : group) w->done = true;
    queue_changed_.notify_all();
    return mine.result;
}

// A transaction-control statement, prepared once and kept (exec would parse it every time).
Status Database::control(const std::string& sql) {
    auto stmt = prepare(sql);
    if (!stmt) return stmt.error();
    if (auto s = stmt->run(); !s)
        return store::store_error(store::StoreFault::sql, "database " + file_.string() + ": " + s.error().message);
    return Ok{};
}

Status Database::sync_commits(bool sync) {
    if (sync == syncing_) return Ok{};
    if (auto s = control(sync ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"); !s) return s;
    syncing_ = sync;
    return Ok{};
}

Database::WriteStats Database::write_stats() {
    std::lock_guard lock(queue_mutex_);
    return {writes_.load(), commits_.load(), synced_commits_.load(), queue_.size()};
}

void Database::join_next_write(JoinedWrites& writes) {
    std::lock_guard lock(joined_mutex_);
    if (std::find(joined_.begin(), joined_.end(), &writes) == joined_.end()) joined_.push_back(&writes);
}

void Database::forget_joined(JoinedWrites& writes) {
    // A group that took `writes` holds the connection until it is done with it; the same order of
    // locks as commit_group's.
    std::lock_guard connection(mutex_);
    std::lock_guard lock(joined_mutex_);
    joined_.erase(std::remove(joined_.begin(), joined_.end(), &writes), joined_.end());
}

std::vector<Database::JoinedWrites*> Database::take_joined() {
    std::lock_guard lock(joined_mutex_);
    std::vector<JoinedWrites*> taken;
    taken.swap(joined_);
    return taken;
}

void Database::rejoin(const std::vector<JoinedWrites*>& joined) {
    for (JoinedWrites* j : joined) join_next_write(*j);
}

void Database::commit_group(const std::vector<QueuedWrite*>& group) {
    std::lock_guard connection(mutex_);
    committer_ = std::this_thread::get_id();
    struct Done {
        std::atomic<std::thread::id>& committer;
        ~Done() { committer = std::thread::id{}; }
    } done{committer_};
    // With full durability a group syncs the log at its commit unless every write in it may wait
    // for the next one that syncs (SQLite reads the setting when it commits).
    const bool sync = durability_ == Durability::full &&
                      std::any_of(group.begin(), group.end(), [](const QueuedWrite* w) { return w->flush == Flush::now; });
    if (Status set = sync_commits(sync); !set) {
        for (QueuedWrite* w : group) w->result = set;
        return;
    }
    if (Status begun = control("BEGIN IMMEDIATE"); !begun) {
        for (QueuedWrite* w : group) w->result = begun;
        return;
    }
    const std::vector<JoinedWrites*> joined = take_joined();
    if (!run_group(group, joined)) {
        if (!sqlite3_get_autocommit(db_)) (void)control("ROLLBACK");
        rejoin(joined);
        return;
    }
    if (Status committed = control("COMMIT"); !committed) {
        (void)control("ROLLBACK");
        for (QueuedWrite* w : group)
            if (w->result) w->result = committed;
        rejoin(joined);
        return;
    }
    for (JoinedWrites* j : joined) j->joined_committed();
    commits_ += 1;
    if (sync) synced_commits_ += 1;
    for (QueuedWrite* w : group)
        if (w->result) writes_ += 1;
}

namespace {

// A write's body run so that nothing it throws leaves the leader with its group unanswered.
template <typename Body>
Status caught(const char* what, Body&& body) {
    try {
        return body();
    } catch (const std::exception& e) {
        return store::store_error(store::StoreFault::sql, std::string(what) + " failed: " + e.what());
    } catch (...) {
        return store::store_error(store::StoreFault::sql, std::string(what) + " failed with an unknown exception");
    }
}

}  // namespace

bool Database::run_group(const std::vector<QueuedWrite*>& group, const std::vector<JoinedWrites*>& joined) {
    auto run = [this](QueuedWrite& w) { w.result = caught("a write", [&] { return (*w.body)(*this); }); };
    // What was held for this write goes first; the group's bodies may have been counting on it
    // (a provider's state and the step that used its reply), so its failure fails them all.
    for (JoinedWrites* j : joined) {
        Status held = caught("a held write", [&] { return j->write_joined(*this); });
        if (!held) {
            for (QueuedWrite* w : group) w->result = held;
            return false;
        }
    }
    if (group.size() == 1) {  // alone: its failure rolls the transaction back, no savepoint needed
        run(*group.front());
        return static_cast<bool>(group.front()->result);
    }
    for (QueuedWrite* w : group) {  // together: a body's failure rolls back its own savepoint only …
        if (auto s = control("SAVEPOINT queued_write"); !s) {
            w->result = s;
            continue;
        }
        run(*w);
        if (!w->result) (void)control("ROLLBACK TO queued_write");
        // … unless SQLite rolled the whole transaction back (a full disk, an I/O error, no
        // memory): then nothing of the group was kept, and every write of it failed. Going on
        // would commit the next bodies one by one outside the group.
        if (sqlite3_get_autocommit(db_)) {
            Status lost =
                w->result ? Status(store::store_error(store::StoreFault::sql, "database " + file_.string() + ": " + last_error()))
                          : w->result;
            for (QueuedWrite* each : group) each->result = lost;
            return false;
        }
        (void)control("RELEASE queued_write");
    }
    return true;
}

namespace {

// The schema version; the statement is released before anything else runs (an open read would
// keep a migration from dropping a table).
Result<int> schema_version(Database& db) {
    auto stmt = db.prepare("PRAGMA user_version");
    if (!stmt) return stmt.error();
    return stmt->step() ? static_cast<int>(stmt->integer(0)) : 0;
}

}  // namespace

Status Database::migrate() {
    auto current = schema_version(*this);
    if (!current) return current.error();
    if (*current > kSchemaVersion)
        return Error{"store_too_new", "database " + file_.string() + " has schema version " + std::to_string(*current) +
                                          " but this agenthost knows only up to " + std::to_string(kSchemaVersion) +
                                          "; upgrade agenthost (the database was left untouched)"};
    if (*current == kSchemaVersion) return Ok{};
    // Under the write lock the version is read again: another process may have migrated meanwhile.
    return write([&](Database& db) -> Status {
        auto again = schema_version(db);
        if (!again) return again.error();
        for (int v = *again + 1; v <= kSchemaVersion; ++v) {
            if (auto r = db.exec(kMigrations[v]); !r) return r;
            if (auto r = db.exec("PRAGMA user_version = " + std::to_string(v)); !r) return r;
        }
        return Ok{};
    });
}

Statement::~Statement() {
    if (stmt_) owner_->release(stmt_);
}

namespace {
// An empty view may have no data pointer, which SQLite would bind as NULL: it is text, "".
const char* text_data(std::string_view text) { return text.data() ? text.data() : ""; }
}  // namespace

Statement& Statement::bind(int index, std::string_view text) {
    sqlite3_bind_text(stmt_, index, text_data(text), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    return *this;
}

Statement& Statement::bind_borrowed(int index, std::string_view text) {
    sqlite3_bind_text(stmt_, index, text_data(text), static_cast<int>(text.size()), SQLITE_STATIC);
    return *this;
}

Statement& Statement::bind(int index, int64_t value) {
    sqlite3_bind_int64(stmt_, index, value);
    return *this;
}

Statement& Statement::bind_real(int index, double value) {
    sqlite3_bind_double(stmt_, index, value);
    return *this;
}

Statement& Statement::bind_null(int index) {
    sqlite3_bind_null(stmt_, index);
    return *this;
}

bool Statement::step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) {
        failed_ = true;
        const int extended = sqlite3_extended_errcode(sqlite3_db_handle(stmt_));
        conflict_ = extended == SQLITE_CONSTRAINT_UNIQUE || extended == SQLITE_CONSTRAINT_PRIMARYKEY;
        error_ = sqlite3_errmsg(sqlite3_db_handle(stmt_));
    }
    return false;
}

Status Statement::run() {
    // Not stepped again once failed: SQLite would reset the statement and run it a second time.
    while (!failed_ && step()) {
    }
    return status();
}

Status Statement::status() const {
    if (!failed_) return Ok{};
    return store::store_error(conflict_ ? store::StoreFault::conflict : store::StoreFault::sql, error_);
}

std::string Statement::text(int column) const {
    const unsigned char* t = sqlite3_column_text(stmt_, column);
    return t ? std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(stmt_, column)) : std::string();
}

int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::real(int column) const { return sqlite3_column_double(stmt_, column); }

bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

}  // namespace agenthost::sqlite
