// Assembles the system prompt from the base instructions and the agent's memory, each section only
// when it has something to say.
#pragma once

#include "common/choices.hpp"
#include "memory/agent_memory.hpp"

#include <string>
#include <vector>

namespace agenthost::agent {

inline constexpr size_t kFactQueryBytes = 64 << 10;

struct PromptInputs {
    std::string base;  // configured instructions
    Mode mode = Mode::execute;
    // The user's message, which picks the relevant facts: its first kFactQueryBytes are enough (a
    // view, not a copy: a prompt may be megabytes, and this is built for every model call).
    std::string_view prompt;
    std::string plugin_context;              // text from tool plugins' context hooks
    std::string request_context_json;        // e.g. selected graph nodes, passed in with the request
    std::vector<std::string> notifications;  // events plugins posted since the last turn
    std::string on_demand_tools;             // the tool families load_tools offers (tools/tool_families.hpp)
};

std::string build_system_prompt(memory::AgentMemory& memory, std::string_view conversation, const PromptInputs& in);

}  // namespace agenthost::agent
