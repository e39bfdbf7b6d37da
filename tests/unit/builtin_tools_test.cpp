// tools/builtin_tools: the host's own tools, one row each, run on the conversation's memory.
#include "agent/loop_rig.hpp"
#include "tools/builtin_tools.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

TEST_CASE("builtin tools: every row runs itself except load_tools, which the invoker runs", "[unit]") {
    for (const auto& tool : tools::builtin_tools()) {
        CAPTURE(tool.name);
        CHECK((tool.run == nullptr) == (tool.name == "load_tools"));
        CHECK(tools::find_builtin(tool.name) == &tool);
    }
    CHECK(tools::find_builtin("no_such_tool") == nullptr);
}

TEST_CASE("builtin tools: a call reaches its row, and a name without one is an unknown tool", "[unit]") {
    test::LoopRig rig;
    memory::AgentMemory& memory = *rig.memory;
    json r = tools::call_builtin(memory, "c1", "push_task", {{"task", "write the report"}});
    CHECK(r["is_error"] == false);
    CHECK_THAT(r["content"].get<std::string>(), Contains("the stack holds 1 task(s)"));
    r = tools::call_builtin(memory, "c1", "pop_task", json::object());
    CHECK(r["structured"]["task"] == "write the report");
    r = tools::call_builtin(memory, "c1", "pop_task", json::object());
    CHECK(r["is_error"] == true);
    CHECK(r["error_code"] == "empty");
    r = tools::call_builtin(memory, "c1", "agent_done", {{"summary", "all done"}});
    CHECK(r["marker"] == "done");
    CHECK(r["summary"] == "all done");
    for (const char* name : {"load_tools", "launch"}) {
        r = tools::call_builtin(memory, "c1", name, json::object());
        CHECK(r["is_error"] == true);
        CHECK(r["error_code"] == "unknown_tool");
    }
}
