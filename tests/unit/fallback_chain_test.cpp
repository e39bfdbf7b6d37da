// A run's fallback chain: which provider answers now, which failures go on with the next one, and
// when the run's own provider is asked again.
#include "llm/fallback_chain.hpp"

#include <catch2/catch.hpp>

using namespace agenthost;
using Catch::Matchers::Contains;
using llm::FallbackChain;
using std::chrono::seconds;

namespace {

config::Config chained(std::vector<std::string> fallback_on = {}, int cooldown_s = 60) {
    config::Config c;
    c.provider.name = "cloud";
    c.provider.fallback = {"backup", "local"};
    c.provider.fallback_on = std::move(fallback_on);
    c.provider.fallback_cooldown_s = cooldown_s;
    c.providers["backup"].name = "backup";
    c.providers["local"].name = "local";
    return c;
}

}  // namespace

TEST_CASE("fallback chain: a provider down goes on with the next, and is asked again after its cool-down", "[unit][providers]") {
    const auto c = chained();
    llm::Cooldowns cooldowns;
    FallbackChain chain(c, "cloud", cooldowns);
    const auto t0 = FallbackChain::Clock::now();
    CHECK(chain.current(t0) == "cloud");
    CHECK(chain.after_failure("cloud", StopReason::transient, t0) == std::optional<std::string>("backup"));
    CHECK(chain.current(t0 + seconds(1)) == "backup");  // cloud cools down
    CHECK(chain.after_failure("backup", StopReason::rate_limit, t0 + seconds(2)) == std::optional<std::string>("local"));
    CHECK(chain.current(t0 + seconds(3)) == "local");
    CHECK_FALSE(chain.after_failure("local", StopReason::timeout, t0 + seconds(4)));  // nothing left
    CHECK(chain.current(t0 + seconds(61)) == "cloud");                                // its cool-down passed: asked first again
    CHECK(chain.current(t0 + seconds(62)) == "cloud");
}

TEST_CASE("fallback chain: a wrong request or key stops the run unless fallback_on names it", "[unit][providers]") {
    const auto t0 = FallbackChain::Clock::now();
    llm::Cooldowns cooldowns;
    {
        const auto c = chained();
        FallbackChain chain(c, "cloud", cooldowns);
        for (StopReason wrong : {StopReason::auth, StopReason::bad_request, StopReason::context_too_large, StopReason::cancelled})
            CHECK_FALSE(chain.after_failure("cloud", wrong, t0));
        CHECK(chain.current(t0) == "cloud");  // not cooling: nothing fell back
        for (StopReason down : {StopReason::transient, StopReason::timeout, StopReason::rate_limit, StopReason::model_unavailable,
                                StopReason::provider_unavailable})
            CHECK(falls_back_by_default(down));
    }
    const auto c_auth = chained({"auth"});
    llm::Cooldowns fresh;
    FallbackChain with_auth(c_auth, "cloud", fresh);
    CHECK(with_auth.after_failure("cloud", StopReason::auth, t0) == std::optional<std::string>("backup"));

    // A provider without a chain never falls back; a run on a provider of the chain uses that
    // provider's own chain (here none).
    config::Config c = chained();
    FallbackChain alone(c, "local", cooldowns);
    CHECK(alone.empty());
    CHECK_FALSE(alone.after_failure("local", StopReason::transient, t0));
}

TEST_CASE("fallback chain: a cool-down of 0 asks the run's provider first at every step", "[unit][providers]") {
    const auto c = chained({}, 0);
    llm::Cooldowns cooldowns;
    FallbackChain chain(c, "cloud", cooldowns);
    const auto t0 = FallbackChain::Clock::now();
    CHECK(chain.after_failure("cloud", StopReason::transient, t0) == std::optional<std::string>("backup"));
    CHECK(chain.current(t0) == "cloud");
}

TEST_CASE("fallback chain: a provider found down by one run is passed over by the next run too", "[unit][providers]") {
    const auto c = chained();
    llm::Cooldowns shared;  // the LLM queue's, one per process
    const auto t0 = FallbackChain::Clock::now();
    FallbackChain first(c, "cloud", shared);
    REQUIRE(first.after_failure("cloud", StopReason::transient, t0) == std::optional<std::string>("backup"));
    FallbackChain next_run(c, "cloud", shared);
    CHECK(next_run.current(t0 + seconds(1)) == "backup");  // no new request to the provider that is down
    CHECK(next_run.current(t0 + seconds(61)) == "cloud");
}
