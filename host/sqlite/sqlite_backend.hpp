// The embedded backend: one SQLite file in the data dir holding the run journal, agent memory and
// the plugins' key-value data, side by side with the PostgreSQL backend (postgres/pg_backend.hpp).
#pragma once

#include "sqlite/database.hpp"
#include "sqlite/sqlite_memory.hpp"
#include "sqlite/sqlite_plugin_kv.hpp"
#include "sqlite/sqlite_run_journal.hpp"

#include <memory>

namespace agenthost::sqlite {

struct SqliteBackend {
    // `lease_seconds`: how long a run stays claimed without a heartbeat.
    SqliteBackend(std::unique_ptr<Database> opened, int lease_seconds)
        : db(std::move(opened)), journal(*db, lease_seconds), memory(*db), plugin_kv(*db) {}
    std::unique_ptr<Database> db;
    SqliteRunJournal journal;
    SqliteMemory memory;
    SqlitePluginKv plugin_kv;
};

// Opens (creating and migrating) the database file; the error names the file and the cause.
inline Result<std::unique_ptr<SqliteBackend>> open_backend(const std::filesystem::path& file, Durability durability,
                                                           int lease_seconds) {
    auto db = Database::open(file, durability);
    if (!db) return db.error();
    return std::make_unique<SqliteBackend>(std::move(*db), lease_seconds);
}

}  // namespace agenthost::sqlite
