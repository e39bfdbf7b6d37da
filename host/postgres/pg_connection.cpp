#include "postgres/pg_connection.hpp"

#include "postgres/pg_sql.hpp"
#include "store/store_error.hpp"

#include <libpq-fe.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace agenthost::postgres {

Param param(std::string_view text) { return std::string(text); }
Param param(int64_t value) { return std::to_string(value); }
Param param(double value) {
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", value);  // round-trips a double exactly
    return std::string(text);
}

Rows::Rows(pg_result* result) : result_(result) {}
Rows::~Rows() {
    if (result_) PQclear(result_);
}
Rows::Rows(Rows&& other) noexcept : result_(std::exchange(other.result_, nullptr)) {}
Rows& Rows::operator=(Rows&& other) noexcept {
    if (this != &other) {
        if (result_) PQclear(result_);
        result_ = std::exchange(other.result_, nullptr);
    }
    return *this;
}
int Rows::size() const { return result_ ? PQntuples(result_) : 0; }
bool Rows::null(int row, int column) const { return PQgetisnull(result_, row, column) != 0; }
std::string Rows::text(int row, int column) const {
    return null(row, column) ? std::string() : std::string(PQgetvalue(result_, row, column), PQgetlength(result_, row, column));
}
int64_t Rows::integer(int row, int column) const {
    return null(row, column) ? 0 : std::strtoll(PQgetvalue(result_, row, column), nullptr, 10);
}
double Rows::real(int row, int column) const {
    return null(row, column) ? 0 : std::strtod(PQgetvalue(result_, row, column), nullptr);
}
int64_t Rows::affected() const {
    const char* n = result_ ? PQcmdTuples(result_) : "";
    return *n ? std::strtoll(n, nullptr, 10) : 0;
}

std::string without_secrets(std::string message, const std::string& url) {
    auto erase_all = [&](const std::string& secret) {
        if (secret.size() < 3) return;  // too short to be told from ordinary words
        for (size_t at = message.find(secret); at != std::string::npos; at = message.find(secret, at))
            message.replace(at, secret.size(), "***");
    };
    // libpq quotes a URL it cannot parse whole, or a part of it; the user-info part (up to the last
    // '@') holds the password, and a password with an unencoded '@' or ':' is split at them.
    std::string trimmed = url;
    while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.front()))) trimmed.erase(0, 1);
    while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) trimmed.pop_back();
    erase_all(trimmed);
    size_t scheme = url.find("//");
    size_t start = scheme == std::string::npos ? 0 : scheme + 2;
    size_t at = url.rfind('@');
    if (at != std::string::npos && at > start) {
        std::string userinfo = url.substr(start, at - start);
        size_t colon = userinfo.find(':');
        if (colon != std::string::npos) {
            std::string secret = userinfo.substr(colon + 1);
            erase_all(secret);
            for (size_t from = 0, cut; from <= secret.size(); from = cut + 1) {  // and each piece of it
                cut = secret.find_first_of(":@", from);
                if (cut == std::string::npos) cut = secret.size();
                erase_all(secret.substr(from, cut - from));
            }
        }
    }
    // key=value connection strings: password=…
    for (size_t p = url.find("password="); p != std::string::npos; p = url.find("password=", p + 9))
        erase_all(url.substr(p + 9, url.find_first_of(" \t", p + 9) - (p + 9)));
    return message;
}

namespace {

// The connection once libpq finished connecting it, or why it could not.
Result<std::unique_ptr<Connection>> connected(PGconn* conn, const std::string& url) {
    if (!conn) return store::store_error(store::StoreFault::open, "could not allocate a PostgreSQL connection");
    if (PQstatus(conn) != CONNECTION_OK) {
        std::string why = without_secrets(PQerrorMessage(conn), url);
        PQfinish(conn);
        while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
        return store::store_error(store::StoreFault::open, "could not connect to PostgreSQL: " + why);
    }
    // Notices (e.g. "relation already exists, skipping") are not errors: keep them out of stderr.
    PQsetNoticeProcessor(
        conn, [](void*, const char*) {}, nullptr);
    return std::make_unique<Connection>(conn);
}

}  // namespace

Result<std::unique_ptr<Connection>> Connection::open(const std::string& url) { return connected(PQconnectdb(url.c_str()), url); }

Result<std::unique_ptr<Connection>> Connection::open_unless(const std::string& url, int stop_fd) {
    PGconn* conn = PQconnectStart(url.c_str());
    if (!conn || PQstatus(conn) == CONNECTION_BAD) return connected(conn, url);
    PostgresPollingStatusType state = PGRES_POLLING_WRITING;
    while (state != PGRES_POLLING_OK && state != PGRES_POLLING_FAILED) {
        pollfd fds[2] = {{PQsocket(conn), static_cast<short>(state == PGRES_POLLING_READING ? POLLIN : POLLOUT), 0},
                         {stop_fd, POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
        if (fds[1].revents != 0) {
            PQfinish(conn);
            return store::store_error(store::StoreFault::open, "stopped while connecting to PostgreSQL");
        }
        state = PQconnectPoll(conn);
    }
    return connected(conn, url);
}

Connection::~Connection() { PQfinish(conn_); }

bool Connection::broken() const { return PQstatus(conn_) != CONNECTION_OK; }

bool Connection::still_open() {
    // A session the server ended has its last message waiting, then the end of the stream: read
    // until nothing more is there (a few reads at most).
    for (int reads = 0; reads < 8 && !broken(); ++reads) {
        pollfd waiting{PQsocket(conn_), POLLIN, 0};
        if (::poll(&waiting, 1, 0) <= 0) break;
        if (PQconsumeInput(conn_) == 0) return false;
    }
    return !broken();
}

int Connection::socket() const { return PQsocket(conn_); }

Result<std::vector<Connection::Notification>> Connection::notifications() {
    if (PQconsumeInput(conn_) == 0 || broken()) {
        std::string why = PQerrorMessage(conn_);
        while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
        return store::store_error(store::StoreFault::open, "PostgreSQL connection lost: " + why);
    }
    std::vector<Notification> out;
    while (PGnotify* n = PQnotifies(conn_)) {
        out.push_back({n->relname ? n->relname : "", n->extra ? n->extra : ""});
        PQfreemem(n);
    }
    return out;
}

Result<Rows> Connection::finish(Rows rows) {
    const PGresult* r = rows.result_;
    ExecStatusType status = PQresultStatus(r);
    if (r && (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)) {
        sqlstate_.clear();
        return rows;
    }
    const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    sqlstate_ = state ? state : "";
    std::string why = r ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    return store::store_error(store::StoreFault::sql,
                              "PostgreSQL: " + why + (sqlstate_.empty() ? "" : " (SQLSTATE " + sqlstate_ + ")"));
}

Result<Rows> Connection::exec(const std::string& sql, const std::vector<Param>& params) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    return finish(
        Rows(PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0)));
}

Status Connection::exec_script(const std::string& sql) {
    auto done = finish(Rows(PQexec(conn_, sql.c_str())));
    if (!done) return done.error();
    return Ok{};
}

Result<Session::Lent> Session::lend() {
    std::unique_lock lock(mutex_);
    returned_.wait(lock, [&] { return !idle_.empty() || open_ < limit_; });
    if (!idle_.empty()) {
        std::unique_ptr<Connection> connection = std::move(idle_.back());
        idle_.pop_back();
        if (connection->still_open()) return Lent(this, std::move(connection));
        // The server went away (a restart, a cut connection): this one is opened again below.
    } else {
        ++open_;  // held for the connection opened below, so no other caller opens one past the limit
    }
    lock.unlock();
    auto opened = Connection::open(url_);
    if (!opened) {
        spdlog::warn("store: PostgreSQL out of reach: {}", opened.error().message);
        lock.lock();
        --open_;
        lock.unlock();
        returned_.notify_one();
        return opened.error();
    }
    return Lent(this, std::move(*opened));
}

void Session::give_back(std::unique_ptr<Connection> connection) {
    {
        std::lock_guard lock(mutex_);
        idle_.push_back(std::move(connection));
    }
    returned_.notify_one();
}

void Session::join_next_write(Joined joined) {
    std::lock_guard lock(joined_mutex_);
    if (std::find(joined_.begin(), joined_.end(), joined) == joined_.end()) joined_.push_back(joined);
}

void Session::forget_joined(Joined joined) {
    std::lock_guard lock(joined_mutex_);
    joined_.erase(std::remove(joined_.begin(), joined_.end(), joined), joined_.end());
}

void Session::let_go(Joined joined) {
    if (!joined.held->empty()) {
        Status flushed =
            with([&](Connection& db) { return write_carrying_joined(db, [](Connection&) -> Status { return Ok{}; }); });
        if (!flushed) spdlog::error("store: values held for the next write were lost at shutdown: {}", flushed.error().message);
    }
    forget_joined(joined);
}

std::vector<Session::Joined> Session::take_joined() {
    std::lock_guard lock(joined_mutex_);
    std::vector<Joined> taken;
    taken.swap(joined_);
    return taken;
}

Status Session::write_carrying_joined(Connection& db, const std::function<Status(Connection&)>& body) {
    std::vector<Joined> joined = take_joined();
    // Every transaction writes what it carries in one order, table by table (and key by key within
    // one: HeldValues::write). Two carrying the same values (one took them, a new hold joined them
    // again before it committed) then wait for each other in turn: in opposite orders each would
    // hold a row the other waits for, while holding the lock of the values it writes.
    std::sort(joined.begin(), joined.end(), [](const Joined& a, const Joined& b) { return a.table->table() < b.table->table(); });
    std::vector<store::HeldValues::Written> written(joined.size());
    Status done = db.transaction([&](Connection& tx) -> Status {
        PgSql sql(tx);
        for (size_t i = 0; i < joined.size(); ++i) {
            auto wrote = joined[i].held->write(sql, *joined[i].table);
            if (!wrote) return wrote.error();
            written[i] = std::move(*wrote);
        }
        return body(tx);
    });
    for (size_t i = 0; i < joined.size(); ++i) {
        if (done)
            joined[i].held->committed(written[i]);
        else
            join_next_write(joined[i]);  // what it holds waits for the next write
    }
    return done;
}

size_t Session::open_connections() {
    std::lock_guard lock(mutex_);
    return open_;
}

Status defer_flush(Connection& tx, store::Flush flush) {
    if (flush == store::Flush::now) return Ok{};
    auto set = tx.exec("SET LOCAL synchronous_commit TO OFF");
    if (!set) return set.error();
    return Ok{};
}

}  // namespace agenthost::postgres
