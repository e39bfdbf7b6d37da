// An SQL backend as the shared journal statements (store/journal_sql.hpp) see it: statements with
// ?1 … ?N parameters, values bound by type, rows read by column. SQLite and PostgreSQL each adapt
// their own connection to it (sqlite::SqliteSql, postgres::PgSql); nothing else of either leaks.
#pragma once

#include "common/result.hpp"

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace agenthost::store {

// A statement parameter: SQL NULL, an integer, a real or text. Text is not copied: it must outlive
// the call that binds it.
using SqlValue = std::variant<std::monostate, int64_t, double, std::string_view>;

// One row of a result, read by column (0-based). NULL reads as "" or 0.
class SqlRow {
public:
    virtual ~SqlRow() = default;
    virtual std::string text(int column) const = 0;
    virtual int64_t integer(int column) const = 0;
    virtual double real(int column) const = 0;
};

// A connection of a backend, inside the transaction its caller opened (or none, for a read).
// Statements are written in the dialect both backends agree on, with ?1 … ?N parameters; the type
// of each parameter follows from the column it meets (PostgreSQL infers it, SQLite needs none).
class SqlConnection {
public:
    virtual ~SqlConnection() = default;
    // Runs `sql`, calling `each` for every row it returns. Error code "store_conflict" when a unique
    // index refused the write (two writers raced for the same row), "store_sql" for any other failure.
    virtual Status query(std::string_view sql, std::span<const SqlValue> params,
                         const std::function<void(const SqlRow&)>& each) = 0;
    // Runs `sql` (an INSERT, UPDATE or DELETE): the rows it changed. Errors as query().
    virtual Result<int64_t> execute(std::string_view sql, std::span<const SqlValue> params) = 0;
    // What a SELECT ends with to hold the rows it read until the transaction ends: " FOR UPDATE" in
    // PostgreSQL; nothing in SQLite, whose write transaction holds the whole database.
    virtual std::string_view row_lock() const = 0;

    // Conveniences with the parameters listed in place.
    Status query(std::string_view sql, std::initializer_list<SqlValue> params, const std::function<void(const SqlRow&)>& each) {
        return query(sql, std::span<const SqlValue>(params.begin(), params.size()), each);
    }
    // The first column of the first row, if there is a row.
    Result<std::optional<int64_t>> first_integer(std::string_view sql, std::initializer_list<SqlValue> params);
    Result<int64_t> execute(std::string_view sql, std::initializer_list<SqlValue> params) {
        return execute(sql, std::span<const SqlValue>(params.begin(), params.size()));
    }
};

inline Result<std::optional<int64_t>> SqlConnection::first_integer(std::string_view sql, std::initializer_list<SqlValue> params) {
    std::optional<int64_t> first;
    Status s = query(sql, params, [&](const SqlRow& row) {
        if (!first) first = row.integer(0);
    });
    if (!s) return s.error();
    return first;
}

}  // namespace agenthost::store
