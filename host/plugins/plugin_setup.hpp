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
Result<PluginSetup> plugin_setup(const config::Config& config, const Manifest& manifest);

// `config_json` with a provider entry's model, base_url, key and timeouts over it.
std::string with_provider_settings(const std::string& config_json, const config::ProviderSettings& provider);

}  // namespace agenthost::plugins
