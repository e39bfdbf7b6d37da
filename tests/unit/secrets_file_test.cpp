// The secrets file (NAME=value lines, as systemd's EnvironmentFile and shells read them).
#include "config/secrets_file.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace agenthost;
using Catch::Matchers::Contains;

TEST_CASE("secrets file: names, quotes, comments and export lines are read as a shell would", "[unit]") {
    auto vars = config::parse_secrets("# comment\n; also a comment\n\nA=1\nexport B = 'two words'\nC=\"3\"\nD=\n", "s.env");
    REQUIRE(vars);
    const config::Variables expected{{"A", "1"}, {"B", "two words"}, {"C", "3"}, {"D", ""}};
    CHECK(*vars == expected);
}

TEST_CASE("secrets file: every bad line is reported at once, by line number, and no value is shown", "[unit]") {
    auto vars =
        config::parse_secrets("A=1\nsecret-without-equals\n9NAME=hunter2\nB=2\nbad name=x\n", "/etc/agenthost/secrets.env");
    REQUIRE_FALSE(vars);
    const std::string& message = vars.error().message;
    CHECK(vars.error().code == "secrets_syntax");
    CHECK_THAT(message, Contains("/etc/agenthost/secrets.env:2: expected NAME=value") &&
                            Contains("/etc/agenthost/secrets.env:3: '9NAME' is not a variable name") &&
                            Contains("/etc/agenthost/secrets.env:5: 'bad name' is not a variable name"));
    CHECK(std::count(message.begin(), message.end(), '\n') == 2);
    CHECK_THAT(message, !Contains("secret-without-equals") && !Contains("hunter2"));
}
