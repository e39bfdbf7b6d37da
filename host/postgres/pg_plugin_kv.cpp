#include "postgres/pg_plugin_kv.hpp"

#include "postgres/pg_sql.hpp"

namespace agenthost::postgres {

PgPluginKv::~PgPluginKv() { session_.let_go({&held_, &table_}); }

Result<std::optional<std::string>> PgPluginKv::get(std::string_view plugin, std::string_view key) {
    if (auto held = held_.find(plugin, key)) return held;
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return table_.get(sql, plugin, key);
    });
}

Status PgPluginKv::set(std::string_view plugin, std::string_view key, std::string_view value, store::Flush flush) {
    if (flush == store::Flush::with_next_write) {
        if (Status held = held_.hold(plugin, key, value); !held) return held;
        session_.join_next_write({&held_, &table_});
        return Ok{};
    }
    held_.drop(plugin, key);
    return session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            if (auto st = defer_flush(tx, flush); !st) return st;
            PgSql sql(tx);
            return table_.set(sql, plugin, key, value);
        });
    });
}

Status PgPluginKv::erase(std::string_view plugin, std::string_view key) {
    held_.drop(plugin, key);
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return table_.erase(sql, plugin, key);
    });
}

}  // namespace agenthost::postgres
