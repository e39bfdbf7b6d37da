#include "graph_db.hpp"

#include <sqlite3.h>

#include <stdexcept>

namespace graph {
namespace {

// The schema's version, kept in the file's user_version. Raise it with any change to kSchema: a
// file at this version is taken to have every table and index below.
constexpr int kSchemaVersion = 1;
const char* kSchema =
    "PRAGMA journal_mode=WAL; PRAGMA foreign_keys=OFF;"
    "CREATE TABLE IF NOT EXISTS graphs (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE COLLATE NOCASE,"
    "  description TEXT NOT NULL DEFAULT '', created_at REAL NOT NULL DEFAULT (unixepoch()));"
    "CREATE TABLE IF NOT EXISTS concepts (id INTEGER PRIMARY KEY, name TEXT NOT NULL, description TEXT NOT NULL DEFAULT '',"
    "  color TEXT NOT NULL DEFAULT '', type TEXT NOT NULL DEFAULT '', norm TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS concepts_norm ON concepts (norm);"
    "CREATE TABLE IF NOT EXISTS instances (id INTEGER PRIMARY KEY, graph_id INTEGER NOT NULL, concept_id INTEGER NOT NULL,"
    "  x REAL NOT NULL, y REAL NOT NULL, UNIQUE (graph_id, concept_id));"
    "CREATE INDEX IF NOT EXISTS instances_concept ON instances (concept_id);"
    "CREATE TABLE IF NOT EXISTS connection_types (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE COLLATE NOCASE);"
    "CREATE TABLE IF NOT EXISTS edges (id INTEGER PRIMARY KEY, source INTEGER NOT NULL, target INTEGER NOT NULL,"
    "  type_id INTEGER NOT NULL, directed INTEGER NOT NULL DEFAULT 1);"
    "CREATE INDEX IF NOT EXISTS edges_source ON edges (source); CREATE INDEX IF NOT EXISTS edges_target ON edges (target);"
    "CREATE TABLE IF NOT EXISTS frames (id INTEGER PRIMARY KEY, graph_id INTEGER NOT NULL, name TEXT NOT NULL, members TEXT NOT "
    "NULL);"
    "CREATE TABLE IF NOT EXISTS storylines (id INTEGER PRIMARY KEY, graph_id INTEGER NOT NULL, title TEXT NOT NULL, members TEXT "
    "NOT NULL);"
    "CREATE TABLE IF NOT EXISTS batches (id INTEGER PRIMARY KEY, created_at REAL NOT NULL DEFAULT (unixepoch()),"
    "  summary TEXT NOT NULL, log TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    // What the vault last wrote for each concept: its note's name and its Connections lines. A
    // rename or an undo removes the note of the old name; a line the plugin wrote is never taken
    // for a person's when the note is written again or read back (render.hpp, Vault).
    "CREATE TABLE IF NOT EXISTS vault_notes (concept_id INTEGER PRIMARY KEY, note TEXT NOT NULL, links TEXT NOT NULL);";

// The file's user_version: 0 for a new file or one made before versions were kept.
int schema_version(sqlite3* db) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, nullptr) != SQLITE_OK) return 0;
    const int version = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : 0;
    sqlite3_finalize(s);
    return version;
}

void bind(sqlite3_stmt* s, int i, const json& v) {
    if (v.is_null())
        sqlite3_bind_null(s, i);
    else if (v.is_boolean())
        sqlite3_bind_int64(s, i, v.get<bool>());
    else if (v.is_number_integer())
        sqlite3_bind_int64(s, i, v.get<int64_t>());
    else if (v.is_number())
        sqlite3_bind_double(s, i, v.get<double>());
    else if (v.is_string()) {
        const std::string& t = v.get_ref<const std::string&>();
        sqlite3_bind_text(s, i, t.data(), static_cast<int>(t.size()), SQLITE_TRANSIENT);
    } else {
        std::string t = v.dump();
        sqlite3_bind_text(s, i, t.data(), static_cast<int>(t.size()), SQLITE_TRANSIENT);
    }
}

json column(sqlite3_stmt* s, int i) {
    switch (sqlite3_column_type(s, i)) {
        case SQLITE_INTEGER: return sqlite3_column_int64(s, i);
        case SQLITE_FLOAT: return sqlite3_column_double(s, i);
        case SQLITE_NULL: return nullptr;
        default: {
            const unsigned char* t = sqlite3_column_text(s, i);
            return std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(s, i));
        }
    }
}

}  // namespace

std::unique_ptr<GraphDb> GraphDb::open(const std::string& file, std::string& error) {
    sqlite3* raw = nullptr;
    if (sqlite3_open_v2(file.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) !=
        SQLITE_OK) {
        error = "cannot open " + file + ": " + (raw ? sqlite3_errmsg(raw) : "out of memory");
        sqlite3_close(raw);
        return nullptr;
    }
    sqlite3_busy_timeout(raw, 5000);
    char* message = nullptr;
    // A file at the schema's version skips the script: a start reads one pragma, not fourteen
    // statements (journal_mode=WAL stays with the file).
    const std::string script = schema_version(raw) == kSchemaVersion
                                   ? std::string("PRAGMA foreign_keys=OFF;")
                                   : kSchema + std::string("PRAGMA user_version=") + std::to_string(kSchemaVersion) + ";";
    if (sqlite3_exec(raw, script.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
        error = "cannot prepare " + file + ": " + (message ? message : "unknown error");
        sqlite3_free(message);
        sqlite3_close(raw);
        return nullptr;
    }
    return std::make_unique<GraphDb>(raw);
}

GraphDb::~GraphDb() { sqlite3_close_v2(db_); }

json GraphDb::query(const std::string& sql, const json& given) {
    // `{id}` at a call site may arrive as the value itself rather than a one-element array.
    const json params = given.is_array() ? given : json::array({given});
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
        throw std::runtime_error("graph store: " + std::string(sqlite3_errmsg(db_)) + " in: " + sql);
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> guard(s, sqlite3_finalize);
    for (size_t i = 0; i < params.size(); ++i) bind(s, static_cast<int>(i + 1), params[i]);
    json rows = json::array();
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        json row = json::object();
        for (int c = 0; c < sqlite3_column_count(s); ++c) row[sqlite3_column_name(s, c)] = column(s, c);
        rows.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE) throw std::runtime_error("graph store: " + std::string(sqlite3_errmsg(db_)) + " in: " + sql);
    return rows;
}

json GraphDb::one(const std::string& sql, const json& params) {
    json rows = query(sql, params);
    return rows.empty() ? json() : rows[0];
}

void GraphDb::run(const std::string& sql, const json& params) { query(sql, params); }

void GraphDb::begin() {
    run("BEGIN IMMEDIATE");
    log_ = json::array();
    in_change_ = true;
}

json GraphDb::commit() {
    run("COMMIT");
    in_change_ = false;
    return std::exchange(log_, json::array());
}

void GraphDb::rollback() {
    if (in_change_) run("ROLLBACK");
    in_change_ = false;
    log_ = json::array();
}

int64_t GraphDb::insert(const std::string& table, json row) {
    std::string columns, marks;
    json params = json::array();
    for (const auto& [key, value] : row.items()) {
        columns += (columns.empty() ? "" : ", ") + key;
        marks += (marks.empty() ? "?" : ", ?");
        params.push_back(value);
    }
    run("INSERT INTO " + table + " (" + columns + ") VALUES (" + marks + ")", params);
    int64_t id = sqlite3_last_insert_rowid(db_);
    if (in_change_) log_.push_back({{"table", table}, {"id", id}, {"before", nullptr}});
    return id;
}

void GraphDb::update(const std::string& table, int64_t id, const json& fields) {
    json before = one("SELECT * FROM " + table + " WHERE id = ?", {id});
    if (before.is_null()) return;
    std::string sets;
    json params = json::array();
    for (const auto& [key, value] : fields.items()) {
        sets += (sets.empty() ? "" : ", ") + key + " = ?";
        params.push_back(value);
    }
    params.push_back(id);
    run("UPDATE " + table + " SET " + sets + " WHERE id = ?", params);
    if (in_change_) log_.push_back({{"table", table}, {"id", id}, {"before", before}});
}

void GraphDb::remove(const std::string& table, int64_t id) {
    json before = one("SELECT * FROM " + table + " WHERE id = ?", {id});
    if (before.is_null()) return;
    run("DELETE FROM " + table + " WHERE id = ?", {id});
    if (in_change_) log_.push_back({{"table", table}, {"id", id}, {"before", before}});
}

void GraphDb::undo(const json& log) {
    run("BEGIN IMMEDIATE");
    try {
        for (auto it = log.rbegin(); it != log.rend(); ++it) {
            std::string table = (*it)["table"];
            if ((*it)["before"].is_null()) {
                run("DELETE FROM " + table + " WHERE id = ?", {(*it)["id"]});
                continue;
            }
            std::string columns, marks;
            json params = json::array();
            for (const auto& [key, value] : (*it)["before"].items()) {
                columns += (columns.empty() ? "" : ", ") + key;
                marks += (marks.empty() ? "?" : ", ?");
                params.push_back(value);
            }
            run("INSERT OR REPLACE INTO " + table + " (" + columns + ") VALUES (" + marks + ")", params);
        }
        run("COMMIT");
    } catch (...) {
        run("ROLLBACK");
        throw;
    }
}

}  // namespace graph
