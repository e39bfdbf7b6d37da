#include "postgres/pg_connection.hpp"

#include "store/store_error.hpp"

#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include <cctype>
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

Result<std::unique_ptr<Connection>> Connection::open(const std::string& url) {
    PGconn* conn = PQconnectdb(url.c_str());
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

Connection::~Connection() { PQfinish(conn_); }

bool Connection::broken() const { return PQstatus(conn_) != CONNECTION_OK; }

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

std::optional<Error> Session::ensure_open() {
    if (connection_ && !connection_->broken()) return std::nullopt;
    auto opened = Connection::open(url_);
    if (!opened) {
        spdlog::warn("store: PostgreSQL out of reach: {}", opened.error().message);
        return opened.error();
    }
    connection_ = std::move(*opened);
    return std::nullopt;
}

Status defer_flush(Connection& tx, store::Flush flush) {
    if (flush == store::Flush::now) return Ok{};
    auto set = tx.exec("SET LOCAL synchronous_commit TO OFF");
    if (!set) return set.error();
    return Ok{};
}

}  // namespace agenthost::postgres
