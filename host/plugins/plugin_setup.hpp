// What agenthost.toml asks of one plugin: its [plugins.NAME] table split into the host's own keys
// (isolation …) and the plugin's settings (checked against the manifest's declaration and laid
// over its defaults), and a [provider]/[providers.NAME] entry laid over a provider's settings.
#pragma once

#include "common/result.hpp"
#include "config/config.hpp"
#include "isolation/isolated_plugin.hpp"
#include "plugins/manifest.hpp"

#include <optional>
#include <string>

namespace agenthost::plugins {

struct PluginSetup {
    Isolation isolation = Isolation::in_process;
    std::optional<isolation::Settings> process;  // set for isolation = "process" and "sandbox"
    std::string config_json;                     // the manifest's defaults with the operator's keys over them
    // What the plugin may touch: the operator's [plugins.NAME] permissions (which must cover what
    // the manifest declares), else the declared [permissions]; for a sandboxed plugin at least the
    // empty grant. None: nothing declared or granted, so nothing is checked (an in-process or
    // process plugin that predates permissions).
    std::optional<Grant> grant;
};

// Error config_invalid, every problem on its own line naming the file, line, key and fix;
// permissions_exceeded when the plugin asks for more than the operator granted (each difference
// named); sandbox_unavailable when the kernel cannot enforce a sandbox's rules.
// `provider`: the provider table ([provider] or [providers.NAME]) an instance of a provider plugin
// is created for: its settings (model, base_url, api_key, timeouts) go over the plugin's own before
// the permissions' {setting:KEY} placeholders are resolved, so each instance is granted what its
// own table names. Null for a tool plugin, or a provider's instance made from [plugins.NAME] alone.
// The keys of a [plugins.NAME] table the host reads itself (isolation, permissions and the
// isolated process's limits); the plugin never sees them.
const std::vector<std::string>& host_plugin_keys();

Result<PluginSetup> plugin_setup(const config::Config& config, const Manifest& manifest,
                                 const config::ProviderSettings* provider = nullptr);

}  // namespace agenthost::plugins
