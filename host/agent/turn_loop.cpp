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

// A native call's "provider_data" (a signature or reasoning item the provider must get back with
// the call in later requests), kept when it is small enough to resend every step; null otherwise.
json kept_provider_data(const json& call) {
    constexpr size_t kMaxProviderData = size_t{64} * 1024;
    auto it = call.find("provider_data");
    if (it == call.end() || it->is_null()) return nullptr;
    std::string text = it->dump();
    if (text.size() <= kMaxProviderData) return *it;
    spdlog::warn(
        "a tool call's provider_data ({} bytes) is over the {} bytes kept: dropped; the provider may refuse "
        "the next request",
        text.size(), kMaxProviderData);
    return nullptr;
}
}  // namespace

// One provider reply, collected from its event stream while text deltas go through the extractor.
struct Reply {
    ToolCallStream extractor;
    std::function<void(TurnEventBody)> emit;
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
                    if (!shown.reasoning.empty()) emit(events::Reasoning{shown.reasoning});
                    if (!shown.content.empty()) show(shown.content);
                    break;
                }
                case AH_EVENT_REASONING: emit(events::Reasoning{json_io::repair_utf8(data)}); break;
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
                    emit(events::Text{attempt_text.substr(shown_text.size())});
                    shown_text = attempt_text;
                }
                return;
            }
            diverged = true;
            const std::string note = "the retried reply differs from the text already shown; it follows on a new line";
            spdlog::warn("{}", note);
            emit(events::Log{EventLevel::warn, note});
            emit(events::Text{"\n\n" + attempt_text});
            shown_text = attempt_text;
            return;
        }
        emit(events::Text{content});
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
    if (!saved || !*saved) return 0;  // unreadable: the whole conversation is pinned, nothing is lost
    json value = json::parse(**saved, nullptr, false);
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
    : deps_(deps), controls_(controls), leases_(leases), offer_(deps.catalogue, deps.memory, deps.config.agent.on_demand_tools) {}

Turn::~Turn() = default;

void Turn::emit(TurnEventBody body) {
    TurnEvent event{++st_.seq, std::move(body)};
    if (controls_.on_event) controls_.on_event(event);
}

void Turn::log(EventLevel level, const std::string& message) {
    // The event first: a terminal printing the turn ends its "waiting" line before the log's line.
    emit(events::Log{level, message});
    static constexpr spdlog::level::level_enum kSpdlogLevel[] = {spdlog::level::info, spdlog::level::warn, spdlog::level::err};
    spdlog::log(kSpdlogLevel[static_cast<size_t>(level)], "turn {} of {}: {}", st_.turn, st_.conversation, message);
}

TurnOutcome Turn::start(TurnRequest request) {
    auto chosen = choose_provider(request);
    if (!chosen) return failed_before_start(chosen.error(), request.conversation_id);
    const std::string provider = std::move(*chosen);
    // The prompt as the model is sent it, stored with the run; each model request writes it again
    // from the prompt (prompt_message), so a large one is held once.
    std::string prompt_body = ContextWindow::prompt_message(request.prompt);
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
    auto run = deps_.journal.begin_run(
        request.conversation_id, request.mode, provider, request.prompt, prompt_body,
        has_inputs ? dump(inputs_to_json(given)) : std::string(),
        store::RunStart{request.key, request.origin, requested_model(request, provider), request.after_turn});
    if (!run) return failed_before_start(run.error(), request.conversation_id);
    std::string().swap(prompt_body);  // given back now (assigning an empty string would keep its buffer)
    return begin(std::move(request), *run, provider, std::move(given.history), has_inputs);
}

TurnOutcome Turn::begin(TurnRequest request, const store::RunRecord& run, const std::string& provider, json history,
                        bool inputs_stored) {
    lease_.emplace(leases_, run.id);
    if (controls_.on_started) controls_.on_started(run.id);
    st_ = LoopState{};
    writer_.begin_with(nullptr, inputs_stored);
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
    if (auto pinned = pin(); !pinned) return stop(StopReason::store_failure, "", pinned.error().message);
    // The first checkpoint (resumable from here on) rides with the first write, unless the run holds
    // what a start from its prompt could not rebuild: events taken from the store (taken once, and
    // not among the inputs stored with the run). Those are written at once, with the inputs.
    const bool rebuildable = st_.notifications.empty();
    if (!rebuildable) {
        writer_.begin_with(nullptr, false);
        if (auto outcome = stored(writer_.commit({}))) return outcome.take();
    } else {
        writer_.hold({});
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

// Gives a claimed run back as interrupted, its checkpoint untouched, so it is not left `running`
// and a later resume (or a version that reads it) can still take it; the refusal says why.
TurnOutcome Turn::hand_back(const store::RunRecord& run, StopReason refusal, const std::string& why) {
    store::RunEnd end;
    end.stop_reason = StopReason::interrupted;
    end.error = why;
    end.counters = run.counters;
    if (auto st = deps_.journal.end_run(run.id, end); !st)
        spdlog::error("{}; and it could not be released: {}", why, st.error().message);
    return refused(refusal, why, run.id);
}

TurnOutcome Turn::resume(const store::RunRecord& run, const ResumeOptions& options) {
    const std::string run_name = "run " + std::to_string(run.id);
    auto read = deps_.journal.last_checkpoint(run.id);
    if (!read)  // not "never took a step": starting over would write over the checkpoint
        return hand_back(run, StopReason::store_unavailable,
                         run_name + " cannot be resumed now: its checkpoint could not be read: " + read.error().message);
    const std::optional<store::Checkpoint>& cp = *read;
    // A run that never took a step starts again from its prompt and the inputs stored with it.
    auto stored_inputs = cp ? Result<std::string>(cp->inputs_json) : deps_.journal.run_inputs(run.id);
    if (!stored_inputs)  // starting without them would lose what the client sent with the prompt
        return hand_back(run, StopReason::store_unavailable,
                         run_name + " cannot be resumed now: its inputs could not be read: " + stored_inputs.error().message);
    const std::string inputs_json = std::move(*stored_inputs);
    json saved = cp ? json::parse(cp->state_json, nullptr, false) : json::object();
    auto state = loop_state_from_json(saved, inputs_json);
    // Stopped between its creation and its first checkpoint: it never took a step.
    if (state && !cp) return start_over(run, options, std::move(*state), !inputs_json.empty());
    // A checkpoint written before inputs were stored apart holds them itself: they are stored with the next write.
    writer_.begin_with(std::move(saved), !inputs_json.empty());
    if (!state)  // written by a newer version, or damaged
        return hand_back(run, StopReason::run_not_resumable,
                         run_name + " cannot be resumed from its checkpoint: " + state.error().message);
    auto messages = deps_.journal.run_messages(run.id, 0);
    if (!messages)
        return hand_back(run, StopReason::store_unavailable,
                         run_name + " cannot be resumed now: its messages could not be read: " + messages.error().message);
    std::vector<json> bodies;
    bodies.reserve(messages->size());
    for (const auto& m : *messages) {
        bodies.push_back(json::parse(m.body, nullptr, false));
        if (bodies.back().is_discarded())
            return hand_back(run, StopReason::run_not_resumable,
                             run_name + " cannot be resumed: its stored message " + std::to_string(m.id) + " is not valid JSON");
    }
    lease_.emplace(leases_, run.id);
    if (controls_.on_started) controls_.on_started(run.id);
    adopt(std::move(*state), run, options);
    for (size_t i = 0; i < messages->size(); ++i) {
        const store::StoredMessage& m = (*messages)[i];
        const json& body = bodies[i];
        if (auto calls = body.find("tool_calls"); body.is_object() && calls != body.end() && calls->is_array())
            for (const auto& c : *calls)
                if (c.is_object()) calls_.note_used(json_io::get_string(c, "id", ""));
        if (m.kind == MessageKind::prompt) {
            // The prompt itself is written from the run's record (prompt_message).
            if (auto pinned = pin(); !pinned) return stop(StopReason::store_failure, "", pinned.error().message);
        } else if (m.id >= st_.working_from && m.id <= cp->last_message)
            window_.add(dump(body), m.id);
    }
    // Calls that were pending when the process stopped may have started: the journal says.
    for (const ToolCall& c : st_.pending) calls_.mark_unsure(c.id);
    log(EventLevel::info, "resumed run " + std::to_string(run.id) + " at iteration " + std::to_string(st_.iteration) + " (was " +
                              std::string(run_status_name(run.status)) + ")");

    bool awaiting = st_.awaiting.has_value();
    st_.awaiting.reset();
    if (awaiting && options.decision.kind != ApprovalDecision::Kind::later && !st_.pending.empty()) {
        ToolCall call = std::move(st_.pending.front());
        st_.pending.pop_front();
        if (auto outcome = ended(calls_.decide(call, options.decision))) return outcome.take();
    }
    return loop();
}

TurnOutcome Turn::start_over(const store::RunRecord& run, const ResumeOptions& options, LoopState saved, bool has_inputs) {
    // Nothing is committed yet (the writer's committed state stays null): should this start fail too, its
    // end keeps no checkpoint, and the next resume starts from the prompt again.
    TurnRequest again;
    again.prompt = run.prompt;
    again.conversation_id = run.conversation;
    again.mode = options.mode.value_or(run.mode);
    again.model = options.model;
    again.request_context_json = saved.request_context.empty() ? "{}" : saved.request_context;
    std::string provider = options.provider.empty() ? run.provider : options.provider;
    spdlog::info("run {} had no checkpoint: it starts again from its prompt", run.id);
    return begin(std::move(again), run, provider, std::move(saved.history), has_inputs);
}

void Turn::adopt(LoopState saved, const store::RunRecord& run, const ResumeOptions& options) {
    st_ = std::move(saved);
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
}

std::optional<ApprovalRequest> Turn::waiting(const LoopState& saved) {
    if (!saved.awaiting || saved.pending.empty()) return std::nullopt;
    const ToolCall& call = saved.pending.front();
    return ApprovalRequest{saved.conversation, call.id, call.name, dump(call.arguments), *saved.awaiting};
}

// The request's provider (remembered for the conversation), else the conversation's, else the
// default. A conversation whose choice cannot be read is not silently moved to the default.
// The model a run asks for, as it is recorded: the request's, else the provider's configured one.
std::string Turn::requested_model(const TurnRequest& request, const std::string& provider) const {
    if (!request.model.empty()) return request.model;
    const config::ProviderSettings* settings = deps_.config.provider_named(provider);
    return settings ? settings->model : std::string();
}

Result<std::string> Turn::choose_provider(const TurnRequest& request) {
    const std::string conversation = request.conversation_id;
    if (!request.provider.empty()) {
        // Remembered with the run's start (begin_run's transaction carries it), not on its own.
        (void)deps_.memory.store().set(conversation, kProviderKey, dump(json(request.provider)), store::Flush::with_next_write);
        return request.provider;
    }
    auto saved = deps_.memory.store().get(conversation, kProviderKey);
    if (!saved) return saved.error();
    if (*saved) {
        json name = json::parse(**saved, nullptr, false);
        if (name.is_string() && deps_.config.provider_named(name.get<std::string>())) return name.get<std::string>();
    }
    return deps_.config.provider.name;
}

// The previous exchanges of the conversation and the messages the client sent before the prompt.
// An Error when they cannot be read: a model answering without them would answer another question.
Status Turn::pin() {
    const int64_t from = session_start_turn(deps_.memory, st_.conversation);  // clear-session hides what came before
    auto exchanges = deps_.journal.exchanges(st_.conversation, st_.turn, deps_.config.agent.pinned_exchanges);
    if (!exchanges)
        return Error{exchanges.error().code, "the conversation's earlier turns could not be read: " + exchanges.error().message};
    for (const auto& m : *exchanges)
        if (m.turn >= from) {
            json body = json::parse(m.body, nullptr, false);
            if (body.is_discarded())  // a damaged row of an earlier turn: that message is left out, the turn goes on
                log(EventLevel::warn,
                    "stored message " + std::to_string(m.id) + " is not valid JSON; it is not shown to the model");
            else
                window_.pin(dump(body));
        }
    for (const auto& m : st_.history) window_.pin(dump(m));
    return Ok{};
}

StepResult Turn::stored(const Status& written) {
    if (!written) return store_failed(written.error().message);
    return StepResult::go_on();
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
            if (auto outcome = ended(calls_.handle(call))) return outcome.take();
            continue;
        }
        if (cancelled()) return stop(StopReason::cancelled, "", "the turn was cancelled");
        if (stopping())
            return stop(StopReason::interrupted, "", "the host is shutting down: the run stops at this step, to be resumed");
        if (st_.iteration >= cap()) return final_summary();
        if (int every = deps_.config.agent.prune_every; st_.iteration > 0 && st_.iteration % every == 0) prune();
        if (auto outcome = step()) return outcome.take();
    }
}

// One model call and what follows from its reply.
StepResult Turn::step() {
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
    if (r.stop == "content_filter")
        log(EventLevel::warn, "provider '" + st_.provider + "' stopped the answer with its content filter: what it wrote is all");

    Extraction found = r.extractor.finish();
    std::vector<ToolCall> calls;
    std::vector<json> provider_data;  // by call: what the provider asked to have sent back with it
    for (const json& c : r.native_calls) {
        provider_data.push_back(kept_provider_data(c));
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
        c.id = calls_.unique_id(c.id, i);
        json stored{{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}};
        if (i < provider_data.size() && !provider_data[i].is_null()) stored["provider_data"] = std::move(provider_data[i]);
        assistant["tool_calls"].push_back(std::move(stored));
    }
    st_.pending.assign(std::make_move_iterator(calls.begin()), std::make_move_iterator(calls.end()));
    writer_.hold({{MessageKind::step, dump(assistant)}});  // written with its first call's intent, result or refusal
    return StepResult::go_on();
}

// A reply whose call could not be read: retry once when the output limit cut it, else tell the
// model what was wrong so it can write the call again.
StepResult Turn::malformed(const Reply& reply, const Extraction& found, int max_tokens) {
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
        log(EventLevel::warn, "a tool call was cut off by max_tokens; asking the model to finish it");
    } else {
        if (++st_.malformed > kMalformedRepliesAllowed)
            return stop(StopReason::malformed_output, "",
                        "the model wrote unreadable tool calls " + std::to_string(kMalformedRepliesAllowed + 1) +
                            " times in a row: " + (found.problems.empty() ? "" : found.problems.front()));
        std::string problems;
        for (const auto& p : found.problems) problems += (problems.empty() ? "" : "; ") + p;
        std::string names;
        for (const auto& t : offer_.offered(st_.conversation, st_.mode))
            names += (names.empty() ? "" : ", ") + t["name"].get<std::string>();
        note = "Your last reply tried to call a tool, but the call could not be used (" + problems +
               "). Nothing was run. Available tools: " + names +
               ". Write the call again with valid JSON arguments, or answer in plain text.";
        log(EventLevel::warn, "unusable tool call from the model: " + problems);
    }
    return stored(
        writer_.commit({{MessageKind::step, dump(assistant)}, {MessageKind::step, dump({{"role", "user"}, {"content", note}})}}));
}

// ---- context ----

std::string Turn::request_text(const std::string& tools_text, int max_tokens, const std::string& model) {
    PromptInputs in;
    in.base = deps_.config.agent.system_prompt;
    in.mode = st_.mode;
    in.prompt = st_.prompt;
    in.plugin_context = st_.plugin_context;
    in.request_context_json = st_.request_context;
    in.notifications = st_.notifications;
    in.on_demand_tools = offer_.on_demand_text(st_.conversation, st_.mode);
    PromptParts parts = build_prompt(deps_.memory, st_.conversation, in);
    const std::string system = dump({{"role", "system"}, {"content", std::move(parts.system)}});
    window_.note_state(parts.state);
    return window_.request_text(system, st_.prompt, model, tools_text, max_tokens);
}

// Keeps the last keep_messages working messages, widened so no tool result loses its call.
void Turn::prune() {
    size_t dropped = window_.prune(static_cast<size_t>(deps_.config.agent.keep_messages));
    if (dropped == 0) return;
    st_.working_from = window_.working_from();  // the next checkpoint records where the window starts
    log(EventLevel::info, "pruned " + std::to_string(dropped) + " older messages from the model's context");
}

// ---- the model ----

ModelCall Turn::call_model(bool offer_tools, int max_tokens) {
    emit(events::ModelRequest{.iteration = st_.iteration + 1});
    static const std::string kNoTools = "[]";
    plugins::CallInput call;
    call.call_id = st_.conversation + "-" + std::to_string(st_.turn) + "-llm-" + std::to_string(st_.iteration);
    call.conversation_id = st_.conversation;
    const std::string tools_text = offer_tools ? offer_.offered_text(st_.conversation, st_.mode) : kNoTools;
    call.request_context_json = st_.request_context;
    call.cancel = controls_.cancel;
    call.run_kv = &run_kv_;

    auto reply = std::make_unique<Reply>();
    reply->extractor = ToolCallStream(offer_.known());
    reply->emit = [this](TurnEventBody e) { emit(std::move(e)); };
    llm::ChatCallbacks callbacks;
    callbacks.on_event = [&](int32_t type, std::string_view data) { return reply->on_event(type, data); };
    callbacks.on_retry = [&](const llm::RetryNotice& n) {
        reply->restart(offer_.known());
        char delay[32];
        std::snprintf(delay, sizeof delay, "%.1f", n.delay_s);
        log(EventLevel::warn, "the model request failed (" + n.type + ": " + n.message + "); attempt " +
                                  std::to_string(n.attempt + 1) + " of " + std::to_string(n.max_attempts) + " in " + delay +
                                  " s");
        // Waiting again: a terminal shows its waiting line for the next attempt too.
        emit(events::ModelRequest{.iteration = st_.iteration + 1, .attempt = n.attempt + 1, .max_attempts = n.max_attempts});
    };
    callbacks.on_queued = [&](size_t ahead) { emit(events::Queued{ahead}); };
    callbacks.give_up_waiting = [this] { return stopping(); };  // shutting down: a call not started is not started
    llm::ChatOutcome outcome = ask_chain(call, callbacks, *reply, tools_text, max_tokens);
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

llm::ChatOutcome Turn::ask(const std::string& provider, const plugins::CallInput& call, const llm::ChatCallbacks& callbacks) {
    llm::ChatOutcome outcome = deps_.model.chat(provider, call, callbacks);
    st_.input_tokens += outcome.input_tokens;
    st_.output_tokens += outcome.output_tokens;
    st_.cached_input_tokens += outcome.cached_input_tokens;
    if (outcome.attempts > 0 && (outcome.ok || outcome.input_tokens > 0))
        emit(events::Usage{.input_tokens = outcome.input_tokens,
                           .output_tokens = outcome.output_tokens,
                           .estimated = outcome.usage_estimated,
                           .attempts = outcome.attempts,
                           .cached_input_tokens = outcome.cached_input_tokens,
                           .turn_input_tokens = st_.input_tokens,
                           .turn_output_tokens = st_.output_tokens,
                           .turn_cached_input_tokens = st_.cached_input_tokens});
    return outcome;
}

llm::ChatOutcome Turn::ask_chain(plugins::CallInput& call, const llm::ChatCallbacks& callbacks, Reply& reply,
                                 const std::string& tools_text, int max_tokens) {
    using Clock = llm::FallbackChain::Clock;
    if (!chain_) chain_.emplace(deps_.config, st_.provider, deps_.model.cooldowns());
    // The run's model is its own provider's; a fallback answers with its configured one.
    auto model_for = [this](const std::string& provider) { return provider == st_.provider ? st_.model : std::string(); };
    std::string provider = chain_->current(Clock::now());
    if (!answering_.empty() && provider != answering_)  // back on the run's provider after its cool-down
        emit(events::ProviderSwitch{answering_, provider, "trying " + provider + " again: its cool-down has passed"});
    else if (answering_.empty() && provider != st_.provider)  // another run found the run's provider down
        emit(events::ProviderSwitch{st_.provider, provider,
                                    st_.provider + " failed recently; " + provider + " answers until its cool-down has passed"});
    call.arguments_json = request_text(tools_text, max_tokens, model_for(provider));
    llm::ChatOutcome outcome = ask(provider, call, callbacks);
    while (!outcome.ok && !cancelled() && !stopping()) {
        std::optional<std::string> next = chain_->after_failure(provider, outcome.stop_reason, Clock::now());
        if (!next) break;
        std::string why =
            (outcome.error_message.empty() ? provider + " failed (" + std::string(stop_reason_name(outcome.stop_reason)) + ")"
                                           : outcome.error_message) +
            "; going on with " + *next;
        spdlog::info("turn {} of {}: {}", st_.turn, st_.conversation, why);  // the event is the terminal's line
        emit(events::ProviderSwitch{provider, *next, std::move(why)});
        deps_.model.note_fallback(provider);
        reply.restart(offer_.known());
        if (model_for(*next) != model_for(provider)) call.arguments_json = request_text(tools_text, max_tokens, model_for(*next));
        provider = *next;
        outcome = ask(provider, call, callbacks);
    }
    answering_ = provider;
    if (outcome.ok && provider != st_.provider) st_.answered_by[std::to_string(st_.iteration + 1)] = provider;
    return outcome;
}

TurnOutcome Turn::final_summary() {
    log(EventLevel::warn, "reached the cap of " + std::to_string(cap()) + " iterations; asking for a final summary");
    json note{{"role", "user"},
              {"content", "You have reached the limit of " + std::to_string(cap()) +
                              " iterations for this turn. Do not call any tools. Reply with a short summary for the "
                              "user: what you did, where things stand, and what is left."}};
    if (auto outcome = stored(writer_.commit({{MessageKind::step, dump(note)}}))) return outcome.take();
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
