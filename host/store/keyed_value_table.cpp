#include "store/keyed_value_table.hpp"

namespace agenthost::store {

KeyedValueTable::KeyedValueTable(std::string_view table, std::string_view owner_column) : table_(table) {
    const std::string t(table), owner(owner_column);
    select_ = "SELECT value FROM " + t + " WHERE " + owner + " = ?1 AND key = ?2";
    // excluded.updated_at is the column's default (now) on both backends: no clock is bound.
    upsert_ = "INSERT INTO " + t + " (" + owner + ", key, value) VALUES (?1, ?2, ?3) ON CONFLICT (" + owner +
              ", key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at";
    delete_ = "DELETE FROM " + t + " WHERE " + owner + " = ?1 AND key = ?2";
    select_all_ = "SELECT key, value FROM " + t + " WHERE " + owner + " = ?1 ORDER BY key";
    delete_all_ = "DELETE FROM " + t + " WHERE " + owner + " = ?1";
}

Result<std::optional<std::string>> KeyedValueTable::get(SqlConnection& db, std::string_view owner, std::string_view key) const {
    std::optional<std::string> value;
    Status read = db.query(select_, {owner, key}, [&](const SqlRow& row) { value = row.text(0); });
    if (!read) return read.error();
    return value;
}

Status KeyedValueTable::set(SqlConnection& db, std::string_view owner, std::string_view key, std::string_view value) const {
    auto done = db.execute(upsert_, {owner, key, value});
    if (!done) return done.error();
    return Ok{};
}

Status KeyedValueTable::erase(SqlConnection& db, std::string_view owner, std::string_view key) const {
    auto done = db.execute(delete_, {owner, key});
    if (!done) return done.error();
    return Ok{};
}

Result<std::vector<std::pair<std::string, std::string>>> KeyedValueTable::all(SqlConnection& db, std::string_view owner) const {
    std::vector<std::pair<std::string, std::string>> out;
    Status read = db.query(select_all_, {owner}, [&](const SqlRow& row) { out.emplace_back(row.text(0), row.text(1)); });
    if (!read) return read.error();
    return out;
}

Result<int64_t> KeyedValueTable::erase_all(SqlConnection& db, std::string_view owner) const {
    return db.execute(delete_all_, {owner});
}

}  // namespace agenthost::store
