// Idempotency-Key for POST /v1/chat/completions and POST /api/chat on one host: a repeated key names
// the run the first request started, so a retry (the official openai clients send one key for all
// their retries) gets that run's outcome instead of starting a second run. Kept in memory, bounded
// (kMaxKeys, the oldest forgotten first) for kTtl: the run itself is durable in the store, the key only
// has to outlive a client's retries. A key is scoped to its route; the same key with a different body
// is refused (422), as Stripe and the IETF draft do. Hosts sharing PostgreSQL share their keys there.
#pragma once

#include "store/idempotency_keys.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace agenthost::server {

class IdempotencyKeys final : public store::IdempotencyKeys {
public:
    static constexpr size_t kMaxKeys = 10000;
    static constexpr std::chrono::hours kTtl{24};

    Lookup begin(const std::string& route, const std::string& key, uint64_t print) override {
        std::lock_guard lock(mutex_);
        auto now = Clock::now();
        while (!order_.empty() && (now - order_.front().second > kTtl || entries_.size() >= kMaxKeys)) {
            auto it = entries_.find(order_.front().first);
            if (it != entries_.end() && it->second.at == order_.front().second) entries_.erase(it);
            order_.pop_front();
        }
        std::string id = scoped(route, key);
        auto it = entries_.find(id);
        if (it != entries_.end()) {
            if (it->second.print != print) return {Found::mismatch};
            return it->second.run ? Lookup{Found::run, it->second.run} : Lookup{Found::in_progress};
        }
        entries_[id] = {print, 0, now};
        order_.emplace_back(id, now);
        return {Found::fresh};
    }

    // The first request started its run.
    void started(const std::string& route, const std::string& key, int64_t run) override {
        std::lock_guard lock(mutex_);
        if (auto it = entries_.find(scoped(route, key)); it != entries_.end()) it->second.run = run;
    }

    // The first request started no run (refused, busy): a retry with the key may try again.
    void forget(const std::string& route, const std::string& key) override {
        std::lock_guard lock(mutex_);
        if (auto it = entries_.find(scoped(route, key)); it != entries_.end() && it->second.run == 0) entries_.erase(it);
    }

private:
    using Clock = std::chrono::steady_clock;
    struct Entry {
        uint64_t print;
        int64_t run;
        Clock::time_point at;
    };
    std::mutex mutex_;
    std::map<std::string, Entry> entries_;
    std::deque<std::pair<std::string, Clock::time_point>> order_;
};

}  // namespace agenthost::server
