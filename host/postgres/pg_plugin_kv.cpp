#include "postgres/pg_plugin_kv.hpp"

#include "postgres/pg_sql.hpp"

namespace agenthost::postgres {

Result<std::optional<std::string>> PgPluginKv::get(std::string_view plugin, std::string_view key) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return table_.get(sql, plugin, key);
    });
}

Status PgPluginKv::set(std::string_view plugin, std::string_view key, std::string_view value, store::Flush flush) {
    return session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            if (auto st = defer_flush(tx, flush); !st) return st;
            PgSql sql(tx);
            return table_.set(sql, plugin, key, value);
        });
    });
}

Status PgPluginKv::erase(std::string_view plugin, std::string_view key) {
    return session_.with([&](Connection& db) {
        PgSql sql(db);
        return table_.erase(sql, plugin, key);
    });
}

}  // namespace agenthost::postgres
