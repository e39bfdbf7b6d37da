// The per-plugin key-value store behind ah_host_api.kv_*: each plugin sees only its own keys. An
// interface, so the SQLite store (here) and the PostgreSQL one (postgres/pg_plugin_kv.hpp) serve it.
#pragma once

#include "store/keyed_values.hpp"

namespace agenthost::store {

class PluginKv {
public:
    virtual ~PluginKv() = default;
    // The value, nullopt when the key has none, an Error when the store cannot be read (the key
    // may have a value: a plugin must not take it for absent).
    virtual Result<std::optional<std::string>> get(std::string_view plugin, std::string_view key) = 0;
    virtual Status set(std::string_view plugin, std::string_view key, std::string_view value) = 0;
    virtual Status erase(std::string_view plugin, std::string_view key) = 0;
};

class SqlitePluginKv final : public PluginKv {
public:
    explicit SqlitePluginKv(Database& db) : values_(db, "plugin_kv", "plugin") {}
    Result<std::optional<std::string>> get(std::string_view plugin, std::string_view key) override {
        return values_.read(plugin, key);
    }
    Status set(std::string_view plugin, std::string_view key, std::string_view value) override {
        return values_.set(plugin, key, value);
    }
    Status erase(std::string_view plugin, std::string_view key) override { return values_.erase(plugin, key); }

private:
    KeyedValues values_;
};

}  // namespace agenthost::store
