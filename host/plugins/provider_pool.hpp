// The provider instances a conversation can choose by name: each provider plugin's own instance
// (under the plugin's name) and one instance per [providers.NAME] entry, used the same way.
#pragma once

#include "plugins/plugin_instance.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agenthost::plugins {

class ProviderPool {
public:
    // A provider plugin's own instance, borrowed (the registry owns it and outlives the pool).
    void add_plugin(PluginInstance& instance);
    // A [providers.NAME] entry's instance, owned; destroyed with the pool.
    void add_named(std::string name, std::unique_ptr<PluginInstance> instance);

    // A named entry first, then a plugin of that name; nullptr when neither exists.
    PluginInstance* find(std::string_view name) const;
    // The plugin instances, then the named ones whose name no plugin has.
    std::vector<std::string> names() const;

private:
    std::vector<PluginInstance*> plugins_;
    std::vector<std::pair<std::string, std::unique_ptr<PluginInstance>>> named_;
};

}  // namespace agenthost::plugins
