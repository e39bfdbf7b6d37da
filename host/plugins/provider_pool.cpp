#include "plugins/provider_pool.hpp"

#include <algorithm>

namespace agenthost::plugins {

void ProviderPool::add_plugin(PluginInstance& instance) { plugins_.push_back(&instance); }

void ProviderPool::add_named(std::string name, std::unique_ptr<PluginInstance> instance) {
    named_.emplace_back(std::move(name), std::move(instance));
}

PluginInstance* ProviderPool::find(std::string_view name) const {
    for (const auto& [named, instance] : named_)
        if (named == name) return instance.get();
    for (PluginInstance* instance : plugins_)
        if (instance->plugin() == name) return instance;
    return nullptr;
}

std::vector<std::string> ProviderPool::names() const {
    std::vector<std::string> names;
    for (const PluginInstance* instance : plugins_) names.push_back(instance->plugin());
    for (const auto& [named, instance] : named_)
        if (std::find(names.begin(), names.end(), named) == names.end()) names.push_back(named);
    return names;
}

}  // namespace agenthost::plugins
