// The rules every run journal follows for who holds a run: written once in store/run_owner, so
// they are tested once here, without a database.
#include "store/run_owner.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

using namespace agenthost;
using namespace agenthost::store;
using Catch::Matchers::Contains;

namespace {

// The owner id of a process of this host that has exited and been reaped.
std::string exited_owner() {
    pid_t child = fork();
    if (child == 0) _exit(0);
    std::string self = this_process_owner();
    int status = 0;
    waitpid(child, &status, 0);
    // "host:pid:start": the same host, the child's pid, a start time no live process has.
    return self.substr(0, self.find(':')) + ":" + std::to_string(child) + ":1";
}

}  // namespace

TEST_CASE("run owner: this process is alive, an exited one is gone, another host's is unknown", "[unit][run_owner]") {
    CHECK(owner_state(this_process_owner()) == OwnerState::alive);
    CHECK(owner_state(exited_owner()) == OwnerState::gone);
    CHECK(owner_state("elsewhere.example:123:456") == OwnerState::unknown);
}

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

TEST_CASE("run owner: recovery takes a run from a dead holder at once, from a silent host only after its lease",
          "[unit][run_owner]") {
    const std::string self = this_process_owner();
    CHECK(abandonment(self, false, self) == Abandonment::none);
    CHECK(abandonment(self, true, self) == Abandonment::own_lease_lapsed);
    CHECK(abandonment(exited_owner(), false, self) == Abandonment::holder_gone);
    CHECK(abandonment("elsewhere.example:1:2", false, self) == Abandonment::none);
    CHECK(abandonment("elsewhere.example:1:2", true, self) == Abandonment::lease_lapsed);
    CHECK(std::string(abandonment_text(Abandonment::holder_gone)) == "the process running it stopped (killed or crashed)");
    CHECK_THAT(abandonment_text(Abandonment::own_lease_lapsed), Contains("could not record"));
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
