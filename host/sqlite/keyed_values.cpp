#include "sqlite/keyed_values.hpp"

#include "sqlite/sqlite_sql.hpp"

#include <spdlog/spdlog.h>

namespace agenthost::sqlite {

KeyedValues::~KeyedValues() {
    bool holding = false;
    {
        std::lock_guard lock(held_mutex_);
        holding = !held_.empty();
    }
    // Any write carries what is held; this one carries nothing else.
    if (holding)
        if (Status flushed = db_.write([](Database&) -> Status { return Ok{}; }); !flushed)
            spdlog::error("store: values held for the next write were lost at shutdown: {}", flushed.error().message);
    db_.forget_joined(*this);
}

Result<std::optional<std::string>> KeyedValues::read(std::string_view owner, std::string_view key) {
    {
        std::lock_guard lock(held_mutex_);
        if (auto held = held_.find(std::pair(std::string(owner), std::string(key))); held != held_.end())
            return std::optional<std::string>(held->second.value);
    }
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return table_.get(sql, owner, key);
    });
}

Status KeyedValues::set(std::string_view owner, std::string_view key, std::string_view value, store::Flush flush) {
    if (flush == store::Flush::with_next_write) {
        // Refused now what SQLite would refuse later: a held value that cannot be written would
        // fail every write after it.
        if (value.size() > kMaxHeldBytes)
            return Error{"value_too_large", "a value of " + std::to_string(value.size()) + " bytes is over the " +
                                                std::to_string(kMaxHeldBytes) + " bytes a provider may keep in the store"};
        {
            std::lock_guard lock(held_mutex_);
            held_[std::pair(std::string(owner), std::string(key))] = Held{std::string(value), ++next_version_};
        }
        db_.join_next_write(*this);
        return Ok{};
    }
    drop_held(owner, key);
    return db_.write(
        [&](Database& db) {
            SqliteSql sql(db);
            return table_.set(sql, owner, key, value);
        },
        flush);
}

Status KeyedValues::erase(std::string_view owner, std::string_view key) {
    drop_held(owner, key);
    return db_.write([&](Database& db) {
        SqliteSql sql(db);
        return table_.erase(sql, owner, key);
    });
}

void KeyedValues::drop_held(std::string_view owner, std::string_view key) {
    std::lock_guard lock(held_mutex_);
    held_.erase(std::pair(std::string(owner), std::string(key)));
}

Status KeyedValues::write_joined(Database& db) {
    std::lock_guard lock(held_mutex_);
    written_.clear();
    SqliteSql sql(db);
    for (const auto& [where, held] : held_) {
        if (Status s = table_.set(sql, where.first, where.second, held.value); !s) return s;
        written_.emplace_back(where, held.version);
    }
    return Ok{};
}

void KeyedValues::joined_committed() {
    std::lock_guard lock(held_mutex_);
    for (const auto& [where, version] : written_)
        if (auto held = held_.find(where); held != held_.end() && held->second.version == version) held_.erase(held);
    written_.clear();
}

}  // namespace agenthost::sqlite
