#include "tools/policy.hpp"

#include "common/bounded_json.hpp"

#include <nlohmann/json.hpp>

namespace agenthost::tools {
namespace {

Verdict refuse(Refused why, std::string message) { return {Verdict::Kind::refuse, why, std::move(message)}; }

std::string offered_names(const Catalogue& catalogue, const CallSite& site) {
    std::string names;
    for (const Tool& t : catalogue.all(site.scope))
        if (site.scope != Scope::agent || offered(t, site.mode)) names += (names.empty() ? "" : ", ") + t.name;
    return names;
}

}  // namespace

bool offered(const Tool& tool, Mode mode) {
    if (tool.source == Tool::Source::builtin) return tool.group != BuiltinTool::Group::planning || mode != Mode::explore;
    return mode == Mode::execute || (tool.hints & AH_TOOL_READ_ONLY);
}

std::string call_signature(std::string_view name, const nlohmann::json& arguments) {
    return std::string(name) + "\n" + json_io::dump(arguments);
}

Verdict decide(const Catalogue& catalogue, const std::optional<Tool>& tool, std::string_view name,
               const nlohmann::json& arguments, const CallSite& site) {
    const std::string n(name);
    if (!tool) {
        if (auto gone = catalogue.registry().why_tool_gone(n))
            return refuse(Refused::plugin_failure, "Cannot run it: " + *gone + ".");
        return refuse(Refused::unknown_tool, "There is no tool named '" + n +
                                                 "'. Available tools: " + offered_names(catalogue, site) + "." +
                                                 catalogue.registry().unloaded_tool_plugins_hint());
    }
    if (!arguments.is_object()) return refuse(Refused::invalid_arguments, "The arguments of " + n + " must be a JSON object.");
    if (site.rejected)
        if (auto reason = site.rejected(call_signature(name, arguments)))
            return refuse(Refused::rejected, "The user already rejected this call: " + *reason +
                                                 ". Do not propose it again; choose another way or answer.");

    // The user approved this very call: the mode and the approval settings have had their say.
    if (site.approved) return {Verdict::Kind::run, {}, ""};

    std::string reason;
    if (!offered(*tool, site.mode)) {
        if (site.mode == Mode::explore || tool->source == Tool::Source::builtin)
            return refuse(Refused::not_allowed_in_mode,
                          n + " is not available in " + mode_name(site.mode) +
                              " mode (only read-only tools are). Finish with what you can see, or say "
                              "what you would do; the user can rerun in execute mode.");
        reason = "plan mode allows only read-only tools, and the model asks to run " + n;
    } else if (tool->needs_approval) {
        reason = n + ((tool->hints & AH_TOOL_DESTRUCTIVE) ? " may delete or overwrite data" : " is configured to need approval");
    }
    if (reason.empty() || site.approval_waived) return {Verdict::Kind::run, {}, ""};
    if (!site.can_ask)
        return refuse(Refused::needs_approval,
                      n + " may change or delete data and needs a person's approval; agenthost refuses it for MCP "
                          "clients (set [mcp] allow_destructive = true to allow it)");
    return {Verdict::Kind::ask, {}, reason};
}

}  // namespace agenthost::tools
