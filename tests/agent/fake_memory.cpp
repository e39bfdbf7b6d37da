#include "agent/fake_memory.hpp"

namespace test {

using namespace agenthost;
using namespace agenthost::memory;

namespace {
Error injected_fault() { return Error{"store_io", "the memory store could not be read (a test's injected fault)"}; }
}  // namespace

Result<std::optional<std::string>> FakeMemory::get(std::string_view conversation, std::string_view key) {
    std::lock_guard lock(mutex_);
    ++reads_;
    if (fail_reads_) return injected_fault();
    auto c = entries_.find(conversation);
    if (c == entries_.end()) return std::optional<std::string>();
    auto e = c->second.find(std::string(key));
    if (e == c->second.end()) return std::optional<std::string>();
    return std::optional<std::string>(e->second);
}

int FakeMemory::reads() {
    std::lock_guard lock(mutex_);
    return reads_;
}

void FakeMemory::fail_reads(bool fail) {
    std::lock_guard lock(mutex_);
    fail_reads_ = fail;
}

std::optional<store::Flush> FakeMemory::flush_of(const std::string& conversation, const std::string& key) {
    std::lock_guard lock(mutex_);
    auto it = flushes_.find({conversation, key});
    if (it == flushes_.end()) return std::nullopt;
    return it->second;
}

Status FakeMemory::set(std::string_view conversation, std::string_view key, std::string_view value_json, store::Flush flush) {
    std::lock_guard lock(mutex_);
    flushes_[{std::string(conversation), std::string(key)}] = flush;
    auto& entries = entries_[std::string(conversation)];
    if (value_json.empty())
        entries.erase(std::string(key));
    else
        entries[std::string(key)] = std::string(value_json);
    return Ok{};
}

Result<std::vector<Entry>> FakeMemory::read_entries(std::string_view conversation) {
    std::lock_guard lock(mutex_);
    ++reads_;
    if (fail_reads_) return injected_fault();
    std::vector<Entry> out;
    if (auto c = entries_.find(conversation); c != entries_.end())
        for (const auto& [key, value] : c->second) out.push_back({key, value});
    return out;
}

Result<int64_t> FakeMemory::clear(std::string_view conversation) {
    std::lock_guard lock(mutex_);
    auto c = entries_.find(conversation);
    if (c == entries_.end()) return int64_t{0};
    auto removed = static_cast<int64_t>(c->second.size());
    entries_.erase(c);
    return removed;
}

Status FakeMemory::post_event(std::string_view conversation, std::string_view plugin, std::string_view body_json) {
    std::lock_guard lock(mutex_);
    events_.push_back({std::string(conversation), {++next_event_, std::string(plugin), std::string(body_json)}});
    return Ok{};
}

std::vector<PostedEvent> FakeMemory::pending_events(std::string_view conversation) {
    std::lock_guard lock(mutex_);
    std::vector<PostedEvent> out;
    for (const Event& e : events_)
        if (!e.delivered && (e.conversation == conversation || e.conversation.empty())) out.push_back(e.event);
    return out;
}

std::vector<PostedEvent> FakeMemory::take_events(std::string_view conversation) {
    std::lock_guard lock(mutex_);
    std::vector<PostedEvent> out;
    for (Event& e : events_)
        if (!e.delivered && (e.conversation == conversation || e.conversation.empty())) {
            e.delivered = true;
            out.push_back(e.event);
        }
    return out;
}

Result<int64_t> FakeMemory::add_fact(std::string_view text) {
    std::lock_guard lock(mutex_);
    for (const auto& [id, known] : facts_)
        if (known == text) return id;
    facts_[++next_fact_] = std::string(text);
    return next_fact_;
}

Result<std::vector<Fact>> FakeMemory::read_facts() {
    std::lock_guard lock(mutex_);
    ++reads_;
    if (fail_reads_) return injected_fault();
    std::vector<Fact> out;
    for (auto it = facts_.rbegin(); it != facts_.rend(); ++it) out.push_back({it->first, it->second});
    return out;
}

Result<bool> FakeMemory::remove_fact(int64_t id) {
    std::lock_guard lock(mutex_);
    return facts_.erase(id) > 0;
}

}  // namespace test
