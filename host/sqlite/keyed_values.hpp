// store::KeyedValueTable on the host's SQLite database, each call in its own transaction: the
// plugins' key-value store (plugin_kv: plugin, key) and agent memory (memory: conversation, key).
#pragma once

#include "sqlite/database.hpp"
#include "store/keyed_value_table.hpp"

#include <string>
#include <utility>
#include <vector>

namespace agenthost::sqlite {

class KeyedValues {
public:
    KeyedValues(Database& db, std::string_view table, std::string_view owner_column) : db_(db), table_(table, owner_column) {}

    // The value, nullopt when there is none, an Error when the store could not be read.
    Result<std::optional<std::string>> read(std::string_view owner, std::string_view key);
    Status set(std::string_view owner, std::string_view key, std::string_view value, store::Flush flush = store::Flush::now);
    Status erase(std::string_view owner, std::string_view key);

private:
    Database& db_;
    store::KeyedValueTable table_;
};

}  // namespace agenthost::sqlite
