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
    std::optional<isolation::Settings> isolation;  // set for isolation = "process"
    std::string config_json;                       // the manifest's defaults with the operator's keys over them
};

// Error config_invalid, every problem on its own line naming the file, line, key and fix.
Result<PluginSetup> plugin_setup(const config::Config& config, const Manifest& manifest);

// `config_json` with a provider entry's model, base_url, key and timeouts over it.
std::string with_provider_settings(const std::string& config_json, const config::ProviderSettings& provider);

}  // namespace agenthost::plugins
