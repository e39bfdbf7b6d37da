// The plugins' key-value store on PostgreSQL: a plugin sees the same data on every host. A value
// set with Flush::with_next_write is held here (and read from here) until the session's next
// journal write carries it in its transaction.
#pragma once

#include "postgres/pg_connection.hpp"
#include "store/held_values.hpp"
#include "store/keyed_value_table.hpp"
#include "store/plugin_kv.hpp"

namespace agenthost::postgres {

class PgPluginKv final : public store::PluginKv {
public:
    explicit PgPluginKv(Session& session) : session_(session), table_("plugin_kv", "plugin") {}
    // Writes what is still held (in a transaction of its own) before it goes.
    ~PgPluginKv() override;
    PgPluginKv(const PgPluginKv&) = delete;
    PgPluginKv& operator=(const PgPluginKv&) = delete;
    Result<std::optional<std::string>> get(std::string_view plugin, std::string_view key) override;
    Status set(std::string_view plugin, std::string_view key, std::string_view value, store::Flush flush) override;
    Status erase(std::string_view plugin, std::string_view key) override;

private:
    Session& session_;
    store::KeyedValueTable table_;
    store::HeldValues held_;
};

}  // namespace agenthost::postgres
