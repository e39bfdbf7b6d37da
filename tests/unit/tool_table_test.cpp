// plugins/tool_table: the plugins' tools as one table, with agenthost.toml's [tools.NAME] applied.
#include "plugins/tool_table.hpp"

#include <catch2/catch.hpp>

#include <agenthost/agenthost.h>

using namespace agenthost;
using namespace agenthost::plugins;

namespace {

ToolInfo tool(std::string name, std::string plugin, uint32_t hints = 0) {
    ToolInfo t;
    t.name = std::move(name);
    t.plugin = std::move(plugin);
    t.hints = hints;
    return t;
}

std::vector<std::string> names(const ToolTable& table) {
    std::vector<std::string> out;
    for (const auto& t : *table.snapshot()) out.push_back(t.name);
    return out;
}

}  // namespace

TEST_CASE("tool table: a tools.NAME table overrides hints, and approval follows destructive unless configured", "[unit]") {
    std::map<std::string, config::ToolPolicy> policies;
    policies["rm"].read_only = true;  // contradicts destructive: the operator's word counts
    policies["mv"].destructive = true;
    policies["cp"].needs_approval = true;
    policies["wipe"].needs_approval = false;

    auto rm = apply_tool_policy(policies, "rm", AH_TOOL_DESTRUCTIVE);
    CHECK((rm.hints & AH_TOOL_READ_ONLY));
    auto mv = apply_tool_policy(policies, "mv", 0);
    CHECK((mv.hints & AH_TOOL_DESTRUCTIVE));
    CHECK(mv.needs_approval);
    CHECK(apply_tool_policy(policies, "cp", AH_TOOL_READ_ONLY).needs_approval);
    CHECK_FALSE(apply_tool_policy(policies, "wipe", AH_TOOL_DESTRUCTIVE).needs_approval);
    CHECK(apply_tool_policy(policies, "unlisted", AH_TOOL_DESTRUCTIVE).needs_approval);
    CHECK_FALSE(apply_tool_policy(policies, "unlisted", 0).needs_approval);
    CHECK(apply_tool_policy(policies, "unlisted", 0).enabled);
}

TEST_CASE("tool table: the first plugin owns a name, a disabled tool stays owned but unseen, replace swaps a list", "[unit]") {
    std::map<std::string, config::ToolPolicy> policies;
    policies["hidden"].enabled = false;
    ToolTable table(policies);
    std::vector<RefusedTool> refused;
    auto owned = table.add({tool("read", "files"), tool("hidden", "files")}, refused);
    CHECK(owned == std::vector<std::string>{"read", "hidden"});
    CHECK(refused.empty());
    CHECK(names(table) == std::vector<std::string>{"read"});

    owned = table.add({tool("read", "other"), tool("fetch", "other")}, refused);
    CHECK(owned == std::vector<std::string>{"fetch"});
    REQUIRE(refused.size() == 1);
    CHECK(refused[0].name == "read");
    CHECK(table.find("read")->plugin == "files");

    auto before = table.snapshot();  // a reader keeps what it read
    int heard = 0;
    const int id = table.add_listener([&] { ++heard; });
    CHECK(table.replace("other", {tool("fetch", "other"), tool("post", "other")}));
    CHECK_FALSE(table.replace("other", {tool("fetch", "other"), tool("post", "other")}));  // nothing changed
    CHECK_FALSE(table.replace("other", {tool("read", "other"), tool("fetch", "other"), tool("post", "other")}));
    table.notify_listeners();
    table.remove_listener(id);
    table.notify_listeners();
    CHECK(heard == 1);
    CHECK(names(table) == std::vector<std::string>{"read", "fetch", "post"});
    CHECK(before->size() == 2);
}
