// One conversation's session memory and the facts, read once: what a system prompt reads about
// ten times (session, plan, task stack, entries, question, errors, facts twice) costs two reads.
// Read-only: its writes are refused, so it is only for building something from memory as it is.
#pragma once

#include "memory/memory_backend.hpp"

#include <string>

namespace agenthost::memory {

class MemorySnapshot final : public MemoryBackend {
public:
    MemorySnapshot(MemoryBackend& source, std::string_view conversation)
        : conversation_(conversation), entries_(source.read_entries(conversation)), facts_(source.read_facts()) {}

    Result<std::optional<std::string>> get(std::string_view conversation, std::string_view key) override {
        if (conversation != conversation_)
            return Error{"memory_not_in_snapshot", "a memory snapshot holds one conversation's entries only"};
        if (!entries_) return entries_.error();
        for (const Entry& e : *entries_)
            if (e.key == key) return std::optional<std::string>(e.value_json);
        return std::optional<std::string>();
    }
    Result<std::vector<Entry>> read_entries(std::string_view conversation) override {
        if (conversation != conversation_) return std::vector<Entry>{};
        return entries_;
    }
    Result<std::vector<Fact>> read_facts() override { return facts_; }

    using MemoryBackend::set;
    Status set(std::string_view, std::string_view, std::string_view, store::Flush) override { return read_only(); }
    Result<int64_t> clear(std::string_view) override { return read_only().error(); }
    Status post_event(std::string_view, std::string_view, std::string_view) override { return read_only(); }
    std::vector<PostedEvent> take_events(std::string_view) override { return {}; }
    std::vector<PostedEvent> pending_events(std::string_view) override { return {}; }
    Result<int64_t> add_fact(std::string_view) override { return read_only().error(); }
    Result<bool> remove_fact(int64_t) override { return read_only().error(); }

private:
    static Status read_only() { return Error{"memory_read_only", "a memory snapshot is read-only"}; }

    std::string conversation_;
    Result<std::vector<Entry>> entries_;
    Result<std::vector<Fact>> facts_;
};

}  // namespace agenthost::memory
