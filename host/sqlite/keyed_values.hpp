// store::KeyedValueTable on the host's SQLite database, each call in its own transaction: the
// plugins' key-value store (plugin_kv: plugin, key) and agent memory (memory: conversation, key).
// A value set with Flush::with_next_write is held in memory (and read from there) until the next
// write of the database carries it in its transaction.
#pragma once

#include "sqlite/database.hpp"
#include "store/held_values.hpp"
#include "store/keyed_value_table.hpp"

#include <string>

namespace agenthost::sqlite {

class KeyedValues final : private Database::JoinedWrites {
public:
    KeyedValues(Database& db, std::string_view table, std::string_view owner_column) : db_(db), table_(table, owner_column) {}
    // Writes what is still held (in a write of its own) before it goes.
    ~KeyedValues() override;
    KeyedValues(const KeyedValues&) = delete;
    KeyedValues& operator=(const KeyedValues&) = delete;

    // The value, nullopt when there is none, an Error when the store could not be read.
    Result<std::optional<std::string>> read(std::string_view owner, std::string_view key);
    Status set(std::string_view owner, std::string_view key, std::string_view value, store::Flush flush = store::Flush::now);
    Status erase(std::string_view owner, std::string_view key);
    // What is held for `owner` now (key, value, ordered by key), for a reader of every value.
    std::vector<std::pair<std::string, std::string>> held_of(std::string_view owner) { return held_.of_owner(owner); }
    // Drops what is held for `owner`: every value of it is about to be deleted.
    void drop_held(std::string_view owner) { held_.drop_owner(owner); }

private:
    Status write_joined(Database& db) override;
    void joined_committed() override { held_.committed(written_); }

    Database& db_;
    store::KeyedValueTable table_;
    store::HeldValues held_;
    store::HeldValues::Written written_;  // by the last write_joined (one writer at a time: the database's)
};

}  // namespace agenthost::sqlite
