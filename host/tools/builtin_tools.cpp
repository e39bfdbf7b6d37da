#include "tools/builtin_tools.hpp"

#include "tools/invoker.hpp"
#include "tools/result_marker.hpp"

#include <nlohmann/json.hpp>

namespace agenthost::tools {
namespace {

using nlohmann::json;
using Group = BuiltinTool::Group;
using After = BuiltinTool::After;

json ok(std::string content, json structured = nullptr) {
    json r{{"content", std::move(content)}, {"is_error", false}};
    if (!structured.is_null()) r["structured"] = std::move(structured);
    return r;
}

json error(const std::string& code, const std::string& content) { return error_result(code, content); }

json failed(const Status& s) { return error(s.error().code, s.error().message); }

std::string tasks_text(const std::vector<memory::Task>& plan, const std::vector<std::string>& stack) {
    std::string text;
    for (const auto& t : plan) text += memory::task_line(t) + "\n";
    if (!stack.empty()) {
        text += "Task stack (top first):\n";
        for (auto it = stack.rbegin(); it != stack.rend(); ++it) text += "- " + *it + "\n";
    }
    return text.empty() ? "There is no plan and the task stack is empty." : text;
}

// "pending, in_progress, done, blocked<last>skipped", from the one table of task statuses.
std::string status_words(const char* last) {
    std::string words;
    const auto& table = memory::kTaskStatuses;
    for (size_t i = 0; i < std::size(table); ++i)
        words += (i == 0 ? "" : i + 1 == std::size(table) ? last : ", ") + std::string(table[i].name);
    return words;
}

std::string update_task_schema() {
    json statuses = json::array();
    for (const auto& s : memory::kTaskStatuses) statuses.push_back(s.name);
    json schema{
        {"type", "object"},
        {"properties",
         {{"id", {{"type", "integer"}}}, {"status", {{"type", "string"}, {"enum", statuses}}}, {"note", {{"type", "string"}}}}},
        {"required", {"id", "status"}},
        {"additionalProperties", false}};
    return schema.dump();
}

// ---- each tool's run, as its row of the table names it ----

using Call = BuiltinCall;

json set_goal(const Call& c) {
    if (auto s = c.memory.set_goal(c.conversation, c.args["goal"].get<std::string>()); !s) return failed(s);
    return ok("Goal set: " + c.args["goal"].get<std::string>());
}

json note_progress(const Call& c) {
    std::string note = c.args["note"];
    const bool step_done = c.args.value("step_done", false);
    Status s = step_done ? c.memory.step_done(c.conversation, note) : c.memory.note_progress(c.conversation, note);
    if (!s) return failed(s);
    return ok(step_done ? "Step recorded as done." : "Progress noted.");
}

json push_task(const Call& c) {
    if (auto s = c.memory.push_task(c.conversation, c.args["task"].get<std::string>()); !s) return failed(s);
    return ok("Task pushed; the stack holds " + std::to_string(c.memory.task_stack(c.conversation).size()) + " task(s).");
}

json pop_task(const Call& c) {
    auto top = c.memory.pop_task(c.conversation);
    if (!top) return error(top.error().code, top.error().message);
    if (!*top) return error("empty", "The task stack is empty.");
    return ok("Popped: " + **top, {{"task", **top}});
}

json list_tasks(const Call& c) {
    return ok(tasks_text(c.memory.plan(c.conversation), c.memory.task_stack(c.conversation)),
              memory::tasks_json(c.memory, c.conversation));
}

json remember_fact(const Call& c) {
    auto id = c.memory.remember_fact(c.args["fact"].get<std::string>());
    if (!id) return error(id.error().code, id.error().message);
    return ok("Remembered as fact #" + std::to_string(*id) + ".", {{"id", *id}});
}

json recall_facts(const Call& c) {
    auto facts = c.memory.recall_facts(c.args.value("query", ""), static_cast<size_t>(c.args.value("limit", 20)));
    if (facts.empty()) return ok("No facts match.", {{"facts", json::array()}});
    std::string text;
    json list = json::array();
    for (const auto& f : facts) {
        text += "#" + std::to_string(f.id) + ": " + f.text + "\n";
        list.push_back({{"id", f.id}, {"text", f.text}});
    }
    return ok(text, {{"facts", list}});
}

json forget_fact(const Call& c) {
    int64_t id = c.args["id"];
    auto removed = c.memory.forget_fact(id);
    if (!removed) return error(removed.error().code, removed.error().message);
    if (!*removed) return error("not_found", "There is no fact #" + std::to_string(id) + "; recall_facts lists them.");
    return ok("Forgot fact #" + std::to_string(id) + ".");
}

json create_plan(const Call& c) {
    auto steps = c.args["steps"].get<std::vector<std::string>>();
    if (c.args.contains("goal"))
        if (auto s = c.memory.set_goal(c.conversation, c.args["goal"].get<std::string>()); !s) return failed(s);
    if (auto s = c.memory.set_plan(c.conversation, steps); !s) return failed(s);
    json result = ok("Plan created:\n" + tasks_text(c.memory.plan(c.conversation), {}));
    result["marker"] = marker_word(ResultMarker::plan_created);
    result["plan"] = {{"steps", steps}};
    return result;
}

json update_task(const Call& c) {
    const auto word = c.args["status"].get<std::string>();
    const auto status = choice_from<memory::TaskStatus>(memory::kTaskStatuses, word);
    if (!status) return error("invalid_status", "status " + unknown_choice<memory::TaskStatus>(memory::kTaskStatuses, word));
    auto task = c.memory.update_task(c.conversation, c.args["id"].get<int64_t>(), *status, c.args.value("note", ""));
    if (!task) return error(task.error().code, task.error().message);
    return ok("Task " + std::to_string(task->id) + " (" + task->title + ") is now " + memory::status_name(task->status) + ".");
}

json ask_user(const Call& c) {
    if (auto s = c.memory.set_pending_question(c.conversation, c.args["question"].get<std::string>()); !s) return failed(s);
    return ok(c.args["question"].get<std::string>());
}

json agent_done(const Call& c) {
    json result = ok(c.args["summary"].get<std::string>());
    result["marker"] = marker_word(ResultMarker::done);
    result["summary"] = c.args["summary"];
    return result;
}

}  // namespace

const std::vector<BuiltinTool>& builtin_tools() {
    static const std::vector<BuiltinTool> tools{
        {"set_goal", "Set the goal of this conversation's session (shown to you in every later step).",
         R"({"type":"object","properties":{"goal":{"type":"string","minLength":1}},"required":["goal"],"additionalProperties":false})",
         Group::memory, AH_TOOL_IDEMPOTENT, After::goes_on, set_goal},
        {"note_progress", "Record a progress note for this session; set step_done to record a finished step.",
         R"({"type":"object","properties":{"note":{"type":"string","minLength":1},"step_done":{"type":"boolean"}},"required":["note"],"additionalProperties":false})",
         Group::memory, 0, After::goes_on, note_progress},
        {"push_task", "Push a task onto this session's task stack (last in, first out).",
         R"({"type":"object","properties":{"task":{"type":"string","minLength":1}},"required":["task"],"additionalProperties":false})",
         Group::memory, 0, After::shows_tasks, push_task},
        {"pop_task", "Take the top task off the task stack and return it.",
         R"({"type":"object","properties":{},"additionalProperties":false})", Group::memory, 0, After::shows_tasks, pop_task},
        {"list_tasks", "Show the plan (tasks with ids and statuses) and the task stack.",
         R"({"type":"object","properties":{},"additionalProperties":false})", Group::memory,
         AH_TOOL_READ_ONLY | AH_TOOL_IDEMPOTENT, After::goes_on, list_tasks},
        {"remember_fact", "Store a fact in long-term memory, available in every conversation.",
         R"({"type":"object","properties":{"fact":{"type":"string","minLength":1}},"required":["fact"],"additionalProperties":false})",
         Group::memory, AH_TOOL_IDEMPOTENT, After::goes_on, remember_fact},
        {"recall_facts", "Search long-term facts by keywords (any word matches); without a query, the newest facts.",
         R"({"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":100}},"additionalProperties":false})",
         Group::memory, AH_TOOL_READ_ONLY | AH_TOOL_IDEMPOTENT, After::goes_on, recall_facts},
        {"forget_fact", "Delete a long-term fact by its id (as shown by recall_facts).",
         R"({"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],"additionalProperties":false})",
         Group::memory, AH_TOOL_IDEMPOTENT, After::goes_on, forget_fact},
        {"create_plan", "Replace the plan with these steps, in order; they become the task list the user sees.",
         R"({"type":"object","properties":{"steps":{"type":"array","items":{"type":"string","minLength":1},"minItems":1},"goal":{"type":"string"}},"required":["steps"],"additionalProperties":false})",
         Group::planning, AH_TOOL_IDEMPOTENT, After::shows_tasks, create_plan},
        {"update_task", "Set the status of a plan task: " + status_words(" or ") + ".", update_task_schema(), Group::planning,
         AH_TOOL_IDEMPOTENT, After::shows_tasks, update_task},
        {"ask_user", "Ask the user a question and end this turn; their next message is the answer.",
         R"({"type":"object","properties":{"question":{"type":"string","minLength":1}},"required":["question"],"additionalProperties":false})",
         Group::control, AH_TOOL_IDEMPOTENT, After::asks_user, ask_user},
        {"agent_done", "Finish the turn; the summary is your final answer to the user.",
         R"({"type":"object","properties":{"summary":{"type":"string","minLength":1}},"required":["summary"],"additionalProperties":false})",
         Group::control, AH_TOOL_IDEMPOTENT, After::goes_on, agent_done},
        // Run by the invoker (tool_families.hpp), which knows the plugins; offered only while a
        // family waits to be loaded.
        {"load_tools", "Offer the tools of a family listed under \"Tool families on demand\" from your next step on.",
         R"({"type":"object","properties":{"family":{"type":"string","minLength":1}},"required":["family"],"additionalProperties":false})",
         Group::control, AH_TOOL_IDEMPOTENT},
    };
    return tools;
}

const BuiltinTool* find_builtin(std::string_view name) {
    for (const auto& t : builtin_tools())
        if (t.name == name) return &t;
    return nullptr;
}

json call_builtin(memory::AgentMemory& memory, std::string_view conversation, std::string_view name, const json& args) {
    const BuiltinTool* tool = find_builtin(name);
    if (!tool || !tool->run) return error("unknown_tool", "no built-in tool '" + std::string(name) + "'");
    return tool->run({memory, conversation, args});
}

}  // namespace agenthost::tools
