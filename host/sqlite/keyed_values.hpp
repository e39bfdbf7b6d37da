// A table of text values under (owner, key) — the plugins' key-value store (plugin_kv: plugin,
// key) and agent memory (memory: conversation, key) — read and written one way. The table and its
// owner column are fixed by the caller, never taken from outside data.
#pragma once

#include "sqlite/database.hpp"

#include <string>
#include <utility>
#include <vector>

namespace agenthost::sqlite {

class KeyedValues {
public:
    // `table` has the columns (<owner_column>, key, value, updated_at) with (owner, key) unique.
    KeyedValues(Database& db, const std::string& table, const std::string& owner_column);

    std::optional<std::string> get(std::string_view owner, std::string_view key);  // nullopt also when unreadable
    // The value, nullopt when there is none, an Error when the store could not be read.
    Result<std::optional<std::string>> read(std::string_view owner, std::string_view key);
    Status set(std::string_view owner, std::string_view key, std::string_view value, store::Flush flush = store::Flush::now);
    Status erase(std::string_view owner, std::string_view key);
    // Every (key, value) of an owner, ordered by key.
    std::vector<std::pair<std::string, std::string>> all(std::string_view owner);
    // Deletes every value of an owner; returns how many there were.
    Result<int64_t> erase_all(std::string_view owner);

private:
    Database& db_;
    std::string select_, upsert_, delete_, select_all_, delete_all_;
};

}  // namespace agenthost::sqlite
