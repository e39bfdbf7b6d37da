// The agent's memory: what it keeps across conversations (facts) and within one (session,
// tasks, entries), and clearing a conversation's session.
#include "app/memory_report.hpp"
#include "memory/agent_memory.hpp"
#include "server/replies.hpp"
#include "server/routes/routes.hpp"

namespace agenthost::server {
using nlohmann::json;

namespace {

void memory_state(ServerState& state, const Request& req, Response& res) {
    auto& memory = state.app.memory();
    std::string conversation = req.param("conversation");
    if (!conversation.empty() && !known_conversation(state, conversation, res)) return;
    json facts = json::array();
    for (const auto& f : memory.recall_facts("", 1000)) facts.push_back({{"id", f.id}, {"text", f.text}});
    json out{{"facts", facts}};
    if (!conversation.empty()) out.update(app::conversation_memory(memory, conversation));
    // Long-term entries every conversation's prompt shows (the named folders among them).
    json long_term = json::object();
    for (const auto& e : memory.entries("")) long_term[e.key] = json::parse(e.value_json, nullptr, false);
    out["long_term"] = long_term;
    send_json(res, 200, out);
}

void clear_session(ServerState& state, const std::string& text, Response& res) {
    auto body = body_object(text, state.settings.max_body_bytes, res);
    if (!body) return;
    Fields f{*body};
    std::string conversation = f.str("conversation");
    if (!f.ok(res)) return;
    if (conversation.empty()) return send_error(res, 400, "missing_conversation", "give {\"conversation\": ID}");
    if (!known_conversation(state, conversation, res)) return;
    if (state.hub.conversation_busy(conversation))
        return send_error(res, 409, "conversation_busy", "conversation " + conversation + " has a run in progress");
    auto cleared = state.app.runner().clear_session(conversation);
    if (!cleared) return send_error(res, 500, "store_failure", cleared.error().message, "server_error");
    send_json(res, 200, {{"conversation", conversation}, {"cleared", *cleared}, {"facts_kept", true}});
}

}  // namespace

void add_memory_routes(ServerCore& core, ServerState& state) {
    core.get("/memory/state", [&state](const Request& req, Response& res) { memory_state(state, req, res); });
    core.post("/memory/clear-session",
              [&state](const Request&, const std::string& body, Response& res) { clear_session(state, body, res); });
}

}  // namespace agenthost::server
