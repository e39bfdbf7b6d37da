#include "agent/tool_calls.hpp"

#include "common/bounded_json.hpp"
#include "tools/builtin_tools.hpp"
#include "tools/result_marker.hpp"

#include <cstdio>

namespace agenthost::agent {
namespace {

using nlohmann::json;
using store::MessageKind;
using tools::error_result;

constexpr int kLoopGuardRefusalsAllowed = 2;
// The error_code of a call the loop guard refused (it never counts towards the guard itself).
constexpr const char* kLoopGuardCode = "loop_guard";

// A result is shown as it happens (the CLI, the panel's events, kept for reconnects) whole when it
// is small and as its first part when not: the store keeps it whole, and RAM holds no second copy.
constexpr size_t kShownResultBytes = 256u << 10;

using json_io::dump;

// Longest prefix of at most `max` bytes that ends on a UTF-8 character boundary.
size_t utf8_cut(std::string_view s, size_t max) {
    if (s.size() <= max) return s.size();
    size_t n = max;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    return n;
}

// `text` when it fits in `max` bytes, else its first part (ending on a character boundary) followed
// by `note(bytes kept)`.
template <typename Note>
std::string first_part(std::string_view text, size_t max, Note note) {
    size_t keep = utf8_cut(text, max);
    return keep == text.size() ? std::string(text) : std::string(text.substr(0, keep)) + note(keep);
}

// A 64-bit FNV-1a digest: the loop guard compares results by it instead of keeping their text.
std::string digest(std::string_view text) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
    return out;
}

}  // namespace

// Where this run's calls are decided: the mode, and the calls the user rejected in this run.
tools::CallSite ToolCalls::call_site(bool approved) const {
    tools::CallSite site;
    site.scope = tools::Scope::agent;
    site.mode = st_.mode;
    site.approved = approved;
    site.rejected = [this](const std::string& signature) -> std::optional<std::string> {
        auto it = st_.rejected.find(signature);
        if (it == st_.rejected.end()) return std::nullopt;
        return it->second;
    };
    return site;
}

// Runs (or refuses, or holds for approval) one call of the model's reply.
CallResult ToolCalls::handle(const ToolCall& call) {
    const std::string& name = call.name;
    std::string signature = tools::call_signature(name, call.arguments);
    if (cancel_requested(controls_)) return CallResult::stop(StopReason::cancelled, "the turn was cancelled");
    if (stop_requested(controls_)) {
        st_.pending.push_front(call);  // not started: it runs on resume
        return CallResult::stop(StopReason::interrupted, "the host is shutting down: the run stops at this step, to be resumed");
    }
    voice_.emit(events::ToolCall{name, call.id, dump(call.arguments)});
    if (int budget = deps_.config.limits.tool_call_budget; budget > 0 && st_.tool_calls >= budget)
        return CallResult::stop(StopReason::tool_call_budget, "the turn made " + std::to_string(budget) +
                                                                  " tool calls, its budget ([limits] tool_call_budget)");

    LoopGuard& guard = st_.guard;
    if (guard.blocked == signature) {
        if (++guard.refusals > kLoopGuardRefusalsAllowed)
            return CallResult::stop(StopReason::loop_detected,
                                    "the model kept repeating " + name + " with the same arguments after being told to stop");
        return record(call, error_result(kLoopGuardCode, "Refused: " + name +
                                                             " already returned the same result repeatedly for these "
                                                             "arguments. Use that result or try something different."));
    }

    std::optional<tools::Tool> tool = deps_.catalogue.find(name);
    if (unsure_.count(call.id) > 0) {
        auto settled = settle_interrupted(call, tool);
        if (!settled) {  // still unsure: settled when the run resumes, never run on a guess
            st_.pending.push_front(call);
            return CallResult::stop(StopReason::store_failure, "the tool journal could not be read to learn whether " + name +
                                                                   " started before the stop: " + settled.error().message);
        }
        unsure_.erase(call.id);
        if (*settled) {
            ++st_.tool_calls;  // it started before the stop (its checkpoint was written before it was counted)
            return record(call, (*settled)->result, (*settled)->completes_journal);
        }
    }
    tools::Verdict verdict = tools::decide(deps_.catalogue, tool, name, call.arguments, call_site(false));
    switch (verdict.kind) {
        case tools::Verdict::Kind::refuse: return record(call, error_result(verdict.error_code(), verdict.message));
        case tools::Verdict::Kind::ask:
            // A person is asked only about a call that can run as shown: invalid arguments are the model's to fix.
            if (auto invalid = deps_.invoker.check_arguments(*tool, call.arguments)) return record(call, *invalid);
            return ask_approval(call, verdict.message);
        case tools::Verdict::Kind::run: break;
    }
    return run_call(call, *tool, false);
}

// A call that was pending when the process stopped: never run twice what finished; run again what
// started only when that is safe (read-only or idempotent); otherwise say so. Returns nothing when
// the call should go on to the policy and run; an Error when the journal could not be read.
Result<std::optional<ToolCalls::SettledCall>> ToolCalls::settle_interrupted(const ToolCall& call,
                                                                            const std::optional<tools::Tool>& tool) {
    auto read = deps_.journal.journal(st_.run, call.id);
    if (!read) return read.error();
    const std::optional<store::JournalEntry>& entry = *read;
    if (!entry) return std::optional<SettledCall>();  // it never started
    if (entry->status == store::CallStatus::done) {
        json result = json::parse(entry->result, nullptr, false);
        voice_.log(EventLevel::info, call.name + " had finished before the stop; its recorded result is used");
        return std::optional<SettledCall>(
            SettledCall{result.is_object() ? result : error_result("tool_failure", entry->result), false});
    }
    if (tool && tool->repeatable()) {
        voice_.log(EventLevel::info, call.name + " was running when the host stopped; it is safe to repeat, so it runs again");
        return std::optional<SettledCall>();
    }
    voice_.log(EventLevel::warn, call.name + " was running when the host stopped; its outcome is unknown");
    return std::optional<SettledCall>(
        SettledCall{error_result("outcome_unknown", "Outcome unknown: the host stopped while this call ran (" + call.name + " " +
                                                        dump(call.arguments) +
                                                        "). It may or may not have taken effect; check before doing it again."),
                    true});
}

CallResult ToolCalls::ask_approval(const ToolCall& call, const std::string& reason) {
    // A person may take long, or quit at once (a second Ctrl-C exits without a word): the reply
    // they are shown is stored before they are asked.
    if (writer_.holding())
        if (auto held = writer_.write_held(); !held) return CallResult::store_failed(held.error());
    ApprovalRequest request{st_.conversation, call.id, call.name, dump(call.arguments), reason};
    voice_.emit(events::Approval{request.tool, request.call_id, request.arguments_json, reason});
    ApprovalDecision decision = controls_.approve ? controls_.approve(request) : ApprovalDecision{};
    // A cancel while the user was being asked wins over any answer given after it: nothing runs.
    if (cancel_requested(controls_)) {
        voice_.log(EventLevel::info, "cancelled while " + request.tool + " waited for approval; it was not run");
        return CallResult::stop(StopReason::cancelled,
                                "the turn was cancelled while " + request.tool + " waited for approval; it was not run");
    }
    if (decision.kind == ApprovalDecision::Kind::later) {
        st_.pending.push_front(call);
        st_.awaiting = reason;  // finish() saves the state once the pause is announced
        voice_.log(EventLevel::info, "paused: " + request.tool + " waits for approval (" + reason + ")");
        return CallResult::stop(StopReason::approval_pending,
                                request.tool + " needs approval: " + reason + "; approve or reject to continue");
    }
    return decide(call, decision);
}

// The user's decision on a call that waited for approval. An approved call still goes through the
// policy: its tool may be gone (the config changed while the run was paused).
CallResult ToolCalls::decide(const ToolCall& call, const ApprovalDecision& decision) {
    const std::string& name = call.name;
    if (decision.kind == ApprovalDecision::Kind::approve) {
        std::optional<tools::Tool> tool = deps_.catalogue.find(name);
        tools::Verdict verdict = tools::decide(deps_.catalogue, tool, name, call.arguments, call_site(true));
        if (verdict.kind != tools::Verdict::Kind::run) {
            voice_.log(EventLevel::error, "approved, but " + name + " cannot run: " + verdict.message);
            return CallResult::stop(
                StopReason::tool_unavailable,
                "the approved call of " + name + " cannot run: " +
                    (verdict.why == tools::Refused::unknown_tool
                         ? "there is no tool of that name any more (its plugin was disabled, removed or failed to "
                           "load since the run paused); nothing was run"
                         : verdict.message));
        }
        voice_.log(EventLevel::info, "approved: " + name);
        return run_call(call, *tool, true);
    }
    std::string reason = decision.reason.empty() ? "no reason given" : decision.reason;
    st_.rejected[tools::call_signature(name, call.arguments)] = reason;
    voice_.log(EventLevel::info, "rejected: " + name + " (" + reason + ")");
    return record(
        call, error_result(std::string(tools::refused_code(tools::Refused::rejected)),
                           "The user rejected this call: " + reason + ". It was not run. Do not propose it again in this turn."));
}

// What the plugin may ask during a call of the agent: the person through the front end, the model
// under [sampling] policy (agent/person_channel.hpp decides).
PersonCall ToolCalls::person_call(const tools::Tool& tool, const std::string& call_id) {
    PersonCall p;
    p.tool = tool.name;
    p.call_id = call_id;
    p.ask = controls_.ask_person;
    p.announce = [this](const PersonQuestion& q) {
        voice_.emit(events::Question{q.tool, q.call_id, json_io::get_string(q.params, "message"),
                                     dump(q.params.contains("requestedSchema") ? q.params["requestedSchema"] : json::object())});
    };
    p.model = &deps_.model;
    p.sampling = deps_.config.sampling;
    p.provider = st_.provider;
    p.model_name = st_.model;
    p.cancel = controls_.cancel;
    return p;
}

CallResult ToolCalls::run_call(const ToolCall& call, const tools::Tool& tool, bool approved) {
    const std::string& name = tool.name;
    if (auto invalid = deps_.invoker.check_arguments(tool, call.arguments)) return record(call, *invalid);
    ++st_.tool_calls;
    // The intent is durable before the call runs, so a crash during it is known afterwards.
    if (auto intent = writer_.commit_intent(call, tool); !intent) return CallResult::store_failed(intent.error());
    tools::Invocation invocation;
    // Unique among every call running in this process (a model's ids repeat across conversations):
    // what the plugin asks during the call is routed by it.
    invocation.call_id = st_.conversation + "/" + call.id;
    invocation.conversation_id = st_.conversation;
    invocation.arguments = call.arguments;
    invocation.request_context = json::parse(st_.request_context, nullptr, false);
    invocation.approved = approved;
    invocation.cancel = controls_.cancel;
    PersonChannel person(person_call(tool, call.id));  // its questions name the call as its tool_call event does
    json result;
    {
        auto open = deps_.registry.services().call_channels().open(invocation.call_id, person.channel());
        result = deps_.invoker.call(tool, invocation);
    }
    person.close();
    offer_.note_use(tool, st_.conversation);

    if (tools::result_marker(result) == tools::ResultMarker::approval_requested && !approved) {
        std::string reason = json_io::get_string(result, "reason", tools::content_text(result));
        return ask_approval(call, name + " asks for approval: " + reason);
    }
    // A plugin tool that may have changed something: its context (a graph's size, say) is re-read
    // before the step is committed, so the next request and a resumed run both see it.
    if (tool.source == tools::Tool::Source::plugin && !(tool.hints & AH_TOOL_READ_ONLY) &&
        !json_io::get_bool(result, "is_error", false))
        voice_.refresh_plugin_context();
    return record(call, result, true);
}

// Appends a call's result (cut for the model when long, whole in the store) and acts on markers.
// `journaled`: the call ran (or was settled) under a journal entry, which this step completes.
CallResult ToolCalls::record(const ToolCall& call, const json& result, bool journaled) {
    const std::string& name = call.name;
    std::string spill;  // a large result's text is read in place, not copied
    const std::string_view content = tools::content_view(result, spill);
    bool is_error = json_io::get_bool(result, "is_error", false);
    if (is_error) {  // the memory and the log get the start of a failure, never a megabyte of it
        std::string gist = first_part(content, 2000, [](size_t) { return " …"; });
        (void)deps_.memory.add_error(st_.conversation, name + ": " + gist);
        // A call the user rejected did what they asked: not a failure to warn about.
        if (json_io::get_string(result, "error_code") == tools::refused_code(tools::Refused::rejected))
            voice_.log(EventLevel::info, name + " rejected by the user: " + gist);
        else
            voice_.log(EventLevel::warn, name + " failed: " + gist);
    }

    // Cut for the model first (no copy of a long result), then the loop guard's note, which must survive the cut.
    std::string for_model = first_part(content, static_cast<size_t>(deps_.config.agent.tool_result_max_chars), [&](size_t keep) {
        return "\n\n[result cut: showing the first " + std::to_string(keep) + " of " + std::to_string(content.size()) +
               " bytes; the full result is kept]";
    });
    LoopGuard& guard = st_.guard;
    std::string signature = tools::call_signature(name, call.arguments);
    std::string key = signature + "\n" + digest(content);  // checkpointed each step: never the result itself
    guard.count = guard.last == key ? guard.count + 1 : 1;
    guard.last = key;
    if (guard.count >= deps_.config.agent.loop_guard_repeats && json_io::get_string(result, "error_code") != kLoopGuardCode) {
        guard.blocked = signature;
        for_model += "\n\n[loop guard] This exact call has returned the same result " + std::to_string(guard.count) +
                     " times in a row. Do not call it again with these arguments: use the result, change the "
                     "arguments, or answer.";
        voice_.log(EventLevel::warn,
                   "loop guard: " + name + " returned the same result " + std::to_string(guard.count) + " times");
    }

    json message{{"role", "tool"}, {"tool_call_id", call.id}, {"name", name}, {"content", for_model}};
    std::string whole = dump(result);
    std::string shown_json = whole.size() <= kShownResultBytes ? whole : std::string();
    if (auto step = writer_.commit({{MessageKind::step, dump(message), std::move(whole)}}, journaled ? call.id : "", result, 1);
        !step)
        return CallResult::store_failed(step.error());
    // Shown once stored: a result the user saw is never missing after a crash or a full disk.
    voice_.emit(shown_result(call, result, content, is_error, std::move(shown_json)));

    using After = tools::BuiltinTool::After;
    const tools::BuiltinTool* builtin = tools::find_builtin(name);
    const After after = builtin ? builtin->after : After::goes_on;
    const tools::ResultMarker marker = tools::result_marker(result);
    if (marker == tools::ResultMarker::plan_created && !builtin) adopt_plan(name, result);
    if (after == After::shows_tasks || marker == tools::ResultMarker::plan_created) emit_tasks();
    if (marker == tools::ResultMarker::done)
        return CallResult::answer(json_io::get_string(result, "summary", std::string(content)), StopReason::done);
    if (after == After::asks_user && !is_error) return CallResult::answer(std::string(content), StopReason::ask_user);
    return CallResult::go_on();
}

// `small_json`: the result's JSON when it is at most kShownResultBytes, else empty.
events::ToolResult ToolCalls::shown_result(const ToolCall& call, const json& result, std::string_view content, bool is_error,
                                           std::string small_json) const {
    events::ToolResult e{.tool = call.name,
                         .call_id = call.id,
                         .content = {},
                         .is_error = is_error,
                         .error_code = json_io::get_string(result, "error_code"),
                         .result_json = std::move(small_json)};
    if (!e.result_json.empty()) {
        e.content = content;
        return e;
    }
    e.content = first_part(content, kShownResultBytes, [&](size_t keep) {
        return "\n\n[showing the first " + std::to_string(keep) + " of " + std::to_string(content.size()) +
               " bytes; the whole result is in the run's transcript]";
    });
    e.truncated = events::Truncation{content.size()};
    return e;
}

// A plugin's plan ({"plan": {"steps": [...]}}) becomes the task list.
void ToolCalls::adopt_plan(const std::string& tool, const json& result) {
    const json* steps = nullptr;
    if (auto p = result.find("plan"); p != result.end()) steps = p->is_object() && p->contains("steps") ? &(*p)["steps"] : &*p;
    std::vector<std::string> titles;
    if (steps && steps->is_array())
        for (const auto& step : *steps)
            titles.push_back(step.is_string()   ? step.get<std::string>()
                             : step.is_object() ? json_io::get_string(step, "title", dump(step))
                                                : dump(step));
    if (titles.empty()) return voice_.log(EventLevel::warn, tool + " marked a plan as created but sent no plan.steps");
    if (auto st = deps_.memory.set_plan(st_.conversation, titles); !st)
        voice_.log(EventLevel::error, "could not save the plan: " + st.error().message);
}

std::string ToolCalls::unique_id(const std::string& proposed, size_t index) {
    std::string id = proposed;
    if (id.empty() || used_ids_.count(id))
        id = "call_" + std::to_string(st_.run) + "_" + std::to_string(st_.iteration) + "_" + std::to_string(index);
    used_ids_.insert(id);
    return id;
}

void ToolCalls::emit_tasks() {
    voice_.emit(events::Tasks{deps_.memory.plan(st_.conversation), deps_.memory.task_stack(st_.conversation)});
}

}  // namespace agenthost::agent
