#include "app/stores.hpp"

#include "app/postgres_stores.hpp"
#include "memory/memory_store.hpp"
#include "store/run_store.hpp"

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

class SqliteStores final : public Stores {
public:
    SqliteStores(std::unique_ptr<store::Database> db, int lease_seconds)
        : db_(std::move(db)), runs_(*db_, lease_seconds), memory_(*db_), kv_(*db_) {}
    store::RunJournal& runs() override { return runs_; }
    memory::MemoryBackend& memory() override { return memory_; }
    store::PluginKv& plugin_kv() override { return kv_; }
    bool ready() override {
        return db_->read([](store::Database& d) { return d.exec("SELECT 1") ? 1 : 0; }) == 1;
    }
    store::Database* sqlite() override { return db_.get(); }
    std::string_view backend() const override { return "sqlite"; }

private:
    std::unique_ptr<store::Database> db_;
    store::RunStore runs_;
    memory::MemoryStore memory_;
    store::SqlitePluginKv kv_;
};

}  // namespace

Result<std::unique_ptr<Stores>> open_stores(const config::Config& config) {
    if (config.store.backend == "postgresql") {
        auto module = modules::load_table<PostgresStoresModule>("postgres");
        if (!module) return module.error();
        auto stores = (*module)->open(config.store);
        if (!stores)
            return Error{stores.error().code,
                         stores.error().message + " (store.backend = \"postgresql\", URL from $" + config.store.url_env + ")"};
        return std::move(*stores);
    }
    auto durability = config.store.durability == "process" ? store::Durability::process : store::Durability::full;
    auto db = store::Database::open(config.data_dir / "agenthost.db", durability);
    if (!db) return db.error();
    return std::unique_ptr<Stores>(std::make_unique<SqliteStores>(std::move(*db), config.store.lease_seconds));
}

}  // namespace agenthost::app
