// The PostgreSQL store behind app::Storage, in the postgres module (common/host_module.hpp): the
// only code that links libpq, loaded when [store] backend = "postgresql".
#pragma once

#include "app/storage.hpp"
#include "common/host_module.hpp"

namespace agenthost::app {

struct PostgresStorageModule {
    modules::ModuleHeader header;
    // Connects to store.url, migrates, and returns the stores; the error names the cause.
    Result<std::unique_ptr<Storage>> (*open)(const config::StoreSettings& store);
};

}  // namespace agenthost::app
