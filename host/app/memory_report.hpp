// What the agent keeps for one conversation (its session memory, tasks, entries, the question it
// asked, recent errors, notifications waiting for its next turn), as one JSON object: the server's
// GET /memory/state and the MCP resource memory://conversations/ID both show this.
#pragma once

#include "memory/agent_memory.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace agenthost::app {

nlohmann::json conversation_memory(memory::AgentMemory& memory, const std::string& conversation);

}  // namespace agenthost::app
