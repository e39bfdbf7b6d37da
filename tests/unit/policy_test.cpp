// tools/policy: whether a tool call may run, decided once for the loop, approvals and MCP.
#include "agent/loop_rig.hpp"
#include "tools/policy.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace agenthost;
using namespace agenthost::tools;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

Tool plugin_tool(std::string name, uint32_t hints, bool needs_approval = false) {
    Tool t;
    t.name = std::move(name);
    t.plugin = "files";
    t.hints = hints;
    t.needs_approval = needs_approval;
    return t;
}

CallSite site_in(Mode mode) {
    CallSite site;
    site.mode = mode;
    return site;
}

}  // namespace

TEST_CASE("policy: a mode offers the built-ins of its group and, outside execute, only read-only plugin tools", "[unit]") {
    const Tool reader = plugin_tool("read_file", AH_TOOL_READ_ONLY);
    const Tool writer = plugin_tool("write_file", 0);
    Tool planner;
    planner.name = "create_plan";
    planner.source = Tool::Source::builtin;
    planner.group = BuiltinTool::Group::planning;
    for (Mode mode : {Mode::explore, Mode::plan, Mode::execute}) {
        CAPTURE(mode_name(mode));
        CHECK(offered(reader, mode));
        CHECK(offered(writer, mode) == (mode == Mode::execute));
        CHECK(offered(planner, mode) == (mode != Mode::explore));
    }
}

TEST_CASE("policy: unknown tools, bad arguments and calls the user rejected are refused with the words the model reads",
          "[unit]") {
    test::LoopRig rig;
    const Catalogue& catalogue = *rig.catalogue;

    Verdict v = decide(catalogue, std::nullopt, "launch", json::object(), site_in(Mode::explore));
    CHECK(v.kind == Verdict::Kind::refuse);
    CHECK(v.error_code() == "unknown_tool");
    CHECK_THAT(v.message, Contains("There is no tool named 'launch'") && Contains("set_goal") && !Contains("create_plan"));

    const Tool writer = plugin_tool("write_file", 0);
    v = decide(catalogue, writer, "write_file", json::array(), site_in(Mode::execute));
    CHECK(v.error_code() == "invalid_arguments");

    CallSite site = site_in(Mode::execute);
    const json args{{"path", "/tmp/x"}};
    site.rejected = [&](const std::string& signature) -> std::optional<std::string> {
        if (signature == call_signature("write_file", args)) return "not that file";
        return std::nullopt;
    };
    v = decide(catalogue, writer, "write_file", args, site);
    CHECK(v.error_code() == "rejected");
    CHECK_THAT(v.message, Contains("not that file"));
    CHECK(decide(catalogue, writer, "write_file", json{{"path", "/tmp/y"}}, site).kind == Verdict::Kind::run);
}

TEST_CASE("policy: modes and approval settings ask, refuse or run, and an approved call runs", "[unit]") {
    test::LoopRig rig;
    const Catalogue& catalogue = *rig.catalogue;
    const Tool writer = plugin_tool("write_file", 0);
    const Tool remover = plugin_tool("delete_file", AH_TOOL_DESTRUCTIVE, true);
    const json args = json::object();

    Verdict v = decide(catalogue, writer, "write_file", args, site_in(Mode::explore));
    CHECK(v.error_code() == "not_allowed_in_mode");
    CHECK_THAT(v.message, Contains("explore mode"));

    v = decide(catalogue, writer, "write_file", args, site_in(Mode::plan));
    CHECK(v.kind == Verdict::Kind::ask);
    CHECK_THAT(v.message, Contains("plan mode allows only read-only tools"));

    CHECK(decide(catalogue, writer, "write_file", args, site_in(Mode::execute)).kind == Verdict::Kind::run);

    v = decide(catalogue, remover, "delete_file", args, site_in(Mode::execute));
    CHECK(v.kind == Verdict::Kind::ask);
    CHECK_THAT(v.message, Contains("may delete or overwrite data"));

    CallSite mcp = site_in(Mode::execute);
    mcp.scope = Scope::plugins_only;
    mcp.can_ask = false;
    v = decide(catalogue, remover, "delete_file", args, mcp);
    CHECK(v.error_code() == "needs_approval");
    CHECK_THAT(v.message, Contains("allow_destructive"));
    mcp.approval_waived = true;
    CHECK(decide(catalogue, remover, "delete_file", args, mcp).kind == Verdict::Kind::run);

    CallSite approved = site_in(Mode::plan);
    approved.approved = true;
    CHECK(decide(catalogue, writer, "write_file", args, approved).kind == Verdict::Kind::run);
}
