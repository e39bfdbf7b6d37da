// The test runner. Host logs are quiet (errors only) unless AGENTHOST_TEST_LOG names a level.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <spdlog/spdlog.h>

#include <cstdlib>

int main(int argc, char* argv[]) {
    const char* level = std::getenv("AGENTHOST_TEST_LOG");
    spdlog::set_level(level ? spdlog::level::from_str(level) : spdlog::level::err);
    return Catch::Session().run(argc, argv);
}
