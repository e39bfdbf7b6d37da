// A PostgreSQL connection through libpq, as the stores use it: parameterised statements (values
// always travel as parameters, never spliced into SQL), results read by row and column, and
// transactions that roll back on any error. Errors are Results naming the SQLSTATE and the server's
// message; no libpq pointer leaves this file pair.
#pragma once

#include "common/result.hpp"
#include "store/flush.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

struct pg_conn;
struct pg_result;

namespace agenthost::postgres {

// A statement parameter: text in PostgreSQL's input syntax, or SQL NULL.
using Param = std::optional<std::string>;
Param param(std::string_view text);
Param param(int64_t value);
Param param(double value);

class Rows;

// One row of a result, read by column (store/run_rows.hpp reads rows through it). Valid while its Rows lives.
class Row {
public:
    Row(const Rows& rows, int index) : rows_(rows), index_(index) {}
    std::string text(int column) const;
    int64_t integer(int column) const;
    double real(int column) const;

private:
    const Rows& rows_;
    int index_;
};

class Rows {
public:
    explicit Rows(pg_result* result);
    ~Rows();
    Rows(Rows&& other) noexcept;
    Rows& operator=(Rows&& other) noexcept;
    Rows(const Rows&) = delete;
    Rows& operator=(const Rows&) = delete;

    int size() const;
    bool empty() const { return size() == 0; }
    bool null(int row, int column) const;
    std::string text(int row, int column) const;  // "" for NULL
    int64_t integer(int row, int column) const;   // 0 for NULL
    double real(int row, int column) const;       // 0 for NULL
    int64_t affected() const;                     // rows an INSERT/UPDATE/DELETE touched
    Row row(int index) const { return Row(*this, index); }

private:
    friend class Connection;  // reads the status of the result it made
    pg_result* result_;
};

inline std::string Row::text(int column) const { return rows_.text(index_, column); }
inline int64_t Row::integer(int column) const { return rows_.integer(index_, column); }
inline double Row::real(int column) const { return rows_.real(index_, column); }

// SQLSTATE codes the stores act on.
inline constexpr const char* kUniqueViolation = "23505";

// `message` with the connection URL and its password (whole, and each piece of one holding an
// unencoded '@' or ':') replaced by "***": libpq quotes the URL in some of its errors.
std::string without_secrets(std::string message, const std::string& url);

class Connection {
public:
    // `url`: a libpq connection string or URI (postgresql://user@host:port/db). The error names the
    // server's reason (refused, authentication, no such database).
    static Result<std::unique_ptr<Connection>> open(const std::string& url);
    explicit Connection(pg_conn* conn) : conn_(conn) {}
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // Runs one statement. Error code "store_sql" with the SQLSTATE in `sqlstate`.
    Result<Rows> exec(const std::string& sql, const std::vector<Param>& params = {});
    // Runs several statements without parameters (a migration), in the simple protocol.
    Status exec_script(const std::string& sql);
    // The SQLSTATE of the last failed statement ("" when it succeeded).
    const std::string& sqlstate() const { return sqlstate_; }
    bool broken() const;  // the server went away: open a new connection

    // Runs `body(*this)` in a transaction (BEGIN … COMMIT); any error rolls it back and is returned.
    template <typename Body>
    Status transaction(Body&& body) {
        if (auto begun = exec("BEGIN"); !begun) return begun.error();
        Status s = body(*this);
        if (!s) {
            std::string state = sqlstate_;
            (void)exec("ROLLBACK");
            sqlstate_ = state;
            return s;
        }
        if (auto done = exec("COMMIT"); !done) return done.error();
        return Ok{};
    }

private:
    Result<Rows> finish(Rows rows);  // the rows, or the error the server sent

    pg_conn* conn_;
    std::string sqlstate_;
};

// Inside a transaction: a write that may wait for a later one to reach the disk
// (store::Flush::with_next) does not wait for its own WAL flush; PostgreSQL flushes the log in
// order, so the next flushed commit carries it.
Status defer_flush(Connection& tx, store::Flush flush);

// One connection shared by a store's callers, one at a time (libpq connections are not
// thread-safe). A lost connection is opened again on the next use.
class Session {
public:
    explicit Session(std::string url) : url_(std::move(url)) {}
    // Runs `body(connection)` holding the connection; an error when it cannot be opened.
    // A reader (a body not returning a Result) gets an empty value when the database is out of
    // reach; the failure is logged.
    template <typename Body>
    auto with(Body&& body) -> decltype(body(std::declval<Connection&>())) {
        using Out = decltype(body(std::declval<Connection&>()));
        std::lock_guard lock(mutex_);
        if (auto problem = ensure_open()) {
            if constexpr (std::is_constructible_v<Out, Error>)
                return Out(*problem);
            else
                return Out{};
        }
        return body(*connection_);
    }

private:
    std::optional<Error> ensure_open();

    std::string url_;
    std::mutex mutex_;
    std::unique_ptr<Connection> connection_;
};

}  // namespace agenthost::postgres
