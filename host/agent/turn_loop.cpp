// The loop of a turn: starting and resuming a run, one model call per step, the model's context.
#include "agent/turn.hpp"

#include "agent/system_prompt.hpp"
#include "common/bounded_json.hpp"
#include "tools/tool_families.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

namespace agenthost::agent {
namespace {

using nlohmann::json;
using store::MessageKind;

constexpr const char* kProviderKey = "provider";
constexpr int kMalformedRepliesAllowed = 3;

using json_io::dump;

// Provider events are outside data: bounded and repaired like everything a plugin sends.
constexpr json_io::Limits kEventLimits{16u << 20, 64};

}  // namespace

// One provider reply, collected from its event stream while text deltas go through the extractor.
struct Reply {
    ToolCallStream extractor;
    std::function<void(TurnEvent)> emit;
    std::string raw_text;
    json native_calls = json::array();
    std::string stop;
    bool bad_event = false;
    std::string shown_text;    // the text events sent so far (what the user has seen)
    std::string attempt_text;  // the visible text of the current attempt
    bool diverged = false;     // the current attempt stopped repeating shown_text

    ah_status on_event(int32_t type, std::string_view data) {
        try {
            switch (type) {
                case AH_EVENT_TEXT: {
                    if (!json_io::valid_utf8(data)) {  // a provider's broken bytes never reach a dump
                        std::string repaired = json_io::repair_utf8(data);
                        return on_event(type, repaired);
                    }
                    raw_text.append(data);
                    VisibleDelta shown = extractor.feed(data);
                    if (!shown.reasoning.empty()) emit({.kind = TurnEvent::Kind::reasoning, .text = shown.reasoning});
                    if (!shown.content.empty()) show(shown.content);
                    break;
                }
                case AH_EVENT_REASONING: emit({.kind = TurnEvent::Kind::reasoning, .text = json_io::repair_utf8(data)}); break;
                case AH_EVENT_TOOL_CALL: {
                    auto read = json_io::parse(data, kEventLimits, json_io::Utf8::repair);
                    if (!read || !read->is_object() || !read->contains("name") || !(*read)["name"].is_string()) {
                        bad_event = true;
                        return AH_ERR_INVALID_ARGUMENT;
                    }
                    native_calls.push_back(std::move(*read));
                    break;
                }
                case AH_EVENT_STOP: {
                    auto read = json_io::parse(data, kEventLimits, json_io::Utf8::repair);
                    stop = read ? json_io::get_string(*read, "reason") : "";
                    break;
                }
                default: break;  // event types of newer minors
            }
            return AH_OK;
        } catch (const std::exception&) {
            bad_event = true;
            return AH_ERR_INVALID_ARGUMENT;
        }
    }

    // Text shown to the user cannot be taken back (an OpenAI stream has no way to), so after a
    // retry the new attempt's text is shown only where it goes past what was already shown. Models
    // usually write the same words again; when they do not, the new text starts on a new line.
    void show(const std::string& content) {
        attempt_text += content;
        if (!diverged) {
            size_t common = std::min(attempt_text.size(), shown_text.size());
            if (attempt_text.compare(0, common, shown_text, 0, common) == 0) {
                if (attempt_text.size() > shown_text.size()) {
                    emit({.kind = TurnEvent::Kind::text, .text = attempt_text.substr(shown_text.size())});
                    shown_text = attempt_text;
                }
                return;
            }
            diverged = true;
            const std::string note = "the retried reply differs from the text already shown; it follows on a new line";
            spdlog::warn("{}", note);
            emit({.kind = TurnEvent::Kind::log, .text = note, .level = "warn"});
            emit({.kind = TurnEvent::Kind::text, .text = "\n\n" + attempt_text});
            shown_text = attempt_text;
            return;
        }
        emit({.kind = TurnEvent::Kind::text, .text = content});
        shown_text = attempt_text;
    }

    // A failed attempt is retried: what it streamed is dropped from the answer (show() keeps the
    // user's view from repeating it).
    void restart(const ToolSet& tools) {
        attempt_text.clear();
        diverged = false;
        extractor = ToolCallStream(tools);
        raw_text.clear();
        native_calls = json::array();
        stop.clear();
        bad_event = false;
    }
};

int64_t session_start_turn(memory::AgentMemory& memory, std::string_view conversation) {
    auto saved = memory.store().get(conversation, kSessionStartKey);
    if (!saved) return 0;
    json value = json::parse(*saved, nullptr, false);
    return value.is_number_integer() ? value.get<int64_t>() : 0;
}

// Where a started or resumed run's events are numbered from: past its checkpoint's count
// (`checkpointed`), past what the caller knows was sent (events_after: another host's event log),
// and past a whole block per time the run was found abandoned by its process, which may have sent
// events after its last checkpoint that no one counted. So an SSE id is never given twice in a
// run's life, across crashes, resumes and takeovers.
uint64_t Turn::first_event_after(const store::RunRecord& run, uint64_t checkpointed) const {
    const uint64_t recovered = static_cast<uint64_t>(std::max<int64_t>(run.recoveries, 0)) * kEventsPerRecovery;
    return std::max({checkpointed, controls_.events_after, recovered});
}

Turn::Turn(const TurnDeps& deps, const RunControls& controls, store::LeaseKeeper& leases)
    : deps_(deps), controls_(controls), leases_(leases) {}

Turn::~Turn() = default;

void Turn::emit(TurnEvent event) {
    event.seq = ++st_.seq;
    if (controls_.on_event) controls_.on_event(event);
}

void Turn::log(const std::string& level, const std::string& message) {
    // The event first: a terminal printing the turn ends its "waiting" line before the log's line.
    emit({.kind = TurnEvent::Kind::log, .text = message, .level = level});
    spdlog::log(spdlog::level::from_str(level), "turn {} of {}: {}", st_.turn, st_.conversation, message);
}

TurnOutcome Turn::start(TurnRequest request) {
    std::string provider = choose_provider(request);
    // The prompt as the model is sent it, stored with the run; each model request writes it again
    // from the prompt (prompt_message), so a large one is held once.
    std::string prompt_body = prompt_message(request.prompt);
    // What the client sent with the prompt (its earlier messages, the request context) is stored
    // with the run, in the same commit: a run stopped before its first checkpoint starts again
    // from them, so that checkpoint need not be committed on its own.
    LoopState given;
    json history = json::parse(request.history_json.empty() ? "[]" : request.history_json, nullptr, false);
    given.history = json::array();
    if (history.is_array())
        for (const auto& m : history)
            if (m.is_object() && m.contains("role") && m.contains("content"))
                given.history.push_back({{"role", m["role"]}, {"content", m["content"]}});
    given.request_context = request.request_context_json.empty() ? "{}" : request.request_context_json;
    const bool has_inputs = !given.history.empty() || given.request_context != "{}";
    auto run = deps_.store.begin_run(request.conversation_id, mode_name(request.mode), provider, request.prompt, prompt_body,
                                     has_inputs ? dump(inputs_to_json(given)) : std::string(),
                                     store::RunStart{request.key, request.origin});
    if (!run) return failed_before_start(run.error());
    std::string().swap(prompt_body);  // given back now (assigning an empty string would keep its buffer)
    return begin(std::move(request), *run, provider, std::move(given.history), has_inputs);
}

TurnOutcome Turn::begin(TurnRequest request, const store::RunRecord& run, const std::string& provider, json history,
                        bool inputs_stored) {
    lease_.emplace(leases_, run.id);
    if (controls_.on_started) controls_.on_started(run.id);
    st_ = LoopState{};
    inputs_stored_ = inputs_stored;
    st_.seq = first_event_after(run, 0);  // a run started again from its prompt numbers its events after any sent
    st_.conversation = request.conversation_id;
    st_.run = run.id;
    st_.turn = run.turn;
    st_.mode = request.mode;
    st_.provider = provider;
    st_.model = request.model;
    st_.prompt = std::move(request.prompt);  // held once, for the run
    st_.request_context = request.request_context_json.empty() ? "{}" : request.request_context_json;

    read_plugin_context(false);
    for (const auto& e : deps_.memory.store().take_events(request.conversation_id)) {
        json body = json::parse(e.body, nullptr, false);
        std::string text = json_io::get_string(body, "message", e.body);
        st_.notifications.push_back("[" + e.plugin + "] " + text);
    }
    st_.history = std::move(history);
    pin();
    // The first checkpoint (resumable from here on) rides with the first write, unless the run holds
    // what a start from its prompt could not rebuild: events taken from the store (taken once, and
    // not among the inputs stored with the run). Those are written at once, with the inputs.
    const bool rebuildable = st_.notifications.empty();
    if (!rebuildable) {
        inputs_stored_ = false;
        if (auto outcome = commit({})) return *outcome;
    } else {
        hold({});
    }
    return loop();
}

void Turn::read_plugin_context(bool refresh) {
    plugins::CallInput hook;
    hook.conversation_id = st_.conversation;
    json hook_context = json::parse(st_.request_context, nullptr, false);
    if (!hook_context.is_object()) hook_context = json::object();
    if (refresh) hook_context["context_refresh"] = true;  // re-read, but act on the message only once
    // Context hooks may resolve mentions in the message; lent to the JSON and taken back, not copied
    // (a prompt may be megabytes).
    hook_context["user_message"] = std::move(st_.prompt);
    hook.request_context_json = dump(hook_context);
    st_.prompt = std::move(hook_context["user_message"].get_ref<std::string&>());
    hook.cancel = controls_.cancel;
    st_.plugin_context = deps_.registry.context(hook);
}

TurnOutcome Turn::resume(const store::RunRecord& run, const ResumeOptions& options) {
    auto cp = deps_.store.last_checkpoint(run.id);
    // A run that never took a step starts again from its prompt and the inputs stored with it.
    const std::string inputs_json = cp ? cp->inputs_json : deps_.store.run_inputs(run.id);
    json saved = cp ? json::parse(cp->state_json, nullptr, false) : json::object();
    auto state = loop_state_from_json(saved, inputs_json);
    if (state && !cp) {  // stopped between its creation and its first checkpoint: it never took a step
        // Nothing is committed yet (committed_state_ stays null): should this start fail too, its
        // end keeps no checkpoint, and the next resume starts from the prompt again.
        TurnRequest again;
        again.prompt = run.prompt;
        again.conversation_id = run.conversation;
        again.mode = options.mode.value_or(tools::parse_mode(run.mode).value_or(Mode::execute));
        again.model = options.model;
        again.request_context_json = state->request_context.empty() ? "{}" : state->request_context;
        std::string provider = options.provider.empty() ? run.provider : options.provider;
        spdlog::info("run {} had no checkpoint: it starts again from its prompt", run.id);
        return begin(std::move(again), run, provider, std::move(state->history), !inputs_json.empty());
    }
    // A checkpoint written before inputs were stored apart holds them itself: they are stored with the next write.
    inputs_stored_ = !inputs_json.empty();
    committed_state_ = std::move(saved);
    if (!state) {
        // Claimed but unreadable (written by a newer version, or damaged): hand it back as
        // interrupted with its checkpoint untouched, so it is not left `running` and a version that
        // reads it can still resume it.
        std::string why = "run " + std::to_string(run.id) + " cannot be resumed from its checkpoint: " + state.error().message;
        store::RunEnd end;
        end.stop_reason = StopReason::interrupted;
        end.error = why;
        end.counters = run.counters;
        if (auto st = deps_.store.end_run(run.id, end); !st)
            spdlog::error("{}; and it could not be released: {}", why, st.error().message);
        return refused(StopReason::run_not_resumable, why, run.id);
    }
    lease_.emplace(leases_, run.id);
    if (controls_.on_started) controls_.on_started(run.id);
    st_ = std::move(*state);
    if (st_.prompt.empty()) st_.prompt = run.prompt;  // checkpoints leave it to the run's record
    if (st_.provider.empty()) st_.provider = run.provider;
    st_.seq = first_event_after(run, st_.seq);
    // What the run is comes from its record, whatever the checkpoint says.
    st_.run = run.id;
    st_.conversation = run.conversation;
    st_.turn = run.turn;
    if (options.mode) st_.mode = *options.mode;
    if (!options.provider.empty()) {
        st_.provider = options.provider;
        st_.model = "";  // the new provider's own model unless one is named
    }
    if (!options.model.empty()) st_.model = options.model;

    for (const auto& m : deps_.store.run_messages(run.id, 0)) {
        json body = json::parse(m.body);
        for (const auto& c : body.value("tool_calls", json::array())) used_ids_.insert(c.value("id", ""));
        if (m.kind == MessageKind::prompt)
            pin();  // the prompt itself is written from the run's record (prompt_message)
        else if (m.id >= st_.working_from && m.id <= cp->last_message)
            add_working(dump(body), m.id);
    }
    // Calls that were pending when the process stopped may have started: the journal says.
    for (const ToolCall& c : st_.pending) unsure_.insert(c.id);
    log("info", "resumed run " + std::to_string(run.id) + " at iteration " + std::to_string(st_.iteration) + " (was " +
                    std::string(run_status_name(run.status)) + ")");

    bool awaiting = st_.awaiting.has_value();
    st_.awaiting.reset();
    if (awaiting && options.decision.kind != ApprovalDecision::Kind::later && !st_.pending.empty()) {
        ToolCall call = std::move(st_.pending.front());
        st_.pending.pop_front();
        if (auto outcome = decide(call, options.decision)) return *outcome;
    }
    return loop();
}

std::optional<ApprovalRequest> Turn::waiting(const LoopState& saved) {
    if (!saved.awaiting || saved.pending.empty()) return std::nullopt;
    const ToolCall& call = saved.pending.front();
    return ApprovalRequest{saved.conversation, call.id, call.name, dump(call.arguments), *saved.awaiting};
}

// The request's provider (remembered for the conversation), else the conversation's, else the default.
std::string Turn::choose_provider(const TurnRequest& request) {
    const std::string conversation = request.conversation_id;
    if (!request.provider.empty()) {
        (void)deps_.memory.store().set(conversation, kProviderKey, dump(json(request.provider)));
        return request.provider;
    }
    if (auto saved = deps_.memory.store().get(conversation, kProviderKey)) {
        json name = json::parse(*saved, nullptr, false);
        if (name.is_string() && deps_.config.provider_named(name.get<std::string>())) return name;
    }
    return deps_.config.provider.name;
}

// The previous exchanges of the conversation and the messages the client sent before the prompt.
void Turn::pin() {
    const int64_t from = session_start_turn(deps_.memory, st_.conversation);  // clear-session hides what came before
    for (const auto& m : deps_.store.exchanges(st_.conversation, st_.turn, deps_.config.agent.pinned_exchanges))
        if (m.turn >= from) pinned_.push_back(dump(json::parse(m.body)));
    for (const auto& m : st_.history) pinned_.push_back(dump(m));
}

// The prompt's message as dump() writes {"role": "user", "content": prompt} (keys sorted).
std::string Turn::prompt_message(std::string_view prompt) {
    std::string out;
    out.reserve(prompt.size() + prompt.size() / 16 + 32);
    append_prompt_message(out, prompt);
    return out;
}

void Turn::append_prompt_message(std::string& out, std::string_view prompt) {
    out += "{\"content\":";
    json_io::append_json_string(out, prompt);
    out += ",\"role\":\"user\"}";
}

store::RunCounters Turn::counters() const { return {st_.iteration, st_.tool_calls, st_.input_tokens, st_.output_tokens}; }

// The checkpoint of a step counts the events the caller emits once it is stored, so a resumed run
// numbers its events after them.
json Turn::checkpoint_state(uint64_t events_after) {
    json state = to_json(st_);
    state["seq"] = st_.seq + events_after;
    return state;
}

TurnStop Turn::commit(std::vector<store::NewMessage> messages, const std::string& call_id, const json& result,
                      uint64_t events_after) {
    store::StepWrite step;
    step.messages = take_held_messages();  // a held step's messages come first
    step.messages.insert(step.messages.end(), std::make_move_iterator(messages.begin()), std::make_move_iterator(messages.end()));
    step.journal_call_id = call_id;  // its result is the last message's (record() puts it there)
    if (!call_id.empty()) {
        if (json_io::get_bool(result, "is_error", false))  // stable codes; the tool's own code stays in the result
            step.journal_error_code =
                json_io::get_string(result, "error_code") == "plugin_failure" ? "PLUGIN_FAILURE" : "TOOL_FAILURE";
    }
    step.counters = counters();
    json state = checkpoint_state(events_after);
    step.state_json = dump(state);
    return write(std::move(step), std::move(state));
}

void Turn::hold(std::vector<store::NewMessage> messages) {
    HeldStep held;
    held.step.messages = take_held_messages();
    held.step.messages.insert(held.step.messages.end(), std::make_move_iterator(messages.begin()),
                              std::make_move_iterator(messages.end()));
    held.step.counters = counters();
    held.state = checkpoint_state();
    held.step.state_json = dump(held.state);
    held_ = std::move(held);
}

std::vector<store::NewMessage> Turn::take_held_messages() {
    std::vector<store::NewMessage> messages = held_ ? std::move(held_->step.messages) : std::vector<store::NewMessage>{};
    held_.reset();
    return messages;
}

TurnStop Turn::write_held(std::optional<store::ToolIntent> intent, store::Flush flush) {
    HeldStep held = std::move(*held_);
    held_.reset();
    held.step.intent = std::move(intent);
    held.step.flush = flush;
    return write(std::move(held.step), std::move(held.state));
}

TurnStop Turn::commit_intent(const ToolCall& call, const tools::Tool& tool) {
    store::ToolIntent intent{call.id, tool.name, dump(call.arguments)};
    // The intent of a call that may run twice (read-only or idempotent) need not reach the disk
    // before the call: a power cut that loses it loses the result too (syncing the result syncs
    // it), and the run redoes both. A killed process loses neither. A call that changes things
    // waits for the disk, so that after any stop its outcome is known to be unknown.
    const store::Flush flush = tool.repeatable() ? store::Flush::with_next : store::Flush::now;
    // With the held reply, whose checkpoint still lists this call as pending: a crash during the
    // call resumes to it, and the journal says it started.
    if (held_) return write_held(std::move(intent), flush);
    if (auto st = deps_.store.journal_intent(st_.run, intent, flush); !st) return store_failed(st.error());
    return std::nullopt;
}

std::string Turn::inputs_to_store() const { return inputs_stored_ ? std::string() : dump(inputs_to_json(st_)); }

TurnStop Turn::write(store::StepWrite step, json state) {
    step.inputs_json = inputs_to_store();
    auto ids = deps_.store.write_step(st_.run, step);
    if (!ids) return store_failed(ids.error());
    inputs_stored_ = true;
    committed_state_ = std::move(state);
    for (size_t i = 0; i < step.messages.size(); ++i) add_working(step.messages[i].body, (*ids)[i]);
    return std::nullopt;
}

int Turn::cap() const {
    switch (st_.mode) {
        case Mode::explore: return deps_.config.limits.explore_iterations;
        case Mode::plan: return deps_.config.limits.plan_iterations;
        case Mode::execute: break;
    }
    return deps_.config.limits.execute_iterations;
}

TurnOutcome Turn::loop() {
    while (true) {
        if (!st_.pending.empty()) {
            ToolCall call = std::move(st_.pending.front());
            st_.pending.pop_front();
            if (auto outcome = handle_call(call)) return *outcome;
            continue;
        }
        if (cancelled()) return stop(StopReason::cancelled, "", "the turn was cancelled");
        if (stopping())
            return stop(StopReason::interrupted, "", "the host is shutting down: the run stops at this step, to be resumed");
        if (st_.iteration >= cap()) return final_summary();
        if (int every = deps_.config.agent.prune_every; st_.iteration > 0 && st_.iteration % every == 0) prune();
        if (auto outcome = step()) return *outcome;
    }
}

// One model call and what follows from its reply.
TurnStop Turn::step() {
    // The first call, and the retry of a call cut by the output limit, get the larger budget.
    int max_tokens = st_.iteration == 0 || st_.retried_cut ? deps_.config.agent.first_max_tokens : deps_.config.agent.max_tokens;
    auto call = call_model(true, max_tokens);
    if (!call.reply) {
        if (stopping())
            return stop(StopReason::interrupted, "", "the host is shutting down: the run stops at this step, to be resumed");
        return stop(call.failure, "", call.message);
    }
    Reply& r = *call.reply;
    ++st_.iteration;

    Extraction found = r.extractor.finish();
    std::vector<ToolCall> calls;
    for (const json& c : r.native_calls) {
        ToolCall call;
        call.id = json_io::get_string(c, "id");
        call.name = c["name"].get<std::string>();
        if (auto a = c.find("arguments"); a != c.end() && !a->is_null()) call.arguments = *a;
        if (call.arguments.is_string()) {  // a provider that passes the JSON text through
            std::string text = call.arguments;
            json decoded = text.empty() ? json::object() : json::parse(text, nullptr, false);
            if (!decoded.is_discarded()) call.arguments = std::move(decoded);
        }
        calls.push_back(std::move(call));
    }
    if (calls.empty())
        for (const auto& c : found.calls) calls.push_back({"", c.name, json::parse(c.arguments_json)});

    if (calls.empty() && (found.incomplete || !found.problems.empty())) return malformed(r, found, max_tokens);
    st_.malformed = 0;
    st_.retried_cut = false;  // a later cut call gets its own retry
    if (int budget = deps_.config.limits.token_budget; budget > 0 && st_.tokens() >= budget)
        return stop(StopReason::token_budget, found.content,
                    "the turn used " + std::to_string(st_.tokens()) + " tokens, its budget is " + std::to_string(budget) +
                        " ([limits] token_budget)");

    if (calls.empty()) return answer(found.content, StopReason::answered);

    json assistant{{"role", "assistant"}, {"content", found.content}, {"tool_calls", json::array()}};
    for (size_t i = 0; i < calls.size(); ++i) {
        ToolCall& c = calls[i];
        // Ids key the journal, so they must be unique in the run; a provider's own id is kept when it is.
        if (c.id.empty() || used_ids_.count(c.id))
            c.id = "call_" + std::to_string(st_.run) + "_" + std::to_string(st_.iteration) + "_" + std::to_string(i);
        used_ids_.insert(c.id);
        assistant["tool_calls"].push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
    }
    st_.pending.assign(std::make_move_iterator(calls.begin()), std::make_move_iterator(calls.end()));
    hold({{MessageKind::step, dump(assistant)}});  // written with its first call's intent, result or refusal
    return std::nullopt;
}

// A reply whose call could not be read: retry once when the output limit cut it, else tell the
// model what was wrong so it can write the call again.
TurnStop Turn::malformed(const Reply& reply, const Extraction& found, int max_tokens) {
    bool cut = found.incomplete && reply.stop == "max_tokens";
    json assistant{{"role", "assistant"}, {"content", reply.raw_text}};
    std::string note;
    if (cut) {
        if (st_.retried_cut)
            return stop(StopReason::output_truncated, "",
                        "the model's tool call was cut off by the output limit twice (max_tokens " + std::to_string(max_tokens) +
                            "); raise [agent] max_tokens / first_max_tokens");
        st_.retried_cut = true;
        note = "Your reply was cut off by the output limit (" + std::to_string(max_tokens) +
               " tokens) in the middle of a tool call, so the call was not run. Send the complete call again, "
               "on its own, with arguments as short as possible.";
        log("warn", "a tool call was cut off by max_tokens; asking the model to finish it");
    } else {
        if (++st_.malformed > kMalformedRepliesAllowed)
            return stop(StopReason::malformed_output, "",
                        "the model wrote unreadable tool calls " + std::to_string(kMalformedRepliesAllowed + 1) +
                            " times in a row: " + (found.problems.empty() ? "" : found.problems.front()));
        std::string problems;
        for (const auto& p : found.problems) problems += (problems.empty() ? "" : "; ") + p;
        std::string names;
        for (const auto& t : offered_tools()) names += (names.empty() ? "" : ", ") + t["name"].get<std::string>();
        note = "Your last reply tried to call a tool, but the call could not be used (" + problems +
               "). Nothing was run. Available tools: " + names +
               ". Write the call again with valid JSON arguments, or answer in plain text.";
        log("warn", "unusable tool call from the model: " + problems);
    }
    return commit({{MessageKind::step, dump(assistant)}, {MessageKind::step, dump({{"role", "user"}, {"content", note}})}});
}

// ---- context ----

// The plugins' tools can change during a turn (a plugin's tools_changed, a disabled plugin): the
// caches follow the registry's snapshot.
void Turn::refresh_tool_caches() {
    auto now = deps_.catalogue.registry().tools();
    if (now == cached_snapshot_) return;
    cached_snapshot_ = std::move(now);
    offered_cache_.reset();
    offered_text_cache_.reset();
    known_cache_.reset();
}

// The tools the mode offers (a plugin tool named like a built-in is shadowed by the built-in),
// but for the families offered on demand that this conversation has not loaded (load_tools is
// offered while there are some).
const json& Turn::offered_tools() {
    refresh_tool_caches();
    if (offered_cache_) return *offered_cache_;
    auto waiting = tools::on_demand_families(deps_.catalogue, deps_.memory, st_.conversation, deps_.config.agent.on_demand_tools);
    held_families_.clear();
    for (const auto& f : waiting) held_families_.insert(f.plugin);
    on_demand_text_ = tools::describe_families(waiting);
    json tools = json::array();
    for (const tools::Tool& t : deps_.catalogue.all()) {
        if (!tools::offered(t, st_.mode) || (t.source == tools::Tool::Source::plugin && held_families_.count(t.plugin))) continue;
        if (t.source == tools::Tool::Source::builtin && t.name == tools::kLoadToolsName && held_families_.empty()) continue;
        tools.push_back({{"name", t.name}, {"description", t.description}, {"parameters", json::parse(t.input_schema_json)}});
    }
    return *(offered_cache_ = std::move(tools));
}

// A family is loaded by load_tools, or by the model calling one of its tools by name: from the
// next request on, its tools are offered.
void Turn::note_family_use(const tools::Tool& tool) {
    bool changed = tool.source == tools::Tool::Source::builtin && tool.name == tools::kLoadToolsName;
    // Only a family still held is read and written: a call of an offered tool costs nothing here.
    if (tool.source == tools::Tool::Source::plugin && held_families_.count(tool.plugin)) {
        auto loaded = tools::load_family(deps_.memory, st_.conversation, tool.plugin);
        changed = loaded && *loaded;
    }
    if (!changed) return;
    offered_cache_.reset();
    offered_text_cache_.reset();
}

// Every tool the model could name, offered or not, so a call the mode forbids is still recognised.
const ToolSet& Turn::known_tools() {
    refresh_tool_caches();
    if (known_cache_) return *known_cache_;
    ToolSet set;
    for (const tools::Tool& t : deps_.catalogue.all()) set.add(t.name, t.input_schema_json);
    return *(known_cache_ = std::move(set));
}

const std::string& Turn::offered_tools_text() {
    const json& tools = offered_tools();  // refreshes the caches
    if (!offered_text_cache_) offered_text_cache_ = dump(tools);
    return *offered_text_cache_;
}

void Turn::add_working(std::string message_json, int64_t id) {
    bool tool_result = json_io::get_string(json::parse(message_json, nullptr, false), "role") == "tool";
    working_.push_back({std::move(message_json), tool_result});
    working_ids_.push_back(id);
}

std::string Turn::request_text(const std::string& tools_text, int max_tokens) {
    PromptInputs in;
    in.base = deps_.config.agent.system_prompt;
    in.mode = mode_name(st_.mode);
    in.prompt = st_.prompt;
    in.plugin_context = st_.plugin_context;
    in.request_context_json = st_.request_context;
    in.notifications = st_.notifications;
    offered_tools();  // builds on_demand_text_ with the offered tools
    in.on_demand_tools = on_demand_text_;
    const std::string system = dump({{"role", "system"}, {"content", build_system_prompt(deps_.memory, st_.conversation, in)}});
    size_t size = system.size() + tools_text.size() + st_.model.size() + 128;
    for (const auto& m : pinned_) size += m.size() + 1;
    size += st_.prompt.size() + st_.prompt.size() / 16 + 32;  // escapes are few
    for (const auto& m : working_) size += m.json.size() + 1;
    // The keys in the order a serialised object has them (sorted).
    std::string out;
    out.reserve(size);
    out += "{\"max_tokens\":";
    out += std::to_string(max_tokens);
    out += ",\"messages\":[";
    out += system;
    for (const auto& m : pinned_) (out += ',') += m;
    out += ',';
    append_prompt_message(out, st_.prompt);
    for (const auto& m : working_) (out += ',') += m.json;
    out += "],\"model\":";
    out += dump(json(st_.model));
    out += ",\"stream\":true,\"tool_choice\":";
    out += tools_text == "[]" ? "\"none\"" : "\"auto\"";
    out += ",\"tools\":";
    out += tools_text;
    out += '}';
    return out;
}

// Keeps the last keep_messages working messages, widened so no tool result loses its call.
void Turn::prune() {
    size_t keep = static_cast<size_t>(deps_.config.agent.keep_messages);
    if (working_.size() <= keep) return;
    size_t start = working_.size() - keep;
    while (start > 0 && working_[start].tool_result) --start;
    if (start == 0) return;
    working_.erase(working_.begin(), working_.begin() + static_cast<std::ptrdiff_t>(start));
    working_ids_.erase(working_ids_.begin(), working_ids_.begin() + static_cast<std::ptrdiff_t>(start));
    st_.working_from = working_ids_.front();  // the next checkpoint records where the window starts
    log("info", "pruned " + std::to_string(start) + " older messages from the model's context");
}

// ---- the model ----

ModelCall Turn::call_model(bool offer_tools, int max_tokens) {
    emit({.kind = TurnEvent::Kind::model_request, .text = "iteration " + std::to_string(st_.iteration + 1)});
    static const std::string kNoTools = "[]";
    plugins::CallInput call;
    call.call_id = st_.conversation + "-" + std::to_string(st_.turn) + "-llm-" + std::to_string(st_.iteration);
    call.conversation_id = st_.conversation;
    call.arguments_json = request_text(offer_tools ? offered_tools_text() : kNoTools, max_tokens);
    call.request_context_json = st_.request_context;
    call.cancel = controls_.cancel;

    auto reply = std::make_unique<Reply>();
    reply->extractor = ToolCallStream(known_tools());
    reply->emit = [this](TurnEvent e) { emit(std::move(e)); };
    llm::ChatCallbacks callbacks;
    callbacks.on_event = [&](int32_t type, std::string_view data) { return reply->on_event(type, data); };
    callbacks.on_retry = [&](const llm::RetryNotice& n) {
        reply->restart(known_tools());
        char delay[32];
        std::snprintf(delay, sizeof delay, "%.1f", n.delay_s);
        log("warn", "the model request failed (" + n.type + ": " + n.message + "); attempt " + std::to_string(n.attempt + 1) +
                        " of " + std::to_string(n.max_attempts) + " in " + delay + " s");
        // Waiting again: a terminal shows its waiting line for the next attempt too.
        emit({.kind = TurnEvent::Kind::model_request,
              .text = "iteration " + std::to_string(st_.iteration + 1) + ", attempt " + std::to_string(n.attempt + 1) + " of " +
                      std::to_string(n.max_attempts)});
    };
    callbacks.on_queued = [&](size_t ahead) { emit({.kind = TurnEvent::Kind::queued, .text = std::to_string(ahead)}); };
    callbacks.give_up_waiting = [this] { return stopping(); };  // shutting down: a call not started is not started
    llm::ChatOutcome outcome = deps_.model.chat(st_.provider, call, callbacks);
    st_.input_tokens += outcome.input_tokens;
    st_.output_tokens += outcome.output_tokens;
    if (outcome.attempts > 0 && (outcome.ok || outcome.input_tokens > 0))
        emit({.kind = TurnEvent::Kind::usage,
              .json = dump({{"input_tokens", outcome.input_tokens},
                            {"output_tokens", outcome.output_tokens},
                            {"estimated", outcome.usage_estimated},
                            {"attempts", outcome.attempts}})});
    if (!outcome.ok && outcome.stop_reason == StopReason::store_failure) {  // the provider saw only AH_ERR_IO: say why
        std::string why = deps_.registry.services().last_store_failure();
        return {nullptr, outcome.stop_reason, outcome.error_message + (why.empty() ? "" : " (the store said: " + why + ")")};
    }
    if (!outcome.ok) return {nullptr, outcome.stop_reason, outcome.error_message};
    if (cancelled()) return {nullptr, StopReason::cancelled, "the turn was cancelled"};
    if (reply->bad_event)
        return {nullptr, StopReason::provider_failure, "provider '" + st_.provider + "' sent a malformed event"};
    return {std::move(reply), StopReason::answered, ""};
}

TurnOutcome Turn::final_summary() {
    log("warn", "reached the cap of " + std::to_string(cap()) + " iterations; asking for a final summary");
    json note{{"role", "user"},
              {"content", "You have reached the limit of " + std::to_string(cap()) +
                              " iterations for this turn. Do not call any tools. Reply with a short summary for the "
                              "user: what you did, where things stand, and what is left."}};
    if (auto outcome = commit({{MessageKind::step, dump(note)}})) return *outcome;
    std::string summary;
    if (auto call = call_model(false, deps_.config.agent.max_tokens); call.reply)
        summary = call.reply->extractor.finish().content;
    if (summary.empty()) summary = "I stopped after " + std::to_string(cap()) + " iterations without finishing.";
    final_message_ = summary;
    return stop(StopReason::iteration_limit, summary,
                "the turn reached its cap of " + std::to_string(cap()) + " iterations in " + mode_name(st_.mode) +
                    " mode (raise [limits] " + mode_name(st_.mode) + "_iterations)");
}

}  // namespace agenthost::agent
