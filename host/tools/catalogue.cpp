#include "tools/catalogue.hpp"

namespace agenthost::tools {
namespace {

Tool from_plugin(const plugins::ToolInfo& t) {
    Tool tool;
    tool.name = t.name;
    tool.description = t.description;
    tool.input_schema_json = t.input_schema_json;
    tool.source = Tool::Source::plugin;
    tool.plugin = t.plugin;
    tool.hints = t.hints;
    tool.needs_approval = t.needs_approval;
    tool.title = t.title;
    tool.output_schema_json = t.output_schema_json;
    return tool;
}

// A built-in tool under [tools.NAME] as a plugin's would be; nullopt when disabled there.
std::optional<Tool> from_builtin(const BuiltinTool& b, const plugins::Registry& registry) {
    auto policy = plugins::apply_tool_policy(registry.tool_policies(), b.name, b.hints);
    if (!policy.enabled) return std::nullopt;
    Tool tool;
    tool.name = b.name;
    tool.description = b.description;
    tool.input_schema_json = b.input_schema_json;
    tool.source = Tool::Source::builtin;
    tool.group = b.group;
    tool.hints = policy.hints;
    tool.needs_approval = policy.needs_approval;
    return tool;
}

}  // namespace

bool Tool::repeatable() const { return (hints & (AH_TOOL_READ_ONLY | AH_TOOL_IDEMPOTENT)) != 0; }

std::optional<Tool> Catalogue::find(std::string_view name, Scope scope) const {
    if (const BuiltinTool* b = find_builtin(name); b && scope == Scope::agent) return from_builtin(*b, registry_);
    if (auto t = registry_.find_tool(name)) return from_plugin(*t);
    return std::nullopt;
}

std::vector<Tool> Catalogue::all(Scope scope) const {
    const bool with_builtins = scope == Scope::agent;
    std::vector<Tool> out;
    auto snapshot = registry_.tools();  // without the tools of a disabled plugin (Registry::refresh_tools)
    for (const auto& t : *snapshot)
        if (!with_builtins || !find_builtin(t.name)) out.push_back(from_plugin(t));
    if (with_builtins)
        for (const auto& b : builtin_tools())
            if (auto tool = from_builtin(b, registry_)) out.push_back(std::move(*tool));
    return out;
}

}  // namespace agenthost::tools
