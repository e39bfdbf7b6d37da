// The plugin layer's value types: what a plugin is (kind, status, isolation), what it offers
// (tools, health checks) and what one call into it carries. Plain data, no behaviour.
#pragma once

#include <agenthost/agenthost.h>

#include "common/choices.hpp"
#include "common/result.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agenthost::plugins {

class RunKv;  // plugins/run_kv.hpp

enum class PluginKind { tool, provider };
// unused: a provider plugin no provider table names ([provider] use, [providers.NAME] use):
// nothing in this process can call it, so its manifest is read and its library left unopened.
enum class PluginStatus { loaded, failed, disabled, unused };
// in_process: loaded into the host; process: its own process; sandbox: its own process confined by
// the kernel to the permissions it was granted (isolation/sandbox).
using agenthost::Isolation;  // common/choices.hpp

// The words the manifest, agenthost.toml and the reports use for each value.
std::string_view name(PluginKind kind);
std::string_view name(const std::optional<PluginKind>& kind);  // "" when unknown
std::string_view name(PluginStatus status);
std::string_view name(Isolation isolation);
std::optional<PluginKind> parse_plugin_kind(std::string_view word);
std::optional<Isolation> parse_isolation(std::string_view word);

// A tool a plugin listed that the host did not take (bad name or schema, a name twice).
struct RefusedTool {
    std::string name;
    std::string reason;  // names the keyword or rule at fault
};

// One plugin as found at start-up, loaded or not, for `agenthost plugins`, doctor and /api/plugins.
struct PluginInfo {
    std::string name;
    std::optional<PluginKind> kind;  // none when the manifest could not be read
    std::string version;
    std::string abi;  // "MAJOR.MINOR" from the manifest
    std::string description;
    std::filesystem::path manifest;
    std::filesystem::path library;
    PluginStatus status = PluginStatus::failed;
    std::optional<Error> error;
    std::vector<std::string> warnings;
    std::vector<std::string> tools;
    // Tools the plugin listed but the host refused (bad name or schema, a name twice), with why.
    std::vector<RefusedTool> refused_tools;
    Isolation isolation = Isolation::in_process;
    // What it may touch: its [permissions] resolved (and capped by the operator), one line per kind
    // ("read: …", "write: …", "network: …", "processes: …"); empty when the manifest declares none.
    std::vector<std::string> permissions;
    std::string settings_schema_json;   // the manifest's declared settings (JSON Schema); empty: none
    std::string effective_config_json;  // what the plugin received: its defaults with the operator's table over them
};

struct ToolInfo {
    std::string name;
    std::string description;
    std::string input_schema_json;
    std::string plugin;
    uint32_t hints = 0;              // after agenthost.toml's [tools.NAME] overrides
    bool needs_approval = false;     // configured, else true for destructive tools
    std::string title;               // for people (ABI 1.5); empty for none
    std::string output_schema_json;  // of the result's "structured" value (ABI 1.5); empty for none
};

// One thing a plugin checked for doctor: a server it logs in to, a folder it writes …
struct HealthCheck {
    std::string name;
    bool ok = false;
    std::string detail;  // what was found, or what to fix
};

// One call into a plugin; turned into an ah_call (which borrows these strings) for its duration.
struct CallInput {
    std::string call_id;
    std::string tool_name;
    std::string arguments_json = "{}";
    std::string conversation_id;
    std::string request_context_json = "{}";
    const ah_cancel* cancel = nullptr;
    // The run a model call is made for: its provider reads its own key-value writes back from the
    // run's copy (plugins/run_kv.hpp). Null outside a run (MCP sampling, model lists).
    RunKv* run_kv = nullptr;
};

}  // namespace agenthost::plugins
