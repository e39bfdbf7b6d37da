// What the two ways to start a run over HTTP (/v1/chat/completions and POST /api/chat) decide the
// same way: a conversation id a new run may use, a run's settled outcome, and Idempotency-Key
// replays of a run an earlier request started.
#pragma once

#include "agent/turn_runner.hpp"
#include "server/routes/routes.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace agenthost::server {

// How long an event stream waits for a run's next event before it sends a keep-alive comment.
inline constexpr auto kStreamWait = std::chrono::seconds(15);

// The agent mode a request names; nullopt after answering the 400.
std::optional<agent::Mode> mode_of(const std::string& name, Response& res);

// A run id as a request gives it (path or query): digits only, positive, within int64; nullopt
// otherwise ("1.5", "+1", "01" and a 20-digit number are not ids, not some other run).
std::optional<int64_t> parse_run_id(std::string_view text);

// The stored run `id`, or nullopt with the answer sent: 404 when there is none, 503
// store_unavailable (Retry-After) when the store cannot be read now — finding nothing in a database
// out of reach proves nothing.
std::optional<store::RunRecord> stored_run(ServerState& state, int64_t id, Response& res);
// 503 store_unavailable with Retry-After: the answer when the store cannot be read now.
void send_store_unavailable(Response& res, const Error& why);

// A run's outcome once it has ended: from its channel while this server keeps its events, else
// from the store; nullopt while it runs.
std::optional<agent::TurnOutcome> settled_outcome(ServerState& state, int64_t run);

// A new conversation's id is bounded and plain (store::conversation_id_problem); one the store
// already has is accepted as it is. False after answering the 400.
bool conversation_allowed(ServerState& state, const std::string& id, Response& res);

// Idempotency-Key on `route`: true when the request was answered — `replay` called with the run
// an earlier request started, or a 400/409/422 — and false when it is the key's first use (or
// there is no key), in which case the caller starts the run with start_run(). `print`: the body's
// IdempotencyKeys::fingerprint, computed once by the caller for both.
bool idempotent_replay(ServerState& state, const Request& req, const std::string& route, uint64_t print, Response& res,
                       const std::function<void(int64_t run)>& replay);
// Starts `request`'s run and records it under the request's Idempotency-Key (a run that could not
// start frees the key); nullopt after answering why it could not start (error_table.hpp).
// `print` is the digest of the request's body (IdempotencyKeys::fingerprint): the key and it go
// with the run.
std::optional<int64_t> start_run(ServerState& state, const Request& req, const std::string& route, uint64_t print,
                                 agent::TurnRequest request, Response& res);

}  // namespace agenthost::server
