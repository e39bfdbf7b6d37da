#include "store/held_values.hpp"

namespace agenthost::store {

Status HeldValues::hold(std::string_view owner, std::string_view key, std::string_view value) {
    if (value.size() > kMaxHeldBytes)
        return Error{"value_too_large", "a value of " + std::to_string(value.size()) + " bytes is over the " +
                                            std::to_string(kMaxHeldBytes) + " bytes a provider may keep in the store"};
    std::lock_guard lock(mutex_);
    held_[std::pair(std::string(owner), std::string(key))] = Held{std::string(value), ++next_version_};
    return Ok{};
}

std::optional<std::string> HeldValues::find(std::string_view owner, std::string_view key) {
    std::lock_guard lock(mutex_);
    if (auto held = held_.find(std::pair(std::string(owner), std::string(key))); held != held_.end()) return held->second.value;
    return std::nullopt;
}

void HeldValues::drop(std::string_view owner, std::string_view key) {
    std::lock_guard lock(mutex_);
    held_.erase(std::pair(std::string(owner), std::string(key)));
}

std::vector<std::pair<std::string, std::string>> HeldValues::of_owner(std::string_view owner) {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<std::string, std::string>> out;
    for (auto it = held_.lower_bound(std::pair(std::string(owner), std::string())); it != held_.end() && it->first.first == owner;
         ++it)
        out.emplace_back(it->first.second, it->second.value);
    return out;
}

void HeldValues::drop_owner(std::string_view owner) {
    std::lock_guard lock(mutex_);
    auto first = held_.lower_bound(std::pair(std::string(owner), std::string()));
    auto last = first;
    while (last != held_.end() && last->first.first == owner) ++last;
    held_.erase(first, last);
}

bool HeldValues::empty() {
    std::lock_guard lock(mutex_);
    return held_.empty();
}

Result<HeldValues::Written> HeldValues::write(SqlConnection& db, const KeyedValueTable& table) {
    std::lock_guard lock(mutex_);
    Written written;
    for (const auto& [where, held] : held_) {
        if (Status s = table.set(db, where.first, where.second, held.value); !s) return s.error();
        written.values.emplace_back(where, held.version);
    }
    return written;
}

void HeldValues::committed(const Written& written) {
    std::lock_guard lock(mutex_);
    for (const auto& [where, version] : written.values)
        if (auto held = held_.find(where); held != held_.end() && held->second.version == version) held_.erase(held);
}

}  // namespace agenthost::store
