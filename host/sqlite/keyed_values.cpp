#include "sqlite/keyed_values.hpp"

namespace agenthost::sqlite {

KeyedValues::KeyedValues(Database& db, const std::string& table, const std::string& owner)
    : db_(db),
      select_("SELECT value FROM " + table + " WHERE " + owner + " = ?1 AND key = ?2"),
      upsert_("INSERT INTO " + table + " (" + owner + ", key, value) VALUES (?1, ?2, ?3) ON CONFLICT (" + owner +
              ", key) DO UPDATE SET value = excluded.value, updated_at = unixepoch()"),
      delete_("DELETE FROM " + table + " WHERE " + owner + " = ?1 AND key = ?2"),
      select_all_("SELECT key, value FROM " + table + " WHERE " + owner + " = ?1 ORDER BY key"),
      delete_all_("DELETE FROM " + table + " WHERE " + owner + " = ?1") {}

std::optional<std::string> KeyedValues::get(std::string_view owner, std::string_view key) {
    auto value = read(owner, key);
    return value ? std::move(*value) : std::nullopt;
}

Result<std::optional<std::string>> KeyedValues::read(std::string_view owner, std::string_view key) {
    return db_.read([&](Database& db) -> Result<std::optional<std::string>> {
        auto stmt = db.prepare(select_);
        if (!stmt) return stmt.error();
        stmt->bind(1, owner).bind(2, key);
        if (stmt->step()) return std::optional<std::string>(stmt->text(0));
        if (stmt->failed()) return Error{"store_sql", "could not read a stored value: " + db.last_error()};
        return std::optional<std::string>();
    });
}

Status KeyedValues::set(std::string_view owner, std::string_view key, std::string_view value, store::Flush flush) {
    return db_.write(
        [&](Database& db) -> Status {
            auto stmt = db.prepare(upsert_);
            if (!stmt) return stmt.error();
            return stmt->bind(1, owner).bind(2, key).bind(3, value).run();
        },
        flush);
}

Status KeyedValues::erase(std::string_view owner, std::string_view key) {
    return db_.write([&](Database& db) -> Status {
        auto stmt = db.prepare(delete_);
        if (!stmt) return stmt.error();
        return stmt->bind(1, owner).bind(2, key).run();
    });
}

std::vector<std::pair<std::string, std::string>> KeyedValues::all(std::string_view owner) {
    return db_.read([&](Database& db) {
        std::vector<std::pair<std::string, std::string>> out;
        auto stmt = db.prepare(select_all_);
        if (!stmt) return out;
        stmt->bind(1, owner);
        while (stmt->step()) out.emplace_back(stmt->text(0), stmt->text(1));
        return out;
    });
}

Result<int64_t> KeyedValues::erase_all(std::string_view owner) {
    int64_t removed = 0;
    Status s = db_.write([&](Database& db) -> Status {
        auto stmt = db.prepare(delete_all_);
        if (!stmt) return stmt.error();
        if (auto st = stmt->bind(1, owner).run(); !st) return st;
        removed = db.changes();
        return Ok{};
    });
    if (!s) return s.error();
    return removed;
}

}  // namespace agenthost::sqlite
