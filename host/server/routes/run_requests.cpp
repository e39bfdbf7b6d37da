#include "server/routes/run_requests.hpp"

#include "server/replies.hpp"
#include "server/run_takeover.hpp"

#include <spdlog/spdlog.h>

#include <charconv>

namespace agenthost::server {

std::optional<int64_t> parse_run_id(std::string_view text) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos || text[0] == '0') return std::nullopt;
    int64_t id = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (error != std::errc() || end != text.data() + text.size() || id <= 0) return std::nullopt;
    return id;
}

namespace {

// A run that goes on without a client's help (resumed_by_itself) is not settled: a keyed retry
// waits (409), never replays an ending that was not the run's.
bool continues_by_itself(ServerState& state, RunOrigin origin, StopReason reason) {
    return resumed_by_itself(origin, reason, state.app.config().store.takes_over());
}

}  // namespace

std::optional<agent::TurnOutcome> settled_outcome(ServerState& state, int64_t run) {
    if (auto channel = state.hub.channel(run)) {
        if (channel->busy()) return std::nullopt;
        // This host's ending is the run's unless the run goes on elsewhere or later: the store says.
        agent::TurnOutcome ended = channel->wait();
        if (!continues_by_itself(state, RunOrigin::server, ended.stop_reason)) return ended;  // a server's run
    }
    auto read = state.app.runs().run(run);
    if (!read) return std::nullopt;  // unreadable now: not settled as far as anyone can tell, asked again
    const std::optional<store::RunRecord>& record = *read;
    if (!record || record->status == RunStatus::running) return std::nullopt;
    if (auto reason = record->stop_reason; reason && continues_by_itself(state, record->origin, *reason)) return std::nullopt;
    agent::TurnOutcome out;
    out.stop_reason = record->stop_reason.value_or(StopReason::internal_error);
    out.answer = record->answer;
    out.error = record->error;
    out.run = run;
    return out;
}

bool conversation_allowed(ServerState& state, const std::string& id, Response& res) {
    if (id.empty()) return true;
    auto problem = store::conversation_id_problem(id);
    if (!problem) return true;
    if (id.size() <= 4096) {  // one the store already has (made before the rule) stays usable
        auto known = state.app.runs().runs(id, 1);
        if (!known) {
            send_store_unavailable(res, known.error());
            return false;
        }
        if (!known->empty()) return true;
    }
    send_error(res, 400, "invalid_field", "\"conversation\": " + *problem + "; fix the request body");
    return false;
}

void send_store_unavailable(Response& res, const Error& why) {
    spdlog::warn("request refused, the store cannot be read: reason=\"{}\"", why.message);
    res.set_header("Retry-After", "5");
    send_error(res, 503, "store_unavailable", "the database cannot be read now; try again shortly", "server_error");
}

std::optional<store::RunRecord> stored_run(ServerState& state, int64_t id, Response& res) {
    auto record = state.app.runs().run(id);
    if (!record) {
        send_store_unavailable(res, record.error());
        return std::nullopt;
    }
    if (!*record) send_error(res, 404, "run_not_found", "there is no run " + std::to_string(id));
    return *record;
}

bool idempotent_replay(ServerState& state, const Request& req, const std::string& route, uint64_t print, Response& res,
                       const std::function<void(int64_t run)>& replay) {
    std::string key = req.header("Idempotency-Key");
    if (key.empty()) return false;
    if (key.size() > store::IdempotencyKeys::kMaxKeyLength) {
        send_error(res, 400, "invalid_idempotency_key", "Idempotency-Key is longer than 255 characters");
        return true;
    }
    using Found = store::IdempotencyKeys::Found;
    auto found = state.idempotency.begin(route, key, print);
    if (found.found == Found::fresh || found.found == Found::in_progress) {
        // The keys cache (memory on one host, a table on several) may not know the run: a restart,
        // or a start whose key could not be noted. The run itself keeps its key (RunKey).
        auto held = state.app.runs().run_for_key(store::IdempotencyKeys::scoped(route, key));
        if (!held) {
            if (found.found == Found::fresh) state.idempotency.forget(route, key);
            spdlog::warn("idempotency key not checked, request refused: route={} reason=\"{}\"", route, held.error().message);
            found = {Found::unavailable};
        } else if (*held) {
            found = (*held)->print == print ? store::IdempotencyKeys::Lookup{Found::run, (*held)->run}
                                            : store::IdempotencyKeys::Lookup{Found::mismatch};
            if (found.found == Found::run) state.idempotency.started(route, key, found.run);
        }
    }
    switch (found.found) {
        case Found::fresh: return false;
        case Found::unavailable:
            // Nothing started: the same request with the same key is safe to send again.
            res.set_header("Retry-After", "2");
            res.set_header("x-should-retry", "true");
            send_error(res, 503, "store_unavailable",
                       "the Idempotency-Key could not be checked because the database cannot be read now; nothing was "
                       "started: send the same request again shortly",
                       "server_error");
            return true;
        case Found::mismatch:
            res.set_header("x-should-retry", "false");
            send_error(res, 422, "idempotency_key_reused",
                       "this Idempotency-Key was used with a different request body; use a new key");
            return true;
        case Found::in_progress: break;
        case Found::run:
            // A completion is replayed once its run has ended; a chat start answers with the run at once.
            if (settled_outcome(state, found.run) || route == "chat") {
                res.set_header("Idempotent-Replayed", "true");
                replay(found.run);
                return true;
            }
            break;
    }
    // Retrying later is safe: the key keeps it from starting a second run.
    res.set_header("Retry-After", "1");
    send_error(res, 409, "idempotency_key_in_progress",
               "the first request with this Idempotency-Key is still being answered; retry later");
    return true;
}

std::optional<int64_t> start_run(ServerState& state, const Request& req, const std::string& route, uint64_t print,
                                 agent::TurnRequest request, Response& res) {
    std::string key = req.header("Idempotency-Key");
    if (!key.empty()) request.key = {store::IdempotencyKeys::scoped(route, key), print};
    const std::string conversation = request.conversation_id;
    // An OpenAI client sees no question a tool asks: nobody answers those of its runs.
    auto run = state.hub.start(
        std::move(request), [&req] { return req.client_gone(); }, route == "chat");
    if (!key.empty()) {
        if (run)
            state.idempotency.started(route, key, run.value());
        else
            state.idempotency.forget(route, key);
    }
    if (!run) {
        spdlog::info("run not started: route={} reason={} conversation={}", route, stop_reason_name(run.error().reason),
                     conversation);
        send_http_error(res, error_for_start(run.error()), run.error().message);
        return std::nullopt;
    }
    return run.value();
}

std::optional<agent::Mode> mode_of(const std::string& name, Response& res) {
    auto mode = agent::parse_mode(name);
    if (!mode) send_error(res, 400, "invalid_mode", "\"mode\" must be explore, plan or execute");
    return mode;
}

}  // namespace agenthost::server
