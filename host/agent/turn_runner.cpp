#include "agent/turn_runner.hpp"

#include "agent/system_prompt.hpp"
#include "agent/toolcall_extractor.hpp"
#include "common/bounded_json.hpp"
#include "plugins/host_services.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <map>
#include <set>

namespace agenthost::agent {
namespace {

using nlohmann::json;
using store::MessageKind;
using store::NewMessage;

constexpr const char* kProviderKey = "provider";
constexpr int kMalformedRepliesAllowed = 3;
constexpr int kLoopGuardRefusalsAllowed = 2;

using tools::error_result;

std::string dump(const json& j) { return json_io::dump(j); }
std::string content_of(const json& result) { return tools::content_text(result); }

// Provider events are outside data: bounded and repaired like everything a plugin sends.
constexpr json_io::Limits kEventLimits{16u << 20, 64};

// Longest prefix of at most `max` bytes that ends on a UTF-8 character boundary.
size_t utf8_cut(const std::string& s, size_t max) {
    if (s.size() <= max) return s.size();
    size_t n = max;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    return n;
}

// `text` when it fits in `max` bytes, else its first part (ending on a character boundary) followed
// by `note(bytes kept)`.
template <typename Note>
std::string first_part(const std::string& text, size_t max, Note note) {
    size_t keep = utf8_cut(text, max);
    return keep == text.size() ? text : text.substr(0, keep) + note(keep);
}

// A result is shown as it happens (the CLI, the panel's events, kept for reconnects) whole when it
// is small and as its first part when not: the store keeps it whole, and RAM holds no second copy.
constexpr size_t kShownResultBytes = 256u << 10;

// A 64-bit FNV-1a digest: the loop guard compares results by it instead of keeping their text.
std::string digest(std::string_view text) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
    return out;
}

// One provider reply, collected from its event stream while text deltas go through the extractor.
struct Reply {
    ToolCallStream extractor;
    const std::function<void(TurnEvent)>* emit = nullptr;
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
                if (!shown.reasoning.empty()) (*emit)({TurnEvent::Kind::reasoning, 0, shown.reasoning});
                if (!shown.content.empty()) show(shown.content);
                break;
            }
            case AH_EVENT_REASONING: (*emit)({TurnEvent::Kind::reasoning, 0, json_io::repair_utf8(data)}); break;
            case AH_EVENT_TOOL_CALL: {
                auto read = json_io::parse(data, kEventLimits, json_io::Utf8::repair);
                if (!read) {
                    bad_event = true;
                    return AH_ERR_INVALID_ARGUMENT;
                }
                json call = std::move(*read);
                if (!call.is_object() || !call.contains("name") || !call["name"].is_string()) {
                    bad_event = true;
                    return AH_ERR_INVALID_ARGUMENT;
                }
                native_calls.push_back(std::move(call));
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
                    (*emit)({TurnEvent::Kind::text, 0, attempt_text.substr(shown_text.size())});
                    shown_text = attempt_text;
                }
                return;
            }
            diverged = true;
            const std::string note = "the retried reply differs from the text already shown; it follows on a new line";
            spdlog::warn("{}", note);
            (*emit)({TurnEvent::Kind::log, 0, note, "", "", "", false, "warn"});
            (*emit)({TurnEvent::Kind::text, 0, "\n\n" + attempt_text});
            shown_text = attempt_text;
            return;
        }
        (*emit)({TurnEvent::Kind::text, 0, content});
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

}  // namespace

constexpr const char* kSessionStartKey = "session_start_turn";

// The first turn of the conversation's current session (0: the whole conversation).
int64_t session_start_turn(memory::AgentMemory& memory, std::string_view conversation) {
    auto saved = memory.store().get(conversation, kSessionStartKey);
    if (!saved) return 0;
    json value = json::parse(*saved, nullptr, false);
    return value.is_number_integer() ? value.get<int64_t>() : 0;
}

// The stable code of a stop reason (runs.error_code, TurnOutcome::error_code).
std::string error_code_of(const std::string& reason) {
    static const std::map<std::string, std::string> codes{
        {"iteration_limit", "ITERATION_LIMIT"}, {"model_unavailable", "MODEL_UNAVAILABLE"},
        {"context_too_large", "CONTEXT_TOO_LARGE"}, {"auth", "PROVIDER_AUTH"}, {"rate_limit", "RATE_LIMITED"},
        {"cancelled", "CANCELLED"}, {"interrupted", "INTERRUPTED"}, {"token_budget", "BUDGET_EXCEEDED"},
        {"tool_call_budget", "BUDGET_EXCEEDED"}, {"provider_failure", "PLUGIN_FAILURE"}, {"output_limit", "OUTPUT_LIMIT"},
        {"tool_unavailable", "TOOL_UNAVAILABLE"}};
    auto it = codes.find(reason);
    return it == codes.end() ? "AGENT_FAILURE" : it->second;
}

// The state of one turn and the loop that advances it. `s_` is the loop state saved in every
// checkpoint; the messages the model sees (pinned_, working_) are rebuilt from the transcript.
class Turn {
public:
    Turn(plugins::Registry& registry, tools::Catalogue& catalogue, tools::Invoker& invoker, llm::LlmQueue& queue,
         memory::AgentMemory& memory, store::RunStore& store, const config::Config& config, const RunControls& controls)
        : registry_(registry), catalogue_(catalogue), invoker_(invoker), queue_(queue), memory_(memory), store_(store), config_(config),
          controls_(controls) {
        emit_ = [this](TurnEvent e) {
            e.seq = ++seq_;
            if (controls_.on_event) controls_.on_event(e);
        };
    }

    TurnOutcome start(const TurnRequest& request) {
        std::string provider = choose_provider(request);
        json user{{"role", "user"}, {"content", request.prompt}};
        auto run = store_.begin_run(request.conversation_id, mode_name(request.mode), provider, request.prompt, dump(user));
        if (!run) return failed_before_start(run.error());
        return begin(request, *run, provider);
    }

    // The first steps of a stored run: its state, the plugins' context, the first checkpoint.
    // Also how a run that was stopped before its first checkpoint starts again.
    TurnOutcome begin(const TurnRequest& request, const store::RunRecord& run, const std::string& provider) {
        mode_ = request.mode;
        json user{{"role", "user"}, {"content", request.prompt}};
        lease_.emplace(store_, run.id, config_.store.lease_seconds);
        if (controls_.on_started) controls_.on_started(run.id);
        s_ = {{"conversation", request.conversation_id},
              {"run", run.id},
              {"turn", run.turn},
              {"mode", mode_name(mode_)},
              {"provider", provider},
              {"model", request.model},
              {"prompt", request.prompt},
              {"request_context", request.request_context_json.empty() ? "{}" : request.request_context_json},
              {"iteration", 0},
              {"tool_calls", 0},
              {"input_tokens", 0},
              {"output_tokens", 0},
              {"working_from", 0},
              {"pending", json::array()},
              {"rejected", json::object()},
              {"guard", {{"last", ""}, {"count", 0}, {"blocked", ""}, {"refusals", 0}}},
              {"retried_cut", false},
              {"malformed", 0}};

        plugins::CallInput hook;
        hook.conversation_id = request.conversation_id;
        json hook_context = json::parse(s_["request_context"].get<std::string>(), nullptr, false);
        if (!hook_context.is_object()) hook_context = json::object();
        hook_context["user_message"] = request.prompt;  // context hooks may resolve mentions in it
        hook.request_context_json = dump(hook_context);
        hook.cancel = controls_.cancel;
        s_["plugin_context"] = registry_.context(hook);
        json notes = json::array();
        for (const auto& e : memory_.store().take_events(request.conversation_id)) {
            json body = json::parse(e.body, nullptr, false);
            std::string text = body.is_object() && body.contains("message") && body["message"].is_string()
                                   ? body["message"].get<std::string>()
                                   : e.body;
            notes.push_back("[" + e.plugin + "] " + text);
        }
        s_["notifications"] = notes;
        json history = json::parse(request.history_json.empty() ? "[]" : request.history_json, nullptr, false);
        s_["history"] = json::array();
        if (history.is_array())
            for (const auto& m : history)
                if (m.is_object() && m.contains("role") && m.contains("content"))
                    s_["history"].push_back({{"role", m["role"]}, {"content", m["content"]}});
        pin(user);
        if (auto outcome = commit({})) return *outcome;  // the first checkpoint: resumable from here on
        return loop();
    }

    // Continues a paused or interrupted run from its last checkpoint.
    TurnOutcome resume(const store::RunRecord& run, const ResumeOptions& options) {
        auto cp = store_.last_checkpoint(run.id);
        if (!cp) {  // stopped between its creation and its first checkpoint: it never took a step
            TurnRequest again;
            again.prompt = run.prompt;
            again.conversation_id = run.conversation;
            again.mode = options.mode.value_or(parse_mode(run.mode).value_or(Mode::execute));
            again.model = options.model;
            std::string provider = options.provider.empty() ? run.provider : options.provider;
            spdlog::info("run {} had no checkpoint: it starts again from its prompt", run.id);
            return begin(again, run, provider);
        }
        json state = json::parse(cp->state_json, nullptr, false);
        if (!state.is_object()) return failed_before_start(Error{"store_corrupt", "run " + std::to_string(run.id) + " has no readable checkpoint"});
        lease_.emplace(store_, run.id, config_.store.lease_seconds);
        if (controls_.on_started) controls_.on_started(run.id);
        s_ = std::move(state);
        seq_ = s_.value("seq", uint64_t{0});
        mode_ = options.mode.value_or(parse_mode(s_.value("mode", "execute")).value_or(Mode::execute));
        s_["mode"] = mode_name(mode_);
        if (!options.provider.empty()) {
            s_["provider"] = options.provider;
            s_["model"] = "";  // the new provider's own model unless one is named
        }
        if (!options.model.empty()) s_["model"] = options.model;

        for (const auto& m : store_.run_messages(run.id, 0)) {
            json body = json::parse(m.body);
            for (const auto& c : body.value("tool_calls", json::array())) used_ids_.insert(c.value("id", ""));
            if (m.kind == MessageKind::prompt) pin(body);
            else if (m.id >= s_.value("working_from", int64_t{0}) && m.id <= cp->last_message) {
                working_.push_back(json::parse(m.body));
                working_ids_.push_back(m.id);
            }
        }
        // Calls that were pending when the process stopped may have started: the journal says.
        for (const auto& c : s_["pending"]) unsure_.insert(c.value("id", ""));
        log("info", "resumed run " + std::to_string(run.id) + " at iteration " + std::to_string(iteration()) + " (was " +
                        run.status + ")");

        bool awaiting = s_.contains("awaiting");
        s_.erase("awaiting");
        if (awaiting && options.decision.kind != ApprovalDecision::Kind::later && !s_["pending"].empty()) {
            json call = s_["pending"][0];
            s_["pending"].erase(0);
            if (auto outcome = decide(call, options.decision)) return *outcome;
        }
        return loop();
    }

    static std::optional<ApprovalRequest> waiting(const json& saved) {
        if (!saved.is_object() || !saved.contains("pending")) return std::nullopt;
        if (!saved.contains("awaiting") || saved["pending"].empty()) return std::nullopt;
        const json& call = saved["pending"][0];
        return ApprovalRequest{saved["conversation"], call["id"], call["name"], dump(call["arguments"]), saved["awaiting"]};
    }

private:
    // The request's provider (remembered for the conversation), else the conversation's, else the default.
    std::string choose_provider(const TurnRequest& request) {
        const std::string conversation = request.conversation_id;
        if (!request.provider.empty()) {
            (void)memory_.store().set(conversation, kProviderKey, dump(json(request.provider)));
            return request.provider;
        }
        if (auto saved = memory_.store().get(conversation, kProviderKey)) {
            json name = json::parse(*saved, nullptr, false);
            if (name.is_string() && config_.provider_named(name.get<std::string>())) return name;
        }
        return config_.provider.name;
    }

    std::string conversation() const { return s_["conversation"]; }
    int64_t run_id() const { return s_["run"]; }

    // The previous exchanges of the conversation, then this run's prompt.
    void pin(const json& prompt) {
        const int64_t from = session_start_turn(memory_, conversation());  // clear-session hides what came before
        for (const auto& m : store_.exchanges(conversation(), turn(), config_.agent.pinned_exchanges))
            if (m.turn >= from) pinned_.push_back(json::parse(m.body));
        for (const auto& m : s_.value("history", json::array())) pinned_.push_back(m);
        pinned_.push_back(prompt);
    }

    store::RunCounters counters() const {
        return {iteration(), s_["tool_calls"].get<int>(), s_["input_tokens"].get<int64_t>(), s_["output_tokens"].get<int64_t>()};
    }

    json checkpoint_state() {
        s_["seq"] = seq_;
        return s_;
    }

    // Commits a step: its messages (added to the model's working context), the journal result of a
    // call that ran, and the checkpoint after it, in one transaction.
    // `events_after`: events the caller emits once the step is stored (their numbers are in the checkpoint).
    std::optional<TurnOutcome> commit(std::vector<NewMessage> messages, const std::string& call_id = "",
                                      const json& result = nullptr, uint64_t events_after = 0) {
        store::StepWrite step;
        step.messages = std::move(messages);
        step.journal_call_id = call_id;
        if (!call_id.empty()) {
            step.journal_result = dump(result);
            if (json_io::get_bool(result, "is_error", false))  // stable codes; the tool's own code stays in the result
                step.journal_error_code = json_io::get_string(result, "error_code") == "plugin_failure" ? "PLUGIN_FAILURE" : "TOOL_FAILURE";
        }
        step.counters = counters();
        step.state_json = dump(events_after ? checkpoint_state_after_events(events_after) : checkpoint_state());
        auto ids = store_.write_step(run_id(), step);
        if (!ids) return store_failed(ids.error());
        for (size_t i = 0; i < step.messages.size(); ++i) {
            working_.push_back(json::parse(step.messages[i].body));
            working_ids_.push_back((*ids)[i]);
        }
        return std::nullopt;
    }
    int64_t turn() const { return s_["turn"]; }
    int iteration() const { return s_["iteration"]; }
    int64_t tokens() const { return s_["input_tokens"].get<int64_t>() + s_["output_tokens"].get<int64_t>(); }

    int cap() const {
        switch (mode_) {
        case Mode::explore: return config_.limits.explore_iterations;
        case Mode::plan: return config_.limits.plan_iterations;
        default: return config_.limits.execute_iterations;
        }
    }

    void log(const std::string& level, const std::string& message) {
        spdlog::log(spdlog::level::from_str(level), "turn {} of {}: {}", turn(), conversation(), message);
        emit_({TurnEvent::Kind::log, 0, message, "", "", "", false, level});
    }

    // ---- the loop ----

    TurnOutcome loop() {
        while (true) {
            if (!s_["pending"].empty()) {
                json call = s_["pending"][0];
                s_["pending"].erase(0);
                if (auto outcome = handle_call(call)) return *outcome;
                continue;
            }
            if (cancelled()) return stop(false, "cancelled", "", "the turn was cancelled");
            if (stopping()) return stop(false, "interrupted", "", "the host is shutting down; resume this run later");
            if (iteration() >= cap()) return final_summary();
            if (int every = config_.agent.prune_every; iteration() > 0 && iteration() % every == 0) prune();
            if (auto outcome = step()) return *outcome;
        }
    }

    // One model call and what follows from its reply.
    std::optional<TurnOutcome> step() {
        // The first call, and the retry of a call cut by the output limit, get the larger budget.
        int max_tokens = iteration() == 0 || s_["retried_cut"].get<bool>() ? config_.agent.first_max_tokens
                                                                            : config_.agent.max_tokens;
        auto reply = call_model(offered_tools(), max_tokens);
        if (!reply) {
            if (stopping()) return stop(false, "interrupted", "", "the host is shutting down; resume this run later");
            return stop(false, reply.error().code, "", reply.error().message);
        }
        Reply& r = **reply;
        s_["iteration"] = iteration() + 1;

        Extraction found = r.extractor.finish();
        json calls = r.native_calls;
        if (calls.empty())
            for (const auto& c : found.calls) calls.push_back({{"name", c.name}, {"arguments", json::parse(c.arguments_json)}});

        if (calls.empty() && (found.incomplete || !found.problems.empty())) return malformed(r, found, max_tokens);
        s_["malformed"] = 0;
        s_["retried_cut"] = false;  // a later cut call gets its own retry
        if (int budget = config_.limits.token_budget; budget > 0 && tokens() >= budget)
            return stop(false, "token_budget", found.content,
                        "the turn used " + std::to_string(tokens()) + " tokens, its budget is " +
                            std::to_string(budget) + " ([limits] token_budget)");

        if (calls.empty()) return answer(found.content, "answered");

        json assistant{{"role", "assistant"}, {"content", found.content}, {"tool_calls", json::array()}};
        for (size_t i = 0; i < calls.size(); ++i) {
            json& c = calls[i];
            // Ids key the journal, so they must be unique in the run; a provider's own id is kept when it is.
            if (!c.contains("id") || !c["id"].is_string() || c["id"].get<std::string>().empty() ||
                used_ids_.count(c["id"].get<std::string>()))
                c["id"] = "call_" + std::to_string(run_id()) + "_" + std::to_string(iteration()) + "_" + std::to_string(i);
            used_ids_.insert(c["id"].get<std::string>());
            if (!c.contains("arguments") || c["arguments"].is_null()) c["arguments"] = json::object();
            if (c["arguments"].is_string()) {  // a provider that passes the JSON text through
                std::string text = c["arguments"];
                json decoded = text.empty() ? json::object() : json::parse(text, nullptr, false);
                if (!decoded.is_discarded()) c["arguments"] = decoded;
            }
            assistant["tool_calls"].push_back({{"id", c["id"]}, {"name", c["name"]}, {"arguments", c["arguments"]}});
        }
        s_["pending"] = calls;
        return commit({{MessageKind::step, dump(assistant)}});
    }

    // A reply whose call could not be read: retry once when the output limit cut it, else tell the
    // model what was wrong so it can write the call again.
    std::optional<TurnOutcome> malformed(const Reply& reply, const Extraction& found, int max_tokens) {
        bool cut = found.incomplete && reply.stop == "max_tokens";
        json assistant{{"role", "assistant"}, {"content", reply.raw_text}};
        std::string note;
        if (cut) {
            if (s_["retried_cut"].get<bool>())
                return stop(false, "output_truncated", "",
                            "the model's tool call was cut off by the output limit twice (max_tokens " +
                                std::to_string(max_tokens) + "); raise [agent] max_tokens / first_max_tokens");
            s_["retried_cut"] = true;
            note = "Your reply was cut off by the output limit (" + std::to_string(max_tokens) +
                   " tokens) in the middle of a tool call, so the call was not run. Send the complete call again, "
                   "on its own, with arguments as short as possible.";
            log("warn", "a tool call was cut off by max_tokens; asking the model to finish it");
        } else {
            s_["malformed"] = s_["malformed"].get<int>() + 1;
            if (s_["malformed"].get<int>() > kMalformedRepliesAllowed)
                return stop(false, "malformed_output", "",
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

    // ---- tool calls ----

    // Where this run's calls are decided: the mode, and the calls the user rejected in this run.
    tools::CallSite call_site(bool approved) const {
        tools::CallSite site;
        site.scope = tools::Scope::agent;
        site.mode = mode_;
        site.approved = approved;
        site.rejected = [this](const std::string& signature) -> std::optional<std::string> {
            const json& rejected = s_["rejected"];
            auto it = rejected.find(signature);
            if (it == rejected.end() || !it->is_string()) return std::nullopt;
            return it->get<std::string>();
        };
        return site;
    }

    // Runs (or refuses, or holds for approval) one call of the model's reply.
    std::optional<TurnOutcome> handle_call(const json& call) {
        std::string name = call["name"];
        std::string signature = tools::call_signature(name, call["arguments"]);
        if (cancelled()) return stop(false, "cancelled", "", "the turn was cancelled");
        if (stopping()) {
            s_["pending"].insert(s_["pending"].begin(), call);  // not started: it runs on resume
            return stop(false, "interrupted", "", "the host is shutting down; resume this run later");
        }
        emit_({TurnEvent::Kind::tool_call, 0, "", name, call["id"], dump(call["arguments"])});
        if (int budget = config_.limits.tool_call_budget; budget > 0 && s_["tool_calls"].get<int>() >= budget)
            return stop(false, "tool_call_budget",
                        "", "the turn made " + std::to_string(budget) + " tool calls, its budget ([limits] tool_call_budget)");

        json& guard = s_["guard"];
        if (guard["blocked"] == signature) {
            guard["refusals"] = guard["refusals"].get<int>() + 1;
            if (guard["refusals"].get<int>() > kLoopGuardRefusalsAllowed)
                return stop(false, "loop_detected", "",
                            "the model kept repeating " + name + " with the same arguments after being told to stop");
            return record(call, error_result("loop_guard", "Refused: " + name +
                                                               " already returned the same result repeatedly for these "
                                                               "arguments. Use that result or try something different."));
        }

        std::optional<tools::Tool> tool = catalogue_.find(name);
        if (unsure_.erase(call["id"].get<std::string>()))
            if (auto settled = settle_interrupted(call, tool)) return *settled;
        tools::Verdict verdict = tools::decide(catalogue_, tool, name, call["arguments"], call_site(false));
        switch (verdict.kind) {
        case tools::Verdict::Kind::refuse: return record(call, error_result(verdict.error_code, verdict.message));
        case tools::Verdict::Kind::ask: return ask_approval(call, verdict.message);
        case tools::Verdict::Kind::run: break;
        }
        return run_call(call, *tool, false);
    }

    // A call that was pending when the process stopped: never run twice what finished; run again
    // what started only when that is safe (read-only or idempotent); otherwise say so.
    // Returns nothing when the call should go on to the policy and run.
    std::optional<std::optional<TurnOutcome>> settle_interrupted(const json& call, const std::optional<tools::Tool>& tool) {
        auto entry = store_.journal(run_id(), call["id"].get<std::string>());
        if (!entry) return std::nullopt;  // it never started
        std::string name = call["name"];
        if (entry->status == "done") {
            json result = json::parse(entry->result, nullptr, false);
            log("info", name + " had finished before the stop; its recorded result is used");
            return record(call, result.is_object() ? result : error_result("tool_failure", entry->result));
        }
        if (tool && tool->repeatable()) {
            log("info", name + " was running when the host stopped; it is safe to repeat, so it runs again");
            return std::nullopt;
        }
        log("warn", name + " was running when the host stopped; its outcome is unknown");
        return record(call, error_result("outcome_unknown",
                                         "Outcome unknown: the host stopped while this call ran (" + name + " " +
                                             dump(call["arguments"]) + "). It may or may not have taken effect; check "
                                             "before doing it again."),
                      true);
    }

    std::optional<TurnOutcome> ask_approval(const json& call, const std::string& reason) {
        ApprovalRequest request{conversation(), call["id"], call["name"], dump(call["arguments"]), reason};
        emit_({TurnEvent::Kind::approval, 0, reason, request.tool, request.call_id, request.arguments_json});
        ApprovalDecision decision = controls_.approve ? controls_.approve(request) : ApprovalDecision{};
        // A cancel while the user was being asked wins over any answer given after it: nothing runs.
        if (cancelled()) {
            log("info", "cancelled while " + request.tool + " waited for approval; it was not run");
            return stop(false, "cancelled", "", "the turn was cancelled while " + request.tool + " waited for approval; it was not run");
        }
        if (decision.kind == ApprovalDecision::Kind::later) {
            json pending = json::array({call});
            for (const auto& rest : s_["pending"]) pending.push_back(rest);
            s_["pending"] = pending;
            s_["awaiting"] = reason;  // finish() saves the state once the pause is announced
            log("info", "paused: " + request.tool + " waits for approval (" + reason + ")");
            return stop(false, "approval_pending", "",
                        request.tool + " needs approval: " + reason + "; approve or reject to continue");
        }
        return decide(call, decision);
    }

    // The user's decision on a call that waited for approval. An approved call still goes through
    // the policy: its tool may be gone (the config changed while the run was paused).
    std::optional<TurnOutcome> decide(const json& call, const ApprovalDecision& decision) {
        const std::string name = call["name"];
        if (decision.kind == ApprovalDecision::Kind::approve) {
            std::optional<tools::Tool> tool = catalogue_.find(name);
            tools::Verdict verdict = tools::decide(catalogue_, tool, name, call["arguments"], call_site(true));
            if (verdict.kind != tools::Verdict::Kind::run) {
                log("error", "approved, but " + name + " cannot run: " + verdict.message);
                return stop(false, "tool_unavailable", "",
                            "the approved call of " + name + " cannot run: " +
                                (verdict.error_code == "unknown_tool"
                                     ? "there is no tool of that name any more (its plugin was disabled, removed or failed to "
                                       "load since the run paused); nothing was run"
                                     : verdict.message));
            }
            log("info", "approved: " + name);
            return run_call(call, *tool, true);
        }
        std::string reason = decision.reason.empty() ? "no reason given" : decision.reason;
        s_["rejected"][tools::call_signature(name, call["arguments"])] = reason;
        log("info", "rejected: " + name + " (" + reason + ")");
        return record(call, error_result("rejected", "The user rejected this call: " + reason +
                                                         ". It was not run. Do not propose it again in this turn."));
    }

    std::optional<TurnOutcome> run_call(const json& call, const tools::Tool& tool, bool approved) {
        const std::string& name = tool.name;
        if (auto invalid = invoker_.check_arguments(tool, call["arguments"])) return record(call, *invalid);
        s_["tool_calls"] = s_["tool_calls"].get<int>() + 1;
        // The intent is durable before the call runs, so a crash during it is known afterwards.
        if (auto st = store_.journal_intent(run_id(), call["id"].get<std::string>(), name, dump(call["arguments"])); !st)
            return store_failed(st.error());
        tools::Invocation invocation;
        invocation.call_id = call["id"];
        invocation.conversation_id = conversation();
        invocation.arguments = call["arguments"];
        invocation.request_context = json::parse(s_["request_context"].get<std::string>(), nullptr, false);
        invocation.approved = approved;
        invocation.cancel = controls_.cancel;
        json result = invoker_.call(tool, invocation);

        if (json_io::get_string(result, "marker") == "approval_requested" && !approved) {
            std::string reason = json_io::get_string(result, "reason", content_of(result));
            return ask_approval(call, name + " asks for approval: " + reason);
        }
        return record(call, result, true);
    }

    // Appends a call's result (cut for the model when long, whole in the store) and acts on markers.
    // `journaled`: the call ran (or was settled) under a journal entry, which this step completes.
    std::optional<TurnOutcome> record(const json& call, json result, bool journaled = false) {
        std::string name = call["name"];
        std::string content = content_of(result);
        bool is_error = json_io::get_bool(result, "is_error", false);
        if (is_error) {  // the memory and the log get the start of a failure, never a megabyte of it
            std::string gist = first_part(content, 2000, [](size_t) { return " …"; });
            (void)memory_.add_error(conversation(), name + ": " + gist);
            // A call the user rejected did what they asked: not a failure to warn about.
            if (json_io::get_string(result, "error_code") == "rejected") log("info", name + " rejected by the user: " + gist);
            else log("warn", name + " failed: " + gist);
        }

        // Cut for the model first (no copy of a long result), then the loop guard's note, which must survive the cut.
        std::string for_model = first_part(content, static_cast<size_t>(config_.agent.tool_result_max_chars), [&](size_t keep) {
            return "\n\n[result cut: showing the first " + std::to_string(keep) + " of " + std::to_string(content.size()) +
                   " bytes; the full result is kept]";
        });
        json& guard = s_["guard"];
        std::string signature = name + "\n" + dump(call["arguments"]);
        std::string key = signature + "\n" + digest(content);  // checkpointed each step: never the result itself
        guard["count"] = guard["last"] == key ? guard["count"].get<int>() + 1 : 1;
        guard["last"] = key;
        if (guard["count"].get<int>() >= config_.agent.loop_guard_repeats && json_io::get_string(result, "error_code") != "loop_guard") {
            guard["blocked"] = signature;
            for_model += "\n\n[loop guard] This exact call has returned the same result " + guard["count"].dump() +
                         " times in a row. Do not call it again with these arguments: use the result, change the "
                         "arguments, or answer.";
            log("warn", "loop guard: " + name + " returned the same result " + guard["count"].dump() + " times");
        }

        json message{{"role", "tool"}, {"tool_call_id", call["id"]}, {"name", name}, {"content", for_model}};
        std::string whole = dump(result);
        std::string shown_json = whole.size() <= kShownResultBytes ? whole : std::string();
        if (auto outcome = commit({{MessageKind::step, dump(message), std::move(whole)}}, journaled ? call["id"].get<std::string>() : "",
                                  result, 1))
            return outcome;
        // Shown once stored: a result the user saw is never missing after a crash or a full disk.
        emit_(shown_result(call, result, content, is_error, std::move(shown_json)));

        std::string marker = json_io::get_string(result, "marker");
        if (marker == "plan_created" && !tools::find_builtin(name)) adopt_plan(name, result);
        if (name == "create_plan" || name == "update_task" || name == "push_task" || name == "pop_task" || marker == "plan_created")
            emit_tasks();
        if (marker == "done") return answer(json_io::get_string(result, "summary", content), "done");
        if (name == "ask_user" && !is_error) return answer(content, "ask_user");
        return std::nullopt;
    }

    // `small_json`: the result's JSON when it is at most kShownResultBytes, else empty.
    TurnEvent shown_result(const json& call, const json& result, const std::string& content, bool is_error, std::string small_json) const {
        TurnEvent e{TurnEvent::Kind::tool_result, 0, content, call["name"], call["id"], std::move(small_json), is_error};
        if (!e.json.empty()) return e;
        e.text = first_part(content, kShownResultBytes, [&](size_t keep) {
            return "\n\n[showing the first " + std::to_string(keep) + " of " + std::to_string(content.size()) +
                   " bytes; the whole result is in the run's transcript]";
        });
        json summary{{"is_error", is_error}, {"truncated", true}, {"content_bytes", content.size()}};
        if (auto code = json_io::get_string(result, "error_code"); !code.empty()) summary["error_code"] = code;
        e.json = dump(summary);
        return e;
    }

    // A plugin's plan ({"plan": {"steps": [...]}}) becomes the task list.
    void adopt_plan(const std::string& tool, const json& result) {
        const json* steps = nullptr;
        if (auto p = result.find("plan"); p != result.end())
            steps = p->is_object() && p->contains("steps") ? &(*p)["steps"] : &*p;
        std::vector<std::string> titles;
        if (steps && steps->is_array())
            for (const auto& step : *steps)
                titles.push_back(step.is_string() ? step.get<std::string>() : step.is_object() ? json_io::get_string(step, "title", dump(step)) : dump(step));
        if (titles.empty()) return log("warn", tool + " marked a plan as created but sent no plan.steps");
        if (auto st = memory_.set_plan(conversation(), titles); !st) log("error", "could not save the plan: " + st.error().message);
    }

    void emit_tasks() {
        json plan = json::array();
        for (const auto& t : memory_.plan(conversation()))
            plan.push_back({{"id", t.id}, {"title", t.title}, {"status", t.status}, {"note", t.note}});
        emit_({TurnEvent::Kind::tasks, 0, "", "", "", dump({{"plan", plan}, {"stack", memory_.task_stack(conversation())}})});
    }

    // ---- context ----

    // The tools the mode offers (a plugin tool named like a built-in is shadowed by the built-in).
    const json& offered_tools() {
        refresh_tool_caches();
        if (offered_cache_) return *offered_cache_;
        json tools = json::array();
        for (const tools::Tool& t : catalogue_.all())
            if (tools::offered(t, mode_))
                tools.push_back({{"name", t.name}, {"description", t.description}, {"parameters", json::parse(t.input_schema_json)}});
        return *(offered_cache_ = std::move(tools));
    }

    // Every tool the model could name, offered or not, so a call the mode forbids is still recognised.
    const ToolSet& known_tools() {
        refresh_tool_caches();
        if (known_cache_) return *known_cache_;
        ToolSet set;
        for (const tools::Tool& t : catalogue_.all()) set.add(t.name, t.input_schema_json);
        return *(known_cache_ = std::move(set));
    }

    json messages() {
        PromptInputs in;
        in.base = config_.agent.system_prompt;
        in.mode = mode_name(mode_);
        in.prompt = s_["prompt"];
        in.plugin_context = s_["plugin_context"];
        in.request_context_json = s_["request_context"];
        in.notifications = s_["notifications"].get<std::vector<std::string>>();
        json out = json::array({{{"role", "system"}, {"content", build_system_prompt(memory_, conversation(), in)}}});
        for (const auto& m : pinned_) out.push_back(m);
        for (const auto& m : working_) out.push_back(m);
        return out;
    }

    // Keeps the last keep_messages working messages, widened so no tool result loses its call.
    void prune() {
        size_t keep = static_cast<size_t>(config_.agent.keep_messages);
        if (working_.size() <= keep) return;
        size_t start = working_.size() - keep;
        while (start > 0 && working_[start].value("role", "") == "tool") --start;
        if (start == 0) return;
        working_.erase(working_.begin(), working_.begin() + static_cast<std::ptrdiff_t>(start));
        working_ids_.erase(working_ids_.begin(), working_ids_.begin() + static_cast<std::ptrdiff_t>(start));
        s_["working_from"] = working_ids_.front();  // the next checkpoint records where the window starts
        log("info", "pruned " + std::to_string(start) + " older messages from the model's context");
    }


    // ---- the model ----

    Result<std::unique_ptr<Reply>> call_model(const json& tools, int max_tokens) {
        emit_({TurnEvent::Kind::model_request, 0, "iteration " + std::to_string(iteration() + 1)});
        json request{{"model", s_.value("model", "")}, {"messages", messages()}, {"tools", tools},
                     {"tool_choice", tools.empty() ? "none" : "auto"}, {"max_tokens", max_tokens}, {"stream", true}};
        plugins::CallInput call;
        call.call_id = conversation() + "-" + std::to_string(turn()) + "-llm-" + std::to_string(iteration());
        call.conversation_id = conversation();
        call.arguments_json = dump(request);
        call.request_context_json = s_["request_context"];
        call.cancel = controls_.cancel;

        auto reply = std::make_unique<Reply>();
        reply->extractor = ToolCallStream(known_tools());
        reply->emit = &emit_;
        llm::ChatCallbacks callbacks;
        callbacks.on_event = [&](int32_t type, std::string_view data) { return reply->on_event(type, data); };
        callbacks.on_retry = [&](const llm::RetryNotice& n) {
            reply->restart(known_tools());
            char delay[32];
            std::snprintf(delay, sizeof delay, "%.1f", n.delay_s);
            log("warn", "the model request failed (" + n.type + ": " + n.message + "); retry " + std::to_string(n.attempt + 1) +
                            " of " + std::to_string(n.max_attempts) + " in " + delay + " s");
        };
        callbacks.on_queued = [&](size_t ahead) { emit_({TurnEvent::Kind::queued, 0, std::to_string(ahead)}); };
        callbacks.give_up_waiting = [this] { return stopping(); };  // shutting down: a call not started is not started
        const std::string provider = s_["provider"];
        llm::ChatOutcome outcome = queue_.chat(provider, call, callbacks);
        s_["input_tokens"] = s_["input_tokens"].get<int64_t>() + outcome.input_tokens;
        s_["output_tokens"] = s_["output_tokens"].get<int64_t>() + outcome.output_tokens;
        if (outcome.attempts > 0 && (outcome.ok || outcome.input_tokens > 0))
            emit_({TurnEvent::Kind::usage, 0, "", "", "",
                   dump({{"input_tokens", outcome.input_tokens}, {"output_tokens", outcome.output_tokens},
                         {"estimated", outcome.usage_estimated}, {"attempts", outcome.attempts}})});
        if (!outcome.ok) return Error{outcome.error_type, outcome.error_message};
        if (cancelled()) return Error{"cancelled", "the turn was cancelled"};
        if (reply->bad_event) return Error{"provider_failure", "provider '" + provider + "' sent a malformed event"};
        return reply;
    }

    TurnOutcome final_summary() {
        log("warn", "reached the cap of " + std::to_string(cap()) + " iterations; asking for a final summary");
        json note{{"role", "user"},
                  {"content", "You have reached the limit of " + std::to_string(cap()) +
                                  " iterations for this turn. Do not call any tools. Reply with a short summary for the "
                                  "user: what you did, where things stand, and what is left."}};
        if (auto outcome = commit({{MessageKind::step, dump(note)}})) return *outcome;
        std::string summary;
        if (auto reply = call_model(json::array(), config_.agent.max_tokens)) summary = (*reply)->extractor.finish().content;
        if (summary.empty()) summary = "I stopped after " + std::to_string(cap()) + " iterations without finishing.";
        final_message_ = summary;
        return stop(false, "iteration_limit", summary,
                    "the turn reached its cap of " + std::to_string(cap()) + " iterations in " + mode_name(mode_) +
                        " mode (raise [limits] " + mode_name(mode_) + "_iterations)");
    }

    // ---- ending ----

    std::optional<TurnOutcome> answer(const std::string& text, const std::string& reason) {
        final_message_ = text;
        return stop(true, reason, text, "");
    }

    TurnOutcome stop(bool ok, const std::string& reason, const std::string& answer, const std::string& error) {
        if (reason != "approval_pending" && reason != "ask_user")
            (void)memory_.set_pending_question(conversation(), "");  // answered by this turn
        TurnOutcome out;
        out.ok = ok;
        out.stop_reason = reason;
        out.answer = answer;
        out.error = error;
        return finish(out);
    }

    // Ends the run in the store (its answer appended, a paused run's state saved), then tells the front end.
    TurnOutcome finish(TurnOutcome out) {
        out.iterations = iteration();
        out.tool_calls = s_["tool_calls"];
        out.tokens = tokens();
        out.run = run_id();
        if (!out.ok && out.stop_reason != "approval_pending") out.error_code = error_code_of(out.stop_reason);
        store::RunEnd end;
        end.status = out.ok                                  ? "completed"
                     : out.stop_reason == "approval_pending" ? "paused"
                     : out.stop_reason == "cancelled"        ? "cancelled"
                     : out.stop_reason == "interrupted"      ? "interrupted"
                                                             : "failed";
        if (end.status == "interrupted") end.state_json = dump(checkpoint_state_after_events(2));
        end.stop_reason = out.stop_reason;
        end.error_code = out.error_code;
        end.error = out.error;
        end.answer = out.answer;
        end.counters = counters();
        if (final_message_)
            end.message = NewMessage{MessageKind::answer, dump({{"role", "assistant"}, {"content", *final_message_}})};
        if (end.status == "paused") end.state_json = dump(checkpoint_state_after_events(2));
        lease_.reset();  // no heartbeat may race the end of the run
        if (auto st = store_.end_run(run_id(), end); !st) {
            spdlog::error("turn {} of {}: could not record the end of run {}: {}", turn(), conversation(), run_id(),
                          st.error().message);
            if (end.status == "paused") {
                out.stop_reason = "store_failure";
                out.error = "could not save the paused run: " + st.error().message;
                out.error_code = "AGENT_FAILURE";
            }
        }
        if (!out.ok && out.stop_reason != "approval_pending" && out.stop_reason != "iteration_limit")
            emit_({TurnEvent::Kind::error, 0, out.error, "", "", dump({{"code", out.error_code}, {"stop_reason", out.stop_reason}})});
        emit_({TurnEvent::Kind::finished, 0, out.answer, "", "",
               dump({{"stop_reason", out.stop_reason}, {"ok", out.ok}, {"error", out.error}, {"error_code", out.error_code},
                     {"run", run_id()}})});
        return out;
    }

    // The checkpoint of a pausing run counts the events finish() is about to emit, so a resumed
    // run numbers its events after them.
    json checkpoint_state_after_events(uint64_t more) {
        json state = checkpoint_state();
        state["seq"] = seq_ + more;
        return state;
    }

    TurnOutcome store_failed(const Error& e) {
        return stop(false, "store_failure", "", "could not save the turn: " + e.message);
    }

    // A run that could not even start: nothing in the store to end.
    TurnOutcome failed_before_start(const Error& e) {
        TurnOutcome out;
        const bool busy = e.code == "conversation_busy";
        out.stop_reason = busy ? "conversation_busy" : "store_failure";
        out.error_code = busy ? "CONVERSATION_BUSY" : "AGENT_FAILURE";
        out.error = busy ? e.message : "could not start the run: " + e.message;
        emit_({TurnEvent::Kind::error, 0, out.error, "", "", dump({{"code", out.error_code}, {"stop_reason", out.stop_reason}})});
        return out;
    }

    bool stopping() const { return controls_.stop_requested && controls_.stop_requested->load(); }
    // A cancel that comes with a shutdown interrupts the run (resumable) rather than cancelling it.
    bool cancelled() const { return controls_.cancel && controls_.cancel->cancelled() && !stopping(); }

    plugins::Registry& registry_;
    tools::Catalogue& catalogue_;
    tools::Invoker& invoker_;
    llm::LlmQueue& queue_;
    memory::AgentMemory& memory_;
    store::RunStore& store_;
    const config::Config& config_;
    const RunControls& controls_;
    std::function<void(TurnEvent)> emit_;
    uint64_t seq_ = 0;
    Mode mode_ = Mode::execute;
    json s_;                                // the loop state, saved in every checkpoint
    json pinned_ = json::array();           // earlier exchanges and this prompt: never pruned
    json working_ = json::array();          // this run's messages since the last prune …
    std::vector<int64_t> working_ids_;      // … and their ids in the transcript
    std::set<std::string> unsure_;          // calls pending when a resumed run had stopped
    std::set<std::string> used_ids_;        // every tool-call id of the run so far
    std::optional<std::string> final_message_;
    std::optional<store::RunLease> lease_;
    std::optional<json> offered_cache_;
    std::optional<ToolSet> known_cache_;
    std::shared_ptr<const std::vector<plugins::ToolInfo>> cached_snapshot_;  // what the caches were built from

    // The plugins' tools can change during a turn (a plugin's tools_changed, a disabled plugin):
    // the caches follow the registry's snapshot.
    void refresh_tool_caches() {
        auto now = catalogue_.registry().tools();
        if (now == cached_snapshot_) return;
        cached_snapshot_ = std::move(now);
        offered_cache_.reset();
        known_cache_.reset();
    }
};

TurnRunner::TurnRunner(plugins::Registry& registry, tools::Catalogue& catalogue, tools::Invoker& invoker, llm::LlmQueue& queue,
                       memory::AgentMemory& memory, store::RunStore& store, const config::Config& config)
    : registry_(registry), catalogue_(catalogue), invoker_(invoker), queue_(queue), memory_(memory), store_(store), config_(config) {}

TurnOutcome TurnRunner::run(const TurnRequest& request, const RunControls& controls) {
    if (auto waiting = pending_approval(request.conversation_id)) {
        TurnOutcome out;
        out.stop_reason = "approval_pending";
        out.error = "conversation " + request.conversation_id + " has a run waiting for approval of " + waiting->tool +
                    "; approve or reject it first";
        return out;
    }
    Turn turn(registry_, catalogue_, invoker_, queue_, memory_, store_, config_, controls);
    return turn.start(request);
}

TurnOutcome TurnRunner::resume(std::string_view conversation_id, const ApprovalDecision& decision, const RunControls& controls) {
    auto paused = store_.paused_run(conversation_id);
    if (!paused) {
        TurnOutcome out;
        out.stop_reason = "not_paused";
        out.error = "conversation " + std::string(conversation_id) + " has no run waiting for approval";
        return out;
    }
    ResumeOptions options;
    options.decision = decision;
    return resume_run(paused->id, options, controls);
}

TurnOutcome TurnRunner::resume_run(int64_t run_id, const ResumeOptions& options, const RunControls& controls) {
    TurnOutcome out;
    out.run = run_id;
    if (!options.provider.empty() && !config_.provider_named(options.provider)) {
        out.stop_reason = "provider_unavailable";
        out.error = "provider '" + options.provider + "' is not configured";
        return out;
    }
    if (auto claimed = store_.claim(run_id); !claimed) {
        out.stop_reason = claimed.error().code;
        out.error = claimed.error().message;
        return out;
    }
    Turn turn(registry_, catalogue_, invoker_, queue_, memory_, store_, config_, controls);
    return turn.resume(*store_.run(run_id), options);
}

Result<int64_t> TurnRunner::clear_session(std::string_view conversation_id) {
    auto cleared = memory_.store().clear(conversation_id);
    if (!cleared) return cleared.error();
    int64_t next_turn = 1;
    for (const auto& m : store_.all(conversation_id)) next_turn = std::max(next_turn, m.turn + 1);
    if (auto st = memory_.store().set(conversation_id, kSessionStartKey, std::to_string(next_turn)); !st) return st.error();
    return *cleared;
}

std::optional<ApprovalRequest> TurnRunner::pending_approval(std::string_view conversation_id) {
    auto paused = store_.paused_run(conversation_id);
    if (!paused) return std::nullopt;
    auto cp = store_.last_checkpoint(paused->id);
    if (!cp) return std::nullopt;
    return Turn::waiting(json::parse(cp->state_json, nullptr, false));
}

}  // namespace agenthost::agent
