// The per-plugin key-value store behind ah_host_api.kv_*: each plugin sees only its own keys.
#pragma once

#include "store/database.hpp"

namespace agenthost::store {

class PluginKv {
public:
    explicit PluginKv(Database& db) : db_(db) {}
    std::optional<std::string> get(std::string_view plugin, std::string_view key);
    Status set(std::string_view plugin, std::string_view key, std::string_view value);
    Status erase(std::string_view plugin, std::string_view key);

private:
    Database& db_;
};

}  // namespace agenthost::store
