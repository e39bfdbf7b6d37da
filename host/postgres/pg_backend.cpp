#include "postgres/pg_backend.hpp"

#include "postgres/pg_schema.hpp"

namespace agenthost::postgres {

Result<std::unique_ptr<PgBackend>> open_backend(const std::string& url, int lease_seconds, const std::string& owner) {
    auto store = std::make_unique<PgBackend>(url, lease_seconds, owner);
    Status migrated = store->session.with([](Connection& db) { return migrate(db); });
    if (!migrated) return migrated.error();
    return store;
}

}  // namespace agenthost::postgres
