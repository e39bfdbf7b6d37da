#include "postgres/pg_schema.hpp"

namespace agenthost::postgres {
namespace {

// Indexed by the version they produce. Only ever append.
const char* const kMigrations[] = {
    nullptr,
    // 1: runs, the transcript, checkpoints, the tool journal, memory, events, facts, plugin data.
    "CREATE TABLE conversations (id TEXT PRIMARY KEY, created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT "
    "NULL);"
    "CREATE TABLE runs (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, conversation TEXT NOT NULL, turn BIGINT NOT NULL,"
    "  status TEXT NOT NULL, mode TEXT NOT NULL, provider TEXT NOT NULL, prompt TEXT NOT NULL, stop_reason TEXT, error_code TEXT,"
    "  error TEXT, answer TEXT, iterations BIGINT NOT NULL DEFAULT 0, tool_calls BIGINT NOT NULL DEFAULT 0,"
    "  input_tokens BIGINT NOT NULL DEFAULT 0, output_tokens BIGINT NOT NULL DEFAULT 0, started_at DOUBLE PRECISION NOT NULL,"
    "  updated_at DOUBLE PRECISION NOT NULL, ended_at DOUBLE PRECISION, lease_owner TEXT, lease_until DOUBLE PRECISION);"
    "CREATE INDEX runs_by_conversation ON runs (conversation, id);"
    "CREATE INDEX runs_by_status ON runs (status);"
    // One running run per conversation, whichever host started it: the database says so.
    "CREATE UNIQUE INDEX one_running_run ON runs (conversation) WHERE status = 'running';"
    "CREATE TABLE messages (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, conversation TEXT NOT NULL,"
    "  turn BIGINT NOT NULL, run BIGINT, kind TEXT NOT NULL, body TEXT NOT NULL, result TEXT,"
    "  created_at DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM now()));"
    "CREATE INDEX messages_by_conversation ON messages (conversation, turn, id);"
    "CREATE INDEX messages_by_run ON messages (run, id);"
    "CREATE TABLE checkpoints (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, run BIGINT NOT NULL, step BIGINT NOT NULL,"
    "  last_message BIGINT NOT NULL, state TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL);"
    "CREATE INDEX checkpoints_by_run ON checkpoints (run, step);"
    "CREATE TABLE tool_journal (run BIGINT NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL, arguments TEXT NOT NULL,"
    "  status TEXT NOT NULL, result TEXT, error_code TEXT, started_at DOUBLE PRECISION NOT NULL, finished_at DOUBLE PRECISION,"
    "  PRIMARY KEY (run, call_id));"
    "CREATE TABLE memory (conversation TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
    "  updated_at DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM now()), PRIMARY KEY (conversation, key));"
    "CREATE TABLE events (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, conversation TEXT NOT NULL, plugin TEXT NOT NULL,"
    "  body TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM now()),"
    "  delivered BOOLEAN NOT NULL DEFAULT false);"
    "CREATE INDEX events_pending ON events (delivered, conversation);"
    "CREATE TABLE facts (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, text TEXT NOT NULL UNIQUE,"
    "  created_at DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM now()));"
    "CREATE TABLE plugin_kv (plugin TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
    "  updated_at DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM now()), PRIMARY KEY (plugin, key));",
    // 2: the runs' SSE events, for a host streaming a run another host executes.
    "CREATE TABLE run_events (run BIGINT NOT NULL, seq BIGINT NOT NULL, name TEXT NOT NULL, data TEXT NOT NULL,"
    "  at DOUBLE PRECISION NOT NULL, PRIMARY KEY (run, seq));",
    // 3: Idempotency-Key of the requests that start runs, so a retry reaching another host finds it.
    "CREATE TABLE idempotency_keys (id TEXT PRIMARY KEY, print BIGINT NOT NULL, run BIGINT,"
    "  created_at DOUBLE PRECISION NOT NULL);",
    // 4: requests to cancel a run another host executes.
    "CREATE TABLE run_cancels (run BIGINT PRIMARY KEY, requested_at DOUBLE PRECISION NOT NULL);",
    // 5: conversations may be named (empty: never named).
    "ALTER TABLE conversations ADD COLUMN title TEXT NOT NULL DEFAULT '';",
    // 6: a run keeps only its latest checkpoint (resume reads nothing older), in its own row,
    // replaced by the UPDATE every step makes anyway: a step inserts no checkpoint row. The run's
    // inputs (a client's history, the request context) are stored once, not in every checkpoint.
    "ALTER TABLE runs ADD COLUMN checkpoint TEXT, ADD COLUMN checkpoint_step BIGINT NOT NULL DEFAULT 0,"
    "  ADD COLUMN checkpoint_message BIGINT NOT NULL DEFAULT 0, ADD COLUMN inputs TEXT;"
    "UPDATE runs SET (checkpoint, checkpoint_step, checkpoint_message) = (SELECT state, step, last_message FROM checkpoints"
    "  WHERE checkpoints.run = runs.id ORDER BY step DESC LIMIT 1) WHERE id IN (SELECT run FROM checkpoints);"
    "DROP TABLE checkpoints;",
    // 7: times a run was found abandoned by its host: a resumed run numbers its SSE events past any
    // the abandoned host may have sent (store/run_journal.hpp, RunRecord::recoveries). A run keeps
    // the Idempotency-Key it was started with, written with it: one key starts one run (RunKey).
    "ALTER TABLE runs ADD COLUMN recoveries BIGINT NOT NULL DEFAULT 0, ADD COLUMN idempotency_key TEXT,"
    "  ADD COLUMN idempotency_print BIGINT;"
    "CREATE UNIQUE INDEX runs_by_idempotency_key ON runs (idempotency_key) WHERE idempotency_key IS NOT NULL;",
    // 8: who started a run (RunOrigin): a server resumes the runs servers started by itself.
    "ALTER TABLE runs ADD COLUMN origin TEXT NOT NULL DEFAULT 'cli';",
    // 9: the model a run asked for, and the turn it follows (a branch: an edited prompt or a
    // regenerated answer follows an earlier turn than the newest). NULL: the turn before.
    "ALTER TABLE runs ADD COLUMN model TEXT NOT NULL DEFAULT '', ADD COLUMN after_turn BIGINT;",
};

// Any fixed number: the lock every agenthost takes to migrate this database.
constexpr const char* kMigrationLock = "SELECT pg_advisory_xact_lock(86420001)";

}  // namespace

const char* migration_sql(int version) { return version >= 1 && version <= kSchemaVersion ? kMigrations[version] : nullptr; }

Status migrate(Connection& db) {
    return db.transaction([](Connection& tx) -> Status {
        if (auto locked = tx.exec(kMigrationLock); !locked) return locked.error();
        if (auto made = tx.exec("CREATE TABLE IF NOT EXISTS agenthost_schema (version INTEGER PRIMARY KEY,"
                                " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())");
            !made)
            return made.error();
        auto current = tx.exec("SELECT COALESCE(MAX(version), 0) FROM agenthost_schema");
        if (!current) return current.error();
        int version = static_cast<int>(current->integer(0, 0));
        if (version > kSchemaVersion)
            return Error{"store_version", "the PostgreSQL database is at schema version " + std::to_string(version) +
                                              ", newer than this agenthost knows (" + std::to_string(kSchemaVersion) +
                                              "); upgrade agenthost or point it at another database"};
        for (int v = version + 1; v <= kSchemaVersion; ++v) {
            if (auto applied = tx.exec_script(kMigrations[v]); !applied) return applied;
            if (auto noted = tx.exec("INSERT INTO agenthost_schema (version) VALUES ($1::integer)", {param(int64_t{v})}); !noted)
                return noted.error();
        }
        return Ok{};
    });
}

}  // namespace agenthost::postgres
