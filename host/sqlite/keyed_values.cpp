#include "sqlite/keyed_values.hpp"

#include "sqlite/sqlite_sql.hpp"

#include <spdlog/spdlog.h>

namespace agenthost::sqlite {

KeyedValues::~KeyedValues() {
    // Any write carries what is held; this one carries nothing else.
    if (!held_.empty())
        if (Status flushed = db_.write([](Database&) -> Status { return Ok{}; }); !flushed)
            spdlog::error("store: values held for the next write were lost at shutdown: {}", flushed.error().message);
    db_.forget_joined(*this);
}

Result<std::optional<std::string>> KeyedValues::read(std::string_view owner, std::string_view key) {
    if (auto held = held_.find(owner, key)) return held;
    return db_.read([&](Database& db) {
        SqliteSql sql(db);
        return table_.get(sql, owner, key);
    });
}

Status KeyedValues::set(std::string_view owner, std::string_view key, std::string_view value, store::Flush flush) {
    if (flush == store::Flush::with_next_write) {
        if (Status held = held_.hold(owner, key, value); !held) return held;
        db_.join_next_write(*this);
        return Ok{};
    }
    held_.drop(owner, key);
    return db_.write(
        [&](Database& db) {
            SqliteSql sql(db);
            return table_.set(sql, owner, key, value);
        },
        flush);
}

Status KeyedValues::erase(std::string_view owner, std::string_view key) {
    held_.drop(owner, key);
    return db_.write([&](Database& db) {
        SqliteSql sql(db);
        return table_.erase(sql, owner, key);
    });
}

Status KeyedValues::write_joined(Database& db) {
    SqliteSql sql(db);
    auto written = held_.write(sql, table_);
    if (!written) return written.error();
    written_ = std::move(*written);
    return Ok{};
}

}  // namespace agenthost::sqlite
