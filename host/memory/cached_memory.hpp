// Agent memory read once per turn. While a turn of a conversation runs in this process (it holds
// a TurnHold), the conversation's entries are read from the store at their first use and answered
// from here after that, and the facts are read once per turn that starts. Every write this process
// makes passes through here (the host wires it under AgentMemory and the plugins' host services),
// so the copy changes with the write: a turn always reads its own writes. Outside a turn every call
// goes to the store.
//
// What another process writes during a turn (the CLI's `memory` command, another host) is seen from
// the next turn on. A failed read is not kept: the next read asks the store again.
#pragma once

#include "memory/memory_backend.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace agenthost::memory {

class CachedMemory final : public MemoryBackend {
public:
    explicit CachedMemory(MemoryBackend& store) : store_(store) {}

    // Keeps `conversation`'s entries while it lives (turns of one conversation may nest: a hold
    // counts). Move-only.
    class TurnHold {
    public:
        TurnHold() = default;
        TurnHold(CachedMemory* cache, std::string conversation) : cache_(cache), conversation_(std::move(conversation)) {}
        TurnHold(TurnHold&& other) noexcept
            : cache_(std::exchange(other.cache_, nullptr)), conversation_(std::move(other.conversation_)) {}
        TurnHold& operator=(TurnHold&&) = delete;
        TurnHold(const TurnHold&) = delete;
        TurnHold& operator=(const TurnHold&) = delete;
        ~TurnHold() {
            if (cache_) cache_->release(conversation_);
        }

    private:
        CachedMemory* cache_ = nullptr;
        std::string conversation_;
    };
    // A turn of `conversation` starts: its entries are read afresh at their next use, and so are the facts.
    TurnHold hold(std::string_view conversation);

    using MemoryBackend::set;
    Result<std::optional<std::string>> get(std::string_view conversation, std::string_view key) override;
    Status set(std::string_view conversation, std::string_view key, std::string_view value_json, store::Flush flush) override;
    Result<std::vector<Entry>> read_entries(std::string_view conversation) override;
    Result<int64_t> clear(std::string_view conversation) override;
    Status post_event(std::string_view conversation, std::string_view plugin, std::string_view body_json) override {
        return store_.post_event(conversation, plugin, body_json);
    }
    std::vector<PostedEvent> take_events(std::string_view conversation) override { return store_.take_events(conversation); }
    std::vector<PostedEvent> pending_events(std::string_view conversation) override {
        return store_.pending_events(conversation);
    }
    Result<int64_t> add_fact(std::string_view text) override;
    Result<std::vector<Fact>> read_facts() override;
    Result<bool> remove_fact(int64_t id) override;

    // Reads the store has answered (for tests and benchmarks: what the cache saved is the difference).
    uint64_t store_reads();

private:
    struct Held {
        int holds = 0;
        std::optional<std::vector<Entry>> entries;  // ordered by key; unset until first read
        uint64_t version = 0;                       // moves with each write: a read that raced one is not kept
    };
    void release(const std::string& conversation);
    // The held conversation's entries, read now if they were not (with the facts, when those are
    // not kept either); nullptr when it is not held or a write raced the read. Called with mutex_
    // held; the read itself runs with it released.
    Result<const std::vector<Entry>*> held_entries(std::unique_lock<std::mutex>& lock, std::string_view conversation);
    Result<TurnMemory> entries_only(std::string_view conversation);

    MemoryBackend& store_;
    std::mutex mutex_;
    std::map<std::string, Held, std::less<>> held_;
    std::optional<std::vector<Fact>> facts_;  // while any turn holds; dropped at each turn's start and each fact write
    uint64_t facts_version_ = 0;              // moves with each drop: a read that raced a drop is not kept
    uint64_t store_reads_ = 0;
};

}  // namespace agenthost::memory
