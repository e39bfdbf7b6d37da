#include "app/storage.hpp"

#include "app/postgres_storage.hpp"
#include "sqlite/sqlite_backend.hpp"

#include <cerrno>
#include <cstring>

#include <sys/statvfs.h>
#include <unistd.h>

namespace agenthost::app {

std::optional<std::string> data_dir_problem(const std::filesystem::path& data_dir) {
    struct statvfs fs {};
    if (::statvfs(data_dir.c_str(), &fs) != 0)
        return "data dir " + data_dir.string() + " cannot be examined: " + std::strerror(errno) + "; create it or fix data_dir";
    if (fs.f_flag & ST_RDONLY)
        return "data dir " + data_dir.string() + " is on a read-only file system: no step can be saved; remount it read-write";
    const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
    if (free_bytes < kMinFreeBytes)
        return "data dir " + data_dir.string() + " has " + std::to_string(free_bytes >> 10) + " KiB free (less than " +
               std::to_string(kMinFreeBytes >> 20) + " MiB): steps will fail to be saved; free space on its file system";
    if (::access(data_dir.c_str(), W_OK) != 0)
        return "data dir " + data_dir.string() + " is not writable by this user: " + std::strerror(errno) +
               "; run as its owner or fix its permissions";
    return std::nullopt;
}

namespace {

class SqliteStorage final : public Storage {
public:
    explicit SqliteStorage(std::unique_ptr<sqlite::SqliteBackend> backend) : backend_(std::move(backend)) {}
    store::RunJournal& runs() override { return backend_->journal; }
    memory::MemoryBackend& memory() override { return backend_->memory; }
    store::PluginKv& plugin_kv() override { return backend_->plugin_kv; }
    sqlite::Database* sqlite() override { return backend_->db.get(); }
    std::optional<WriteStats> write_stats() override {
        auto s = backend_->db->write_stats();
        return WriteStats{s.writes, s.commits, s.synced_commits, s.waiting};
    }
    void release_memory() override { backend_->db->release_memory(); }
    std::optional<Reclaimed> reclaim_space() override {
        sqlite::Database& db = *backend_->db;
        // What the database takes on disk: the file and its write-ahead log.
        auto size = [&] {
            std::error_code missing;  // no log: nothing was written since the last checkpoint emptied it
            auto wal = std::filesystem::file_size(db.file().string() + "-wal", missing);
            return std::filesystem::file_size(db.file()) + (missing ? 0 : wal);
        };
        Reclaimed r;
        r.before = size();
        // VACUUM writes the rebuilt database through the log; the second checkpoint moves it into the
        // file and empties the log, so the figure after is what stays on disk.
        for (const char* sql : {"PRAGMA wal_checkpoint(TRUNCATE)", "VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"})
            if (auto s = db.exec(sql); !s) r.problems.push_back(s.error().message);
        r.after = size();
        return r;
    }
    std::string_view backend() const override { return "sqlite"; }

private:
    std::unique_ptr<sqlite::SqliteBackend> backend_;
};

}  // namespace

Result<std::unique_ptr<Storage>> open_storage(const config::Config& config) {
    if (config.store.backend == config::StoreBackend::postgresql) {
        auto module = modules::load_table<PostgresStorageModule>("postgres");
        if (!module) return module.error();
        auto stores = (*module)->open(config.store);
        if (!stores)
            return Error{stores.error().code,
                         stores.error().message + " (store.backend = \"postgresql\", URL from $" + config.store.url_env + ")"};
        return std::move(*stores);
    }
    auto durability =
        config.store.durability == config::Durability::process ? sqlite::Durability::process : sqlite::Durability::full;
    auto backend = sqlite::open_backend(config.data_dir / "agenthost.db", durability, config.store.lease_seconds);
    if (!backend) return backend.error();
    return std::unique_ptr<Storage>(std::make_unique<SqliteStorage>(std::move(*backend)));
}

}  // namespace agenthost::app
