#include "sqlite/keyed_values.hpp"

#include "sqlite/sqlite_sql.hpp"

namespace agenthost::sqlite {

Result<std::optional<std::string>> KeyedValues::read(std::string_view owner, std::string_view key) {
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return table_.get(sql, owner, key);
    });
}

Status KeyedValues::set(std::string_view owner, std::string_view key, std::string_view value, store::Flush flush) {
    return db_.write(
        [&](Database& db) {
            SqliteSql sql(db);
            return table_.set(sql, owner, key, value);
        },
        flush);
}

Status KeyedValues::erase(std::string_view owner, std::string_view key) {
    return db_.write([&](Database& db) {
        SqliteSql sql(db);
        return table_.erase(sql, owner, key);
    });
}

}  // namespace agenthost::sqlite
