// A PostgreSQL connection through libpq, as the stores use it: parameterised statements (values
// always travel as parameters, never spliced into SQL), results read by row and column, and
// transactions that roll back on any error. Errors are Results naming the SQLSTATE and the server's
// message; no libpq pointer leaves this file pair.
#pragma once

#include "common/result.hpp"
#include "store/flush.hpp"
#include "store/held_values.hpp"

#include <condition_variable>
#include <cstdint>
#include <functional>
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
    // The same, giving up as soon as `stop_fd` becomes readable (a thread that must stop at once
    // never waits out a connect to a server that does not answer).
    static Result<std::unique_ptr<Connection>> open_unless(const std::string& url, int stop_fd);
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
    // Whether an idle connection can still be used: reads what the server sent meanwhile, so one
    // the server closed (a restart ends every session) is found out before a statement is sent.
    bool still_open();

    // LISTEN/NOTIFY (postgres/pg_listener.hpp). The socket to wait on for notifications:
    int socket() const;
    // One notification: its channel and payload.
    struct Notification {
        std::string channel, payload;
    };
    // Reads what the server sent and returns the notifications that arrived; an error when the
    // connection is lost.
    Result<std::vector<Notification>> notifications();

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

// A small pool of connections shared by a store's callers. A libpq connection serves one caller
// at a time, so a caller takes one for the length of its body: up to `connections` callers use
// the database at once, the rest wait for one to be handed back. Connections are opened when
// first needed and kept; one the server closed is opened again on its next use.
class Session {
public:
    // How many connections a store's session opens at most, unless told otherwise: enough for the
    // writes and reads of concurrent runs to overlap, few enough that several hosts stay far from
    // PostgreSQL's default max_connections (100).
    static constexpr size_t kDefaultConnections = 4;

    explicit Session(std::string url, size_t connections = kDefaultConnections)
        : url_(std::move(url)), limit_(connections == 0 ? 1 : connections) {}

    // Runs `body(connection)` holding one connection of the pool; an error when none can be opened.
    // A reader (a body not returning a Result) gets an empty value when the database is out of
    // reach; the failure is logged.
    template <typename Body>
    auto with(Body&& body) -> decltype(body(std::declval<Connection&>())) {
        using Out = decltype(body(std::declval<Connection&>()));
        Result<Lent> lent = lend();
        if (!lent) {
            if constexpr (std::is_constructible_v<Out, Error>)
                return Out(lent.error());
            else
                return Out{};
        }
        return body(*lent->connection);
    }

    // Connections open now (idle or lent), for tests and /metrics.
    size_t open_connections();

    // Values a store holds in memory to write into `table` in the transaction of the session's
    // next write (store::Flush::with_next_write) instead of committing on their own.
    struct Joined {
        store::HeldValues* held;
        const store::KeyedValueTable* table;
        bool operator==(const Joined&) const = default;
    };
    // `joined` holds something for the next write; forget_joined before its values are destroyed.
    void join_next_write(Joined joined);
    void forget_joined(Joined joined);
    // `joined` goes: what it still holds is written now (in a transaction of its own), then forgotten.
    void let_go(Joined joined);
    // Runs `body` in a transaction on `db` (a connection of this session) that first writes what is
    // joined; kept for the next write when the transaction fails.
    Status write_carrying_joined(Connection& db, const std::function<Status(Connection&)>& body);

private:
    // A connection lent to one caller; handed back to the pool when it goes.
    struct Lent {
        Session* session = nullptr;
        std::unique_ptr<Connection> connection;
        Lent(Session* s, std::unique_ptr<Connection> c) : session(s), connection(std::move(c)) {}
        Lent(Lent&& other) noexcept = default;
        Lent& operator=(Lent&&) = delete;
        Lent(const Lent&) = delete;
        Lent& operator=(const Lent&) = delete;
        ~Lent() {
            if (session && connection) session->give_back(std::move(connection));
        }
    };
    Result<Lent> lend();
    void give_back(std::unique_ptr<Connection> connection);

    std::string url_;
    size_t limit_;
    std::mutex mutex_;
    std::condition_variable returned_;
    std::vector<std::unique_ptr<Connection>> idle_;  // the most recently used last
    size_t open_ = 0;                                // idle, lent, or being opened
    std::vector<Joined> take_joined();
    std::mutex joined_mutex_;
    std::vector<Joined> joined_;
};

}  // namespace agenthost::postgres
