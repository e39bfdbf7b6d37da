// Every tool the host can run, from one source: the plugins' tools (the registry's current
// snapshot, after agenthost.toml's overrides) and the host's built-in tools. A built-in shadows a
// plugin tool of the same name. What may run is decided by policy.hpp, how it runs by invoker.hpp.
#pragma once

#include "plugins/registry.hpp"
#include "tools/builtin_tools.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agenthost::tools {

struct Tool {
    enum class Source { plugin, builtin };
    std::string name;
    std::string description;
    std::string input_schema_json;  // checked at registration (schema::check_tool_schema)
    Source source = Source::plugin;
    std::string plugin;                                     // the plugin that provides it; empty for built-ins
    uint32_t hints = 0;                                     // AH_TOOL_* after [tools.NAME] overrides
    bool needs_approval = false;                            // configured, else true for destructive tools
    BuiltinTool::Group group = BuiltinTool::Group::memory;  // built-ins only
    std::string title;                                      // for people; empty for none
    std::string output_schema_json;                         // of the result's "structured" value; empty for none
    // Safe to run again after a crash left its outcome unknown (read-only or idempotent).
    bool repeatable() const;
};

// Who sees which tools: the agent loop sees the built-ins too (they work on its conversation's
// memory); an MCP client sees the plugins' tools only.
enum class Scope { agent, plugins_only };

class Catalogue {
public:
    explicit Catalogue(plugins::Registry& registry) : registry_(registry) {}

    // The tool called `name` in that scope, if there is one.
    std::optional<Tool> find(std::string_view name, Scope scope = Scope::agent) const;
    // Every tool of the scope: the plugins' in load order (for the agent without those a built-in
    // shadows), then the built-ins.
    std::vector<Tool> all(Scope scope = Scope::agent) const;

    plugins::Registry& registry() const { return registry_; }

private:
    plugins::Registry& registry_;
};

}  // namespace agenthost::tools
