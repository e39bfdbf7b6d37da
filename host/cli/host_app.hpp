// Wires one running host together: configuration, database, host services, plugin registry.
#pragma once

#include "config/config.hpp"
#include "memory/memory_store.hpp"
#include "plugins/host_services.hpp"
#include "plugins/registry.hpp"
#include "store/database.hpp"
#include "store/plugin_kv.hpp"

#include <memory>

namespace agenthost::cli {

class HostApp {
public:
    // Opens the database in config.data_dir and loads every plugin.
    static Result<std::unique_ptr<HostApp>> start(config::Config config);

    HostApp(config::Config config, std::unique_ptr<store::Database> db);
    const config::Config& config() const { return config_; }
    plugins::Registry& registry() { return registry_; }

private:
    config::Config config_;
    std::unique_ptr<store::Database> db_;
    store::PluginKv kv_;
    memory::MemoryStore memory_;
    plugins::HostServices services_;
    plugins::Registry registry_;  // last: its plugins are destroyed before the services they use
};

}  // namespace agenthost::cli
