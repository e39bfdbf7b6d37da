// Conversations and runs: list, read, rename, delete; a run's state; approve, reject, cancel,
// resume; the answer to a question a tool asks while the run executes.
#include "app/reports.hpp"
#include "memory/agent_memory.hpp"
#include "server/replies.hpp"
#include "server/routes/run_requests.hpp"
#include "store/run_owner.hpp"

#include <cstdlib>

namespace agenthost::server {
using nlohmann::json;

namespace {

void list_conversations(ServerState& state, Response& res) {
    json list = json::array();
    auto conversations = state.app.runs().conversations(500);
    if (!conversations) return send_store_unavailable(res, conversations.error());
    for (const auto& c : *conversations)
        list.push_back({{"id", c.id},
                        {"created_at", c.created_at},
                        {"updated_at", c.updated_at},
                        {"runs", c.runs},
                        {"last_prompt", c.last_prompt},
                        {"title", c.title},
                        {"busy", state.hub.conversation_busy(c.id)}});
    send_json(res, 200, {{"conversations", list}});
}

void conversation(ServerState& state, const Request& req, Response& res) {
    std::string id = req.match(1);
    auto summary = known_conversation(state, id, res);
    if (!summary) return;
    auto messages = state.app.runs().all(id);
    if (!messages) return send_store_unavailable(res, messages.error());
    auto runs = state.app.runs().runs(id, 1000);
    if (!runs) return send_store_unavailable(res, runs.error());
    json out{{"id", id},
             {"title", summary->title},
             {"messages", json::array()},
             {"runs", json::array()},
             {"tasks", memory::tasks_json(state.app.memory(), id)},
             {"busy", state.hub.conversation_busy(id)}};
    for (const auto& m : *messages) {
        json entry{{"id", m.id},
                   {"turn", m.turn},
                   {"run", m.run},
                   {"message", json::parse(m.body, nullptr, false)},
                   {"kind", store::message_kind_name(m.kind)}};
        if (!m.result.empty()) entry["result"] = json::parse(m.result, nullptr, false);
        out["messages"].push_back(std::move(entry));
    }
    for (auto it = runs->rbegin(); it != runs->rend(); ++it) out["runs"].push_back(json::parse(app::run_report(*it)));
    send_json(res, 200, out);
}

void delete_conversation(ServerState& state, const Request& req, Response& res) {
    std::string id = req.match(1);
    if (state.hub.conversation_busy(id))
        return send_error(res, 409, "conversation_busy", "conversation " + id + " has a run in progress");
    auto deleted = state.app.runs().delete_conversation(id);
    if (!deleted) return send_error(res, 500, "store_failure", deleted.error().message, "server_error");
    if (!*deleted) return send_error(res, 404, "conversation_not_found", "there is no conversation " + id);
    state.hub.forget_conversation(id);  // its runs' kept events go with it: no stream shows them again
    res.set_status(204);
}

// PATCH {"title"}: names the conversation (an empty title clears the name).
void rename_conversation(ServerState& state, const Request& req, const std::string& text, Response& res) {
    std::string id = req.match(1);
    auto body = body_object(text, state.settings.max_body_bytes, res);
    if (!body) return;
    if (!body->contains("title"))
        return send_error(res, 400, "missing_title", "the body must hold \"title\": the new name (\"\" clears it)");
    if (!(*body)["title"].is_string())
        return send_error(res, 400, "invalid_field", "\"title\" must be a string; fix the request body");
    Fields f{*body};
    std::string given = f.str("title");
    if (!f.ok(res)) return;
    auto title = store::conversation_title(given);
    if (!title) return send_error(res, 400, title.error().code, title.error().message);
    auto renamed = state.app.runs().rename_conversation(id, *title);
    if (!renamed) return send_error(res, 500, "store_failure", renamed.error().message, "server_error");
    if (!*renamed) return send_error(res, 404, "conversation_not_found", "there is no conversation " + id);
    send_json(res, 200, {{"id", id}, {"title", *title}});
}

void run(ServerState& state, const Request& req, Response& res) {
    auto parsed = parse_run_id(req.match(1));
    if (!parsed) return send_error(res, 404, "run_not_found", "there is no run " + req.match(1).substr(0, 40));
    int64_t id = *parsed;
    auto record = stored_run(state, id, res);
    if (!record) return;
    json out = json::parse(app::run_report(*record));
    auto channel = state.hub.channel(id);
    out["executing"] = channel && channel->busy();
    if (out["executing"] == true) out["status"] = "running";  // a resume's worker may not have claimed the row yet
    if (record->status == RunStatus::paused)
        if (auto waiting = state.app.runner().pending_approval(record->conversation); waiting && *waiting)
            out["waiting"] = {{"tool", (*waiting)->tool},
                              {"call_id", (*waiting)->call_id},
                              {"arguments", json::parse((*waiting)->arguments_json, nullptr, false)},
                              {"reason", (*waiting)->reason}};
    if (channel)
        if (auto question = channel->questions.waiting()) out["question"] = std::move(*question);
    send_json(res, 200, out);
}

// POST {"action": accept|decline|cancel, "content": {...}}: the person's answer to the question
// the run's tool waits on (the "question" event).
void answer(ServerState& state, const Request& req, const std::string& text, Response& res) {
    auto parsed = parse_run_id(req.match(1));
    if (!parsed) return send_error(res, 404, "run_not_found", "there is no run " + req.match(1).substr(0, 40));
    auto body = body_object(text, state.settings.max_body_bytes, res);
    if (!body) return;
    auto channel = state.hub.channel(*parsed);
    if (!channel && !stored_run(state, *parsed, res)) return;  // 404 for a run that does not exist
    if (!channel || !channel->busy())
        return send_error(res, 409, "no_question",
                          "run " + std::to_string(*parsed) + " is not executing on this server, so no question of it waits");
    if (auto refused = channel->questions.answer(*body))
        return send_error(res, refused->code == "no_question" ? 409 : 400, refused->code, refused->message);
    send_json(res, 200, {{"run", *parsed}, {"answered", true}});
}

void act(ServerState& state, const Request& req, const std::string& text, Response& res) {
    app::HostApp& app = state.app;
    auto parsed = parse_run_id(req.match(1));
    if (!parsed) return send_error(res, 404, "run_not_found", "there is no run " + req.match(1).substr(0, 40));
    int64_t id = *parsed;
    std::string action = req.match(2);
    auto body = body_object(text, state.settings.max_body_bytes, res, true);
    if (!body) return;
    Fields f{*body};
    std::string reason = f.str("reason"), mode_name = f.str("mode");
    agent::ResumeOptions options;
    options.provider = f.str("provider");
    options.model = f.str("model");
    if (!f.ok(res)) return;
    auto record = stored_run(state, id, res);
    if (!record) return;
    const std::string status = std::string(run_status_name(record->status));
    if (action == "cancel") {
        if (state.hub.cancel(id)) return send_json(res, 202, {{"run", id}, {"status", "cancelling"}});
        // Executing on another host: it reads the request within half a second.
        if (auto* cancels = app.storage().cancels(); cancels && record->status == RunStatus::running) {
            if (auto asked = cancels->request(id); !asked)
                return send_error(res, 503, "store_failure", "could not pass the cancel on: " + asked.error().message);
            return send_json(res, 202, {{"run", id}, {"status", "cancelling"}, {"via", "the host executing it"}});
        }
        return send_error(res, 409, "run_not_executing", "run " + std::to_string(id) + " is " + status + ", not executing");
    }
    std::string conversation = record->conversation;
    Result<int64_t, Refusal> started = Refusal{};
    if (action == "approve" || action == "reject") {
        if (record->status != RunStatus::paused)
            return send_error(res, 409, "run_not_paused",
                              "run " + std::to_string(id) + " is " + status + ", not waiting for approval");
        agent::ApprovalDecision decision{
            action == "approve" ? agent::ApprovalDecision::Kind::approve : agent::ApprovalDecision::Kind::reject, reason};
        started = state.hub.continue_run(id, conversation, [&app, conversation, decision](const agent::RunControls& c) {
            return app.runner().resume(conversation, decision, c);
        });
    } else {  // resume
        if (auto channel = state.hub.channel(id); channel && channel->busy())
            return send_error(
                res, 409, "run_executing",
                "run " + std::to_string(id) + " is executing; follow it with GET /api/chat?run=" + std::to_string(id));
        if (!store::resumable(*record)) return send_error(res, 409, "run_not_resumable", store::not_resumable_reason(*record));
        if (!mode_name.empty()) {
            auto mode = mode_of(mode_name, res);
            if (!mode) return;
            options.mode = mode;
        }
        started = state.hub.continue_run(id, conversation, [&app, id, options](const agent::RunControls& c) {
            return app.runner().resume_run(id, options, c);
        });
    }
    if (!started) return send_http_error(res, error_for_start(started.error()), started.error().message);
    send_json(res, 202, {{"run", id}, {"conversation", conversation}, {"status", "running"}});
}

}  // namespace

std::optional<store::ConversationSummary> known_conversation(ServerState& state, const std::string& id, Response& res) {
    auto summary = state.app.runs().conversation(id);
    if (!summary) {
        send_store_unavailable(res, summary.error());
        return std::nullopt;
    }
    if (!*summary)
        send_error(res, 404, "conversation_not_found", "there is no conversation " + id + " (GET /api/conversations lists them)");
    return *summary;
}

void add_run_routes(ServerCore& core, ServerState& state) {
    core.get("/api/conversations", [&state](const Request&, Response& res) { list_conversations(state, res); });
    core.get(R"(/api/conversations/([^/]+))", [&state](const Request& req, Response& res) { conversation(state, req, res); });
    core.del(R"(/api/conversations/([^/]+))",
             [&state](const Request& req, Response& res) { delete_conversation(state, req, res); });
    core.patch(R"(/api/conversations/([^/]+))", [&state](const Request& req, const std::string& body, Response& res) {
        rename_conversation(state, req, body, res);
    });
    core.get(R"(/api/runs/(\d+))", [&state](const Request& req, Response& res) { run(state, req, res); });
    core.post(R"(/api/runs/(\d+)/answer)",
              [&state](const Request& req, const std::string& body, Response& res) { answer(state, req, body, res); });
    core.post(R"(/api/runs/(\d+)/(approve|reject|cancel|resume))",
              [&state](const Request& req, const std::string& body, Response& res) { act(state, req, body, res); });
}

}  // namespace agenthost::server
