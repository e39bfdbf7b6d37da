// Agent memory on PostgreSQL: the MemoryBackend contract (memory/memory_backend.hpp), checked by
// the same conformance tests as the SQLite one. Events are taken with FOR UPDATE SKIP LOCKED, so
// two hosts never deliver the same event twice. A posted event is told to every host (NOTIFY): a
// turn looks for events only when one may be there, not at every start.
#pragma once

#include "memory/memory_tables.hpp"
#include "postgres/pg_connection.hpp"
#include "store/change_signals.hpp"
#include "store/held_values.hpp"

#include <atomic>

namespace agenthost::postgres {

class PgMemory final : public memory::MemoryBackend {
public:
    // `signals` tells of events posted on any host (postgres/pg_listener.hpp); it outlives the memory.
    PgMemory(Session& session, store::ChangeSignals& signals) : session_(session), signals_(signals) {}
    // Writes what is still held (in a transaction of its own) before it goes.
    ~PgMemory() override { session_.let_go({&held_, &tables_.entries_table()}); }
    PgMemory(const PgMemory&) = delete;
    PgMemory& operator=(const PgMemory&) = delete;

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
    Session& session_;
    store::ChangeSignals& signals_;
    memory::MemoryTables tables_;
    store::HeldValues held_;  // entries set with Flush::with_next_write, until the next journal write carries them
    // The count of events_posted when no undelivered event was left anywhere: while it has not
    // moved (and the listener is live), there is nothing to take.
    std::atomic<uint64_t> none_left_at_{kNever};
    static constexpr uint64_t kNever = ~uint64_t{0};
};

}  // namespace agenthost::postgres
