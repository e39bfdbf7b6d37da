// The plugins' key-value store (store/plugin_kv.hpp) on the host's SQLite database: the plugin_kv
// table, one row per (plugin, key).
#pragma once

#include "sqlite/keyed_values.hpp"
#include "store/plugin_kv.hpp"

namespace agenthost::sqlite {

class SqlitePluginKv final : public store::PluginKv {
public:
    explicit SqlitePluginKv(Database& db) : values_(db, "plugin_kv", "plugin") {}
    Result<std::optional<std::string>> get(std::string_view plugin, std::string_view key) override {
        return values_.read(plugin, key);
    }
    Status set(std::string_view plugin, std::string_view key, std::string_view value, store::Flush flush) override {
        return values_.set(plugin, key, value, flush);
    }
    Status erase(std::string_view plugin, std::string_view key) override { return values_.erase(plugin, key); }

private:
    KeyedValues values_;
};

}  // namespace agenthost::sqlite
