// Wires one running host together: configuration, database, memory, host services, plugin
// registry and the agent runner.
#pragma once

#include "agent/turn_runner.hpp"
#include "llm/llm_queue.hpp"
#include "config/config.hpp"
#include "app/storage.hpp"
#include "app/tool_call_counts.hpp"
#include "memory/agent_memory.hpp"
#include "memory/cached_memory.hpp"
#include "plugins/host_services.hpp"
#include "plugins/registry.hpp"

#include <memory>

namespace agenthost::app {

// What is wrong in the configuration once the plugins are known: unknown or mistyped plugin
// settings, names of plugins, providers and tools that nothing answers to.
struct ConfigProblems {
    std::vector<std::string> errors;  // commands refuse to start (exit 2); doctor and plugins report them
    std::vector<std::string> warnings;
};

class HostApp {
public:
    // Opens the configured storage (storage.hpp) and loads every plugin.
    static Result<std::unique_ptr<HostApp>> start(config::Config config);

    HostApp(config::Config config, std::unique_ptr<Storage> storage);
    const config::Config& config() const { return config_; }
    plugins::Registry& registry() { return registry_; }
    memory::AgentMemory& memory() { return agent_memory_; }
    store::RunJournal& runs() { return storage_->runs(); }
    Storage& storage() { return *storage_; }
    agent::TurnRunner& runner() { return runner_; }
    // The one path for every tool call: what exists, and how it runs (policy.hpp decides whether).
    tools::Catalogue& catalogue() { return catalogue_; }
    tools::Invoker& invoker() { return invoker_; }
    llm::LlmQueue& queue() { return queue_; }
    const ConfigProblems& config_problems() const { return problems_; }
    ToolCallCounts& direct_tool_calls() { return direct_tool_calls_; }

private:
    config::Config config_;
    std::unique_ptr<Storage> storage_;
    memory::CachedMemory memory_cache_;  // every memory read and write of this process goes through it
    memory::AgentMemory agent_memory_;
    plugins::HostServices services_;
    plugins::Registry registry_;  // after the services: its plugins are destroyed before the services they use
    tools::Catalogue catalogue_;
    tools::Invoker invoker_;
    llm::LlmQueue queue_;
    agent::TurnRunner runner_;
    ConfigProblems problems_;
    ToolCallCounts direct_tool_calls_;
};

}  // namespace agenthost::app
