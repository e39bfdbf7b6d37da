// Tool families offered on demand. Each tool a request offers costs the model its schema in every
// request: a plugin with many tools (the graph's 14) is listed in the system prompt by name and
// purpose instead, and the model asks for its tools with load_tools (or simply calls one of them
// by name). What a conversation loaded stays offered in it: its memory keeps the list.
#pragma once

#include "memory/agent_memory.hpp"
#include "tools/catalogue.hpp"

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace agenthost::tools {

// The conversation memory entry that lists the families a conversation loaded (a JSON array).
inline constexpr const char* kLoadedFamiliesKey = "tools_loaded";
// The built-in tool that loads a family.
inline constexpr const char* kLoadToolsName = "load_tools";

struct ToolFamily {
    std::string plugin;       // the family's name: the plugin that provides the tools
    std::string description;  // the plugin's own (its manifest's description)
    std::vector<std::string> tools;
};

// The families not offered in `conversation` yet: every plugin with at least `threshold` tools in
// the agent's scope that the conversation has not loaded, in load order. None when threshold is 0.
std::vector<ToolFamily> on_demand_families(const Catalogue& catalogue, memory::AgentMemory& memory, std::string_view conversation,
                                           int threshold);

// Marks `plugin`'s tools loaded in `conversation`; true when it was not loaded before.
Result<bool> load_family(memory::AgentMemory& memory, std::string_view conversation, const std::string& plugin);

// The system prompt's lines for `families`: "- graph: Knowledge graphs … (14 tools: list_graphs, …)".
std::string describe_families(const std::vector<ToolFamily>& families);

// load_tools {"family": NAME}: loads a plugin's tools for the conversation; a tool result object.
nlohmann::json call_load_tools(const Catalogue& catalogue, memory::AgentMemory& memory, std::string_view conversation,
                               const nlohmann::json& arguments);

}  // namespace agenthost::tools
