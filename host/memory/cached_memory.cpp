#include "memory/cached_memory.hpp"

#include <algorithm>

namespace agenthost::memory {

CachedMemory::TurnHold CachedMemory::hold(std::string_view conversation) {
    std::lock_guard lock(mutex_);
    auto [it, added] = held_.try_emplace(std::string(conversation));
    if (++it->second.holds == 1) {
        it->second.entries.reset();  // read afresh: another process may have written since the last turn
        ++it->second.version;
    }
    facts_.reset();
    ++facts_version_;
    return TurnHold(this, std::string(conversation));
}

void CachedMemory::release(const std::string& conversation) {
    std::lock_guard lock(mutex_);
    auto it = held_.find(conversation);
    if (it != held_.end() && --it->second.holds <= 0) held_.erase(it);
    if (held_.empty()) facts_.reset();
}

uint64_t CachedMemory::store_reads() {
    std::lock_guard lock(mutex_);
    return store_reads_;
}

Result<const std::vector<Entry>*> CachedMemory::held_entries(std::unique_lock<std::mutex>& lock, std::string_view conversation) {
    auto it = held_.find(conversation);
    if (it == held_.end()) return nullptr;
    if (it->second.entries) return &*it->second.entries;
    const bool with_facts = !facts_;  // neither kept: both in one round trip
    const uint64_t version = it->second.version, facts_version = facts_version_;
    ++store_reads_;
    lock.unlock();
    auto read = with_facts ? store_.read_turn(conversation) : entries_only(conversation);
    lock.lock();
    if (!read) return read.error();
    if (with_facts && facts_version_ == facts_version && !held_.empty()) facts_ = std::move(read->facts);
    it = held_.find(conversation);
    // The hold ended meanwhile, or a write went by while it was read (this copy may miss it): not
    // kept, and the caller asks the store itself.
    if (it == held_.end() || it->second.version != version) return nullptr;
    it->second.entries = std::move(read->entries);
    return &*it->second.entries;
}

Result<TurnMemory> CachedMemory::entries_only(std::string_view conversation) {
    auto entries = store_.read_entries(conversation);
    if (!entries) return entries.error();
    return TurnMemory{std::move(*entries), {}};
}

Result<std::optional<std::string>> CachedMemory::get(std::string_view conversation, std::string_view key) {
    {
        std::unique_lock lock(mutex_);
        auto entries = held_entries(lock, conversation);
        if (!entries) return entries.error();
        if (*entries) {
            const std::vector<Entry>& all = **entries;
            auto at = std::lower_bound(all.begin(), all.end(), key, [](const Entry& e, std::string_view k) { return e.key < k; });
            if (at != all.end() && at->key == key) return std::optional<std::string>(at->value_json);
            return std::optional<std::string>();
        }
        ++store_reads_;
    }
    return store_.get(conversation, key);
}

Status CachedMemory::set(std::string_view conversation, std::string_view key, std::string_view value_json, store::Flush flush) {
    Status written = store_.set(conversation, key, value_json, flush);
    std::lock_guard lock(mutex_);
    auto it = held_.find(conversation);
    if (it == held_.end()) return written;
    ++it->second.version;
    if (!written || !it->second.entries) {
        it->second.entries.reset();  // a failed write may have landed or not: read again
        return written;
    }
    std::vector<Entry>& all = *it->second.entries;
    auto at = std::lower_bound(all.begin(), all.end(), key, [](const Entry& e, std::string_view k) { return e.key < k; });
    const bool found = at != all.end() && at->key == key;
    if (value_json.empty()) {  // an empty value deletes the entry
        if (found) all.erase(at);
    } else if (found) {
        at->value_json.assign(value_json);
    } else {
        all.insert(at, Entry{std::string(key), std::string(value_json)});
    }
    return written;
}

Result<std::vector<Entry>> CachedMemory::read_entries(std::string_view conversation) {
    {
        std::unique_lock lock(mutex_);
        auto entries = held_entries(lock, conversation);
        if (!entries) return entries.error();
        if (*entries) return **entries;
        ++store_reads_;
    }
    return store_.read_entries(conversation);
}

Result<int64_t> CachedMemory::clear(std::string_view conversation) {
    auto cleared = store_.clear(conversation);
    std::lock_guard lock(mutex_);
    if (auto it = held_.find(conversation); it != held_.end()) {
        ++it->second.version;
        if (cleared)
            it->second.entries.emplace();
        else
            it->second.entries.reset();
    }
    return cleared;
}

Result<int64_t> CachedMemory::add_fact(std::string_view text) {
    auto added = store_.add_fact(text);
    std::lock_guard lock(mutex_);
    facts_.reset();
    ++facts_version_;
    return added;
}

Result<bool> CachedMemory::remove_fact(int64_t id) {
    auto removed = store_.remove_fact(id);
    std::lock_guard lock(mutex_);
    facts_.reset();
    ++facts_version_;
    return removed;
}

Result<std::vector<Fact>> CachedMemory::read_facts() {
    uint64_t version = 0;
    {
        std::lock_guard lock(mutex_);
        if (facts_) return *facts_;
        version = facts_version_;
        ++store_reads_;
    }
    auto read = store_.read_facts();
    std::lock_guard lock(mutex_);
    // Kept only while a turn holds (outside turns every read asks the store) and no write raced it.
    if (read && !held_.empty() && facts_version_ == version) facts_ = *read;
    return read;
}

}  // namespace agenthost::memory
