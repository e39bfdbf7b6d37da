#include "memory/agent_memory.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <set>

namespace agenthost::memory {
namespace {

using nlohmann::json;

constexpr size_t kKeptErrors = 5;
constexpr size_t kKeptNotes = 50;

// What the prompt and the front ends are shown: the stored document, else `fallback` (none stored,
// unreadable store, or not the document the host writes). Never used for a change.
json load(MemoryBackend& store, std::string_view conversation, std::string_view key, json fallback) {
    auto text = store.get(conversation, key);
    if (!text || !*text) return fallback;
    json j = json::parse(**text, nullptr, false);
    return j.is_discarded() || j.type() != fallback.type() ? fallback : j;
}

// The text items of a list (a plugin's non-text items are skipped rather than thrown on).
std::vector<std::string> strings(const json& list) {
    std::vector<std::string> out;
    for (const auto& item : list)
        if (item.is_string()) out.push_back(item.get<std::string>());
    return out;
}

// A text field of an object a plugin may have written; anything but text reads as empty.
std::string text_field(const json& object, const char* name) {
    auto it = object.find(name);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t id_field(const json& object) {
    auto it = object.find("id");
    return it != object.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

const char* shape_name(const json& document) {
    return document.is_array() ? "a JSON list" : document.is_string() ? "a JSON string" : "a JSON object";
}

// What a change starts from: the stored document, or `empty` when there is none. A store that could
// not be read, or an entry that is not the document the host writes (a plugin may set any key), is
// an error: writing over it would lose what is there.
Result<json> load_for_change(MemoryBackend& store, std::string_view conversation, std::string_view key, json empty) {
    auto text = store.get(conversation, key);
    if (!text)
        return Error{text.error().code, "the memory entry '" + std::string(key) +
                                            "' could not be read, so it was left unchanged: " + text.error().message};
    if (!*text) return empty;
    json j = json::parse(**text, nullptr, false);
    if (j.is_discarded() || j.type() != empty.type())
        return Error{"memory_entry_invalid", "the memory entry '" + std::string(key) + "' is not " + shape_name(empty) +
                                                 " as the host writes it (a plugin may have set it), so it was left unchanged;"
                                                 " clearing the session (POST /memory/clear-session) starts it afresh"};
    return j;
}

Status save(MemoryBackend& store, std::string_view conversation, std::string_view key, const json& value) {
    return store.set(conversation, key, value.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

std::vector<std::string> words(std::string_view query) {
    std::vector<std::string> out;
    std::string word;
    for (char c : lower(query) + " ") {
        if (std::isalnum(static_cast<unsigned char>(c)) || static_cast<unsigned char>(c) >= 0x80) {
            word += c;
        } else {
            if (word.size() > 1) out.push_back(word);
            word.clear();
        }
    }
    return out;
}

}  // namespace

Session AgentMemory::session(std::string_view conversation) {
    json j = load(store_, conversation, "session", json::object());
    Session s;
    s.goal = text_field(j, "goal");
    s.progress = strings(j.value("progress", json::array()));
    s.steps_done = strings(j.value("steps_done", json::array()));
    return s;
}

Status AgentMemory::set_goal(std::string_view conversation, std::string_view goal) {
    auto j = load_for_change(store_, conversation, "session", json::object());
    if (!j) return j.error();
    (*j)["goal"] = goal;
    return save(store_, conversation, "session", *j);
}

// Appends to one of the session's lists, keeping the newest kKeptNotes.
static Status append_to_session(MemoryBackend& store, std::string_view conversation, const char* list, std::string_view text) {
    auto j = load_for_change(store, conversation, "session", json::object());
    if (!j) return j.error();
    json& items = (*j)[list];
    if (!items.is_array()) items = json::array();
    items.push_back(text);
    if (items.size() > kKeptNotes) items.erase(items.begin());
    return save(store, conversation, "session", *j);
}

Status AgentMemory::note_progress(std::string_view conversation, std::string_view note) {
    return append_to_session(store_, conversation, "progress", note);
}

Status AgentMemory::step_done(std::string_view conversation, std::string_view step) {
    return append_to_session(store_, conversation, "steps_done", step);
}

std::vector<Task> AgentMemory::plan(std::string_view conversation) {
    std::vector<Task> tasks;
    for (const auto& t : load(store_, conversation, "plan", json::array())) {
        if (!t.is_object()) continue;
        auto status = choice_from<TaskStatus>(kTaskStatuses, text_field(t, "status"));
        tasks.push_back({id_field(t), text_field(t, "title"), status.value_or(TaskStatus::pending), text_field(t, "note")});
    }
    return tasks;
}

Status AgentMemory::set_plan(std::string_view conversation, const std::vector<std::string>& steps) {
    json tasks = json::array();
    int64_t id = 0;
    for (const auto& step : steps)
        tasks.push_back({{"id", ++id}, {"title", step}, {"status", status_name(TaskStatus::pending)}, {"note", ""}});
    return save(store_, conversation, "plan", tasks);
}

Result<Task> AgentMemory::update_task(std::string_view conversation, int64_t id, TaskStatus status, std::string_view note) {
    auto loaded = load_for_change(store_, conversation, "plan", json::array());
    if (!loaded) return loaded.error();
    json& tasks = *loaded;
    for (auto& t : tasks) {
        if (!t.is_object() || id_field(t) != id) continue;
        t["status"] = status_name(status);
        if (!note.empty()) t["note"] = note;
        if (auto s = save(store_, conversation, "plan", tasks); !s) return s.error();
        return Task{id, text_field(t, "title"), status, text_field(t, "note")};
    }
    std::string ids;
    for (const auto& t : tasks)
        if (t.is_object()) ids += (ids.empty() ? "" : ", ") + std::to_string(id_field(t));
    return Error{"not_found", "there is no task " + std::to_string(id) +
                                  (ids.empty() ? "; there is no plan yet (create_plan makes one)" : "; tasks are " + ids)};
}

std::vector<std::string> AgentMemory::task_stack(std::string_view conversation) {
    return strings(load(store_, conversation, "task_stack", json::array()));
}

Status AgentMemory::push_task(std::string_view conversation, std::string_view task) {
    auto stack = load_for_change(store_, conversation, "task_stack", json::array());
    if (!stack) return stack.error();
    stack->push_back(task);
    return save(store_, conversation, "task_stack", *stack);
}

Result<std::optional<std::string>> AgentMemory::pop_task(std::string_view conversation) {
    auto stack = load_for_change(store_, conversation, "task_stack", json::array());
    if (!stack) return stack.error();
    if (stack->empty()) return std::optional<std::string>();
    if (!stack->back().is_string())
        return Error{"memory_entry_invalid",
                     "the top of the task stack is not text (a plugin may have set it), so it was left"
                     " unchanged; clearing the session (POST /memory/clear-session) starts it afresh"};
    std::string top = stack->back();
    stack->erase(stack->end() - 1);
    if (auto s = save(store_, conversation, "task_stack", *stack); !s) return s.error();
    return std::optional<std::string>(std::move(top));
}

Result<int64_t> AgentMemory::remember_fact(std::string_view text) { return store_.add_fact(text); }

std::vector<Fact> AgentMemory::recall_facts(std::string_view query, size_t limit) {
    std::vector<Fact> all = store_.facts();
    std::vector<std::string> terms = words(query);
    if (terms.empty()) {
        if (all.size() > limit) all.resize(limit);
        return all;
    }
    std::string whole = lower(query);
    std::vector<std::pair<int, Fact>> scored;
    for (auto& fact : all) {
        std::string text = lower(fact.text);
        int score = text.find(whole) != std::string::npos ? 100 : 0;  // the whole phrase beats single words
        for (const auto& term : terms) score += text.find(term) != std::string::npos;
        if (score > 0) scored.emplace_back(score, std::move(fact));
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<Fact> out;
    for (auto& [score, fact] : scored) {
        if (out.size() == limit) break;
        out.push_back(std::move(fact));
    }
    return out;
}

Result<bool> AgentMemory::forget_fact(int64_t id) { return store_.remove_fact(id); }

std::string AgentMemory::pending_question(std::string_view conversation) {
    return load(store_, conversation, "pending_question", json("")).get<std::string>();
}

Status AgentMemory::set_pending_question(std::string_view conversation, std::string_view question) {
    if (question.empty()) {  // most turns had none to clear: no write for them
        auto stored = store_.get(conversation, "pending_question");
        return stored && !*stored ? Status(Ok{}) : store_.set(conversation, "pending_question", "");
    }
    return save(store_, conversation, "pending_question", json(question));
}

std::vector<std::string> AgentMemory::recent_errors(std::string_view conversation) {
    return strings(load(store_, conversation, "recent_errors", json::array()));
}

Status AgentMemory::add_error(std::string_view conversation, std::string_view error) {
    auto errors = load_for_change(store_, conversation, "recent_errors", json::array());
    if (!errors) return errors.error();
    errors->push_back(error);
    while (errors->size() > kKeptErrors) errors->erase(errors->begin());
    return save(store_, conversation, "recent_errors", *errors);
}

std::vector<Entry> AgentMemory::entries(std::string_view conversation) { return store_.entries(conversation); }

std::string task_line(const Task& task) {
    return std::to_string(task.id) + ". [" + status_name(task.status) + "] " + task.title +
           (task.note.empty() ? "" : " — " + task.note);
}

nlohmann::json tasks_json(const std::vector<Task>& plan, const std::vector<std::string>& stack) {
    nlohmann::json tasks = nlohmann::json::array();
    for (const auto& t : plan)
        tasks.push_back({{"id", t.id}, {"title", t.title}, {"status", status_name(t.status)}, {"note", t.note}});
    return {{"plan", std::move(tasks)}, {"stack", stack}};
}

nlohmann::json tasks_json(AgentMemory& memory, std::string_view conversation) {
    return tasks_json(memory.plan(conversation), memory.task_stack(conversation));
}

}  // namespace agenthost::memory
