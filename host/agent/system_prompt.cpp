#include "agent/system_prompt.hpp"

#include "tools/tool_families.hpp"

#include "common/bounded_json.hpp"
#include "memory/memory_snapshot.hpp"

#include <nlohmann/json.hpp>

#include <set>

namespace agenthost::agent {
namespace {

using nlohmann::json;

constexpr size_t kFactsShown = 12;
constexpr size_t kNotesShown = 10;
constexpr size_t kEntryChars = 2000;
// Opens the state message, so the model reads it as the host's, not the user's.
constexpr const char* kStateHeading = "[agenthost] The agent's state (the newest counts; not from the user):";

// What each mode tells the model it may do.
constexpr std::pair<Mode, const char*> kModeTexts[] = {
    {Mode::explore, "Mode: explore. Look around with the read-only tools you have; change nothing."},
    {Mode::plan,
     "Mode: plan. Investigate with read-only tools, then write the plan with create_plan. Do not make changes: a tool "
     "that changes things needs the user's approval in this mode."},
    {Mode::execute,
     "Mode: execute. Carry out the task with the tools; keep the plan's task statuses up to date with update_task."},
};

const char* mode_text(Mode mode) {
    for (const auto& [m, text] : kModeTexts)
        if (m == mode) return text;
    return kModeTexts[2].second;
}

void section(std::string& out, std::string_view title, const std::string& body) {
    if (body.empty()) return;
    out += "\n\n## ";
    out += title;
    out += "\n";
    out += body;
}

std::string shown_value(const std::string& value_json) {
    json j = json::parse(value_json, nullptr, false);
    std::string text = j.is_string() ? j.get<std::string>() : value_json;
    return text.size() > kEntryChars ? text.substr(0, kEntryChars) + " …" : text;
}

// The facts that match the prompt, topped up with the newest ones.
std::string facts_text(memory::AgentMemory& memory, std::string_view prompt) {
    auto facts = memory.recall_facts(prompt.substr(0, kFactQueryBytes), kFactsShown);
    std::set<int64_t> shown;
    for (const auto& f : facts) shown.insert(f.id);
    for (const auto& f : memory.recall_facts("", kFactsShown))
        if (facts.size() < kFactsShown && shown.insert(f.id).second) facts.push_back(f);
    std::string text;
    for (const auto& f : facts) text += "- #" + std::to_string(f.id) + ": " + f.text + "\n";
    return text;
}

// What tools keep for this conversation, other than the host's own keys.
std::string session_entries(memory::AgentMemory& memory, std::string_view conversation) {
    static const std::set<std::string> host_keys{"session",       "plan",     "task_stack",         "pending_question",
                                                 "recent_errors", "provider", "session_start_turn", tools::kLoadedFamiliesKey};
    std::string episodic;
    for (const auto& e : memory.entries(conversation)) {
        if (host_keys.count(e.key)) continue;
        if (e.value_json == "null" || e.value_json == "[]" || e.value_json == "{}") continue;  // cleared by its plugin
        if (e.key == "search_results") {
            json results = json::parse(e.value_json, nullptr, false);
            if (results.is_array()) {
                episodic += "Last results (refer to them by number):\n";
                for (size_t i = 0; i < results.size(); ++i) {
                    const json& r = results[i];
                    // Written by a plugin: read with typed getters, never trusted to have the right types.
                    std::string title = json_io::get_string(r, "title", json_io::dump(r));
                    episodic += "  " + std::to_string(json_io::get_int(r, "index", int64_t(i + 1))) + ". " + title + "\n";
                }
                continue;
            }
        }
        episodic += e.key + ": " + shown_value(e.value_json) + "\n";
    }
    return episodic;
}

}  // namespace

PromptParts build_prompt(memory::AgentMemory& live, std::string_view conversation, const PromptInputs& in) {
    memory::MemorySnapshot snapshot(live.store(), conversation);  // two reads, not ten
    memory::AgentMemory memory(snapshot);
    PromptParts parts;
    std::string& out = parts.system;
    out = in.base;
    out += (out.empty() ? "" : "\n\n");
    out += mode_text(in.mode);
    section(out, "Known facts (long-term memory)", facts_text(memory, in.prompt));
    std::string notes;
    for (const auto& n : in.notifications) notes += "- " + n + "\n";
    section(out, "Notifications", notes);
    section(out, "Context from tools", in.plugin_context);
    if (!in.on_demand_tools.empty())
        section(out, "Tool families on demand",
                "These families' tools are offered once loaded: load_tools {\"family\": NAME} offers a family's tools from your "
                "next step on (a family whose tools you see is loaded already).\n" +
                    in.on_demand_tools);
    if (!in.request_context_json.empty() && in.request_context_json != "{}" && in.request_context_json != "null")
        section(out, "Request context", in.request_context_json);

    std::string state;
    memory::Session session = memory.session(conversation);
    section(state, "Goal", session.goal);
    std::string progress;
    size_t first = session.progress.size() > kNotesShown ? session.progress.size() - kNotesShown : 0;
    for (size_t i = first; i < session.progress.size(); ++i) progress += "- " + session.progress[i] + "\n";
    for (const auto& step : session.steps_done) progress += "- done: " + step + "\n";
    section(state, "Progress", progress);
    std::string tasks;
    for (const auto& t : memory.plan(conversation)) tasks += memory::task_line(t) + "\n";
    section(state, "Plan", tasks);
    auto stack = memory.task_stack(conversation);
    std::string stack_text;
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) stack_text += "- " + *it + "\n";
    section(state, "Task stack (top first)", stack_text);
    section(state, "Session memory", session_entries(memory, conversation));
    std::string question = memory.pending_question(conversation);
    section(state, "You asked the user", question.empty() ? "" : question + "\n(Their message below may answer it.)");
    std::string errors;
    for (const auto& e : memory.recent_errors(conversation)) errors += "- " + e + "\n";
    section(state, "Recent errors", errors);
    if (!state.empty()) parts.state = std::string(kStateHeading) + state;
    return parts;
}

}  // namespace agenthost::agent
