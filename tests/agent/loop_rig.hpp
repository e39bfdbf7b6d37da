// The agent loop wired to in-memory fakes: a scripted model (FakeModel) and an in-memory run
// journal (MemoryJournal) and memory kept in maps (FakeMemory). The built-in tools are the real
// ones; the scratch database holds only the plugins' key-value table; no plugin is loaded.
#pragma once

#include "agent/fake_memory.hpp"
#include "agent/fake_model.hpp"
#include "agent/memory_journal.hpp"
#include "agent/turn_runner.hpp"
#include "sqlite/sqlite_plugin_kv.hpp"
#include "support/test_support.hpp"

#include <memory>
#include <vector>

namespace test {

struct LoopRig {
    explicit LoopRig(agenthost::config::Config base = {});

    // Runs one turn of `conversation`, collecting its events.
    agenthost::agent::TurnOutcome run(const std::string& prompt, const std::string& conversation = "c1");
    agenthost::agent::TurnOutcome run(const agenthost::agent::TurnRequest& request);
    agenthost::agent::TurnOutcome resume(int64_t run);

    TempDir dir;
    agenthost::config::Config cfg;
    std::unique_ptr<agenthost::sqlite::Database> db;
    std::unique_ptr<agenthost::store::PluginKv> kv;
    FakeMemory memory_backend;
    std::unique_ptr<agenthost::memory::AgentMemory> memory;
    std::unique_ptr<agenthost::plugins::HostServices> services;
    std::unique_ptr<agenthost::plugins::Registry> registry;
    std::unique_ptr<agenthost::tools::Catalogue> catalogue;
    std::unique_ptr<agenthost::tools::Invoker> invoker;
    FakeModel model;
    MemoryJournal journal;
    std::unique_ptr<agenthost::agent::TurnRunner> runner;
    std::vector<agenthost::agent::TurnEvent> events;
};

}  // namespace test
