// store::KeyedValueTable on the host's SQLite database, each call in its own transaction: the
// plugins' key-value store (plugin_kv: plugin, key) and agent memory (memory: conversation, key).
// A value set with Flush::with_next_write is held in memory (and read from there) until the next
// write of the database carries it in its transaction.
#pragma once

#include "sqlite/database.hpp"
#include "store/keyed_value_table.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace agenthost::sqlite {

class KeyedValues final : private Database::JoinedWrites {
public:
    // The largest value held for the next write (SQLite's own limit is 1 GB).
    static constexpr size_t kMaxHeldBytes = size_t{64} * 1024 * 1024;

    KeyedValues(Database& db, std::string_view table, std::string_view owner_column) : db_(db), table_(table, owner_column) {}
    // Writes what is still held (in a write of its own) before it goes.
    ~KeyedValues() override;
    KeyedValues(const KeyedValues&) = delete;
    KeyedValues& operator=(const KeyedValues&) = delete;

    // The value, nullopt when there is none, an Error when the store could not be read.
    Result<std::optional<std::string>> read(std::string_view owner, std::string_view key);
    Status set(std::string_view owner, std::string_view key, std::string_view value, store::Flush flush = store::Flush::now);
    Status erase(std::string_view owner, std::string_view key);

private:
    Status write_joined(Database& db) override;
    void joined_committed() override;
    // Drops a held value that a write of its own is about to replace.
    void drop_held(std::string_view owner, std::string_view key);

    Database& db_;
    store::KeyedValueTable table_;
    struct Held {
        std::string value;
        uint64_t version = 0;  // which set() it came from: one set while a write carried it stays held
    };
    std::mutex held_mutex_;
    std::map<std::pair<std::string, std::string>, Held, std::less<>> held_;
    std::vector<std::pair<std::pair<std::string, std::string>, uint64_t>> written_;  // by the last write_joined
    uint64_t next_version_ = 0;
};

}  // namespace agenthost::sqlite
