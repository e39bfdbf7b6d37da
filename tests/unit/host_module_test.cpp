// Which modules a build has, and what the host says of one it left out (scripts/build-minimal
// checks the same from the outside on a build with every optional part off).
#include "common/host_module.hpp"

#include <catch2/catch.hpp>

using namespace agenthost;
using Catch::Matchers::Contains;

TEST_CASE("host modules: the full build has every module, and an unknown one is named as not built", "[unit][modules]") {
    for (const auto& m : modules::kModules) {
        CHECK(modules::built(m.name));
        CHECK_FALSE(m.option.empty());
        CHECK(modules::check(m.name));  // the test build has them all, whole
    }
    CHECK_FALSE(modules::built("http"));  // a prefix of a name is not the name
    CHECK_FALSE(modules::built(""));
    auto unknown = modules::check("telepathy");
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().code == "module_not_built");
    CHECK_THAT(unknown.error().message, Contains("telepathy"));
}
