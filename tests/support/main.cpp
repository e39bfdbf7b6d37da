// The test runner. Host logs are quiet (errors only) unless AGENTHOST_TEST_LOG names a level.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdlib>

int main(int argc, char* argv[]) {
    // A test client writing to a connection the server closed (a refusal that left the body unread)
    // gets an error to check, not a SIGPIPE that ends every test at once.
    std::signal(SIGPIPE, SIG_IGN);
    const char* level = std::getenv("AGENTHOST_TEST_LOG");
    spdlog::set_level(level ? spdlog::level::from_str(level) : spdlog::level::err);
    return Catch::Session().run(argc, argv);
}
