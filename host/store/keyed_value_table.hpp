// A table of text values under (owner, key), read and written with the same SQL on every backend:
// the plugins' key-value store (plugin_kv: plugin, key) and agent memory (memory: conversation,
// key). Each call runs on the caller's connection, inside whatever transaction it opened. The table
// and its owner column are fixed by the caller, never taken from outside data.
#pragma once

#include "store/sql.hpp"

#include <string>
#include <utility>
#include <vector>

namespace agenthost::store {

class KeyedValueTable {
public:
    // `table` has the columns (<owner_column>, key, value, updated_at) with (owner, key) unique and
    // updated_at defaulting to now.
    KeyedValueTable(std::string_view table, std::string_view owner_column);
    const std::string& table() const { return table_; }

    // The value, nullopt when there is none, an Error when the store could not be read.
    Result<std::optional<std::string>> get(SqlConnection& db, std::string_view owner, std::string_view key) const;
    Status set(SqlConnection& db, std::string_view owner, std::string_view key, std::string_view value) const;
    Status erase(SqlConnection& db, std::string_view owner, std::string_view key) const;
    // Every (key, value) of an owner, ordered by key.
    Result<std::vector<std::pair<std::string, std::string>>> all(SqlConnection& db, std::string_view owner) const;
    // Deletes every value of an owner; returns how many there were.
    Result<int64_t> erase_all(SqlConnection& db, std::string_view owner) const;

private:
    std::string table_;
    std::string select_, upsert_, delete_, select_all_, delete_all_;
};

}  // namespace agenthost::store
