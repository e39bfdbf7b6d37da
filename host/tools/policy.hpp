// Whether a tool call may run: the one place that decides it for every front end (the agent loop,
// approve / reject / resume from the CLI and HTTP, the MCP server). It looks at the tool's
// existence, the arguments' shape, the mode, agenthost.toml's approval settings and the calls the
// user already rejected in this run.
#pragma once

#include "common/choices.hpp"
#include "tools/catalogue.hpp"

#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace agenthost::tools {

// The modes (common/choices.hpp), as the policy reads them.
using agenthost::Mode;
using agenthost::mode_name;
using agenthost::parse_mode;

// Whether `mode` offers the tool to the model (and so lists it in the request).
bool offered(const Tool& tool, Mode mode);

// The key under which a rejected call is remembered: the same tool with the same arguments.
std::string call_signature(std::string_view name, const nlohmann::json& arguments);

struct CallSite {
    Scope scope = Scope::agent;
    Mode mode = Mode::execute;
    // Someone can be asked (the agent loop); false for MCP clients, who are refused instead.
    bool can_ask = true;
    // MCP only: [mcp] allow_destructive, so calls that need approval run without one.
    bool approval_waived = false;
    // The user approved this very call (an approval being carried out).
    bool approved = false;
    // The reason the user gave when rejecting this call earlier in the run, if they did.
    std::function<std::optional<std::string>(const std::string& signature)> rejected;
};

// Why a call was refused. Each reaches the model (or client) as the result's error_code word.
enum class Refused { plugin_failure, unknown_tool, invalid_arguments, not_allowed_in_mode, rejected, needs_approval };
inline constexpr Choice<Refused> kRefusals[] = {
    {Refused::plugin_failure, "plugin_failure", "the plugin offering the tool failed"},
    {Refused::unknown_tool, "unknown_tool", "no tool of that name"},
    {Refused::invalid_arguments, "invalid_arguments", "the arguments are not a JSON object"},
    {Refused::not_allowed_in_mode, "not_allowed_in_mode", "the mode does not offer the tool"},
    {Refused::rejected, "rejected", "the user rejected this very call"},
    {Refused::needs_approval, "needs_approval", "it needs a person's approval and nobody can be asked"},
};
inline std::string_view refused_code(Refused why) { return choice_name<Refused>(kRefusals, why); }

struct Verdict {
    enum class Kind { run, ask, refuse };
    Kind kind = Kind::refuse;
    Refused why = Refused::unknown_tool;  // refuse only
    // refuse: the message for the model or client; ask: why approval is needed.
    std::string message;

    std::string error_code() const { return std::string(refused_code(why)); }
};

// Decides one call. `tool` is what the catalogue found for `name` in the site's scope.
Verdict decide(const Catalogue& catalogue, const std::optional<Tool>& tool, std::string_view name,
               const nlohmann::json& arguments, const CallSite& site);

}  // namespace agenthost::tools
