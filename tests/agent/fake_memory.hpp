// Agent memory kept in maps, for the loop tests: the MemoryBackend contract without a database
// (memory_backend_conformance_test.cpp holds it to the SQLite backend's behaviour).
#pragma once

#include "memory/memory_backend.hpp"

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace test {

class FakeMemory final : public agenthost::memory::MemoryBackend {
public:
    agenthost::Result<std::optional<std::string>> get(std::string_view conversation, std::string_view key) override;
    using agenthost::memory::MemoryBackend::set;
    agenthost::Status set(std::string_view conversation, std::string_view key, std::string_view value_json,
                          agenthost::store::Flush flush) override;
    agenthost::Result<std::vector<agenthost::memory::Entry>> read_entries(std::string_view conversation) override;
    agenthost::Result<int64_t> clear(std::string_view conversation) override;
    agenthost::Status post_event(std::string_view conversation, std::string_view plugin, std::string_view body_json) override;
    std::vector<agenthost::memory::PostedEvent> take_events(std::string_view conversation) override;
    std::vector<agenthost::memory::PostedEvent> pending_events(std::string_view conversation) override;
    agenthost::Result<int64_t> add_fact(std::string_view text) override;
    agenthost::Result<std::vector<agenthost::memory::Fact>> read_facts() override;
    agenthost::Result<bool> remove_fact(int64_t id) override;

    // From now on reads fail as a store that cannot be read does (a lost connection, an I/O error).
    void fail_reads(bool fail);
    // Reads answered so far (get, read_entries, read_facts), failed ones included.
    int reads();
    // How the last write of (conversation, key) asked to be flushed (nullopt: never written).
    std::optional<agenthost::store::Flush> flush_of(const std::string& conversation, const std::string& key);

private:
    struct Event {
        std::string conversation;
        agenthost::memory::PostedEvent event;
        bool delivered = false;
    };
    std::mutex mutex_;
    std::map<std::string, std::map<std::string, std::string>, std::less<>> entries_;  // conversation → key → JSON
    std::vector<Event> events_;
    std::map<std::pair<std::string, std::string>, agenthost::store::Flush> flushes_;
    std::map<int64_t, std::string> facts_;
    int64_t next_event_ = 0;
    int64_t next_fact_ = 0;
    bool fail_reads_ = false;
    int reads_ = 0;
};

}  // namespace test
