// Whether a provider table ([provider] or a [providers.NAME]) uses a provider plugin: the one
// answer the registry (which opens only the plugins tables use) and doctor (which counts only
// those) both go by.
#pragma once

#include "config/config.hpp"

#include <algorithm>
#include <string_view>

namespace agenthost::config {

inline bool table_uses_plugin(const Config& config, std::string_view plugin) {
    if (config.provider.use == plugin) return true;
    return std::any_of(config.providers.begin(), config.providers.end(),
                       [&](const auto& table) { return table.second.use == plugin; });
}

}  // namespace agenthost::config
