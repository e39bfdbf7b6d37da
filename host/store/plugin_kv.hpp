// The per-plugin key-value store behind ah_host_api.kv_*: each plugin sees only its own keys. An
// interface, served by each backend (sqlite/sqlite_plugin_kv.hpp, postgres/pg_plugin_kv.hpp).
#pragma once

#include "common/result.hpp"
#include "store/flush.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace agenthost::store {

class PluginKv {
public:
    virtual ~PluginKv() = default;
    // The value, nullopt when the key has none, an Error when the store cannot be read (the key
    // may have a value: a plugin must not take it for absent).
    virtual Result<std::optional<std::string>> get(std::string_view plugin, std::string_view key) = 0;
    // `flush`: when the write must be on disk (a provider's state waits for the step that used it).
    virtual Status set(std::string_view plugin, std::string_view key, std::string_view value, Flush flush) = 0;
    virtual Status erase(std::string_view plugin, std::string_view key) = 0;
};

}  // namespace agenthost::store
