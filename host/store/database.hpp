// One SQLite database file shared by the host's stores: WAL, a busy timeout and immediate write
// transactions, so the CLI and a running server can use it at once. Thread-safe.
#pragma once

#include "common/result.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace agenthost::store {

// The newest schema this build knows. A database with a higher version is refused, untouched.
inline constexpr int kSchemaVersion = 4;
// The SQL that migration `version` runs (1 … kSchemaVersion), for tests that build old databases.
const char* migration_sql(int version);

// When a committed write is safe: `full` survives a power cut, `process` a killed process.
enum class Durability { full, process };

class Statement;

class Database {
    struct Key {};  // lets only open() construct, while still going through make_unique

public:
    Database(Key, sqlite3* db, std::filesystem::path file) : db_(db), file_(std::move(file)) {}
    static Result<std::unique_ptr<Database>> open(const std::filesystem::path& file, Durability durability = Durability::full);
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    // Runs `body` inside BEGIN IMMEDIATE … COMMIT (ROLLBACK when it returns an error), serialised
    // with every other use of this connection.
    Status write(const std::function<Status(Database&)>& body);
    // Runs `body` under the connection's lock, without a transaction (for reads).
    template <typename F>
    auto read(F&& body) {
        std::lock_guard lock(mutex_);
        return body(*this);
    }

    Status exec(const std::string& sql);
    Result<Statement> prepare(const std::string& sql);
    std::string last_error() const;
    int64_t changes() const;  // rows changed by the last statement
    const std::filesystem::path& file() const { return file_; }

private:
    Status migrate();

    sqlite3* db_;
    std::filesystem::path file_;
    std::recursive_mutex mutex_;
};

// A prepared statement; binds are 1-based, columns 0-based.
class Statement {
public:
    explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
    Statement(Statement&& other) noexcept : stmt_(std::exchange(other.stmt_, nullptr)) {}
    Statement& operator=(Statement&&) = delete;
    ~Statement();

    Statement& bind(int index, std::string_view text);
    Statement& bind(int index, int64_t value);
    Statement& bind_real(int index, double value);
    Statement& bind_null(int index);
    // true while a row is available; false when done. Errors surface through run()/ok().
    bool step();
    Status run();  // steps to completion
    std::string text(int column) const;
    int64_t integer(int column) const;
    double real(int column) const;
    bool is_null(int column) const;
    bool failed() const { return failed_; }

private:
    sqlite3_stmt* stmt_;
    bool failed_ = false;
    std::string error_;
    friend class Database;
};

}  // namespace agenthost::store
