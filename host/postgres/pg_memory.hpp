// Agent memory on PostgreSQL: the MemoryBackend contract (memory/memory_backend.hpp), checked by
// the same conformance tests as the SQLite one. Events are taken with FOR UPDATE SKIP LOCKED, so
// two hosts never deliver the same event twice.
#pragma once

#include "memory/memory_tables.hpp"
#include "postgres/pg_connection.hpp"

namespace agenthost::postgres {

class PgMemory final : public memory::MemoryBackend {
public:
    explicit PgMemory(Session& session) : session_(session) {}

    Result<std::optional<std::string>> get(std::string_view conversation, std::string_view key) override;
    Status set(std::string_view conversation, std::string_view key, std::string_view value_json) override;
    Result<std::vector<memory::Entry>> read_entries(std::string_view conversation) override;
    Result<int64_t> clear(std::string_view conversation) override;
    Status post_event(std::string_view conversation, std::string_view plugin, std::string_view body_json) override;
    std::vector<memory::PostedEvent> take_events(std::string_view conversation) override;
    std::vector<memory::PostedEvent> pending_events(std::string_view conversation) override;
    Result<int64_t> add_fact(std::string_view text) override;
    Result<std::vector<memory::Fact>> read_facts() override;
    Result<bool> remove_fact(int64_t id) override;

private:
    Session& session_;
    memory::MemoryTables tables_;
};

}  // namespace agenthost::postgres
