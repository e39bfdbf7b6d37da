#include "store/plugin_kv.hpp"

namespace agenthost::store {

std::optional<std::string> PluginKv::get(std::string_view plugin, std::string_view key) {
    return db_.read([&](Database& db) -> std::optional<std::string> {
        auto stmt = db.prepare("SELECT value FROM plugin_kv WHERE plugin = ?1 AND key = ?2");
        if (!stmt) return std::nullopt;
        stmt->bind(1, plugin).bind(2, key);
        if (!stmt->step()) return std::nullopt;
        return stmt->text(0);
    });
}

Status PluginKv::set(std::string_view plugin, std::string_view key, std::string_view value) {
    return db_.write([&](Database& db) -> Status {
        auto stmt = db.prepare(
            "INSERT INTO plugin_kv (plugin, key, value) VALUES (?1, ?2, ?3) "
            "ON CONFLICT (plugin, key) DO UPDATE SET value = excluded.value, updated_at = unixepoch()");
        if (!stmt) return stmt.error();
        return stmt->bind(1, plugin).bind(2, key).bind(3, value).run();
    });
}

Status PluginKv::erase(std::string_view plugin, std::string_view key) {
    return db_.write([&](Database& db) -> Status {
        auto stmt = db.prepare("DELETE FROM plugin_kv WHERE plugin = ?1 AND key = ?2");
        if (!stmt) return stmt.error();
        return stmt->bind(1, plugin).bind(2, key).run();
    });
}

}  // namespace agenthost::store
