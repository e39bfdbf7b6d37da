// The isolation protocol's vocabulary (isolation/protocol.hpp): the one table of operation names
// the host and the plugin runner both read.
#include "isolation/protocol.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <string_view>

TEST_CASE("isolation protocol: every operation has one name, read back as itself", "[unit][isolation]") {
    using agenthost::isolation::kOps;
    std::set<std::string_view> names;
    for (const auto& [op, name] : kOps) {
        CHECK(agenthost::isolation::op_name(op) == name);
        CHECK(agenthost::isolation::parse_op(name) == op);
        CHECK(names.insert(name).second);  // no name twice
    }
    CHECK_FALSE(agenthost::isolation::parse_op("kv_gte").has_value());  // a misspelt operation is none
}
