// The SQLite memory backend: the memory, events and facts tables of the host's database.
#pragma once

#include "memory/memory_backend.hpp"
#include "memory/memory_tables.hpp"
#include "sqlite/database.hpp"
#include "sqlite/keyed_values.hpp"

namespace agenthost::sqlite {

class SqliteMemory final : public memory::MemoryBackend {
public:
    explicit SqliteMemory(sqlite::Database& db) : db_(db), entries_(db, "memory", "conversation") {}

    using MemoryBackend::set;
    Result<std::optional<std::string>> get(std::string_view conversation, std::string_view key) override;
    Status set(std::string_view conversation, std::string_view key, std::string_view value_json, store::Flush flush) override;
    Result<std::vector<memory::Entry>> read_entries(std::string_view conversation) override;
    Result<int64_t> clear(std::string_view conversation) override;
    Status post_event(std::string_view conversation, std::string_view plugin, std::string_view body_json) override;
    std::vector<memory::PostedEvent> take_events(std::string_view conversation) override;
    std::vector<memory::PostedEvent> pending_events(std::string_view conversation) override;
    Result<int64_t> add_fact(std::string_view text) override;
    Result<std::vector<memory::Fact>> read_facts() override;
    Result<bool> remove_fact(int64_t id) override;
    Result<memory::TurnMemory> read_turn(std::string_view conversation) override;

private:
    sqlite::Database& db_;
    memory::MemoryTables tables_;
    KeyedValues entries_;  // the memory table's entries, with the values held for the next write
};

}  // namespace agenthost::sqlite
