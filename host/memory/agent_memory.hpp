// The agent's memory, typed: per conversation a session (goal, progress notes, steps done), a plan
// (the task list), a LIFO task stack and episodic memory (a pending question, recent errors);
// across conversations, long-term facts. Stored as JSON documents under well-known keys of the
// memory table, so plugins read and write the same entries through ah_host_api.memory_get/set:
//   session, plan, task_stack, pending_question, recent_errors — written by the host;
//   topic, entities, search_results — written by plugins (e.g. torrent search results, indexed 1, 2, 3 …).
// Any other key a plugin sets is shown to the model too.
#pragma once

#include "common/choices.hpp"
#include "memory/memory_backend.hpp"

#include <nlohmann/json_fwd.hpp>

namespace agenthost::memory {

struct Session {
    std::string goal;
    std::vector<std::string> progress;
    std::vector<std::string> steps_done;
};

enum class TaskStatus { pending, in_progress, done, blocked, skipped };
inline constexpr Choice<TaskStatus> kTaskStatuses[] = {
    {TaskStatus::pending, "pending", ""}, {TaskStatus::in_progress, "in_progress", ""}, {TaskStatus::done, "done", ""},
    {TaskStatus::blocked, "blocked", ""}, {TaskStatus::skipped, "skipped", ""},
};
inline const char* status_name(TaskStatus status) { return choice_name<TaskStatus>(kTaskStatuses, status); }

struct Task {
    int64_t id = 0;
    std::string title;
    TaskStatus status = TaskStatus::pending;  // a word a plugin wrote that is not in kTaskStatuses reads as pending
    std::string note;
};
// "2. [done] fetch the list — 40 items": one task as the model and the terminal read it.
std::string task_line(const Task& task);

// Readers show what they can: an entry that is missing, unreadable or not as the host writes it
// reads as empty. Changers read strictly and refuse rather than write over what they could not read.
class AgentMemory {
public:
    explicit AgentMemory(MemoryBackend& store) : store_(store) {}

    Session session(std::string_view conversation);
    Status set_goal(std::string_view conversation, std::string_view goal);
    Status note_progress(std::string_view conversation, std::string_view note);
    Status step_done(std::string_view conversation, std::string_view step);

    std::vector<Task> plan(std::string_view conversation);
    Status set_plan(std::string_view conversation, const std::vector<std::string>& steps);
    // Changes one task's status (and note); an error names the ids that exist.
    Result<Task> update_task(std::string_view conversation, int64_t id, TaskStatus status, std::string_view note);

    std::vector<std::string> task_stack(std::string_view conversation);  // top last
    Status push_task(std::string_view conversation, std::string_view task);
    Result<std::optional<std::string>> pop_task(std::string_view conversation);  // nullopt: the stack is empty

    Result<int64_t> remember_fact(std::string_view text);  // a fact already known returns its id
    // Facts containing any word of `query` (case-insensitive), best matches first; empty query: newest.
    std::vector<Fact> recall_facts(std::string_view query, size_t limit);
    Result<bool> forget_fact(int64_t id);  // false: there was no such fact

    std::string pending_question(std::string_view conversation);
    Status set_pending_question(std::string_view conversation, std::string_view question);
    std::vector<std::string> recent_errors(std::string_view conversation);
    Status add_error(std::string_view conversation, std::string_view error);  // keeps the last 5

    // Every entry of the conversation (for the keys plugins own).
    std::vector<Entry> entries(std::string_view conversation);

    MemoryBackend& store() { return store_; }

private:
    MemoryBackend& store_;
};

// The plan and the task stack as the front ends and the list_tasks tool show them:
// {"plan": [{id, title, status, note}], "stack": [...]} (the stack bottom first).
nlohmann::json tasks_json(AgentMemory& memory, std::string_view conversation);
nlohmann::json tasks_json(const std::vector<Task>& plan, const std::vector<std::string>& stack);

}  // namespace agenthost::memory
