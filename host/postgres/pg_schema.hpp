// The PostgreSQL store's schema: versioned migrations, appended and never edited, applied under an
// advisory lock so hosts starting together migrate once.
#pragma once

#include "postgres/pg_connection.hpp"

namespace agenthost::postgres {

inline constexpr int kSchemaVersion = 9;
// The SQL that migration `version` runs (1 … kSchemaVersion), for tests that build old databases.
const char* migration_sql(int version);

// Brings the database to kSchemaVersion. A database written by a newer version is refused (its
// tables may mean something this version does not know).
Status migrate(Connection& db);

}  // namespace agenthost::postgres
