// Values a store holds in memory until its next write carries them in its transaction
// (store::Flush::with_next_write), and reads back from here meanwhile: a provider's state, kept or
// lost together with the step that used its reply. The same on every backend; the backend says
// which write carries them (sqlite/keyed_values, postgres/pg_plugin_kv).
#pragma once

#include "store/keyed_value_table.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace agenthost::store {

class HeldValues {
public:
    // The largest value held for the next write (SQLite's own limit is 1 GB).
    static constexpr size_t kMaxHeldBytes = size_t{64} * 1024 * 1024;

    // Holds `value` under (owner, key), replacing one held there. Refused now, when over
    // kMaxHeldBytes, what the store would refuse later: a held value that cannot be written would
    // fail every write after it.
    Status hold(std::string_view owner, std::string_view key, std::string_view value);
    std::optional<std::string> find(std::string_view owner, std::string_view key);
    // Drops a held value that a write of its own is about to replace.
    void drop(std::string_view owner, std::string_view key);
    // Every (key, value) held for `owner`, ordered by key.
    std::vector<std::pair<std::string, std::string>> of_owner(std::string_view owner);
    // Drops every value held for `owner` (all of its values are about to be deleted).
    void drop_owner(std::string_view owner);
    bool empty();

    // What one write() wrote: each value by the hold() it came from. Two transactions may carry
    // the values at once (PostgreSQL's pool); each commits what it wrote.
    struct Written {
        std::vector<std::pair<std::pair<std::string, std::string>, uint64_t>> values;
    };
    // Writes every held value into `table` on `db`, inside the carrying transaction, in key order
    // (so two transactions carrying the same values lock their rows in one order), with the lock of
    // what is held taken: a value dropped meanwhile is written before the write replacing it.
    Result<Written> write(SqlConnection& db, const KeyedValueTable& table);
    // That transaction committed: what it wrote is no longer held, unless it was held again since.
    void committed(const Written& written);

private:
    struct Held {
        std::string value;
        uint64_t version = 0;  // which hold() it came from
    };
    std::mutex mutex_;
    std::map<std::pair<std::string, std::string>, Held, std::less<>> held_;
    uint64_t next_version_ = 0;
};

}  // namespace agenthost::store
