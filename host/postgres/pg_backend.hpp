// A PostgreSQL store for one host: its connection, migrated on open, with the run journal and the
// agent memory on it. Several hosts open the same database; the schema makes them share safely.
#pragma once

#include "postgres/pg_idempotency_keys.hpp"
#include "postgres/pg_listener.hpp"
#include "postgres/pg_memory.hpp"
#include "postgres/pg_plugin_kv.hpp"
#include "postgres/pg_run_cancels.hpp"
#include "postgres/pg_run_events.hpp"
#include "postgres/pg_run_journal.hpp"

#include "store/run_owner.hpp"

#include <memory>

namespace agenthost::postgres {

struct PgBackend {
    // `owner`: this process as a lease owner (tests give two stores in one process two owners).
    PgBackend(const std::string& url, int lease_seconds, const std::string& owner)
        : listener(url, signals),
          session(url),
          journal(session, lease_seconds, owner),
          memory(session, signals),
          plugin_kv(session),
          events(url),
          idempotency_keys(session, 2.0 * lease_seconds),
          cancels(session, owner) {}
    store::ChangeSignals signals;  // what other hosts changed, as the listener hears it
    PgListener listener;
    Session session;
    PgRunJournal journal;
    PgMemory memory;
    PgPluginKv plugin_kv;
    PgRunEvents events;  // on a second connection
    PgIdempotencyKeys idempotency_keys;
    PgRunCancels cancels;
};

// Connects, migrates (under the advisory lock) and returns the store; the error names the cause
// (unreachable server, authentication, a newer schema).
Result<std::unique_ptr<PgBackend>> open_backend(const std::string& url, int lease_seconds,
                                                const std::string& owner = store::this_process_owner());

}  // namespace agenthost::postgres
