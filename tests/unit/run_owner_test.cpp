// The rules every run journal follows for who holds a run: written once in store/run_owner, so
// they are tested once here, without a database. (The rules that look at other processes are in
// tests/integration/run_owner_process_test.cpp.)
#include "store/run_owner.hpp"

#include <catch2/catch.hpp>

using namespace agenthost;
using namespace agenthost::store;
using Catch::Matchers::Contains;

TEST_CASE("run owner: a writer keeps its run until another holds it or it is no longer running", "[unit][run_owner]") {
    const std::string self = this_process_owner();
    CHECK(may_write(7, true, self, "running", self));
    CHECK(may_write(7, true, "", "running", self));  // recovered rows name no holder until claimed

    auto missing = may_write(7, false, "", "", self);
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == "store_not_found");

    auto taken = may_write(7, true, "other:1:2", "running", self);
    REQUIRE_FALSE(taken);
    CHECK(taken.error().code == "lease_lost");
    CHECK_THAT(taken.error().message, Contains("taken over by other:1:2"));

    auto recovered = may_write(7, true, "", "interrupted", self);
    REQUIRE_FALSE(recovered);
    CHECK(recovered.error().code == "lease_lost");
    CHECK_THAT(recovered.error().message, Contains("marked interrupted") && Contains("can be resumed"));

    auto ended = may_write(7, true, "", "completed", self);
    REQUIRE_FALSE(ended);
    CHECK_THAT(ended.error().message, Contains("is completed"));
}

TEST_CASE("run owner: the claimable condition names the resumable stop reasons and no other", "[unit][run_owner]") {
    const std::string sql = claimable_sql();
    CHECK_THAT(sql, Contains("'paused'") && Contains("'interrupted'") && Contains("'failed'"));
    for (const StopInfo& row : all_stop_reasons()) {
        INFO(row.name);
        const bool named = sql.find("'" + std::string(row.name) + "'") != std::string::npos;
        // "interrupted" is both a status and a stop reason: it is named either way.
        if (row.reason != StopReason::interrupted) CHECK(named == row.resumable);
    }
    CHECK(message_kind_from("answer") == MessageKind::answer);
    CHECK(message_kind_from("something newer") == MessageKind::step);
    CHECK(std::string(message_kind_name(MessageKind::prompt)) == "prompt");
}
