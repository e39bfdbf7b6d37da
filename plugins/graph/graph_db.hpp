// The graph plugin's own SQLite file. Rows are JSON objects; every insert, update and delete made
// inside a change is recorded with the row as it was, so a change can be undone exactly.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

struct sqlite3;

namespace graph {

using nlohmann::json;

class GraphDb {
public:
    static std::unique_ptr<GraphDb> open(const std::string& file, std::string& error);
    explicit GraphDb(sqlite3* db) : db_(db) {}
    ~GraphDb();
    GraphDb(const GraphDb&) = delete;
    GraphDb& operator=(const GraphDb&) = delete;

    // Rows as objects (column → value). Throws std::runtime_error naming the SQL on failure.
    json query(const std::string& sql, const json& params = json::array());
    json one(const std::string& sql, const json& params = json::array());  // the first row, or null
    void run(const std::string& sql, const json& params = json::array());

    // A change: everything between begin() and commit() is one transaction and one undo entry.
    void begin();
    json commit();                            // the log of what changed
    const json& log() const { return log_; }  // what changed so far in this change
    void rollback();

    int64_t insert(const std::string& table, json row);
    void update(const std::string& table, int64_t id, const json& fields);
    void remove(const std::string& table, int64_t id);
    // Reverts a change log (as commit() returned it), in its own transaction.
    void undo(const json& log);

    // Runs `body` as one change recorded as a batch (for undo_last_change) with the summary it
    // returns; the change's log stays readable through last_log(). A change that wrote nothing
    // (a delete that found nothing) takes no undo step: undo always reverts a real change.
    template <typename Body>
    json batch(Body&& body) {
        begin();
        try {
            json summary = body();
            if (!log_.empty()) run("INSERT INTO batches (summary, log) VALUES (?, ?)", {summary.dump(), log_.dump()});
            last_log_ = commit();
            return summary;
        } catch (...) {
            rollback();
            throw;
        }
    }
    const json& last_log() const { return last_log_; }

private:
    sqlite3* db_;
    json log_ = json::array();
    json last_log_ = json::array();
    bool in_change_ = false;
};

}  // namespace graph
