// The storage a host runs on, chosen by [store] backend: the embedded SQLite backend (a file in
// data_dir, sqlite/) or the PostgreSQL backend several hosts share (postgres/, loaded as a module).
// Both serve the same interfaces — the run journal (store/), agent memory (memory/) and the plugins'
// key-value data (store/) — so nothing above this file knows which it is.
#pragma once

#include "config/config.hpp"
#include "memory/memory_backend.hpp"
#include "store/change_signals.hpp"
#include "store/idempotency_keys.hpp"
#include "store/plugin_kv.hpp"
#include "store/run_cancels.hpp"
#include "store/run_events.hpp"
#include "store/run_journal.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace agenthost::sqlite {
class Database;  // sqlite/database.hpp: only SQLite's own maintenance needs it (the postgres module does not)
}

namespace agenthost::app {

class Storage {
public:
    virtual ~Storage() = default;
    virtual store::RunJournal& runs() = 0;
    virtual memory::MemoryBackend& memory() = 0;
    virtual store::PluginKv& plugin_kv() = 0;
    // The runs' events for hosts streaming runs others execute; null when one host is all there is.
    virtual store::RunEventLog* events() { return nullptr; }
    // Idempotency keys every host sees; null when the server's own memory is enough (one host).
    virtual store::IdempotencyKeys* idempotency_keys() { return nullptr; }
    // Cancel requests for runs other hosts execute; null with one host.
    virtual store::RunCancels* cancels() { return nullptr; }
    // What other hosts changed, told as it happens (store/change_signals.hpp); null with one host.
    virtual store::ChangeSignals* signals() { return nullptr; }
    // The backend's name as [store] backend spells it.
    virtual std::string_view backend() const = 0;
    // Whether the store answers now (readiness): a read of the run journal itself, so a database
    // that answers but whose tables cannot be read is not ready either.
    bool ready() { return runs().runs("", 1).ok(); }

    // Maintenance, the same call for every backend; a backend without the need does nothing.
    // What the store's writer did (SQLite's group commit), for /metrics; nullopt when it has none.
    struct WriteStats {
        uint64_t writes = 0, commits = 0, synced_commits = 0, waiting = 0;
    };
    virtual std::optional<WriteStats> write_stats() { return std::nullopt; }
    // Gives back the memory the store caches (a server going idle after a burst).
    virtual void release_memory() {}
    // Gives the space compact freed back to the file system: what the store took on disk before
    // and after, and any step that failed; nullopt when the backend reclaims its own (PostgreSQL's
    // autovacuum).
    struct Reclaimed {
        uint64_t before = 0, after = 0;
        std::vector<std::string> problems;
    };
    virtual std::optional<Reclaimed> reclaim_space() { return std::nullopt; }

    // The embedded SQLite connection itself, for tests that set connection-level PRAGMAs (a page
    // limit to fill the disk); null for PostgreSQL. Production code uses the calls above.
    virtual sqlite::Database* sqlite() { return nullptr; }
};

// Opens the configured store; the error names the file or the server and the fix.
Result<std::unique_ptr<Storage>> open_storage(const config::Config& config);

// Why writing into `data_dir` would fail now, in words with the fix — its file system is read-only,
// or has less than kMinFreeBytes free — or nullopt. The one check doctor and /readyz make: a
// store that answers reads can still refuse every step.
inline constexpr uint64_t kMinFreeBytes = 8 << 20;
std::optional<std::string> data_dir_problem(const std::filesystem::path& data_dir);

}  // namespace agenthost::app
