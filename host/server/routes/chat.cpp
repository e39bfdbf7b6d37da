// The SSE chat API: POST /api/chat starts a run; GET /api/chat follows its events, resuming after
// Last-Event-ID without loss or duplicates.
#include "agent/event_wire.hpp"
#include "app/reports.hpp"
#include "common/bounded_json.hpp"
#include "common/ids.hpp"
#include "server/replies.hpp"
#include "server/routes/run_requests.hpp"
#include "server/run_takeover.hpp"

#include <chrono>
#include <cstdlib>
#include <optional>
#include <thread>

namespace agenthost::server {
using nlohmann::json;

namespace {

std::string sse_event(uint64_t seq, const std::string& name, const std::string& data) {
    return "id: " + std::to_string(seq) + "\nevent: " + name + "\ndata: " + data + "\n\n";
}

// A run whose events are not here (older than this server, or never logged): how it ended.
std::string ended_event(const store::RunRecord& record) {
    json end = json::parse(app::run_report(record));
    end["replayed"] = false;
    return "event: end\ndata: " + json_io::dump(end) + "\n\n";
}

using Clock = std::chrono::steady_clock;
constexpr auto kLogPoll = std::chrono::milliseconds(50);  // while the store does not tell of new events
constexpr auto kStatusEvery = std::chrono::seconds(1);
constexpr auto kOrphanedAfter = std::chrono::seconds(15);
constexpr int kLogPage = 500;
constexpr auto kHeldEndPoll = std::chrono::milliseconds(250);  // a held-back end looked at again

// The stop reason an "end" event gives; nullopt when it gives none that is known.
std::optional<StopReason> end_reason(const std::string& end_data) {
    json data = json::parse(end_data, nullptr, false);
    if (!data.is_object()) return std::nullopt;
    auto name = data.find("stop_reason");
    return name != data.end() && name->is_string() ? parse_stop_reason(name->get<std::string>()) : std::nullopt;
}

// Follows a run through the shared event log, after `last` (the client's Last-Event-ID), until its
// last "end". An "end" that later events follow (a pause that was approved, an interruption another
// host took over) is left out, so a stream has one "end" and it is the last event. An "end" with
// nothing after it that a host resumes by itself (resumed_by_itself: an interruption, a step the
// store refused) is held back while a host may still take the run; a run that stays stopped for
// kOrphanedAfter ends the stream as the store says it ended.
void follow_from_log(app::HostApp& app, store::RunEventLog& log, const store::RunRecord& record, uint64_t last, Response& res) {
    const int64_t run = record.id;
    struct Cursor {
        uint64_t seq = 0;
        Clock::time_point status_read{};
        std::optional<Clock::time_point> stopped_since;  // when the run was first seen not running
    };
    auto cursor = std::make_shared<Cursor>();
    cursor->seq = last;
    res.set_header("Cache-Control", "no-cache");
    const RunOrigin origin = record.origin;
    const bool takeover = app.config().store.takes_over();
    store::ChangeSignals* signals = app.storage().signals();
    res.stream("text/event-stream", [&app, &log, run, cursor, origin, takeover, signals](StreamSink& sink) {
        auto waited = Clock::now();
        while (true) {
            const uint64_t seen = signals ? signals->count(store::Change::run_events, run) : 0;
            auto events = log.after(run, cursor->seq, kLogPage);
            bool wrote = false;
            for (size_t i = 0; i < events.size(); ++i) {
                const auto& e = events[i];
                if (e.name == agent::wire::end) {
                    bool followed = i + 1 < events.size() || !log.after(run, e.seq, 1).empty();
                    if (followed) {  // superseded: the run went on
                        cursor->seq = e.seq;
                        continue;
                    }
                    if (auto reason = end_reason(e.data); reason && resumed_by_itself(origin, *reason, takeover))
                        break;  // held back: a host may take the run over
                    if (!sink.write(sse_event(e.seq, e.name, e.data))) return false;
                    sink.done();
                    return true;
                }
                if (!sink.write(sse_event(e.seq, e.name, e.data))) return false;  // the client left; it may reconnect
                cursor->seq = e.seq;
                wrote = true;
            }
            if (wrote) {
                cursor->stopped_since.reset();
                return true;
            }
            auto now = Clock::now();
            if (now - cursor->status_read >= kStatusEvery) {
                cursor->status_read = now;
                auto read = app.runs().run(run);  // unreadable: taken as still running, asked again
                const std::optional<store::RunRecord> record = read ? std::move(*read) : std::nullopt;
                if (!record || record->status == RunStatus::running) {
                    cursor->stopped_since.reset();
                } else if (!cursor->stopped_since) {
                    cursor->stopped_since = now;
                } else if (now - *cursor->stopped_since >= kOrphanedAfter) {
                    sink.write(ended_event(*record));
                    sink.done();
                    return true;
                }
            }
            if (now - waited >= kStreamWait) return sink.write(": keep-alive\n\n");
            if (signals && signals->live())  // told when the run's events are appended: no polling
                signals->wait(store::Change::run_events, run, seen, kStatusEvery);
            else
                std::this_thread::sleep_for(kLogPoll);
        }
    });
}

// A branch starts after an existing turn of the conversation (0: before the first); false after
// answering the 400.
bool after_turn_exists(ServerState& state, const std::string& conversation, int64_t after_turn, Response& res) {
    if (after_turn == 0) return true;
    if (conversation.empty()) {
        send_error(res, 400, "invalid_after_turn", "\"after_turn\" names a turn of a conversation: give \"conversation\" too");
        return false;
    }
    auto newest = state.app.runs().runs(conversation, 1);
    if (!newest) {
        send_store_unavailable(res, newest.error());
        return false;
    }
    const int64_t last = newest->empty() ? 0 : newest->front().turn;
    if (after_turn <= last) return true;
    send_error(res, 400, "invalid_after_turn",
               "conversation '" + conversation.substr(0, 80) + "' has " + std::to_string(last) +
                   " turn(s); \"after_turn\" must be one of them (GET /api/conversations/ID lists runs[].turn), or 0 to"
                   " start afresh");
    return false;
}

void start_chat(ServerState& state, const Request& req, const std::string& text, Response& res) {
    const auto& config = state.app.config();
    auto body = body_object(text, state.settings.max_body_bytes, res);
    if (!body) return;
    Fields f{*body};
    std::string message = f.str("message");
    std::string conversation = f.str("conversation");
    std::string mode_name = f.str("mode", agenthost::mode_name(config.agent.default_mode));
    const json* context = f.object("context");
    agent::TurnRequest request;
    request.provider = f.str("provider");
    request.model = f.str("model");
    request.after_turn = f.count("after_turn");
    if (!f.ok(res) || !conversation_allowed(state, conversation, res)) return;
    if (request.after_turn && !after_turn_exists(state, conversation, *request.after_turn, res)) return;
    if (message.empty()) return send_error(res, 400, "invalid_message", "\"message\" must be a non-empty string");
    request.prompt = message;
    request.conversation_id = conversation.empty() ? new_conversation_id() : conversation;
    auto mode = mode_of(mode_name, res);
    if (!mode) return;
    request.mode = *mode;
    if (context) request.request_context_json = json_io::dump(*context);
    if (!request.provider.empty() && !config.provider_named(request.provider))
        return send_error(res, 400, "unknown_provider", "provider '" + request.provider + "' is not configured");
    const uint64_t print = store::IdempotencyKeys::fingerprint(text);
    if (idempotent_replay(state, req, "chat", print, res, [&](int64_t run) {
            auto record = state.app.runs().run(run);
            const bool known = record && *record;
            send_json(res, 200, {{"conversation", known ? (*record)->conversation : request.conversation_id}, {"run", run}});
        }))
        return;
    const std::string conversation_id = request.conversation_id;
    auto run = start_run(state, req, "chat", print, std::move(request), res);
    if (!run) return;
    send_json(res, 200, {{"conversation", conversation_id}, {"run", *run}});
}

void stream_chat(ServerState& state, const Request& req, Response& res) {
    int64_t run = 0;
    if (req.has_param("run")) {
        auto id = parse_run_id(req.param("run"));
        if (!id)
            return send_error(res, 400, "invalid_run",
                              "?run= must be a run id (a positive whole number), not '" + req.param("run").substr(0, 40) + "'");
        run = *id;
    }
    std::string conversation = req.param("conversation");
    if (run == 0 && !conversation.empty()) {
        if (!known_conversation(state, conversation, res)) return;
        auto runs = state.app.runs().runs(conversation, 1);
        if (!runs) return send_store_unavailable(res, runs.error());
        if (!runs->empty()) run = runs->front().id;
    }
    if (run == 0) return send_error(res, 400, "missing_run", "give ?run=ID (or a conversation that has runs)");
    // A run named beside a conversation must be that conversation's: never another one's events.
    if (!conversation.empty()) {
        auto record = stored_run(state, run, res);
        if (!record) return;
        if (record->conversation != conversation)
            return send_error(
                res, 404, "run_not_found",
                "run " + std::to_string(run) + " is not a run of conversation '" + conversation.substr(0, 80) + "'");
    }
    uint64_t last = 0;
    std::string resume_from = req.has_header("Last-Event-ID") ? req.header("Last-Event-ID") : req.param("last_event_id");
    if (!resume_from.empty()) last = std::strtoull(resume_from.c_str(), nullptr, 10);
    // With a shared event log every host streams every run from it, the one executing it too: one
    // source, so a run continued or taken over on another host reads the same on each.
    if (auto* log = state.app.storage().events()) {
        auto record = stored_run(state, run, res);
        if (!record) return;
        if (record->status == RunStatus::running || !log->after(run, last, 1).empty())
            return follow_from_log(state.app, *log, *record, last, res);
        res.set_content(ended_event(*record), "text/event-stream");
        return;
    }
    auto channel = state.hub.channel(run);
    if (!channel) {
        auto record = stored_run(state, run, res);
        if (!record) return;
        res.set_content(ended_event(*record), "text/event-stream");
        return;
    }
    auto cursor = std::make_shared<uint64_t>(last);
    res.set_header("Cache-Control", "no-cache");
    // As from the log: an "end" that later events follow is left out, and the "end" of a run this
    // host will resume once the store works (store_failure) is held back until it is resumed or
    // given up, so a stream has one "end" and it is the last event.
    res.stream("text/event-stream", [&state, channel, cursor, run](StreamSink& sink) {
        bool done = false;
        auto events = channel->after(*cursor, kStreamWait, done);
        for (size_t i = 0; i < events.size(); ++i) {
            const auto& e = events[i];
            if (e.name == agent::wire::end && i + 1 < events.size()) {  // superseded: the run went on
                *cursor = e.seq;
                continue;
            }
            if (e.name == agent::wire::end && (state.hub.is_stranded(run) || channel->busy())) {  // held back: it goes on
                std::this_thread::sleep_for(kHeldEndPoll);
                return sink.write(": keep-alive\n\n");
            }
            if (!sink.write(sse_event(e.seq, e.name, e.data))) return false;  // the client left; it may reconnect
            *cursor = e.seq;
        }
        if (done && channel->after(*cursor, std::chrono::milliseconds(0), done).empty()) {
            sink.done();
            return true;
        }
        if (events.empty()) return sink.write(": keep-alive\n\n");
        return true;
    });
}

}  // namespace

void add_chat_routes(ServerCore& core, ServerState& state) {
    core.post("/api/chat",
              [&state](const Request& req, const std::string& body, Response& res) { start_chat(state, req, body, res); });
    core.get(
        "/api/chat", [&state](const Request& req, Response& res) { stream_chat(state, req, res); }, Access{.event_stream = true});
}

}  // namespace agenthost::server
