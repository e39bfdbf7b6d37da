#include "server/http_server.hpp"

#include "cli/reports.hpp"
#include "mcp/mcp_server.hpp"
#include "server/run_hub.hpp"

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <random>

namespace agenthost::server {
namespace {

using nlohmann::json;
using Request = httplib::Request;
using Response = httplib::Response;

constexpr auto kStreamWait = std::chrono::seconds(15);  // a keep-alive comment at least this often

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(dump(body), "application/json");
}

// Every error, on every route, in the OpenAI error shape.
void send_error(Response& res, int status, const std::string& code, const std::string& message,
                const std::string& type = "invalid_request_error") {
    send_json(res, status, {{"error", {{"message", message}, {"type", type}, {"code", code}}}});
}

bool constant_time_equal(const std::string& a, const std::string& b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
    return diff == 0 && !b.empty();
}

bool loopback(const std::string& host) {
    return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

std::string new_conversation_id() {
    std::random_device random;
    std::string id = "c-";
    for (int i = 0; i < 16; ++i) id += "0123456789abcdef"[random() % 16];
    return id;
}

// OpenAI message content: a string, or an array of parts whose text parts are joined.
std::optional<std::string> text_of(const json& content) {
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) return std::nullopt;
    std::string text;
    for (const auto& part : content)
        if (part.is_object() && part.value("type", "") == "text" && part.contains("text") && part["text"].is_string())
            text += (text.empty() ? "" : "\n") + part["text"].get<std::string>();
    return text;
}

std::string sse_event(const HubEvent& e) {
    return "id: " + std::to_string(e.seq) + "\nevent: " + e.name + "\ndata: " + e.data + "\n\n";
}

}  // namespace

struct HttpServer::Impl {
    cli::HostApp& app;
    const config::ServerSettings& settings;
    RunHub hub;
    mcp::McpServer mcp_server;
    std::mutex mcp_mutex;
    std::map<std::string, std::shared_ptr<mcp::McpSession>> mcp_sessions;
    std::atomic<int> listening_streams{0};
    int listening_limit = 4;
    int tools_listener = 0;
    httplib::Server http;
    socket_t listen_socket = INVALID_SOCKET;

    ~Impl() {
        app.registry().remove_tools_listener(tools_listener);
        close_mcp_sessions();
    }

    explicit Impl(cli::HostApp& a) : app(a), settings(a.config().server), hub(a, a.config().server), mcp_server(a) {
        int threads = std::max(16, settings.max_concurrent_runs * 2 + 8);  // streaming responses each hold one
        http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
        listening_limit = threads / 4;
        tools_listener = app.registry().add_tools_listener([this] { announce_tools_changed(); });
        http.set_payload_max_length(static_cast<size_t>(settings.max_body_bytes));
        // The library listens with a backlog of 5, which drops connections when many clients
        // arrive at once; the socket is kept so serve() can widen it.
        http.set_socket_options([this](socket_t sock) {
            httplib::default_socket_options(sock);
            listen_socket = sock;
        });
        http.set_pre_routing_handler([this](const Request& req, Response& res) { return authorize(req, res); });
        http.set_error_handler([](const Request&, Response& res) {
            if (!res.body.empty()) return;
            const char* code = res.status == 404 ? "not_found" : res.status == 413 ? "body_too_large" : "http_error";
            send_error(res, res.status, code, "HTTP " + std::to_string(res.status) + (res.status == 413 ? ": the request body is larger than [server] max_body_bytes" : ""));
        });
        http.set_exception_handler([](const Request&, Response& res, std::exception_ptr ep) {
            std::string what = "unknown error";
            try {
                std::rethrow_exception(ep);
            } catch (const std::exception& e) {
                what = e.what();
            } catch (...) {
            }
            spdlog::error("request failed: {}", what);
            send_error(res, 500, "internal_error", "the server failed on this request: " + what, "server_error");
        });
        routes();
    }

    httplib::Server::HandlerResponse authorize(const Request& req, Response& res) {
        // The panel's static files hold no data; the panel itself sends the token on its API calls.
        bool open_path = req.path == "/health" || req.path == "/" || req.path.rfind("/panel/", 0) == 0;
        if (settings.token.empty() || open_path) return httplib::Server::HandlerResponse::Unhandled;
        std::string header = req.get_header_value("Authorization");
        const std::string prefix = "Bearer ";
        std::string given = header.rfind(prefix, 0) == 0 ? header.substr(prefix.size()) : "";
        if (constant_time_equal(given, settings.token)) return httplib::Server::HandlerResponse::Unhandled;
        send_error(res, 401, "invalid_api_key", "missing or wrong bearer token (Authorization: Bearer …)", "authentication_error");
        return httplib::Server::HandlerResponse::Handled;
    }

    std::optional<json> body_object(const Request& req, Response& res) {
        json body = json::parse(req.body, nullptr, false);
        if (!body.is_object()) {
            send_error(res, 400, "invalid_json", "the request body must be a JSON object");
            return std::nullopt;
        }
        return body;
    }

    // The provider and model a /v1 model id names: "agenthost", "agenthost/<provider>" or "<provider>/<model>".
    std::optional<std::pair<std::string, std::string>> resolve_model(const std::string& id) {
        const auto& cfg = app.config();
        if (id.empty() || id == "agenthost") return std::make_pair(std::string(), std::string());
        size_t slash = id.find('/');
        if (slash == std::string::npos) return std::nullopt;
        std::string head = id.substr(0, slash), tail = id.substr(slash + 1);
        if (head == "agenthost" && cfg.provider_named(tail)) return std::make_pair(tail, std::string());
        if (cfg.provider_named(head)) return std::make_pair(head, tail);
        return std::nullopt;
    }

    void routes() {
        http.Get("/health", [](const Request&, Response& res) { send_json(res, 200, {{"status", "ok"}}); });
        http.Get("/readyz", [this](const Request&, Response& res) { readyz(res); });
        http.Get("/v1/models", [this](const Request&, Response& res) { models(res); });
        http.Post("/v1/chat/completions", [this](const Request& req, Response& res) { completions(req, res); });
        http.Post("/api/chat", [this](const Request& req, Response& res) { start_chat(req, res); });
        http.Get("/api/chat", [this](const Request& req, Response& res) { stream_chat(req, res); });
        http.Get("/api/conversations", [this](const Request&, Response& res) { list_conversations(res); });
        http.Get(R"(/api/conversations/([^/]+))", [this](const Request& req, Response& res) { conversation(req, res); });
        http.Delete(R"(/api/conversations/([^/]+))", [this](const Request& req, Response& res) { delete_conversation(req, res); });
        http.Get(R"(/api/runs/(\d+))", [this](const Request& req, Response& res) { run(req, res); });
        http.Post(R"(/api/runs/(\d+)/(approve|reject|cancel|resume))", [this](const Request& req, Response& res) { act(req, res); });
        http.Get("/memory/state", [this](const Request& req, Response& res) { memory_state(req, res); });
        http.Post("/memory/clear-session", [this](const Request& req, Response& res) { clear_session(req, res); });
        http.Get("/api/plugins", [this](const Request&, Response& res) {
            res.set_content(cli::plugins_report(app), "application/json");
        });
        http.Get("/metrics", [this](const Request&, Response& res) { metrics(res); });
        http.Get("/api/resources", [this](const Request&, Response& res) { send_json(res, 200, {{"resources", mcp::resource_list(app)}}); });
        http.Get("/api/resources/read", [this](const Request& req, Response& res) {
            std::string uri = req.get_param_value("uri");
            auto contents = mcp::resource_read(app, uri);
            if (!contents) return send_error(res, 404, "resource_not_found", "no plugin serves the resource '" + uri + "'");
            send_json(res, 200, *contents);
        });
        http.Get("/", [this](const Request&, Response& res) { panel_file("index.html", res); });
        http.Get(R"(/panel/([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)?))", [this](const Request& req, Response& res) { panel_file(req.matches[1], res); });
        http.Post("/mcp", [this](const Request& req, Response& res) { mcp_post(req, res); });
        http.Delete("/mcp", [this](const Request& req, Response& res) { mcp_delete(req, res); });
        http.Get("/mcp", [this](const Request& req, Response& res) { mcp_listen(req, res); });
    }

    // ---- the web panel's static files ----

    void panel_file(const std::string& name, Response& res) {
        std::string path = name;
        if (path.find("..") != std::string::npos) return send_error(res, 404, "not_found", "no such file");
        const auto& dir = app.config().server.web_dir;
        std::ifstream in(dir / path, std::ios::binary);
        if (!in) {
            if (name == "index.html")
                return send_error(res, 404, "panel_missing",
                                  "the web panel's files are not in " + dir.string() + ": build the web_panel target, install agenthost, or set [server] web_dir");
            return send_error(res, 404, "not_found", "no file " + name + " in the web panel");
        }
        std::stringstream data;
        data << in.rdbuf();
        std::string ext = std::filesystem::path(path).extension().string();
        const char* type = ext == ".html" ? "text/html; charset=utf-8" : ext == ".js" ? "text/javascript; charset=utf-8"
                         : ext == ".css"  ? "text/css; charset=utf-8" : ext == ".svg" ? "image/svg+xml" : "text/plain; charset=utf-8";
        res.set_header("Cache-Control", "no-cache");
        res.set_header("X-Content-Type-Options", "nosniff");
        res.set_content(data.str(), type);
    }

    // ---- health ----

    void readyz(Response& res) {
        json checks = json::object();
        int ok = app.database().read([](store::Database& d) {
            auto stmt = d.prepare("SELECT 1");
            return stmt && stmt->step() ? 1 : 0;
        });
        checks["database"] = ok ? "ok" : "unavailable";
        const std::string provider = app.config().provider.name;
        auto readiness = app.queue().check(provider);
        checks["provider"] = readiness.ready ? "ok" : readiness.code;
        json body{{"ready", ok && readiness.ready}, {"checks", checks}, {"provider", provider}, {"model", app.config().provider.model}};
        if (!ok) {
            body["error"] = {{"code", "DATABASE_UNAVAILABLE"}, {"message", "the database cannot be read"}};
        } else if (!readiness.ready) {
            body["error"] = {{"code", readiness.code}, {"message", readiness.message}, {"models", readiness.models}};
        }
        send_json(res, body["ready"].get<bool>() ? 200 : 503, body);
    }

    void models(Response& res) {
        json data = json::array({{{"id", "agenthost"}, {"object", "model"}, {"created", 0}, {"owned_by", "agenthost"}}});
        std::vector<std::string> providers{app.config().provider.name};
        for (const auto& [name, p] : app.config().providers) providers.push_back(name);
        for (const auto& provider : providers) {
            data.push_back({{"id", "agenthost/" + provider}, {"object", "model"}, {"created", 0}, {"owned_by", "agenthost"}});
            for (const auto& m : app.queue().check(provider).models)
                data.push_back({{"id", provider + "/" + m}, {"object", "model"}, {"created", 0}, {"owned_by", provider}});
        }
        send_json(res, 200, {{"object", "list"}, {"data", data}});
    }

    // ---- the OpenAI-compatible endpoint ----

    void completions(const Request& req, Response& res) {
        auto body = body_object(req, res);
        if (!body) return;
        std::string model_id = body->value("model", "");
        auto model = resolve_model(model_id);
        if (!model)
            return send_error(res, 404, "model_not_found",
                              "The model `" + model_id + "` does not exist; GET /v1/models lists the ones that do");
        const json& messages = body->value("messages", json::array());
        if (!messages.is_array() || messages.empty()) return send_error(res, 400, "invalid_messages", "messages must be a non-empty array");
        if (messages.size() > static_cast<size_t>(settings.max_messages))
            return send_error(res, 400, "too_many_messages",
                              "at most " + std::to_string(settings.max_messages) + " messages per request ([server] max_messages)");
        const json& last = messages.back();
        auto prompt = last.is_object() && last.value("role", "") == "user" ? text_of(last.value("content", json())) : std::nullopt;
        if (!prompt) return send_error(res, 400, "invalid_messages", "the last message must be the user's, with text content");
        json history = json::array();
        for (size_t i = 0; i + 1 < messages.size(); ++i) {
            const json& m = messages[i];
            auto text = m.is_object() ? text_of(m.value("content", json())) : std::nullopt;
            std::string role = m.is_object() ? m.value("role", "") : "";
            if (text && (role == "system" || role == "user" || role == "assistant")) history.push_back({{"role", role}, {"content", *text}});
        }

        agent::TurnRequest request;
        request.prompt = *prompt;
        request.conversation_id = body->value("conversation", "");
        if (request.conversation_id.empty()) request.conversation_id = new_conversation_id();
        request.history_json = dump(history);
        request.provider = model->first;
        request.model = model->second;
        if (body->contains("mode")) {
            auto mode = agent::parse_mode(body->value("mode", ""));
            if (!mode) return send_error(res, 400, "invalid_mode", "mode must be explore, plan or execute");
            request.mode = *mode;
        } else {
            request.mode = agent::parse_mode(app.config().agent.default_mode).value_or(agent::Mode::execute);
        }
        if (body->contains("agenthost") && (*body)["agenthost"].is_object()) request.request_context_json = dump((*body)["agenthost"]);

        auto run = hub.start(request);
        if (!run) return send_start_error(res, run.error());
        auto channel = hub.channel(*run);
        std::string id = "chatcmpl-" + std::to_string(*run);
        std::string model_name = model_id.empty() ? "agenthost" : model_id;
        if (!body->value("stream", false)) {
            agent::TurnOutcome outcome = channel->wait();
            auto record = app.runs().run(*run);
            json usage = usage_of(record);
            if (!outcome.ok && outcome.answer.empty())
                return send_error(res, 502, outcome.error_code.empty() ? "AGENT_FAILURE" : outcome.error_code, outcome.error, "agent_error");
            send_json(res, 200,
                      {{"id", id},
                       {"object", "chat.completion"},
                       {"created", std::time(nullptr)},
                       {"model", model_name},
                       {"choices", {{{"index", 0},
                                     {"message", {{"role", "assistant"}, {"content", outcome.answer}}},
                                     {"finish_reason", outcome.ok ? "stop" : "length"}}}},
                       {"usage", usage},
                       {"conversation", request.conversation_id},
                       {"agenthost", {{"run", *run}, {"stop_reason", outcome.stop_reason}, {"error_code", outcome.error_code}}}});
            return;
        }
        bool include_usage = body->value("stream_options", json::object()).value("include_usage", false);
        stream_completion(res, channel, *run, id, model_name, request.conversation_id, include_usage);
    }

    json usage_of(const std::optional<store::RunRecord>& record) {
        int64_t in = record ? record->counters.input_tokens : 0, out = record ? record->counters.output_tokens : 0;
        return {{"prompt_tokens", in}, {"completion_tokens", out}, {"total_tokens", in + out}};
    }

    void stream_completion(Response& res, std::shared_ptr<RunChannel> channel, int64_t run, const std::string& id,
                           const std::string& model, const std::string& conversation, bool include_usage) {
        struct State {
            uint64_t seq = 0;
            bool started = false;
        };
        auto state = std::make_shared<State>();
        auto chunk = [id, model, conversation](const json& delta, const json& finish) {
            json c{{"id", id}, {"object", "chat.completion.chunk"}, {"created", std::time(nullptr)}, {"model", model},
                   {"conversation", conversation},
                   {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
            return "data: " + dump(c) + "\n\n";
        };
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider(
            "text/event-stream", [this, channel, run, state, chunk, id, model, include_usage](size_t, httplib::DataSink& sink) {
                auto write = [&](const std::string& text) { return sink.write(text.data(), text.size()); };
                if (!state->started) {
                    state->started = true;
                    if (!write(chunk({{"role", "assistant"}, {"content", ""}}, nullptr))) return false;
                }
                bool done = false;
                auto events = channel->after(state->seq, kStreamWait, done);
                for (const auto& e : events) {
                    state->seq = e.seq;
                    // A client that went away stops only its stream; the run goes on (it can be read later).
                    if (e.name == "token" && !write(chunk({{"content", json::parse(e.data)["text"]}}, nullptr))) return false;
                }
                if (!done) return events.empty() ? write(": keep-alive\n\n") : true;
                agent::TurnOutcome outcome = channel->wait();
                if (!outcome.ok && outcome.answer.empty()) {
                    json error{{"error", {{"message", outcome.error}, {"type", "agent_error"},
                                          {"code", outcome.error_code.empty() ? "AGENT_FAILURE" : outcome.error_code}}}};
                    write("data: " + dump(error) + "\n\n");
                } else {
                    write(chunk(json::object(), outcome.ok ? "stop" : "length"));
                }
                if (include_usage) {
                    json usage{{"id", id}, {"object", "chat.completion.chunk"}, {"created", std::time(nullptr)}, {"model", model},
                               {"choices", json::array()}, {"usage", usage_of(app.runs().run(run))}};
                    write("data: " + dump(usage) + "\n\n");
                }
                write("data: [DONE]\n\n");
                sink.done();
                return true;
            });
    }

    void send_start_error(Response& res, const Error& e) {
        int status = e.code == "conversation_busy" || e.code == "approval_pending" ? 409
                     : e.code == "shutting_down"                                  ? 503
                                                                                  : 500;
        send_error(res, status, e.code, e.message, status == 500 ? "server_error" : "invalid_request_error");
    }

    // ---- the SSE chat API ----

    void start_chat(const Request& req, Response& res) {
        auto body = body_object(req, res);
        if (!body) return;
        if (!body->contains("message") || !(*body)["message"].is_string() || (*body)["message"].get<std::string>().empty())
            return send_error(res, 400, "invalid_message", "\"message\" must be a non-empty string");
        agent::TurnRequest request;
        request.prompt = (*body)["message"];
        request.conversation_id = body->value("conversation", "");
        if (request.conversation_id.empty()) request.conversation_id = new_conversation_id();
        auto mode = agent::parse_mode(body->value("mode", app.config().agent.default_mode));
        if (!mode) return send_error(res, 400, "invalid_mode", "mode must be explore, plan or execute");
        request.mode = *mode;
        if (body->contains("context")) {
            if (!(*body)["context"].is_object()) return send_error(res, 400, "invalid_context", "\"context\" must be a JSON object");
            request.request_context_json = dump((*body)["context"]);
        }
        request.provider = body->value("provider", "");
        request.model = body->value("model", "");
        if (!request.provider.empty() && !app.config().provider_named(request.provider))
            return send_error(res, 400, "unknown_provider", "provider '" + request.provider + "' is not configured");
        auto run = hub.start(request);
        if (!run) return send_start_error(res, run.error());
        send_json(res, 200, {{"conversation", request.conversation_id}, {"run", *run}});
    }

    void stream_chat(const Request& req, Response& res) {
        int64_t run = req.has_param("run") ? std::atoll(req.get_param_value("run").c_str()) : 0;
        std::string conversation = req.get_param_value("conversation");
        if (run == 0 && !conversation.empty()) {
            auto runs = app.runs().runs(conversation, 1);
            if (!runs.empty()) run = runs.front().id;
        }
        if (run == 0) return send_error(res, 400, "missing_run", "give ?run=ID (or a conversation that has runs)", "invalid_request_error");
        uint64_t last = 0;
        std::string resume_from = req.has_header("Last-Event-ID") ? req.get_header_value("Last-Event-ID") : req.get_param_value("last_event_id");
        if (!resume_from.empty()) last = std::strtoull(resume_from.c_str(), nullptr, 10);
        auto channel = hub.channel(run);
        if (!channel) {
            auto record = app.runs().run(run);
            if (!record) return send_error(res, 404, "run_not_found", "there is no run " + std::to_string(run));
            // The events are gone (older than this server); say how the run ended.
            json end = json::parse(cli::run_report(*record));
            end["replayed"] = false;
            res.set_content("event: end\ndata: " + dump(end) + "\n\n", "text/event-stream");
            return;
        }
        auto cursor = std::make_shared<uint64_t>(last);
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider("text/event-stream", [channel, cursor](size_t, httplib::DataSink& sink) {
            bool done = false;
            auto events = channel->after(*cursor, kStreamWait, done);
            for (const auto& e : events) {
                std::string text = sse_event(e);
                if (!sink.write(text.data(), text.size())) return false;  // the client left; it may reconnect
                *cursor = e.seq;
            }
            if (done && channel->after(*cursor, std::chrono::milliseconds(0), done).empty()) {
                sink.done();
                return true;
            }
            if (events.empty()) return sink.write(": keep-alive\n\n", 14);
            return true;
        });
    }

    // ---- conversations and runs ----

    void list_conversations(Response& res) {
        json list = json::array();
        for (const auto& c : app.runs().conversations(500))
            list.push_back({{"id", c.id}, {"created_at", c.created_at}, {"updated_at", c.updated_at}, {"runs", c.runs},
                            {"last_prompt", c.last_prompt}, {"busy", hub.conversation_busy(c.id)}});
        send_json(res, 200, {{"conversations", list}});
    }

    json tasks_of(const std::string& conversation) {
        json plan = json::array();
        for (const auto& t : app.memory().plan(conversation))
            plan.push_back({{"id", t.id}, {"title", t.title}, {"status", t.status}, {"note", t.note}});
        return {{"plan", plan}, {"stack", app.memory().task_stack(conversation)}};
    }

    void conversation(const Request& req, Response& res) {
        std::string id = req.matches[1];
        auto messages = app.runs().all(id);
        auto runs = app.runs().runs(id, 1000);
        if (messages.empty() && runs.empty()) return send_error(res, 404, "conversation_not_found", "there is no conversation " + id);
        json out{{"id", id}, {"messages", json::array()}, {"runs", json::array()}, {"tasks", tasks_of(id)}, {"busy", hub.conversation_busy(id)}};
        for (const auto& m : messages) {
            json entry{{"id", m.id}, {"turn", m.turn}, {"run", m.run}, {"message", json::parse(m.body, nullptr, false)},
                       {"kind", m.kind == store::MessageKind::prompt ? "prompt" : m.kind == store::MessageKind::answer ? "answer" : "step"}};
            if (!m.result.empty()) entry["result"] = json::parse(m.result, nullptr, false);
            out["messages"].push_back(std::move(entry));
        }
        for (auto it = runs.rbegin(); it != runs.rend(); ++it) out["runs"].push_back(json::parse(cli::run_report(*it)));
        send_json(res, 200, out);
    }

    void delete_conversation(const Request& req, Response& res) {
        std::string id = req.matches[1];
        if (hub.conversation_busy(id)) return send_error(res, 409, "conversation_busy", "conversation " + id + " has a run in progress");
        auto deleted = app.runs().delete_conversation(id);
        if (!deleted) return send_error(res, 500, "store_failure", deleted.error().message, "server_error");
        if (!*deleted) return send_error(res, 404, "conversation_not_found", "there is no conversation " + id);
        res.status = 204;
    }

    void run(const Request& req, Response& res) {
        int64_t id = std::atoll(req.matches[1].str().c_str());
        auto record = app.runs().run(id);
        if (!record) return send_error(res, 404, "run_not_found", "there is no run " + std::to_string(id));
        json out = json::parse(cli::run_report(*record));
        auto channel = hub.channel(id);
        out["executing"] = channel && channel->busy();
        if (record->status == "paused")
            if (auto waiting = app.runner().pending_approval(record->conversation))
                out["waiting"] = {{"tool", waiting->tool}, {"call_id", waiting->call_id},
                                  {"arguments", json::parse(waiting->arguments_json, nullptr, false)}, {"reason", waiting->reason}};
        send_json(res, 200, out);
    }

    void act(const Request& req, Response& res) {
        int64_t id = std::atoll(req.matches[1].str().c_str());
        std::string action = req.matches[2];
        auto record = app.runs().run(id);
        if (!record) return send_error(res, 404, "run_not_found", "there is no run " + std::to_string(id));
        json body = req.body.empty() ? json::object() : json::parse(req.body, nullptr, false);
        if (!body.is_object()) return send_error(res, 400, "invalid_json", "the request body must be a JSON object");
        if (action == "cancel") {
            if (!hub.cancel(id)) return send_error(res, 409, "run_not_executing", "run " + std::to_string(id) + " is " + record->status + ", not executing here");
            return send_json(res, 202, {{"run", id}, {"status", "cancelling"}});
        }
        std::string conversation = record->conversation;
        Result<int64_t> started = Error{"", ""};
        if (action == "approve" || action == "reject") {
            if (record->status != "paused")
                return send_error(res, 409, "run_not_paused", "run " + std::to_string(id) + " is " + record->status + ", not waiting for approval");
            agent::ApprovalDecision decision{action == "approve" ? agent::ApprovalDecision::Kind::approve : agent::ApprovalDecision::Kind::reject,
                                             body.value("reason", "")};
            started = hub.continue_run(id, conversation, [this, conversation, decision](const agent::RunControls& c) {
                return app.runner().resume(conversation, decision, c);
            });
        } else {  // resume
            if (record->status != "interrupted" && record->status != "paused")
                return send_error(res, 409, "run_not_resumable", "run " + std::to_string(id) + " is " + record->status + "; only interrupted or paused runs resume");
            agent::ResumeOptions options;
            if (body.contains("mode")) {
                auto mode = agent::parse_mode(body.value("mode", ""));
                if (!mode) return send_error(res, 400, "invalid_mode", "mode must be explore, plan or execute");
                options.mode = mode;
            }
            options.provider = body.value("provider", "");
            options.model = body.value("model", "");
            started = hub.continue_run(id, conversation, [this, id, options](const agent::RunControls& c) {
                return app.runner().resume_run(id, options, c);
            });
        }
        if (!started) return send_start_error(res, started.error());
        send_json(res, 202, {{"run", id}, {"conversation", conversation}, {"status", "running"}});
    }

    // ---- MCP over Streamable HTTP (JSON responses) ----

    // Browsers may only reach /mcp from loopback pages or configured origins (DNS rebinding).
    bool origin_allowed(const Request& req) {
        if (!req.has_header("Origin")) return true;
        std::string origin = req.get_header_value("Origin");
        for (const char* local : {"http://localhost", "http://127.0.0.1", "https://localhost", "https://127.0.0.1", "http://[::1]"})
            if (origin == local || origin.rfind(std::string(local) + ":", 0) == 0) return true;
        const auto& allowed = app.config().mcp.allowed_origins;
        return std::find(allowed.begin(), allowed.end(), origin) != allowed.end();
    }

    void mcp_post(const Request& req, Response& res) {
        auto rpc_error = [&](int status, int code, const std::string& message) {
            send_json(res, status, {{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", {{"code", code}, {"message", message}}}});
        };
        if (!origin_allowed(req)) return rpc_error(403, -32000, "Forbidden: the Origin is not allowed ([mcp] allowed_origins)");
        json peek = json::parse(req.body, nullptr, false);
        bool initialize = peek.is_object() && peek.value("method", "") == "initialize";
        // The stateless 2026-07-28 era (and its server/discover probe) needs no session.
        bool stateless = req.get_header_value("MCP-Protocol-Version") == "2026-07-28" ||
                         (peek.is_object() && peek.value("method", "") == "server/discover");
        std::shared_ptr<mcp::McpSession> session;
        {
            std::lock_guard lock(mcp_mutex);
            if (stateless) {
                session = std::make_shared<mcp::McpSession>();
            } else if (initialize) {
                session = std::make_shared<mcp::McpSession>();
                session->id = new_conversation_id().substr(2);
                mcp_sessions[session->id] = session;
            } else {
                std::string id = req.get_header_value("Mcp-Session-Id");
                if (id.empty()) return rpc_error(400, -32000, "Bad Request: Mcp-Session-Id header is required");
                auto it = mcp_sessions.find(id);
                if (it == mcp_sessions.end()) return rpc_error(404, -32001, "Session not found: initialize again");
                session = it->second;
            }
        }
        if (req.has_header("MCP-Protocol-Version") && !initialize &&
            !mcp::McpServer::supported_version(req.get_header_value("MCP-Protocol-Version")))
            return rpc_error(400, -32000, "Bad Request: unsupported MCP-Protocol-Version " + req.get_header_value("MCP-Protocol-Version"));
        if (!stateless) res.set_header("Mcp-Session-Id", session->id);
        // A call that asked for progress (and accepts SSE) is answered as an event stream: progress
        // notifications while it runs, then its response.
        const json* meta = peek.is_object() && peek.contains("params") && peek["params"].is_object() && peek["params"].contains("_meta")
                               ? &peek["params"]["_meta"] : nullptr;
        if (peek.value("method", "") == "tools/call" && meta && meta->is_object() && meta->contains("progressToken") &&
            req.get_header_value("Accept").find("text/event-stream") != std::string::npos)
            return mcp_stream(req.body, session, res);
        auto reply = mcp_server.handle(req.body, *session, nullptr);
        if (!reply) {
            res.status = 202;
            return;
        }
        res.set_content(*reply, "application/json");
    }

    void mcp_stream(const std::string& body, std::shared_ptr<mcp::McpSession> session, Response& res) {
        struct Stream {
            std::mutex mutex;
            std::condition_variable changed;
            std::deque<std::string> messages;
            bool done = false;
            std::thread worker;
        };
        auto stream = std::make_shared<Stream>();
        auto push = [stream](std::string message, bool last) {
            std::lock_guard lock(stream->mutex);
            if (!message.empty()) stream->messages.push_back(std::move(message));
            stream->done = stream->done || last;
            stream->changed.notify_all();
        };
        stream->worker = std::thread([this, body, session, push] {
            auto reply = mcp_server.handle(body, *session, [&](const std::string& note) { push(note, false); });
            push(reply.value_or(""), true);
        });
        res.set_chunked_content_provider(
            "text/event-stream",
            [stream](size_t, httplib::DataSink& sink) {
                std::unique_lock lock(stream->mutex);
                stream->changed.wait_for(lock, std::chrono::seconds(15), [&] { return !stream->messages.empty() || stream->done; });
                while (!stream->messages.empty()) {
                    std::string event = "event: message\ndata: " + stream->messages.front() + "\n\n";
                    stream->messages.pop_front();
                    if (!sink.write(event.data(), event.size())) return false;
                }
                if (stream->done) sink.done();
                return true;
            },
            [stream](bool) {
                if (stream->worker.joinable()) stream->worker.join();  // the call finishes even if the client left
            });
    }

    // GET /mcp: a session's listening stream, where the server says what the client did not ask
    // (notifications/tools/list_changed). One per session; each holds a server thread, so only a
    // quarter of them may listen (beyond that: 405, which clients read as "no stream offered").
    void mcp_listen(const Request& req, Response& res) {
        if (!origin_allowed(req)) return send_error(res, 403, "forbidden", "the Origin is not allowed ([mcp] allowed_origins)");
        if (req.get_header_value("Accept").find("text/event-stream") == std::string::npos)
            return send_error(res, 406, "not_acceptable", "GET /mcp is an event stream: send Accept: text/event-stream");
        std::shared_ptr<mcp::McpSession> session;
        {
            std::lock_guard lock(mcp_mutex);
            auto it = mcp_sessions.find(req.get_header_value("Mcp-Session-Id"));
            if (it == mcp_sessions.end())
                return send_error(res, req.has_header("Mcp-Session-Id") ? 404 : 400, "session_not_found",
                                  "GET /mcp needs the Mcp-Session-Id of an initialized session");
            session = it->second;
        }
        if (listening_streams.fetch_add(1) >= listening_limit) {
            --listening_streams;
            return send_error(res, 405, "method_not_allowed", "no listening stream is free now; POST requests to /mcp");
        }
        if (!session->open_stream()) {
            --listening_streams;
            return send_error(res, 409, "conflict", "this session has a listening stream already");
        }
        res.set_header("Mcp-Session-Id", session->id);
        res.set_chunked_content_provider(
            "text/event-stream",
            [session](size_t, httplib::DataSink& sink) {
                auto message = session->next_message(std::chrono::seconds(10));
                if (session->closed()) {
                    sink.done();
                    return true;
                }
                // A comment line when there is nothing to say: finds clients that left.
                std::string event = message ? "event: message\ndata: " + *message + "\n\n" : ": keep-alive\n\n";
                return sink.write(event.data(), event.size());
            },
            [this, session](bool) {
                session->close_stream();
                --listening_streams;
            });
    }

    // A plugin's tools changed: every initialized session with a listening stream hears of it.
    void announce_tools_changed() {
        std::lock_guard lock(mcp_mutex);
        for (const auto& [id, session] : mcp_sessions)
            if (session->initialized) session->post(mcp::McpServer::tools_list_changed());
    }

    void close_mcp_sessions() {
        std::lock_guard lock(mcp_mutex);
        for (const auto& [id, session] : mcp_sessions) session->close();
    }

    void mcp_delete(const Request& req, Response& res) {
        std::lock_guard lock(mcp_mutex);
        auto it = mcp_sessions.find(req.get_header_value("Mcp-Session-Id"));
        if (it == mcp_sessions.end()) return send_error(res, 404, "session_not_found", "no MCP session with that Mcp-Session-Id");
        it->second->close();
        mcp_sessions.erase(it);
        res.status = 200;
    }

    // ---- memory, metrics ----

    void memory_state(const Request& req, Response& res) {
        std::string conversation = req.get_param_value("conversation");
        json facts = json::array();
        for (const auto& f : app.memory().recall_facts("", 1000)) facts.push_back({{"id", f.id}, {"text", f.text}});
        json out{{"facts", facts}};
        if (!conversation.empty()) {
            auto session = app.memory().session(conversation);
            json entries = json::object();
            for (const auto& e : app.memory().entries(conversation)) entries[e.key] = json::parse(e.value_json, nullptr, false);
            out["conversation"] = conversation;
            out["session"] = {{"goal", session.goal}, {"progress", session.progress}, {"steps_done", session.steps_done}};
            out["tasks"] = tasks_of(conversation);
            out["pending_question"] = app.memory().pending_question(conversation);
            out["recent_errors"] = app.memory().recent_errors(conversation);
            out["entries"] = entries;
        }
        send_json(res, 200, out);
    }

    void clear_session(const Request& req, Response& res) {
        auto body = body_object(req, res);
        if (!body) return;
        std::string conversation = body->value("conversation", "");
        if (conversation.empty()) return send_error(res, 400, "missing_conversation", "give {\"conversation\": ID}");
        if (hub.conversation_busy(conversation)) return send_error(res, 409, "conversation_busy", "conversation " + conversation + " has a run in progress");
        auto cleared = app.runner().clear_session(conversation);
        if (!cleared) return send_error(res, 500, "store_failure", cleared.error().message, "server_error");
        send_json(res, 200, {{"conversation", conversation}, {"cleared", *cleared}, {"facts_kept", true}});
    }

    void metrics(Response& res) {
        std::string out;
        auto line = [&](const std::string& text) { out += text + "\n"; };
        auto query = [&](const std::string& sql, const std::function<void(store::Statement&)>& row) {
            app.database().read([&](store::Database& d) {
                auto stmt = d.prepare(sql);
                if (stmt)
                    while (stmt->step()) row(*stmt);
                return 0;
            });
        };
        line("# HELP agenthost_runs Runs in the store, by status.\n# TYPE agenthost_runs gauge");
        query("SELECT status, COUNT(*) FROM runs GROUP BY status", [&](store::Statement& s) {
            line("agenthost_runs{status=\"" + s.text(0) + "\"} " + std::to_string(s.integer(1)));
        });
        line("# HELP agenthost_runs_executing Runs executing in this server.\n# TYPE agenthost_runs_executing gauge");
        line("agenthost_runs_executing " + std::to_string(hub.executing()));
        line("# HELP agenthost_iterations_total Model calls of all runs.\n# TYPE agenthost_iterations_total counter");
        line("# HELP agenthost_tokens_total Tokens of all runs.\n# TYPE agenthost_tokens_total counter");
        query("SELECT COALESCE(SUM(iterations), 0), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0) FROM runs",
              [&](store::Statement& s) {
                  line("agenthost_iterations_total " + std::to_string(s.integer(0)));
                  line("agenthost_tokens_total{direction=\"input\"} " + std::to_string(s.integer(1)));
                  line("agenthost_tokens_total{direction=\"output\"} " + std::to_string(s.integer(2)));
              });
        line("# HELP agenthost_tool_calls_total Tool calls by tool and outcome.\n# TYPE agenthost_tool_calls_total counter");
        query("SELECT tool, CASE WHEN status = 'started' THEN 'unfinished' WHEN error_code IS NULL OR error_code = '' THEN 'ok'"
              " ELSE 'error' END AS outcome, COUNT(*) FROM tool_journal GROUP BY tool, outcome",
              [&](store::Statement& s) {
                  line("agenthost_tool_calls_total{tool=\"" + s.text(0) + "\",outcome=\"" + s.text(1) + "\"} " + std::to_string(s.integer(2)));
              });
        line("# HELP agenthost_provider_request_seconds Model request latency.\n# TYPE agenthost_provider_request_seconds histogram");
        line("# HELP agenthost_queue_depth Requests waiting for a provider.\n# TYPE agenthost_queue_depth gauge");
        for (const auto& lane : app.queue().stats()) {
            std::string p = "provider=\"" + lane.provider + "\"";
            for (size_t i = 0; i < lane.bucket_bounds.size(); ++i) {
                char le[32];
                std::snprintf(le, sizeof le, "%g", lane.bucket_bounds[i]);
                line("agenthost_provider_request_seconds_bucket{" + p + ",le=\"" + le + "\"} " + std::to_string(lane.bucket_counts[i]));
            }
            line("agenthost_provider_request_seconds_bucket{" + p + ",le=\"+Inf\"} " + std::to_string(lane.count));
            line("agenthost_provider_request_seconds_sum{" + p + "} " + std::to_string(lane.sum_s));
            line("agenthost_provider_request_seconds_count{" + p + "} " + std::to_string(lane.count));
            line("agenthost_queue_depth{" + p + "} " + std::to_string(lane.waiting));
        }
        res.set_content(out, "text/plain; version=0.0.4");
    }
};

HttpServer::HttpServer(cli::HostApp& app) : impl_(std::make_unique<Impl>(app)) {}
HttpServer::~HttpServer() = default;

Status HttpServer::serve(const std::string& listen) {
    size_t colon = listen.rfind(':');
    std::string host = colon == std::string::npos ? listen : listen.substr(0, colon);
    int port = colon == std::string::npos ? 8080 : std::atoi(listen.c_str() + colon + 1);
    if (host.empty() || port <= 0 || port > 65535)
        return Error{"invalid_listen", "listen address '" + listen + "' is not HOST:PORT (e.g. 127.0.0.1:8080)"};
    if (!loopback(host) && impl_->settings.token.empty())
        return Error{"insecure_listen", "refusing to listen on " + host + " without a token: set [server] token_env to the name of "
                                        "an environment variable holding one, or listen on 127.0.0.1"};
    if (!impl_->http.bind_to_port(host, port))
        return Error{"listen_failed", "cannot listen on " + listen + " (in use, or not an address of this machine)"};
    if (impl_->listen_socket != INVALID_SOCKET) ::listen(impl_->listen_socket, SOMAXCONN);
    std::cerr << "agenthost: listening on http://" << host << ":" << port << std::endl;
    impl_->http.listen_after_bind();
    return Ok{};
}

void HttpServer::shutdown() {
    spdlog::info("shutting down: letting running steps reach a checkpoint");
    impl_->close_mcp_sessions();  // ends the MCP listening streams now
    impl_->hub.shutdown(std::chrono::seconds(impl_->settings.shutdown_grace_seconds));
    impl_->http.stop();
}

}  // namespace agenthost::server
