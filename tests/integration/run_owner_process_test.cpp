// The run-ownership rules (store/run_owner) that look at other processes: whether a holder is
// alive, and which running runs recovery takes. An exited child stands for a dead holder.
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

TEST_CASE("run owner: this process is alive, an exited one is gone, another host's is unknown", "[integration][run_owner]") {
    CHECK(owner_state(this_process_owner()) == OwnerState::alive);
    CHECK(owner_state(exited_owner()) == OwnerState::gone);
    CHECK(owner_state("elsewhere.example:123:456") == OwnerState::unknown);
}

TEST_CASE("run owner: recovery takes a run from a dead holder at once, from a silent host only after its lease",
          "[integration][run_owner]") {
    const std::string self = this_process_owner();
    CHECK(abandonment(self, false, self) == Abandonment::none);
    CHECK(abandonment(self, true, self) == Abandonment::own_lease_lapsed);
    CHECK(abandonment(exited_owner(), false, self) == Abandonment::holder_gone);
    CHECK(abandonment("elsewhere.example:1:2", false, self) == Abandonment::none);
    CHECK(abandonment("elsewhere.example:1:2", true, self) == Abandonment::lease_lapsed);
    CHECK(std::string(abandonment_text(Abandonment::holder_gone)) == "the process running it stopped (killed or crashed)");
    CHECK_THAT(abandonment_text(Abandonment::own_lease_lapsed), Contains("could not record"));
}
