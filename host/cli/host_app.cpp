#include "cli/host_app.hpp"

#include <spdlog/spdlog.h>

namespace agenthost::cli {

HostApp::HostApp(config::Config config, std::unique_ptr<store::Database> db)
    : config_(std::move(config)), db_(std::move(db)), kv_(*db_), memory_(*db_), agent_memory_(*db_, memory_),
      runs_(*db_, config_.store.lease_seconds), services_(kv_, memory_), registry_(config_, services_),
      catalogue_(registry_), invoker_(catalogue_, agent_memory_), queue_(registry_, config_),
      runner_(registry_, catalogue_, invoker_, queue_, agent_memory_, runs_, config_) {}

Result<std::unique_ptr<HostApp>> HostApp::start(config::Config config) {
    auto durability = config.store.durability == "process" ? store::Durability::process : store::Durability::full;
    auto db = store::Database::open(config.data_dir / "agenthost.db", durability);
    if (!db) return db.error();
    auto app = std::make_unique<HostApp>(std::move(config), std::move(*db));
    if (int n = app->runs_.recover_interrupted(); n > 0)
        spdlog::warn("{} run(s) were left running by a process that stopped; marked interrupted (agenthost runs)", n);
    app->registry_.load_all();
    return app;
}

}  // namespace agenthost::cli
