// A real PostgreSQL server for the tests: initdb into a temporary folder, started on a free
// loopback port (as the `postgres` user when the tests run as root, which PostgreSQL refuses), and
// stopped when the test program ends. Each test takes a fresh database on it.
#pragma once

#include "postgres/pg_backend.hpp"

#include <memory>
#include <string>

namespace test {

// The server's binaries folder (/usr/lib/postgresql/<version>/bin), or "" when not installed.
std::string postgres_bin_dir();

// A connection URL to a new, empty database on the shared test server (started on first use).
// Fails the test, naming the cause, when the server cannot start.
std::string fresh_postgres_database();

// Takes the shared test server down (a fast shutdown: sessions are cut) and up again on the same
// port with the same data: a database outage, for the tests of what hosts do through one.
void stop_postgres();
void restart_postgres();

// A migrated store on `url` (a fresh database when empty) for a host whose lease owner is `owner`.
std::unique_ptr<agenthost::postgres::PgBackend> open_postgres_backend(
    std::string url = "", const std::string& owner = agenthost::store::this_process_owner(), int lease_seconds = 30);

}  // namespace test
