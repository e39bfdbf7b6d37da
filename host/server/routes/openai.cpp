// The OpenAI-compatible API: GET /v1/models and POST /v1/chat/completions (answered whole or
// streamed as chat.completion.chunk events). A run's end maps to a finish_reason or an error
// through the one stop-reason table (error_table.hpp).
#include "agent/event_wire.hpp"
#include "common/bounded_json.hpp"
#include "common/ids.hpp"
#include "server/answer_text.hpp"
#include "server/replies.hpp"
#include "server/routes/run_requests.hpp"
#include "server/run_takeover.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>

namespace agenthost::server {
using json_io::dump;
using nlohmann::json;

namespace {

// OpenAI message content: a string, or an array of parts whose text parts are joined.
// The text of a message's content; a plain string is moved out of the request, not copied.
std::optional<std::string> text_of(json& content) {
    if (content.is_string()) return std::move(content.get_ref<std::string&>());
    if (!content.is_array()) return std::nullopt;
    std::string text;
    for (const auto& part : content)
        if (json_io::get_string(part, "type") == "text" && part.contains("text") && part["text"].is_string())
            text += (text.empty() ? "" : "\n") + part["text"].get<std::string>();
    return text;
}

// The OpenAI finish_reason of a run that gave an answer (the stop-reason table's column).
const char* finish_reason(const agent::TurnOutcome& outcome) { return stop_info(outcome.stop_reason).finish_reason; }

// A run's token usage, OpenAI-shaped; zeros when the run cannot be read (the answer is what the
// client waits for).
json usage_of(const Result<std::optional<store::RunRecord>>& read) {
    const bool known = read && *read;
    int64_t in = known ? (*read)->counters.input_tokens : 0, out = known ? (*read)->counters.output_tokens : 0;
    return {{"prompt_tokens", in}, {"completion_tokens", out}, {"total_tokens", in + out}};
}

// A completion whose run gave no answer, as an error, and its words. A run that goes on by itself
// (stopped by a shutdown or by the store: resumed_by_itself) is not over: a request with an
// Idempotency-Key is told to send itself again (x-should-retry: true), which waits for the run
// and gets its answer; one without is told where to follow the run (a retry would start another).
HttpError completion_error(ServerState& state, const agent::TurnOutcome& outcome, int64_t run, bool keyed, std::string& message) {
    HttpError e = error_for_outcome(outcome);
    message = outcome.error.empty() ? "the agent run ended with " + std::string(outcome.stop_reason_name()) : outcome.error;
    if (!resumed_by_itself(RunOrigin::server, outcome.stop_reason, state.app.config().store.takes_over())) return e;
    if (keyed) {
        e.should_retry = true;
        message +=
            "; the run goes on by itself (the server resumes it when it can): send the same request with the same "
            "Idempotency-Key for its answer";
    } else {
        message += "; the run goes on by itself (the server resumes it when it can): follow it at GET /api/runs/" +
                   std::to_string(run) + " (sending the request again would start another run)";
    }
    return e;
}

// The error event a stream ends with when its run gave no answer.
json stream_error(ServerState& state, const agent::TurnOutcome& outcome, int64_t run, bool keyed) {
    std::string message;
    HttpError e = completion_error(state, outcome, run, keyed, message);
    return {{"error", {{"message", message}, {"type", e.type}, {"code", e.code}, {"status", e.status}, {"param", nullptr}}}};
}

// One chat.completion.chunk of a stream, as an SSE data line.
struct ChunkWriter {
    std::string id, model, conversation;
    std::string operator()(const json& delta, const json& finish) const {
        json c{{"id", id},
               {"object", "chat.completion.chunk"},
               {"created", std::time(nullptr)},
               {"model", model},
               {"conversation", conversation},
               {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
        return "data: " + dump(c) + "\n\n";
    }
    std::string usage(const json& usage) const {
        return "data: " +
               dump({{"id", id},
                     {"object", "chat.completion.chunk"},
                     {"created", std::time(nullptr)},
                     {"model", model},
                     {"choices", json::array()},
                     {"usage", usage}}) +
               "\n\n";
    }
};

// The provider and model a /v1 model id names: "agenthost", "agenthost/<provider>" or "<provider>/<model>".
std::optional<std::pair<std::string, std::string>> resolve_model(const config::Config& cfg, const std::string& id) {
    if (id.empty() || id == "agenthost") return std::make_pair(std::string(), std::string());
    size_t slash = id.find('/');
    if (slash == std::string::npos) return std::nullopt;
    std::string head = id.substr(0, slash), tail = id.substr(slash + 1);
    if (head == "agenthost" && cfg.provider_named(tail)) return std::make_pair(tail, std::string());
    if (cfg.provider_named(head)) return std::make_pair(head, tail);
    return std::nullopt;
}

void models(ServerState& state, Response& res) {
    const auto& cfg = state.app.config();
    json data = json::array({{{"id", "agenthost"}, {"object", "model"}, {"created", 0}, {"owned_by", "agenthost"}}});
    std::vector<std::string> providers{cfg.provider.name};
    for (const auto& [name, p] : cfg.providers) providers.push_back(name);
    for (const auto& provider : providers) {
        data.push_back({{"id", "agenthost/" + provider}, {"object", "model"}, {"created", 0}, {"owned_by", "agenthost"}});
        for (const auto& m : state.app.queue().check(provider).models)
            data.push_back({{"id", provider + '/' += m}, {"object", "model"}, {"created", 0}, {"owned_by", provider}});
    }
    send_json(res, 200, {{"object", "list"}, {"data", data}});
}

// The content of a finished run's answer, from its stored transcript (see AnswerText).
std::string answer_content(ServerState& state, int64_t run, const agent::TurnOutcome& outcome) {
    auto messages = state.app.runs().run_messages(run, 0);  // unreadable: the outcome's own answer
    return answer_from_transcript(messages ? *messages : std::vector<store::StoredMessage>{}, outcome.answer);
}

// The answer to a completion whose run has ended: the chat.completion, or the error its stop
// reason maps to.
void send_completion(ServerState& state, Response& res, const agent::TurnOutcome& outcome, int64_t run,
                     const std::string& conversation, const std::string& model_name, bool keyed) {
    json details{{"run", run},
                 {"conversation", conversation},
                 {"stop_reason", outcome.stop_reason_name()},
                 {"error_code", outcome.error_code()}};
    if (!outcome.ok() && outcome.answer.empty()) {
        std::string message;
        HttpError e = completion_error(state, outcome, run, keyed, message);
        if (outcome.stop_reason == StopReason::approval_pending && run != 0)  // this run paused (0: refused by a paused one)
            message = "run " + std::to_string(run) + " waits for approval of a tool call: POST /api/runs/" + std::to_string(run) +
                      "/approve or /reject";
        return send_http_error(res, e, message, details);
    }
    send_json(res, 200,
              {{"id", "chatcmpl-" + std::to_string(run)},
               {"object", "chat.completion"},
               {"created", std::time(nullptr)},
               {"model", model_name},
               {"choices",
                {{{"index", 0},
                  {"message", {{"role", "assistant"}, {"content", answer_content(state, run, outcome)}}},
                  {"finish_reason", finish_reason(outcome)}}}},
               {"usage", usage_of(state.app.runs().run(run))},
               {"conversation", conversation},
               {"agenthost", details}});
}

// A repeated stream request whose run has ended: its answer as one delta, or its error.
void replay_stream(ServerState& state, Response& res, const agent::TurnOutcome& outcome, int64_t run, const ChunkWriter& chunk,
                   bool include_usage) {
    std::string out;
    if (!outcome.ok() && outcome.answer.empty()) {
        out += "data: " + dump(stream_error(state, outcome, run, true)) + "\n\n";
    } else {
        out += chunk({{"role", "assistant"}, {"content", answer_content(state, run, outcome)}}, nullptr);
        out += chunk(json::object(), finish_reason(outcome));
    }
    if (include_usage) out += chunk.usage(usage_of(state.app.runs().run(run)));
    out += "data: [DONE]\n\n";
    res.set_content(out, "text/event-stream");
}

// The run's outcome, waited for while its client waits. A client that leaves without an
// Idempotency-Key cannot come back for the answer, so its run is cancelled; with a key the run goes
// on, for the retry to fetch.
agent::TurnOutcome outcome_while_waited_for(ServerState& state, const Request& req, RunChannel& channel, int64_t run,
                                            bool keyed) {
    constexpr auto kLookAtClient = std::chrono::milliseconds(200);
    bool cancelled = keyed;
    for (;;) {
        if (auto outcome = channel.wait_for(kLookAtClient)) return *outcome;
        if (!cancelled && req.client_gone()) {
            cancelled = true;
            if (state.hub.cancel(run)) spdlog::info("run cancelled: its client left without an Idempotency-Key run={}", run);
        }
    }
}

// `cancel_if_left`: the client sent no Idempotency-Key, so when it leaves the stream its run is
// cancelled (it could not fetch the answer again).
void stream_completion(ServerState& state, Response& res, const std::shared_ptr<RunChannel>& channel, int64_t run,
                       const ChunkWriter& chunk, bool include_usage, bool cancel_if_left) {
    struct Progress {
        uint64_t seq = 0;
        bool started = false;
        AnswerText text;
        std::chrono::steady_clock::time_point last_write = std::chrono::steady_clock::now();
    };
    auto progress = std::make_shared<Progress>();
    res.set_header("Cache-Control", "no-cache");
    auto left = [&state, run, cancel_if_left] {
        if (cancel_if_left && state.hub.cancel(run))
            spdlog::info("run cancelled: its client left the stream without an Idempotency-Key run={}", run);
        return false;
    };
    res.stream("text/event-stream",
               [&state, channel, run, progress, chunk, include_usage, left, cancel_if_left](StreamSink& sink) {
                   if (!progress->started) {
                       progress->started = true;
                       if (!sink.write(chunk({{"role", "assistant"}, {"content", ""}}, nullptr))) return left();
                   }
                   bool done = false;
                   // Woken each second: a client that leaves while its run waits (for a slot, for the model)
                   // is seen without a write, as a non-streamed request's is.
                   auto events = channel->after(progress->seq, std::chrono::seconds(1), done);
                   const auto now = std::chrono::steady_clock::now();
                   for (const auto& e : events) {
                       progress->seq = e.seq;
                       if (e.name == agent::wire::tool_call) progress->text.step_break();
                       if (e.name != agent::wire::token) continue;
                       std::string delta = progress->text.text(json_io::get_string(json::parse(e.data, nullptr, false), "text"));
                       if (delta.empty()) continue;
                       if (!sink.write(chunk({{"content", delta}}, nullptr))) return left();
                       progress->last_write = now;
                   }
                   if (!done) {
                       if (sink.client_gone()) return left();
                       if (now - progress->last_write < kStreamWait) return true;
                       progress->last_write = now;
                       return sink.write(": keep-alive\n\n") || left();
                   }
                   agent::TurnOutcome outcome = channel->wait();
                   if (!outcome.ok() && outcome.answer.empty()) {
                       sink.write("data: " + dump(stream_error(state, outcome, run, !cancel_if_left)) + "\n\n");
                   } else {
                       // agent_done's summary is said by no token: it ends the streamed content.
                       if (std::string rest = progress->text.answer(outcome.answer); !rest.empty())
                           sink.write(chunk({{"content", rest}}, nullptr));
                       sink.write(chunk(json::object(), finish_reason(outcome)));
                   }
                   if (include_usage) sink.write(chunk.usage(usage_of(state.app.runs().run(run))));
                   sink.write("data: [DONE]\n\n");
                   sink.done();
                   return true;
               });
}

// The request's messages: the last, the user's, is the prompt; the system, user and assistant text
// before it is the history the client keeps. False when they are not that, the error sent.
bool read_messages(json& body, int max_messages, json& history, std::string& prompt, Response& res) {
    auto refuse = [&](const std::string& code, const std::string& message) {
        send_error(res, 400, code, message);
        return false;
    };
    auto messages = body.find("messages");
    if (messages == body.end() || !messages->is_array() || messages->empty())
        return refuse("invalid_messages", "\"messages\" must be a non-empty array");
    if (messages->size() > static_cast<size_t>(max_messages))
        return refuse("too_many_messages",
                      "at most " + std::to_string(max_messages) + " messages per request ([server] max_messages)");
    std::optional<std::string> last;
    for (size_t i = 0; i < messages->size(); ++i) {
        json& m = (*messages)[i];
        if (!m.is_object()) return refuse("invalid_messages", "messages[" + std::to_string(i) + "] must be an object");
        bool bad = false;
        std::string role = json_io::get_string(m, "role", "", &bad);
        if (bad) return refuse("invalid_messages", "messages[" + std::to_string(i) + "]: \"role\" must be a string");
        json none;
        auto content = text_of(m.contains("content") ? m["content"] : none);
        if (i + 1 == messages->size()) {
            if (role == "user") last = std::move(content);
        } else if (content && (role == "system" || role == "user" || role == "assistant")) {
            history.push_back({{"role", role}, {"content", std::move(*content)}});
        }
    }
    if (!last) return refuse("invalid_messages", "the last message must be the user's, with text content");
    prompt = std::move(*last);
    return true;
}

void completions(ServerState& state, const Request& req, std::string& text, Response& res) {
    const auto& config = state.app.config();
    auto body = body_object(text, state.settings.max_body_bytes, res);
    if (!body) return;
    Fields f{*body};
    std::string model_id = f.str("model");
    bool stream = f.boolean("stream", false);
    std::string conversation = f.str("conversation");
    std::string mode_name = f.str("mode");
    bool include_usage = false;
    if (const json* options = f.object("stream_options")) {
        Fields o{*options};
        include_usage = o.boolean("include_usage", false);
        if (!o.wrong.empty()) f.wrong = "stream_options: " + o.wrong;
    }
    const json* context = f.object("agenthost");
    if (!f.ok(res) || !conversation_allowed(state, conversation, res)) return;
    auto model = resolve_model(config, model_id);
    if (!model)
        return send_error(res, 404, "model_not_found",
                          "The model `" + model_id + "` does not exist; GET /v1/models lists the ones that do");
    json history = json::array();
    std::string prompt;
    if (!read_messages(*body, state.settings.max_messages, history, prompt, res)) return;

    agent::TurnRequest request;
    request.prompt = std::move(prompt);
    request.conversation_id = conversation.empty() ? new_conversation_id() : conversation;
    request.history_json = dump(history);
    history = json();
    request.provider = model->first;
    request.model = model->second;
    if (!mode_name.empty()) {
        auto mode = mode_of(mode_name, res);
        if (!mode) return;
        request.mode = *mode;
    } else {
        request.mode = config.agent.default_mode;
    }
    if (context) request.request_context_json = dump(*context);
    std::string model_name = model_id.empty() ? "agenthost" : model_id;

    const uint64_t print = store::IdempotencyKeys::fingerprint(text);
    if (idempotent_replay(state, req, "completions", print, res, [&](int64_t run) {
            auto outcome = settled_outcome(state, run);
            auto record = state.app.runs().run(run);
            std::string conv = record && *record ? (*record)->conversation : "";
            if (!stream) return send_completion(state, res, *outcome, run, conv, model_name, true);
            replay_stream(state, res, *outcome, run, ChunkWriter{"chatcmpl-" + std::to_string(run), model_name, conv},
                          include_usage);
        }))
        return;
    // What the request held is in `request` now: the body's text and its parsed form go before the run.
    body.reset();
    std::string().swap(text);
    const std::string conversation_id = request.conversation_id;
    auto run = start_run(state, req, "completions", print, std::move(request), res);
    if (!run) return;
    auto channel = state.hub.channel(*run);
    const bool keyed = !req.header("Idempotency-Key").empty();
    if (!stream)
        return send_completion(state, res, outcome_while_waited_for(state, req, *channel, *run, keyed), *run, conversation_id,
                               model_name, keyed);
    stream_completion(state, res, channel, *run, ChunkWriter{"chatcmpl-" + std::to_string(*run), model_name, conversation_id},
                      include_usage, !keyed);
}

}  // namespace

void add_openai_routes(ServerCore& core, ServerState& state) {
    core.get("/v1/models", [&state](const Request&, Response& res) { models(state, res); });
    core.post("/v1/chat/completions",
              [&state](const Request& req, std::string& body, Response& res) { completions(state, req, body, res); });
}

}  // namespace agenthost::server
