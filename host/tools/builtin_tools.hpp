// Tools the host itself provides (no plugin needed): the agent's memory, its plan and turn control.
#pragma once

#include "memory/agent_memory.hpp"

#include <agenthost/agenthost.h>

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace agenthost::tools {

// What a built-in tool runs with: its arguments, already checked against its schema.
struct BuiltinCall {
    memory::AgentMemory& memory;
    std::string_view conversation;
    const nlohmann::json& args;
};

struct BuiltinTool {
    enum class Group {
        memory,    // goal, progress, task stack, facts: every mode
        planning,  // create_plan, update_task: plan and execute modes
        control,   // ask_user, agent_done: every mode
    };
    std::string name;
    std::string description;
    std::string input_schema_json;
    Group group;
    // AH_TOOL_READ_ONLY for the ones that only read; AH_TOOL_IDEMPOTENT for the ones that may run
    // twice without doing twice what they did (appending a note or a task may not).
    uint32_t hints = 0;
    // What the loop does after a successful call, beyond showing its result.
    enum class After {
        goes_on,      // nothing more
        shows_tasks,  // the plan or the task stack changed: the front end is sent the task list
        asks_user,    // the turn ends; the result is the question the user answers next
    };
    After after = After::goes_on;
    // What the tool does: a tool result object as plugins return it. Null for load_tools, which
    // the invoker runs (it knows the plugins).
    nlohmann::json (*run)(const BuiltinCall& call) = nullptr;
};

const std::vector<BuiltinTool>& builtin_tools();
const BuiltinTool* find_builtin(std::string_view name);

// Runs a built-in tool with arguments already checked against its schema. Returns a tool result
// object as plugins return it ({"content", "is_error", "error_code"?, "structured"?, "marker"?}).
nlohmann::json call_builtin(memory::AgentMemory& memory, std::string_view conversation, std::string_view name,
                            const nlohmann::json& arguments);

}  // namespace agenthost::tools
