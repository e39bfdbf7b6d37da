#include "cli/host_app.hpp"

namespace agenthost::cli {

HostApp::HostApp(config::Config config, std::unique_ptr<store::Database> db)
    : config_(std::move(config)), db_(std::move(db)), kv_(*db_), memory_(*db_), agent_memory_(*db_, memory_),
      transcript_(*db_), services_(kv_, memory_), registry_(config_, services_),
      queue_(registry_, config_), runner_(registry_, queue_, agent_memory_, transcript_, config_) {}

Result<std::unique_ptr<HostApp>> HostApp::start(config::Config config) {
    auto db = store::Database::open(config.data_dir / "agenthost.db");
    if (!db) return db.error();
    auto app = std::make_unique<HostApp>(std::move(config), std::move(*db));
    app->registry_.load_all();
    return app;
}

}  // namespace agenthost::cli
