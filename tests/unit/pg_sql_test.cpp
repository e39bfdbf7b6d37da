// The shared journal statements' parameters as PostgreSQL reads them.
#include "postgres/pg_sql.hpp"

#include <catch2/catch.hpp>

using agenthost::postgres::dollar_parameters;

TEST_CASE("pg sql: ?N parameters are written as $N, and a ? inside a quoted literal is left alone", "[unit]") {
    CHECK(dollar_parameters("SELECT id FROM runs WHERE conversation = ?1 AND status = ?2") ==
          "SELECT id FROM runs WHERE conversation = $1 AND status = $2");
    CHECK(dollar_parameters("VALUES (?1, ?12, ?12)") == "VALUES ($1, $12, $12)");
    CHECK(dollar_parameters("SELECT '?1', 'it''s ?2', ?3") == "SELECT '?1', 'it''s ?2', $3");
    CHECK(dollar_parameters("SELECT ? , ?x") == "SELECT ? , ?x");  // not a numbered parameter
}
