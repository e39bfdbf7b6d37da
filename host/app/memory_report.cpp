#include "app/memory_report.hpp"

namespace agenthost::app {

using nlohmann::json;

json conversation_memory(memory::AgentMemory& memory, const std::string& conversation) {
    auto session = memory.session(conversation);
    json entries = json::object();
    for (const auto& e : memory.entries(conversation)) entries[e.key] = json::parse(e.value_json, nullptr, false);
    // What the model's next turn is shown besides: the posted notifications not yet delivered.
    json notifications = json::array();
    for (const auto& e : memory.store().pending_events(conversation))
        notifications.push_back({{"plugin", e.plugin}, {"event", json::parse(e.body, nullptr, false)}});
    return {{"conversation", conversation},
            {"session", {{"goal", session.goal}, {"progress", session.progress}, {"steps_done", session.steps_done}}},
            {"tasks", memory::tasks_json(memory, conversation)},
            {"pending_question", memory.pending_question(conversation)},
            {"recent_errors", memory.recent_errors(conversation)},
            {"entries", entries},
            {"pending_notifications", notifications}};
}

}  // namespace agenthost::app
