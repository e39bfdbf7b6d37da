#include "postgres/pg_plugin_kv.hpp"

namespace agenthost::postgres {

Result<std::optional<std::string>> PgPluginKv::get(std::string_view plugin, std::string_view key) {
    return session_.with([&](Connection& db) -> Result<std::optional<std::string>> {
        auto row = db.exec("SELECT value FROM plugin_kv WHERE plugin = $1 AND key = $2", {param(plugin), param(key)});
        if (!row) return row.error();
        if (row->empty()) return std::optional<std::string>();
        return std::optional<std::string>(row->text(0, 0));
    });
}

Status PgPluginKv::set(std::string_view plugin, std::string_view key, std::string_view value, store::Flush flush) {
    return session_.with([&](Connection& db) {
        return db.transaction([&](Connection& tx) -> Status {
            if (auto st = defer_flush(tx, flush); !st) return st;
            auto done = tx.exec(
                "INSERT INTO plugin_kv (plugin, key, value, updated_at) VALUES ($1, $2, $3, extract(epoch FROM now()))"
                " ON CONFLICT (plugin, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                {param(plugin), param(key), param(value)});
            if (!done) return done.error();
            return Ok{};
        });
    });
}

Status PgPluginKv::erase(std::string_view plugin, std::string_view key) {
    return session_.with([&](Connection& db) -> Status {
        auto done = db.exec("DELETE FROM plugin_kv WHERE plugin = $1 AND key = $2", {param(plugin), param(key)});
        if (!done) return done.error();
        return Ok{};
    });
}

}  // namespace agenthost::postgres
