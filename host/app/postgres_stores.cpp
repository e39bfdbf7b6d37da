// The postgres module's one entry: app::Stores on a PostgreSQL database.
#include "app/postgres_stores.hpp"

#include "postgres/pg_store.hpp"

namespace agenthost::app {
namespace {

class PostgresStores final : public Stores {
public:
    explicit PostgresStores(std::unique_ptr<postgres::PgStore> store) : store_(std::move(store)) {}
    store::RunJournal& runs() override { return store_->journal; }
    memory::MemoryBackend& memory() override { return store_->memory; }
    store::PluginKv& plugin_kv() override { return store_->plugin_kv; }
    store::RunEventLog* events() override { return &store_->events; }
    store::IdempotencyKeys* idempotency_keys() override { return &store_->idempotency_keys; }
    store::RunCancels* cancels() override { return &store_->cancels; }
    std::string_view backend() const override { return "postgresql"; }
    bool ready() override {
        return store_->session
            .with([](postgres::Connection& db) -> Status {
                auto rows = db.exec("SELECT 1");
                if (!rows) return rows.error();
                return Ok{};
            })
            .ok();
    }

private:
    std::unique_ptr<postgres::PgStore> store_;
};

Result<std::unique_ptr<Stores>> open_postgres(const config::StoreSettings& settings) {
    auto store = postgres::open_store(settings.url, settings.lease_seconds);
    if (!store) return store.error();
    return std::unique_ptr<Stores>(std::make_unique<PostgresStores>(std::move(*store)));
}

const PostgresStoresModule kModule{{AGENTHOST_VERSION, sizeof(PostgresStoresModule)}, open_postgres};

}  // namespace
}  // namespace agenthost::app

AGENTHOST_MODULE_ENTRY(agenthost_module_postgres, agenthost::app::kModule)
