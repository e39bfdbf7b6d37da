// The postgres module's one entry: app::Storage on a PostgreSQL database.
#include "app/postgres_storage.hpp"

#include "postgres/pg_backend.hpp"

namespace agenthost::app {
namespace {

class PostgresStorage final : public Storage {
public:
    explicit PostgresStorage(std::unique_ptr<postgres::PgBackend> backend) : backend_(std::move(backend)) {}
    store::RunJournal& runs() override { return backend_->journal; }
    memory::MemoryBackend& memory() override { return backend_->memory; }
    store::PluginKv& plugin_kv() override { return backend_->plugin_kv; }
    store::RunEventLog* events() override { return &backend_->events; }
    store::IdempotencyKeys* idempotency_keys() override { return &backend_->idempotency_keys; }
    store::RunCancels* cancels() override { return &backend_->cancels; }
    store::ChangeSignals* signals() override { return &backend_->signals; }
    std::string_view backend() const override { return "postgresql"; }

private:
    std::unique_ptr<postgres::PgBackend> backend_;
};

Result<std::unique_ptr<Storage>> open_postgres(const config::StoreSettings& settings) {
    auto backend = postgres::open_backend(settings.url, settings.lease_seconds);
    if (!backend) return backend.error();
    return std::unique_ptr<Storage>(std::make_unique<PostgresStorage>(std::move(*backend)));
}

const PostgresStorageModule kModule{{AGENTHOST_VERSION, sizeof(PostgresStorageModule)}, open_postgres};

}  // namespace
}  // namespace agenthost::app

AGENTHOST_MODULE_ENTRY(agenthost_module_postgres, agenthost::app::kModule)
