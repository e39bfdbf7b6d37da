#include "tools/tool_families.hpp"

#include "common/spelling.hpp"
#include "tools/invoker.hpp"

#include <nlohmann/json.hpp>

#include <map>

namespace agenthost::tools {
using nlohmann::json;

namespace {

// Every plugin's tools in the agent's scope, in load order.
std::vector<ToolFamily> families(const Catalogue& catalogue) {
    std::vector<ToolFamily> out;
    std::map<std::string, size_t> at;
    for (const Tool& t : catalogue.all(Scope::agent)) {
        if (t.source != Tool::Source::plugin) continue;
        auto [it, added] = at.emplace(t.plugin, out.size());
        if (added) out.push_back({t.plugin, "", {}});
        out[it->second].tools.push_back(t.name);
    }
    for (const auto& info : catalogue.registry().plugins())
        if (auto it = at.find(info.name); it != at.end()) out[it->second].description = info.description;
    return out;
}

// The families `conversation` loaded; an Error when the store could not be read.
Result<std::set<std::string>> loaded_families(memory::AgentMemory& memory, std::string_view conversation) {
    std::set<std::string> loaded;
    auto stored = memory.store().get(conversation, kLoadedFamiliesKey);
    if (!stored) return stored.error();
    json list = *stored ? json::parse(**stored, nullptr, false) : json();
    if (list.is_array())
        for (const auto& name : list)
            if (name.is_string()) loaded.insert(name.get<std::string>());
    return loaded;
}

}  // namespace

Result<bool> load_family(memory::AgentMemory& memory, std::string_view conversation, const std::string& plugin) {
    auto loaded = loaded_families(memory, conversation);  // strict: a write over an unread list would drop families
    if (!loaded) return loaded.error();
    if (!loaded->insert(plugin).second) return false;
    // Written with the step that called the family's tool (or load_tools), kept or lost with it:
    // no commit of its own.
    if (auto s = memory.store().set(conversation, kLoadedFamiliesKey, json(*loaded).dump(), store::Flush::with_next_write); !s)
        return s.error();
    return true;
}

std::vector<ToolFamily> on_demand_families(const Catalogue& catalogue, memory::AgentMemory& memory, std::string_view conversation,
                                           int threshold) {
    std::vector<ToolFamily> big;
    if (threshold <= 0) return big;
    for (auto& family : families(catalogue))
        if (family.tools.size() >= static_cast<size_t>(threshold)) big.push_back(std::move(family));
    if (big.empty()) return big;                          // no memory read when no family is big enough
    auto loaded = loaded_families(memory, conversation);  // unreadable: every big family is offered to load again
    if (loaded) std::erase_if(big, [&](const ToolFamily& f) { return loaded->count(f.plugin) > 0; });
    return big;
}

std::string describe_families(const std::vector<ToolFamily>& families) {
    std::string text;
    for (const auto& f : families) {
        text += "- " + f.plugin + ": " + (f.description.empty() ? "" : f.description + " ") + "(" +
                spelling::counted(static_cast<long long>(f.tools.size()), "tool", "tools") + ": " +
                spelling::join_names(f.tools) + ")\n";
    }
    return text;
}

json call_load_tools(const Catalogue& catalogue, memory::AgentMemory& memory, std::string_view conversation,
                     const json& arguments) {
    std::string wanted = arguments.is_object() ? arguments.value("family", "") : "";
    std::vector<std::string> names;
    for (const auto& family : families(catalogue)) {
        names.push_back(family.plugin);
        if (family.plugin != wanted) continue;
        auto loaded = load_family(memory, conversation, wanted);
        if (!loaded) return error_result(loaded.error().code, loaded.error().message);
        return {{"content", (*loaded ? "Loaded " : "Already loaded: ") + wanted + "'s tools (" +
                                spelling::join_names(family.tools) + ") are offered from your next step on."},
                {"is_error", false}};
    }
    return error_result("unknown_family", "There is no tool family '" + wanted + "'" + spelling::did_you_mean(wanted, names) +
                                              "; families: " + spelling::join_names(names) + ".");
}

}  // namespace agenthost::tools
