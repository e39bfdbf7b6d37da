#include "agent/loop_rig.hpp"

#include <catch2/catch.hpp>

namespace test {

using namespace agenthost;

LoopRig::LoopRig(config::Config base) : cfg(std::move(base)) {
    cfg.data_dir = dir.path;
    cfg.plugin_dirs.clear();
    auto opened = sqlite::Database::open(dir.path / "loop.db");
    REQUIRE(opened);
    db = std::move(*opened);
    kv = std::make_unique<sqlite::SqlitePluginKv>(*db);
    memory = std::make_unique<memory::AgentMemory>(memory_backend);
    services = std::make_unique<plugins::HostServices>(*kv, memory_backend);
    registry = std::make_unique<plugins::Registry>(cfg, *services);
    catalogue = std::make_unique<tools::Catalogue>(*registry);
    invoker = std::make_unique<tools::Invoker>(*catalogue, *memory);
    runner = std::make_unique<agent::TurnRunner>(agent::TurnDeps{*registry, *catalogue, *invoker, model, *memory, journal, cfg});
}

agent::TurnOutcome LoopRig::run(const std::string& prompt, const std::string& conversation) {
    agent::TurnRequest request;
    request.prompt = prompt;
    request.conversation_id = conversation;
    return run(request);
}

agent::TurnOutcome LoopRig::run(const agent::TurnRequest& request) {
    agent::RunControls controls;
    controls.on_event = [this](const agent::TurnEvent& e) { events.push_back(e); };
    return runner->run(request, controls);
}

agent::TurnOutcome LoopRig::resume(int64_t run) {
    agent::RunControls controls;
    controls.on_event = [this](const agent::TurnEvent& e) { events.push_back(e); };
    return runner->resume_run(run, {}, controls);
}

}  // namespace test
