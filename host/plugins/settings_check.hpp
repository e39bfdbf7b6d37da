// Checks the operator's configuration against what the plugins found declare: each [plugins.NAME]
// table against its plugin's declared settings, and every plugin, provider and tool name the file
// mentions against the ones that exist. Every problem names the file, the line, the key and a fix.
#pragma once

#include "config/config.hpp"
#include "plugins/manifest.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace agenthost::plugins {

struct PluginInfo;

// Checks the operator's table for plugin `m` (host keys already removed) against the manifest's
// declared settings, and resolves settings declared `format = "path"` against the config file's
// folder in place. Empty when fine or when the manifest declares no settings.
std::vector<std::string> check_plugin_table(const config::Config& config, const Manifest& m, nlohmann::json& table);
// The `format = "path"` settings the operator's table `own` does not set, in `settings` (the
// table over the manifest's defaults), resolved against the config file's folder as the
// operator's own are: a default "results.txt" reaches the plugin as an absolute path too.
void resolve_default_paths(const config::Config& config, const Manifest& m, const nlohmann::json& own, nlohmann::json& settings);

// Checks what a provider table ([provider] or [providers.NAME]) hands plugin `m` as its settings
// (model, base_url, timeout_ms, connect_timeout_ms) against the ones the manifest declares, as
// check_plugin_table does for [plugins.NAME]: a base_url that breaks the plugin's pattern, a
// timeout below its minimum. Keys it does not declare are not checked (every provider gets them).
std::vector<std::string> check_provider_table(const config::Config& config, const Manifest& m,
                                              const config::ProviderSettings& provider);

// Names the configuration uses that nothing found answers to: [plugins.X], enabled_plugins,
// disabled_plugins, a provider's `use`, [tools.X]. `tools` are the names of every tool offered.
struct NameProblems {
    std::vector<std::string> errors;    // the configuration cannot mean what it says
    std::vector<std::string> warnings;  // it may, once a disabled or failed plugin loads
};
NameProblems check_names(const config::Config& config, const std::vector<PluginInfo>& plugins,
                         const std::vector<std::string>& tools);

}  // namespace agenthost::plugins
