// Conversations and runs: list, read, rename, delete; a run's state; approve, reject, cancel,
// resume; the answer to a question a tool asks while the run executes.
#include "app/reports.hpp"
#include "common/bounded_json.hpp"
#include "llm/sampling.hpp"
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

// What the model is asked for a title, from the first exchange (each side cut to 600 characters).
nlohmann::json title_request(const store::RunRecord& first) {
    auto cut = [](const std::string& text) { return json_io::repair_utf8(text.substr(0, 600)); };
    std::string ask =
        "Write a title of at most six words for this conversation. Answer with the title alone, without quotes.\n\n"
        "User: " +
        cut(first.prompt) + "\n\nAssistant: " + cut(first.answer);
    return {{"messages", json::array({{{"role", "user"}, {"content", {{"type", "text"}, {"text", std::move(ask)}}}}})},
            {"maxTokens", 30}};
}

// The model's answer as a title: its first line, without Markdown marks or quotes around it, and
// valid as any title (store::conversation_title); "" when nothing is left.
std::string title_of_answer(const std::string& answer) {
    std::string line = answer.substr(0, answer.find('\n'));
    const std::string_view marks = " \t\r#*_\"'`";
    size_t first = line.find_first_not_of(marks), last = line.find_last_not_of(marks);
    if (first == std::string::npos) return "";
    line = line.substr(first, last - first + 1);
    if (line.size() > 120) line = store::title_from_prompt(line);
    auto title = store::conversation_title(line);
    return title ? *title : "";
}

// POST: the conversation's model names it from its first exchange ([server] model_titles), unless a
// person named it already (its title is no longer its first prompt's words).
void title_by_model(ServerState& state, const Request& req, Response& res) {
    std::string id = req.match(1);
    if (!state.settings.model_titles)
        return send_error(res, 409, "model_titles_off",
                          "this server titles conversations with their first words; [server] model_titles = true asks the model");
    auto summary = known_conversation(state, id, res);
    if (!summary) return;
    auto runs = state.app.runs().runs(id, 1000);
    if (!runs) return send_store_unavailable(res, runs.error());
    const store::RunRecord* first = nullptr;
    for (const auto& r : *runs)  // newest first: the last answered one is the first
        if (r.status == RunStatus::completed && !r.answer.empty()) first = &r;
    if (!first) return send_error(res, 409, "not_answered", "conversation " + id + " has no answer yet to take a title from");
    if (summary->title != store::title_from_prompt(runs->back().prompt))  // named by a person: theirs stays
        return send_json(res, 200, {{"id", id}, {"title", summary->title}, {"from", "person"}});
    llm::SamplingTarget target{first->provider, first->model, 30, nullptr};
    auto answer = llm::sample_with_model(state.app.queue(), target, title_request(*first));
    json result = json::parse(answer.text, nullptr, false);
    const std::string title =
        answer.status == AH_OK && result.is_object() ? title_of_answer(result["content"].value("text", "")) : std::string();
    if (title.empty())
        return send_error(res, 502, "no_title", answer.status == AH_OK ? "the model's answer held no usable title" : answer.text);
    auto renamed = state.app.runs().rename_conversation(id, title);
    if (!renamed) return send_store_unavailable(res, renamed.error());
    send_json(res, 200, {{"id", id}, {"title", title}, {"from", "model"}});
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
        if (record->status != RunStatus::paused) {  // the code a resume that finds no paused run stops with
            const HttpMapping& http = stop_info(StopReason::not_paused).http;
            return send_error(res, http.status, http.code,
                              "run " + std::to_string(id) + " is " + status + ", not waiting for approval");
        }
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
    core.post(R"(/api/conversations/([^/]+)/title)",
              [&state](const Request& req, const std::string&, Response& res) { title_by_model(state, req, res); });
    core.get(R"(/api/runs/(\d+))", [&state](const Request& req, Response& res) { run(state, req, res); });
    core.post(R"(/api/runs/(\d+)/answer)",
              [&state](const Request& req, const std::string& body, Response& res) { answer(state, req, body, res); });
    core.post(R"(/api/runs/(\d+)/(approve|reject|cancel|resume))",
              [&state](const Request& req, const std::string& body, Response& res) { act(state, req, body, res); });
}

}  // namespace agenthost::server
