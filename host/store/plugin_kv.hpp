// The per-plugin key-value store behind ah_host_api.kv_*: each plugin sees only its own keys.
#pragma once

#include "store/keyed_values.hpp"

namespace agenthost::store {

class PluginKv {
public:
    explicit PluginKv(Database& db) : values_(db, "plugin_kv", "plugin") {}
    std::optional<std::string> get(std::string_view plugin, std::string_view key) { return values_.get(plugin, key); }
    Status set(std::string_view plugin, std::string_view key, std::string_view value) { return values_.set(plugin, key, value); }
    Status erase(std::string_view plugin, std::string_view key) { return values_.erase(plugin, key); }

private:
    KeyedValues values_;
};

}  // namespace agenthost::store
