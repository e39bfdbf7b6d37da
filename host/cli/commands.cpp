// The handlers of the agenthost commands and the table that names them.
#include "cli/commands.hpp"

#include "agent/toolcall_extractor.hpp"
#include "agent/turn_runner.hpp"
#include "cli/chat.hpp"
#include "cli/init.hpp"
#include "cli/turn_session.hpp"
#include "common/host_module.hpp"
#include "common/spelling.hpp"
#include "sqlite/database.hpp"
#include "tools/tool_families.hpp"
#include "isolation/sandbox.hpp"
#include "app/reports.hpp"
#include "cli/turn_printer.hpp"
#include "mcp/mcp_server.hpp"
#include "server/http_server.hpp"
#include "tools/policy.hpp"

#include <agenthost/agenthost.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#ifndef AGENTHOST_VERSION
#define AGENTHOST_VERSION "0.0.0"
#endif

namespace agenthost::cli {

using nlohmann::json;

// A message of several lines (every problem of a [plugins.NAME] table) under a list entry: the
// lines after the first indented like it.
std::string indented(const std::string& text, const std::string& indent) {
    std::string out;
    for (char c : text) out += c == '\n' ? "\n" + indent : std::string(1, c);
    return out;
}

std::string agenthost_command(const std::filesystem::path& config_file) {
    if (config_file.empty()) return "agenthost";  // the built-in defaults: nothing to name
    auto bare = config::locate(std::nullopt);
    std::error_code ec;
    if (bare && *bare && std::filesystem::equivalent(**bare, config_file, ec)) return "agenthost";
    return "agenthost --config '" + std::filesystem::weakly_canonical(std::filesystem::absolute(config_file), ec).string() + "'";
}

int usage_error(const std::string& message, std::string_view command) {
    std::cerr << "agenthost: " << message << "\nRun 'agenthost " << command << (command.empty() ? "" : " ") << "--help' for "
              << (command.empty() ? "usage" : "its options") << ".\n";
    return kExitUsage;
}

std::string clock_time(double unix_seconds) {
    if (unix_seconds <= 0) return "-";
    std::time_t t = static_cast<std::time_t>(unix_seconds);
    std::tm local{};
    localtime_r(&t, &local);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &local);
    return text;
}

namespace {

std::string dump(const json& j, int indent = 2) { return j.dump(indent, ' ', false, json::error_handler_t::replace); }

Output output_of(const Invocation& in) {
    if (in.has("--json")) return Output::json;
    return in.has("--quiet") ? Output::quiet : Output::terminal;
}

// ---- options shared by run, resume and chat ------------------------------------------------------

}  // namespace

Result<TurnSettings> turn_settings(const Context& ctx) {
    const Invocation& in = ctx.invocation;
    TurnSettings s;
    s.mode = agent::parse_mode(ctx.config->agent.default_mode).value_or(agent::Mode::execute);
    if (in.has("--mode")) {
        auto m = agent::parse_mode(in.value("--mode"));
        if (!m) return Error{"usage", "--mode must be explore, plan or execute, not '" + in.value("--mode") + "'"};
        s.mode = *m;
        s.mode_given = true;
    }
    s.provider = in.value("--provider");
    if (!s.provider.empty() && !ctx.config->provider_named(s.provider))
        return Error{"usage",
                     "--provider '" + s.provider + "' is neither [provider] nor a [providers." + s.provider + "] in the config"};
    s.model = in.value("--model");
    // A provider whose plugin did not start cannot answer: say so before a conversation is made.
    if (ctx.app) {
        const config::ProviderSettings* p = ctx.config->provider_named(s.provider);
        for (const auto& info : ctx.app->registry().plugins())
            if (p && info.name == p->use && info.status == plugins::PluginStatus::failed)
                return Error{"usage", "provider '" + p->name + "' cannot answer: its plugin '" + info.name + "' did not start: " +
                                          (info.error ? info.error->message : std::string("unknown cause")) +
                                          " (agenthost doctor)"};
    }
    s.conversation = in.value("--conversation");
    if (!s.conversation.empty() && (in.command == "run" || in.command == "chat"))
        if (auto problem = store::conversation_id_problem(s.conversation)) return Error{"usage", "--conversation: " + *problem};
    // A conversation taken up again goes on in the mode it was last in, unless --mode says otherwise.
    if (!s.conversation.empty() && !s.mode_given && ctx.app)
        if (auto last = ctx.app->runs().runs(s.conversation, 1); !last.empty())
            if (auto mode = agent::parse_mode(last.front().mode)) s.mode = *mode;
    s.context = in.value("--context", "{}");
    if (!json::parse(s.context, nullptr, false).is_object())
        return Error{"usage", "--context must be a JSON object, e.g. '{\"active_graph\": \"marvel\"}'"};
    s.yes = in.has("--yes");
    s.output = output_of(in);
    return s;
}

int report(HostApp& app, TurnPrinter& printer, const agent::TurnOutcome& outcome, const std::string& conversation, bool summary) {
    printer.close_line();
    if (outcome.stop_reason == StopReason::approval_pending) {
        std::cerr << "agenthost: paused: " << outcome.error << "\n";
        if (app.runner().pending_approval(conversation) && !summary)  // inside chat: its own commands
            std::cerr << "  /approve, or /reject REASON\n";
        else if (app.runner().pending_approval(conversation))
            std::cerr << "  agenthost approve --conversation " << conversation << "\n"
                      << "  agenthost reject --conversation " << conversation << " --reason \"...\"\n";
        std::cerr << "conversation: " << conversation << "\n";
        return kExitPaused;
    }
    // A streamed answer is already on stdout; one given by a tool (the done marker, ask_user) is
    // not. --quiet streamed nothing and prints the final answer alone; --json has it in "end".
    bool from_tool = outcome.stop_reason == StopReason::done || outcome.stop_reason == StopReason::ask_user;
    if (outcome.ok() && !outcome.answer.empty() &&
        ((printer.output() == Output::terminal && from_tool) || printer.output() == Output::quiet))
        std::cout << outcome.answer << (outcome.answer.back() == '\n' ? "" : "\n") << std::flush;
    const std::string agenthost = agenthost_command(app.config().source);
    if (printer.output() == Output::terminal && summary)
        std::cerr << "conversation: " << conversation << " (" << spelling::counted(outcome.iterations, "iteration", "iterations")
                  << ", " << spelling::counted(outcome.tool_calls, "tool call", "tool calls") << "; continue with " << agenthost
                  << " run --conversation " << conversation << " \"...\")\n";
    if (!outcome.ok()) {
        std::cerr << "agenthost: turn stopped (" << outcome.stop_reason_name() << "): " << outcome.error << "\n";
        // A model the server does not serve: what it serves says more than doctor (which checks the
        // configured one). A timeout: the provider's limit. Only these read the run's provider.
        std::vector<std::string> served;
        const config::ProviderSettings* provider = nullptr;
        const bool names_provider =
            outcome.stop_reason == StopReason::model_unavailable || outcome.stop_reason == StopReason::timeout;
        if (auto record = names_provider && outcome.run > 0 ? app.runs().run(outcome.run) : std::nullopt) {
            provider = app.config().provider_named(record->provider);
            if (outcome.stop_reason == StopReason::model_unavailable) served = app.queue().check(record->provider).models;
        }
        if (outcome.stop_reason == StopReason::cancelled) {
            // In chat the next line typed goes on with the conversation: nothing to suggest.
            if (summary)
                std::cerr << "  the conversation goes on: " << agenthost << " run --conversation " << conversation
                          << " \"...\"\n";
        } else if (stop_info(outcome.stop_reason).resumable && outcome.run > 0) {
            // Resumed on a model the server does not serve, it would stop the same way: name one it does.
            std::cerr << "  resume it: " << agenthost << " resume " << outcome.run
                      << (served.empty() ? "" : " --model " + served.front()) << "\n";
        }
        // A server that answers its model list but not in time: doctor would say ready; the limit is the setting.
        if (outcome.stop_reason == StopReason::timeout && provider)
            std::cerr << "  the model did not finish within timeout_ms = " << app::effective_timeout_ms(app, *provider)
                      << " ms (provider '" << provider->name << "'): raise it in "
                      << (app.config().source.empty() ? "agenthost.toml" : app.config().source.string())
                      << " for a slow model, or check the model server's load\n";
        else if (!served.empty())
            std::cerr << "  the provider serves: " << spelling::join_names(served) << "; choose one with --model NAME"
                      << (summary ? "" : " (here: /model NAME)") << "\n";
        else if (doctor_checks(outcome.stop_reason))
            std::cerr << "  check the provider's key, server and model: " << agenthost << " doctor\n";
        return outcome.stop_reason == StopReason::cancelled ? kExitInterrupted : kExitTurnFailed;
    }
    return kExitOk;
}

agent::RunControls controls(TurnPrinter& printer, const ah_cancel& cancel) {
    agent::RunControls c;
    c.cancel = &cancel;
    c.on_event = [&printer, &cancel](const agent::TurnEvent& e) {
        // Once cancelled, the rest of a streamed reply is not shown: it would print after the notice.
        using Kind = agent::TurnEvent::Kind;
        if (cancel.cancelled() && (e.kind == Kind::text || e.kind == Kind::reasoning)) return;
        printer.on_event(e);
    };
    c.approve = [&printer, &cancel](const agent::ApprovalRequest& r) { return printer.approve(r, &cancel); };
    return c;
}

Signals::Scope cancel_on_signal(Signals& signals, ah_cancel& cancel) {
    return signals.on_first([&cancel] {
        cancel.cancel();  // first: no streamed text is shown after the notice
        std::cerr << "\nagenthost: cancelling the turn, which then ends for good (press Ctrl-C again to quit now and leave "
                     "it interrupted, to resume later)\n"
                  << std::flush;
    });
}

int run_turn(Signals& signals, HostApp& app, const TurnSettings& s, const std::string& prompt, const std::string& conversation) {
    agent::TurnRequest request;
    request.prompt = prompt;
    request.conversation_id = conversation;
    request.mode = s.mode;
    request.request_context_json = s.context;
    request.provider = s.provider;
    request.model = s.model;
    TurnPrinter printer(s.yes, s.output);
    printer.set_conversation(conversation);
    ah_cancel cancel;
    auto on_signal = cancel_on_signal(signals, cancel);
    auto outcome = app.runner().run(request, controls(printer, cancel));
    return report(app, printer, outcome, conversation, s.summary);
}

namespace {

// ---- commands ------------------------------------------------------------------------------------

int cmd_run(Context& ctx) {
    auto settings = turn_settings(ctx);
    if (!settings) return usage_error(settings.error().message);
    auto args = ctx.invocation.args;
    // The prompt from stdin when none is given or it is "-" (echo "add 1 and 2" | agenthost run).
    if (args.empty() || (args.size() == 1 && args[0] == "-")) {
        if (isatty(STDIN_FILENO)) return usage_error("run needs a prompt: agenthost run 'your request' (or pipe it in)");
        std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
        while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
        if (text.empty()) return usage_error("run read an empty prompt from stdin");
        args = {text};
    }
    if (args.size() != 1) return usage_error("run takes exactly one prompt (quote it)");
    if (args[0].find_first_not_of(" \t\r\n") == std::string::npos) return usage_error("run was given an empty prompt");
    std::string conversation = settings->conversation.empty() ? new_conversation_id() : settings->conversation;
    // A --conversation nothing was said in yet starts one: say so, a mistyped id would lose the history quietly.
    if (!settings->conversation.empty() && ctx.app->runs().all(conversation).empty() && settings->output == Output::terminal)
        std::cerr << "agenthost: no conversation '" << conversation
                  << "' yet: starting it (agenthost conversations lists them)\n";
    return run_turn(ctx.signals, *ctx.app, *settings, args[0], conversation);
}

int cmd_resume(Context& ctx) {
    auto settings = turn_settings(ctx);
    if (!settings) return usage_error(settings.error().message);
    const auto& args = ctx.invocation.args;
    char* end = nullptr;
    int64_t run = args.size() == 1 ? std::strtoll(args[0].c_str(), &end, 10) : 0;
    if (args.size() != 1 || !end || *end != '\0' || run <= 0)
        return usage_error(args.size() != 1
                               ? "resume takes one run id (agenthost runs lists them)"
                               : "resume takes a run id, a positive number as agenthost runs lists them; got '" + args[0] + "'");
    agent::ResumeOptions options;
    if (settings->mode_given) options.mode = settings->mode;
    options.provider = settings->provider;
    options.model = settings->model;
    HostApp& app = *ctx.app;
    auto record = app.runs().run(run);
    TurnPrinter printer(settings->yes, settings->output);
    if (record) printer.set_conversation(record->conversation);
    ah_cancel cancel;
    auto on_signal = cancel_on_signal(ctx.signals, cancel);
    auto outcome = app.runner().resume_run(run, options, controls(printer, cancel));
    if (!record || outcome.stop_reason == StopReason::run_not_resumable || outcome.stop_reason == StopReason::run_not_found) {
        std::cerr << "agenthost: " << outcome.error << "\n";
        return kExitUsage;
    }
    return report(app, printer, outcome, record->conversation);
}

int cmd_decide(Context& ctx) {
    const Invocation& in = ctx.invocation;
    const std::string conversation = in.value("--conversation");
    if (conversation.empty() || !in.args.empty()) return usage_error(in.command + " needs --conversation ID and nothing else");
    HostApp& app = *ctx.app;
    using Kind = agent::ApprovalDecision::Kind;
    TurnPrinter printer(false, output_of(in));
    ah_cancel cancel;
    auto on_signal = cancel_on_signal(ctx.signals, cancel);
    auto outcome = app.runner().resume(
        conversation, {in.command == "approve" ? Kind::approve : Kind::reject, in.value("--reason")}, controls(printer, cancel));
    if (outcome.stop_reason == StopReason::not_paused) {  // nothing ran: the runner says why
        std::cerr << "agenthost: " << outcome.error << "\n";
        return kExitUsage;
    }
    return report(app, printer, outcome, conversation);
}

int cmd_runs(Context& ctx) {
    HostApp& app = *ctx.app;
    const std::string conversation = ctx.invocation.value("--conversation");
    app.runs().recover_interrupted();
    auto runs = app.runs().runs(conversation, 200);
    if (ctx.invocation.has("--json")) {
        json out = json::array();
        for (const auto& r : runs) out.push_back(json::parse(app::run_report(r)));
        std::cout << dump(out) << "\n";
        return kExitOk;
    }
    if (runs.empty()) {
        std::cout << "No runs" << (conversation.empty() ? "" : " in conversation " + conversation) << ".\n";
        return kExitOk;
    }
    std::printf("%6s  %-11s %-8s %-10s %-19s %-16s %5s %5s %9s  %-16s %s\n", "RUN", "STATUS", "MODE", "PROVIDER", "CONVERSATION",
                "STARTED", "STEPS", "CALLS", "TOKENS", "RESULT", "PROMPT");
    for (const auto& r : runs) {
        std::string prompt = r.prompt.size() > 40 ? r.prompt.substr(0, 40) + "…" : r.prompt;
        for (char& c : prompt)
            if (c == '\n' || c == '\r') c = ' ';
        std::string result = r.error_code.empty() ? r.stop_reason : r.error_code;
        std::printf("%6lld  %-11s %-8s %-10s %-19s %-16s %5d %5d %9lld  %-16s %s\n", static_cast<long long>(r.id),
                    std::string(run_status_name(r.status)).c_str(), r.mode.c_str(),
                    r.provider.empty() ? "default" : r.provider.c_str(), r.conversation.c_str(), clock_time(r.started_at).c_str(),
                    r.counters.iterations, r.counters.tool_calls,
                    static_cast<long long>(r.counters.input_tokens + r.counters.output_tokens),
                    result.empty() ? "-" : result.c_str(), prompt.c_str());
    }
    return kExitOk;
}

int cmd_conversations(Context& ctx) {
    auto list = ctx.app->runs().conversations(500);
    if (ctx.invocation.has("--json")) {
        json out = json::array();
        for (const auto& c : list)
            out.push_back({{"id", c.id},
                           {"created_at", c.created_at},
                           {"updated_at", c.updated_at},
                           {"runs", c.runs},
                           {"last_prompt", c.last_prompt},
                           {"title", c.title}});
        std::cout << dump(out) << "\n";
        return kExitOk;
    }
    if (list.empty()) {
        std::cout << "No conversations yet (agenthost chat, or agenthost run \"…\").\n";
        return kExitOk;
    }
    std::printf("%-22s %-16s %4s  %s\n", "CONVERSATION", "UPDATED", "RUNS", "LAST PROMPT");
    for (const auto& c : list) {
        std::string prompt = c.last_prompt.size() > 60 ? c.last_prompt.substr(0, 60) + "…" : c.last_prompt;
        if (!c.title.empty()) prompt = "\"" + c.title + "\": " + prompt;  // a title holds no control characters
        for (char& ch : prompt)
            if (ch == '\n' || ch == '\r') ch = ' ';
        std::printf("%-22s %-16s %4lld  %s\n", c.id.c_str(), clock_time(c.updated_at).c_str(), static_cast<long long>(c.runs),
                    prompt.c_str());
    }
    return kExitOk;
}

int cmd_show(Context& ctx) {
    const auto& args = ctx.invocation.args;
    if (args.size() != 1) return usage_error("show takes one conversation id (agenthost conversations lists them)");
    auto messages = ctx.app->runs().all(args[0]);
    if (messages.empty()) {
        std::cerr << "agenthost: no conversation '" << args[0] << "' (agenthost conversations lists them)\n";
        return kExitUsage;
    }
    if (ctx.invocation.has("--json")) {
        json out = json::array();
        for (const auto& m : messages) {
            json body = json::parse(m.body, nullptr, false);
            json entry{{"turn", m.turn}, {"run", m.run}, {"message", body.is_discarded() ? json(m.body) : body}};
            if (!m.result.empty()) entry["result"] = json::parse(m.result, nullptr, false);
            out.push_back(std::move(entry));
        }
        std::cout << dump(out) << "\n";
        return kExitOk;
    }
    // A run that did not complete shows how it ended, under its messages.
    std::map<int64_t, store::RunRecord> runs;
    for (const auto& r : ctx.app->runs().runs(args[0], 10000)) runs[r.id] = r;
    auto ending = [&](int64_t run) {
        auto it = runs.find(run);
        if (it == runs.end() || it->second.status == RunStatus::completed) return;
        const auto& r = it->second;
        std::cout << "[run " << r.id << " " << run_status_name(r.status)
                  << (r.error_code.empty() ? "" : " (" + r.error_code + ")") << (r.error.empty() ? "" : ": " + r.error) << "]\n";
    };
    int64_t current = -1;
    for (const auto& m : messages) {
        if (m.run != current) {
            if (current >= 0) ending(current);
            current = m.run;
        }
        json body = json::parse(m.body, nullptr, false);
        if (!body.is_object()) continue;
        std::string role = body.value("role", "");
        std::string content = body.contains("content") && body["content"].is_string() ? body["content"].get<std::string>() : "";
        if (role == "user")
            std::cout << "\n> " << content << "\n";
        else if (role == "assistant") {
            if (!content.empty()) std::cout << content << "\n";
            if (body.contains("tool_calls") && body["tool_calls"].is_array())
                for (const auto& call : body["tool_calls"]) {
                    const json& fn = call.contains("function") ? call["function"] : call;
                    std::string arguments =
                        fn.contains("arguments")
                            ? (fn["arguments"].is_string() ? fn["arguments"].get<std::string>() : fn["arguments"].dump())
                            : "{}";
                    if (arguments.size() > 300) arguments = arguments.substr(0, 300) + "…";
                    std::cout << "→ " << fn.value("name", "?") << " " << arguments << "\n";
                }
        } else if (role == "tool") {
            if (content.size() > 300) content = content.substr(0, 300) + "…";
            for (char& c : content)
                if (c == '\n' || c == '\r') c = ' ';
            std::cout << "← " << content << "\n";
        }
    }
    if (current >= 0) ending(current);
    return kExitOk;
}

int cmd_plugins(Context& ctx) {
    HostApp& app = *ctx.app;
    const bool config_ok = app.config_problems().errors.empty();  // listed either way; exit 2 says the file is wrong
    if (ctx.invocation.has("--json")) {
        std::cout << app::plugins_report(app) << "\n";
        return config_ok ? kExitOk : kExitUsage;
    }
    const auto& plugins = app.registry().plugins();
    if (plugins.empty()) {
        std::cout << "No plugins found. Searched:\n";
        for (const auto& d : app.config().plugin_dirs) std::cout << "  " << d.string() << "\n";
    }
    for (const auto& p : plugins) {
        std::printf("%-16s %-8s %-8s %-9s %-8s %s\n", p.name.c_str(), std::string(name(p.kind)).c_str(), p.version.c_str(),
                    p.abi.empty() ? "" : ("abi " + p.abi).c_str(), std::string(name(app.registry().status_now(p))).c_str(),
                    p.library.string().c_str());
        if (auto health = app.registry().process_health(p.name)) {
            // restarts happen in a long-running host (serve, mcp): /api/plugins
            std::printf("    isolation: %s", std::string(name(p.isolation)).c_str());
            if (health->restarts > 0) std::printf(", %d restart%s", health->restarts, health->restarts == 1 ? "" : "s");
            if (health->disabled)
                std::printf(", DISABLED (last failure: %s)", health->last_failure.c_str());
            else if (!health->last_failure.empty())
                std::printf(", last failure: %s", health->last_failure.c_str());
            std::printf("\n");
        }
        if (!p.permissions.empty()) {
            std::printf("    permissions (%s):\n",
                        p.isolation == plugins::Isolation::sandbox
                            ? "isolation = sandbox: enforced by the kernel, as docs/plugin-abi.md says"
                            : "checked on the host's HTTP service only; isolation = \"sandbox\" enforces them");
            for (const auto& line : p.permissions) std::printf("      %s\n", line.c_str());
        }
        if (p.error) std::printf("    error (%s): %s\n", p.error->code.c_str(), indented(p.error->message, "      ").c_str());
        for (const auto& r : p.refused_tools) std::printf("    refused tool %s: %s\n", r.name.c_str(), r.reason.c_str());
        for (const auto& w : p.warnings) std::printf("    warning: %s\n", w.c_str());
        if (auto offered = app.registry().tools_now(p.name); !offered.empty()) {
            std::string tools;
            for (const auto& t : offered) tools += (tools.empty() ? "" : ", ") + t;
            std::printf("    tools: %s\n", tools.c_str());
        }
    }
    for (const auto& e : app.config_problems().errors) std::printf("config error: %s\n", e.c_str());
    for (const auto& w : app.config_problems().warnings) std::printf("config warning: %s\n", w.c_str());
    return config_ok ? kExitOk : kExitUsage;
}

int cmd_tools(Context& ctx) {
    auto tools = ctx.app->catalogue().all(tools::Scope::agent);
    if (ctx.invocation.has("--json")) {
        json out = json::array();
        for (const auto& t : tools) {
            json schema = json::parse(t.input_schema_json, nullptr, false);
            out.push_back({{"name", t.name},
                           {"plugin", t.source == tools::Tool::Source::builtin ? json(nullptr) : json(t.plugin)},
                           {"description", t.description},
                           {"input_schema", schema},
                           {"read_only", (t.hints & AH_TOOL_READ_ONLY) != 0},
                           {"destructive", (t.hints & AH_TOOL_DESTRUCTIVE) != 0},
                           {"idempotent", (t.hints & AH_TOOL_IDEMPOTENT) != 0},
                           {"open_world", (t.hints & AH_TOOL_OPEN_WORLD) != 0},
                           {"needs_approval", t.needs_approval}});
        }
        std::cout << dump(out) << "\n";
        return kExitOk;
    }
    std::printf("%-24s %-12s %-20s %s\n", "TOOL", "FROM", "KIND", "DESCRIPTION");
    for (const auto& t : tools) {
        std::string kind = (t.hints & AH_TOOL_READ_ONLY)     ? "read-only"
                           : (t.hints & AH_TOOL_DESTRUCTIVE) ? "destructive"
                                                             : "changes";
        if (t.needs_approval) kind += ", approval";
        std::string description = t.description.substr(0, t.description.find('\n'));
        if (description.size() > 70) description = description.substr(0, 70) + "…";
        std::printf("%-24s %-12s %-20s %s\n", t.name.c_str(),
                    t.source == tools::Tool::Source::builtin ? "(agent)" : t.plugin.c_str(), kind.c_str(), description.c_str());
    }
    std::cout << "\n(agent): built into the agent loop, working on a conversation's memory. agenthost tools --json shows\n"
                 "the input schemas; agenthost tool NAME '{…}' calls a plugin's tool by hand.\n";
    std::vector<std::string> waiting;
    for (const auto& f :
         tools::on_demand_families(ctx.app->catalogue(), ctx.app->memory(), "", ctx.app->config().agent.on_demand_tools))
        waiting.push_back(f.plugin);
    if (!waiting.empty())
        std::cout << "On demand ([agent] on_demand_tools = " << ctx.app->config().agent.on_demand_tools << "): the tools of "
                  << spelling::join_names(waiting) << " are offered once the model loads them (load_tools) or calls one.\n";
    return kExitOk;
}

// Calls one plugin tool by hand, through the same policy and invoker as the agent loop.
int cmd_tool(Context& ctx) {
    const auto& args = ctx.invocation.args;
    if (args.empty() || args.size() > 2)
        return usage_error("tool takes a tool name and its arguments as JSON: agenthost tool NAME '{\"key\": 1}'");
    std::string text = args.size() == 2 ? args[1] : "{}";
    if (text == "-") text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    json arguments = json::parse(text, nullptr, false);
    if (arguments.is_discarded())
        return usage_error("the arguments of " + args[0] + " are not valid JSON: " + text.substr(0, 80));
    if (!arguments.is_object())
        return usage_error("the arguments of " + args[0] +
                           " must be a JSON object of its parameters (agenthost tools --json shows them)");
    HostApp& app = *ctx.app;
    auto tool = app.catalogue().find(args[0], tools::Scope::plugins_only);
    if (!tool && !app.catalogue().find(args[0], tools::Scope::agent)) {
        std::vector<std::string> names;
        for (const auto& t : app.catalogue().all(tools::Scope::plugins_only)) names.push_back(t.name);
        return usage_error("there is no tool '" + args[0] + "'" + spelling::did_you_mean(args[0], names) +
                           " (agenthost tools lists them)");
    }
    if (!tool && app.catalogue().find(args[0], tools::Scope::agent)) {
        std::cerr << "agenthost: " << args[0] << " is a built-in tool of the agent loop (it works on a conversation's memory); "
                  << "only plugin tools can be called by hand\n";
        return kExitUsage;
    }
    tools::CallSite site;
    site.scope = tools::Scope::plugins_only;
    auto verdict = tools::decide(app.catalogue(), tool, args[0], arguments, site);
    if (verdict.kind == tools::Verdict::Kind::refuse) {
        std::cerr << "agenthost: " << verdict.message << " (" << verdict.error_code << ")\n";
        return kExitUsage;
    }
    // The arguments are checked against the tool's schema exactly as for the model's calls.
    if (auto invalid = app.invoker().check_arguments(*tool, arguments)) {
        std::cerr << "agenthost: " << tools::content_text(*invalid) << "\n";
        return kExitUsage;
    }
    if (verdict.kind == tools::Verdict::Kind::ask && !ctx.invocation.has("--yes")) {
        if (!isatty(STDIN_FILENO)) {
            std::cerr << "agenthost: " << args[0] << " needs approval (" << verdict.message << "); add --yes to run it\n";
            return kExitPaused;
        }
        std::cerr << args[0] << " needs approval: " << verdict.message << "\n  run it? [y/N] " << std::flush;
        std::string line;
        if (!std::getline(std::cin, line) || (line != "y" && line != "yes")) {
            std::cerr << "not run\n";
            return kExitPaused;
        }
    }
    tools::Invocation call;
    call.call_id = "cli-" + new_conversation_id().substr(2);
    call.arguments = arguments;
    call.approved = verdict.kind == tools::Verdict::Kind::ask;
    ah_cancel cancel;
    auto on_signal = cancel_on_signal(ctx.signals, cancel);
    call.cancel = &cancel;
    json result = app.invoker().call(*tool, call);
    std::cout << dump(result) << "\n";
    return result.value("is_error", false) ? kExitTurnFailed : kExitOk;
}

// What doctor found, once; printed as text or as JSON (--json).
struct DoctorReport {
    struct Plugin {
        const plugins::PluginInfo* info;
        std::vector<plugins::HealthCheck> checks;
        bool counts = true;  // in use: a provider a [provider] names, a tool plugin the file configures
    };
    struct Provider {
        const config::ProviderSettings* settings = nullptr;
        bool is_default = false;
        bool ready = false;
        std::string code, message;
        size_t models = 0;
    };
    struct Module {
        std::string_view name;
        bool built = true;  // false: this build left it out (its AGENTHOST_WITH_… option was off)
        std::string error;  // empty: the file is there and whole (it is not loaded to tell)
    };
    std::vector<Plugin> plugins;
    std::vector<Provider> providers;
    std::vector<Module> modules;
    bool store_ready = true;
    std::optional<std::string> data_dir_problem;  // full, read-only or not writable (app::data_dir_problem)
    bool ready = true;
};

// Where runs are kept, in words: the backend, where (never the PostgreSQL URL: it may hold a
// password), and whether serve takes over runs other processes left.
std::string describe_store(const config::Config& cfg) {
    const auto& s = cfg.store;
    std::string where = s.backend == "postgresql" ? "URL from $" + s.url_env : (cfg.data_dir / "agenthost.db").string();
    return s.backend + " (" + where + "), takeover " + (s.takes_over() ? "on" : "off");
}

// Whether a plugin's failed checks make the host not ready: providers that a [provider] or
// [providers.NAME] uses, tool plugins the file configures ([plugins.NAME] or enabled_plugins). A
// plugin nobody asked for (the scripted provider beside a real one, torrent search never set up)
// is shown, not counted.
bool in_use(const config::Config& cfg, const plugins::PluginInfo& p) {
    if (p.kind == plugins::PluginKind::provider) {
        if (cfg.provider.use == p.name) return true;
        for (const auto& [name, settings] : cfg.providers)
            if (settings.use == p.name) return true;
        return false;
    }
    return cfg.plugin_tables.count(p.name) > 0 ||
           std::find(cfg.enabled_plugins.begin(), cfg.enabled_plugins.end(), p.name) != cfg.enabled_plugins.end();
}

DoctorReport examine(HostApp& app) {
    DoctorReport r;
    for (const auto& p : app.registry().plugins()) {
        DoctorReport::Plugin entry{&p, {}, in_use(app.config(), p)};
        if (p.status == plugins::PluginStatus::failed) r.ready = false;
        // The plugin's own checks (ABI 1.4 health slot): servers it logs in to, folders, files.
        if (p.status == plugins::PluginStatus::loaded) entry.checks = app.registry().health(p.name);
        for (const auto& c : entry.checks) r.ready = r.ready && (c.ok || !entry.counts);
        // A tool the host refused is the plugin's defect whoever uses it: always counted.
        if (!p.refused_tools.empty()) r.ready = false;
        r.plugins.push_back(std::move(entry));
    }
    if (!app.config_problems().errors.empty()) r.ready = false;
    for (const auto& m : modules::kModules) {  // a broken installation, whatever it is used for
        if (!modules::built(m.name)) {
            // Left out on purpose: not a fault of this installation (a config that needs it fails on its own).
            r.modules.push_back({m.name, false, ""});
            continue;
        }
        auto usable = modules::check(m.name);
        r.modules.push_back({m.name, true, usable ? "" : usable.error().message});
        if (!usable) r.ready = false;
    }
    r.store_ready = app.storage().ready();
    if (!r.store_ready) r.ready = false;
    r.data_dir_problem = app::data_dir_problem(app.config().data_dir);
    if (r.data_dir_problem) r.ready = false;
    const auto& cfg = app.config();
    std::vector<const config::ProviderSettings*> providers{&cfg.provider};
    for (const auto& [name, settings] : cfg.providers) providers.push_back(&settings);
    for (const auto* p : providers) {
        DoctorReport::Provider entry;
        entry.settings = p;
        entry.is_default = p == &cfg.provider;
        if (auto missing = config::missing_api_key(*p)) {
            // Asking the server without its key would only fail (after the retries) for the same reason.
            entry.code = "KEY_MISSING";
            entry.message = *missing;
        } else {
            auto readiness = app.queue().check(p->name);
            entry.ready = readiness.ready;
            entry.code = readiness.code;
            entry.message = readiness.message;
            if (!readiness.ready && !p->api_key_env.empty() && p->api_key.empty())
                entry.message += " (" + p->api_key_env + " is not set; set it if the server needs a key)";
            entry.models = readiness.models.size();
        }
        if (entry.is_default && !entry.ready) r.ready = false;
        r.providers.push_back(std::move(entry));
    }
    return r;
}

// What isolation = "sandbox" can enforce on this kernel, said once.
json sandbox_json() {
    auto support = isolation::kernel_support();
    return {{"landlock_abi", support.landlock_abi}, {"seccomp", support.seccomp}, {"summary", isolation::describe(support)}};
}

json doctor_json(HostApp& app, const DoctorReport& r) {
    const auto& cfg = app.config();
    json out{{"ready", r.ready},
             {"config", cfg.source.empty() ? json(nullptr) : json(cfg.source.string())},
             {"data_dir", cfg.data_dir.string()},
             {"data_dir_problem", r.data_dir_problem ? json(*r.data_dir_problem) : json(nullptr)},
             {"secrets_file", cfg.secrets_file.empty() ? json(nullptr) : json(cfg.secrets_file.string())},
             {"secrets",
              cfg.secrets ? json{{"from_file", cfg.secrets->set},
                                 {"kept_from_environment", cfg.secrets->kept},
                                 {"unreadable", cfg.secrets->unreadable.empty() ? json(nullptr) : json(cfg.secrets->unreadable)}}
                          : json(nullptr)},
             {"abi", AH_ABI_VERSION_STRING},
             {"sandbox", sandbox_json()},
             {"store",
              {{"backend", cfg.store.backend},
               {"ready", r.store_ready},
               {"takeover", cfg.store.takes_over()},
               {"description", describe_store(cfg)}}},
             {"plugins", json::array()},
             {"modules", json::array()},
             {"problems", {{"errors", app.config_problems().errors}, {"warnings", app.config_problems().warnings}}},
             {"providers", json::array()}};
    for (const auto& p : r.plugins) {
        json checks = json::array();
        for (const auto& c : p.checks) checks.push_back({{"name", c.name}, {"ok", c.ok}, {"detail", c.detail}});
        json refused = json::array();
        for (const auto& t : p.info->refused_tools) refused.push_back({{"name", t.name}, {"reason", t.reason}});
        out["plugins"].push_back({{"name", p.info->name},
                                  {"in_use", p.counts},
                                  {"kind", name(p.info->kind)},
                                  {"status", name(p.info->status)},
                                  {"error", p.info->error ? json(p.info->error->message) : json(nullptr)},
                                  {"warnings", p.info->warnings},
                                  {"isolation", name(p.info->isolation)},
                                  {"permissions", p.info->permissions.empty() ? json(nullptr) : json(p.info->permissions)},
                                  {"refused_tools", refused},
                                  {"checks", checks}});
    }
    for (const auto& m : r.modules)
        out["modules"].push_back({{"name", m.name},
                                  {"built", m.built},
                                  {"ok", m.built && m.error.empty()},
                                  {"error", m.error.empty() ? json(nullptr) : json(m.error)}});
    for (const auto& p : r.providers)
        out["providers"].push_back({{"name", p.settings->name},
                                    {"default", p.is_default},
                                    {"plugin", p.settings->use},
                                    {"model", p.settings->model},
                                    {"ready", p.ready},
                                    {"code", p.code},
                                    {"message", p.message},
                                    {"models", p.models}});
    return out;
}

// What the secrets file gave: names only, never a value; nothing without `secrets_file`.
std::string secrets_line(const config::Config& cfg) {
    if (cfg.secrets_file.empty() || !cfg.secrets) return "";
    const auto& s = *cfg.secrets;
    if (!s.unreadable.empty()) return "secrets:   " + s.unreadable + "\n";
    std::string line = "secrets:   " + cfg.secrets_file.string();
    if (!s.set.empty()) line += ": " + spelling::join_names(s.set) + " from the file";
    if (!s.kept.empty())
        line += (s.set.empty() ? ": " : "; ") + spelling::join_names(s.kept) + " already in the environment (kept)";
    if (s.set.empty() && s.kept.empty()) line += ": no variables";
    return line + "\n";
}

// "http-client, postgres, http-server: ok", the ones this build left out, and each unusable one
// with its cause on its own line.
std::string modules_line(const DoctorReport& r) {
    std::string ok, absent, failed;
    for (const auto& m : r.modules) {
        if (!m.built)
            absent += (absent.empty() ? "" : ", ") + std::string(m.name);
        else if (m.error.empty())
            ok += (ok.empty() ? "" : ", ") + std::string(m.name);
        else
            failed += "\n  FAIL " + m.error;
    }
    std::string line = ok.empty() ? "" : ok + ": ok";
    if (!absent.empty()) line += (line.empty() ? "" : "; ") + absent + ": not in this build";
    return line + failed;
}

int cmd_doctor(Context& ctx) {
    HostApp& app = *ctx.app;
    DoctorReport r = examine(app);
    if (ctx.invocation.has("--json")) {
        std::cout << dump(doctor_json(app, r)) << "\n";
        if (!app.config_problems().errors.empty()) return kExitUsage;
        return r.ready ? kExitOk : kExitTurnFailed;
    }
    const auto& cfg = app.config();
    std::cout << "config:    " << (cfg.source.empty() ? "(built-in defaults)" : cfg.source.string()) << "\n"
              << "data dir:  " << cfg.data_dir.string() << (r.data_dir_problem ? " — FAIL " + *r.data_dir_problem : "") << "\n"
              << secrets_line(cfg) << "abi:       " << AH_ABI_VERSION_STRING << "\n"
              << "sandbox:   " << isolation::describe(isolation::kernel_support()) << "\n"
              << "store:     " << describe_store(cfg) << (r.store_ready ? "" : " — NOT REACHABLE now") << "\n"
              << "modules:   " << modules_line(r) << "\n\nplugins:\n";
    for (const auto& p : r.plugins) {
        const auto& info = *p.info;
        std::printf("  %-16s %-8s %-8s %s\n", info.name.c_str(), std::string(name(info.kind)).c_str(),
                    std::string(name(info.status)).c_str(), info.error ? indented(info.error->message, "      ").c_str() : "");
        if (info.isolation != plugins::Isolation::in_process)
            std::printf("      isolation: %s\n", std::string(name(info.isolation)).c_str());
        for (const auto& line : info.permissions) std::printf("      %s\n", line.c_str());
        for (const auto& w : info.warnings) std::printf("      warning: %s\n", w.c_str());
        for (const auto& t : info.refused_tools)
            std::printf("      FAIL tool %s refused: %s\n", t.name.c_str(), t.reason.c_str());
        // One line per check: "ok   what: detail", "FAIL what: what to fix", or "note" for a plugin not in use.
        for (const auto& c : p.checks)
            std::cout << "      "
                      << (c.ok       ? "ok   "
                          : p.counts ? "FAIL "
                                     : "note ")
                      << c.name << (c.detail.empty() ? "" : ": " + c.detail)
                      << (c.ok || p.counts ? "" : " (not in use: not counted)") << "\n";
    }
    const auto& problems = app.config_problems();
    if (!problems.errors.empty() || !problems.warnings.empty()) std::cout << "\nconfiguration:\n";
    for (const auto& e : problems.errors) std::cout << "  error: " << e << "\n";
    for (const auto& w : problems.warnings) std::cout << "  warning: " << w << "\n";
    std::cout << "\nproviders:\n";
    for (const auto& p : r.providers) {
        const auto& s = *p.settings;
        std::string key = s.api_key_env.empty() ? "none" : s.api_key_env + (s.api_key.empty() ? " (NOT SET)" : " (set)");
        std::cout << "  " << s.name << (p.is_default ? " (default)" : "") << ": plugin " << s.use
                  << (s.preset.empty() ? "" : ", preset " + s.preset) << ", model "
                  << (!s.model.empty()            ? s.model
                      : p.code == "MODEL_NOT_SET" ? "(none set)"
                                                  : "(plugin default)")
                  << ", base_url " << (s.base_url.empty() ? "(plugin default)" : s.base_url) << ", key " << key
                  << ", concurrency " << s.concurrency << "\n";
        if (p.ready)
            std::cout << "    ready (" << spelling::counted(static_cast<long long>(p.models), "model", "models") << ")\n";
        else
            std::cout << "    NOT READY " << p.code << ": " << p.message << "\n";
    }
    std::cout << "\n" << (r.ready ? "ready" : "NOT READY: see above") << "\n";
    if (!problems.errors.empty()) return kExitUsage;  // the file is wrong, as every command says
    return r.ready ? kExitOk : kExitTurnFailed;
}

int cmd_compact(Context& ctx) {
    HostApp& app = *ctx.app;
    const auto& cfg = app.config().store;
    auto deleted = app.runs().compact(cfg.keep_runs, cfg.keep_days);
    if (!deleted) {
        std::cerr << "agenthost: " << deleted.error().message << "\n";
        return kExitTurnFailed;
    }
    std::cout << "removed " << *deleted << " checkpoints and journal rows of runs beyond the newest " << cfg.keep_runs
              << " per conversation or older than " << cfg.keep_days << " days (messages are kept)";
    sqlite::Database* db = app.storage().sqlite();
    if (!db) {  // PostgreSQL reclaims space with its own (auto)vacuum
        std::cout << "\n";
        return kExitOk;
    }
    // What the database takes on disk: the file and its write-ahead log.
    auto size = [&] {
        std::error_code missing;  // no log: nothing was written since the last checkpoint emptied it
        auto wal = std::filesystem::file_size(db->file().string() + "-wal", missing);
        return std::filesystem::file_size(db->file()) + (missing ? 0 : wal);
    };
    auto before = size();
    // VACUUM writes the rebuilt database through the log; the second checkpoint moves it into the
    // file and empties the log, so the figure after is what stays on disk.
    for (const char* sql : {"PRAGMA wal_checkpoint(TRUNCATE)", "VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"})
        if (auto s = db->exec(sql); !s) std::cerr << "agenthost: " << s.error().message << "\n";
    std::cout << "; database and its log " << before / 1024 << " KiB -> " << size() / 1024 << " KiB\n";
    return kExitOk;
}

int cmd_serve(Context& ctx) {
    HostApp& app = *ctx.app;
    auto opened = server::HttpServer::open(app);
    if (!opened) {  // the installation lacks its http-server module: a start-up failure, as a bad config is
        std::cerr << "agenthost: " << opened.error().message << "\n";
        return kExitUsage;
    }
    server::HttpServer& server = **opened;
    std::thread stopper;
    auto on_signal = ctx.signals.on_first([&] {
        std::cerr << "agenthost: shutting down (running steps reach a checkpoint; Ctrl-C again to quit now)" << std::endl;
        stopper = std::thread([&] { server.shutdown(); });
    });
    std::string listen = ctx.invocation.value("--listen", app.config().server.listen);
    auto served = server.serve(listen);
    if (stopper.joinable()) stopper.join();
    if (!served) {
        std::cerr << "agenthost: " << served.error().message << "\n";
        return kExitUsage;
    }
    std::cerr << "agenthost: stopped" << std::endl;
    return kExitOk;
}

int cmd_mcp(Context& ctx) {
    std::atomic<bool> stop{false};
    auto on_signal = ctx.signals.on_first([&stop] { stop = true; });  // the session ends after the calls in flight
    return mcp::serve_stdio(*ctx.app, &stop);
}

int cmd_config(Context& ctx) {
    std::cout << app::config_report(*ctx.app, config::search_path()) << "\n";
    return ctx.app->config_problems().errors.empty() ? kExitOk : kExitUsage;
}

int cmd_parse_toolcalls(Context& ctx) {
    agent::ToolSet tools;
    const std::string tools_file = ctx.invocation.value("--tools");
    if (!tools_file.empty()) {
        std::ifstream in(tools_file, std::ios::binary);
        if (!in) return usage_error("cannot read --tools file " + tools_file);
        std::stringstream text;
        text << in.rdbuf();
        auto parsed = agent::ToolSet::from_json(text.str());
        if (!parsed) return usage_error(tools_file + ": " + parsed.error().message);
        tools = *parsed;
    }
    std::stringstream raw;
    raw << std::cin.rdbuf();
    auto found = agent::extract_tool_calls(raw.str(), tools);
    json out{{"calls", json::array()},
             {"content", found.content},
             {"reasoning", found.reasoning},
             {"incomplete", found.incomplete},
             {"problems", found.problems}};
    for (const auto& call : found.calls)
        out["calls"].push_back({{"name", call.name}, {"arguments", json::parse(call.arguments_json)}, {"format", call.format}});
    std::cout << dump(out) << "\n";
    return kExitOk;
}

int cmd_completion(Context& ctx);

}  // namespace

// ---- the table -----------------------------------------------------------------------------------

const std::vector<CommandSpec>& commands() {
    static const std::vector<CommandSpec> table{
        {"init",
         "init [--preset NAME] [--model MODEL] [--api-key-env VAR] [--base-url URL] [--data-dir DIR] [--force]",
         "write a first config (to --config FILE, else ~/.config/agenthost/agenthost.toml) for a provider\n"
         "preset (asked on a terminal), then check the provider answers and serves the model; --force\n"
         "replaces a file, keeping its data_dir and a copy of it as FILE.bak",
         {"--preset NAME", "--model MODEL", "--api-key-env VAR", "--base-url URL", "--data-dir DIR", "--force"},
         Needs::nothing,
         run_init,
         0},
        {"chat",
         "chat [--conversation ID] [--mode M] [--provider NAME] [--model MODEL] [--context JSON] [--yes]",
         "talk to the agent: line editing and history, streamed answers, slash commands\n"
         "(/help lists them); Ctrl-C cancels the turn, Ctrl-D leaves. From a pipe, each line\n"
         "is one prompt of the same conversation",
         {"--conversation ID", "--mode MODE", "--provider NAME", "--model MODEL", "--yes", "--context JSON"},
         Needs::host,
         run_chat},
        {"run",
         "run [--mode M] [--yes] [--conversation ID] [--context JSON] [--provider NAME] [--model MODEL] [--json|--quiet] PROMPT",
         "run one agent turn; the answer streams to stdout, tool calls to stderr. PROMPT '-' or\n"
         "none: read it from stdin. --yes approves every call that needs approval (else you are\n"
         "asked, or the run pauses); --json prints every event as one JSON line; Ctrl-C cancels",
         {"--mode MODE", "--yes", "--conversation ID", "--context JSON", "--provider NAME", "--model MODEL", "--json", "--quiet"},
         Needs::host,
         cmd_run},
        {"resume",
         "resume RUN [--mode M] [--provider NAME] [--model MODEL] [--yes] [--json|--quiet]",
         "continue an interrupted, paused or transiently failed run from its last checkpoint\n"
         "(finished tool calls are never run again)",
         {"--mode MODE", "--provider NAME", "--model MODEL", "--yes", "--json", "--quiet"},
         Needs::host,
         cmd_resume},
        {"approve",
         "approve --conversation ID [--json|--quiet]",
         "run the call a paused run waits on, and continue",
         {"--conversation ID", "--json", "--quiet"},
         Needs::host,
         cmd_decide},
        {"reject",
         "reject --conversation ID [--reason TEXT] [--json|--quiet]",
         "refuse it (the reason goes to the model), and continue",
         {"--conversation ID", "--reason TEXT", "--json", "--quiet"},
         Needs::host,
         cmd_decide},
        {"runs",
         "runs [--conversation ID] [--json]",
         "list runs: status, mode, provider, start, steps, calls, tokens, result",
         {"--conversation ID", "--json"},
         Needs::host,
         cmd_runs,
         0},
        {"conversations",
         "conversations [--json]",
         "list conversations, newest first",
         {"--json"},
         Needs::host,
         cmd_conversations,
         0},
        {"show",
         "show ID [--json]",
         "print a conversation: prompts, answers, tool calls and results",
         {"--json"},
         Needs::host,
         cmd_show},
        {"tools",
         "tools [--json]",
         "the tools the model is offered: source, kind, description (--json: the schemas)",
         {"--json"},
         Needs::host,
         cmd_tools,
         0},
        {"tool",
         "tool NAME [JSON|-] [--yes]",
         "call one plugin tool by hand with JSON arguments (from stdin with '-'), under the same\n"
         "policy as the agent: a call that needs approval asks, or runs with --yes",
         {"--yes"},
         Needs::host,
         cmd_tool},
        {"plugins",
         "plugins [--json]",
         "list plugins: status, cause of failure, tools, configuration problems",
         {"--json"},
         Needs::host,
         cmd_plugins,
         0},
        {"doctor",
         "doctor [--json]",
         "check the config, each plugin (its own checks: servers, folders, files) and each provider (key,\n"
         "server, model); exit 1 when something is not ready",
         {"--json"},
         Needs::host,
         cmd_doctor,
         0},
        {"config",
         "config",
         "the config file in use (or where it was looked for), every effective setting (each plugin's\n"
         "as it receives them) and the configuration's problems; secrets shown only as set / not set",
         {},
         Needs::host,
         cmd_config,
         0},
        {"serve",
         "serve [--listen HOST:PORT]",
         "the HTTP API: the web panel at /, OpenAI-compatible /v1, SSE chat /api/chat, runs,\nconversations, memory, /mcp, "
         "/metrics",
         {"--listen HOST:PORT"},
         Needs::host,
         cmd_serve,
         0},
        {"mcp",
         "mcp",
         "an MCP server on stdin/stdout: the plugins' tools for other agents (logs go to stderr)",
         {},
         Needs::host,
         cmd_mcp,
         0},
        {"compact",
         "compact",
         "drop old checkpoints ([store] keep_runs / keep_days) and shrink the database; messages are kept",
         {},
         Needs::host,
         cmd_compact,
         0},
        {"parse-toolcalls",
         "parse-toolcalls [--tools FILE]",
         "read a model's raw output on stdin, print the tool calls found in it as JSON\n(FILE: OpenAI-shaped tool definitions)",
         {"--tools FILE"},
         Needs::nothing,
         cmd_parse_toolcalls,
         0},
        {"completion",
         "completion bash|zsh|fish",
         "print a shell completion script (e.g. agenthost completion bash > /etc/bash_completion.d/agenthost)",
         {},
         Needs::nothing,
         cmd_completion},
    };
    return table;
}

const CommandSpec* find_command(std::string_view name) {
    for (const auto& c : commands())
        if (c.name == name) return &c;
    return nullptr;
}

std::string help_text() {
    std::string out = "agenthost " AGENTHOST_VERSION
                      " — a native host for LLM agents with plugin tools and providers\n\n"
                      "Usage:\n  agenthost [--config FILE] [--log-level LEVEL] COMMAND [ARGS]\n\nCommands:\n";
    for (const auto& c : commands()) {
        out += "  " + std::string(c.synopsis) + "\n";
        std::string help(c.help);
        size_t start = 0;
        while (start <= help.size()) {
            size_t end = help.find('\n', start);
            if (end == std::string::npos) end = help.size();
            out += "      " + help.substr(start, end - start) + "\n";
            start = end + 1;
        }
    }
    out +=
        "  --version      print the version and the plugin ABI version\n"
        "  --help         this text\n\n"
        "Configuration: --config FILE, else $AGENTHOST_CONFIG, else ./agenthost.toml, else\n"
        "$XDG_CONFIG_HOME/agenthost/agenthost.toml (~/.config/…), else /etc/agenthost/agenthost.toml, else\n"
        "built-in defaults. Paths in a config file (data_dir, plugin_dirs, plugin settings that are paths)\n"
        "are relative to that file. Logs go to stderr (level: --log-level, else log_level in the config,\n"
        "else \"warn\"); NO_COLOR turns colours off.\n"
        "Exit status: 0 done, 1 the turn failed or hit a limit (doctor: not ready), 2 usage or\n"
        "configuration error (also a run that cannot be resumed, or no run waiting for approval), 3 paused\n"
        "waiting for approval, 130 cancelled by Ctrl-C or SIGTERM (a second one quits at once).\n"
        "agenthost COMMAND --help shows one command's options.\n";
    return out;
}

std::string command_help(const CommandSpec& c) {
    std::string out = "Usage: agenthost [--config FILE] [--log-level LEVEL] " + std::string(c.synopsis) + "\n\n";
    std::string help(c.help);
    for (size_t start = 0; start <= help.size();) {
        size_t end = help.find('\n', start);
        if (end == std::string::npos) end = help.size();
        out += "  " + help.substr(start, end - start) + "\n";
        start = end + 1;
    }
    if (!c.options.empty()) {
        out += "\nOptions:";
        for (const auto& o : c.options) out += " " + std::string(o) + (&o == &c.options.back() ? "" : ",");
        out += "\n";
    }
    out += "\nagenthost --help lists every command, the configuration search path and the exit statuses.\n";
    return out;
}

namespace {

// Completion scripts (and the man page) generated from the table, so a new command or option is
// completed and documented at once. `completion man` is used by the build (packaging/).
std::string first_line(std::string_view text) { return std::string(text.substr(0, text.find('\n'))); }

std::string option_names(const CommandSpec& c) {
    std::string out;
    for (auto o : c.options) out += (out.empty() ? "" : " ") + std::string(o.substr(0, o.find(' ')));
    return out;
}

// Text safe inside single quotes (and roff).
std::string plain(std::string text) {
    for (char& ch : text)
        if (ch == '\'' || ch == '\\') ch = ' ';
    return text;
}

void print_bash() {
    std::string names, cases;
    for (const auto& c : commands()) {
        names += (names.empty() ? "" : " ") + std::string(c.name);
        cases += "    " + std::string(c.name) + ") opts=\"" + option_names(c) + "\" ;;\n";
    }
    // Values: files for --config/--tools, the fixed words of --log-level/--mode, tool names and
    // conversation ids asked of agenthost itself (with the --config given so far).
    std::cout
        << "# bash completion for agenthost (agenthost completion bash)\n"
           "_agenthost_names() {\n"
           "  agenthost $2 $1 --json 2>/dev/null | sed -n \"s/^    \\\"$3\\\": \\\"\\(.*\\)\\\",\\{0,1\\}$/\\1/p\"\n"
           "}\n"
           "_agenthost() {\n"
           "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\" cmd=\"\" opts=\"\" config=\"\" i\n"
           "  case \"$prev\" in\n"
           "    --config|--tools) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
           "    --log-level) COMPREPLY=($(compgen -W \"trace debug info warn error off\" -- \"$cur\")); return ;;\n"
           "    --mode) COMPREPLY=($(compgen -W \"explore plan execute\" -- \"$cur\")); return ;;\n"
           "  esac\n"
           "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
           "    case \"${COMP_WORDS[i]}\" in\n"
           "      --config) config=\"--config ${COMP_WORDS[i+1]}\"; ((i++)) ;;\n"
           "      --log-level) ((i++)) ;;\n"
           "      -*) ;;\n"
           "      *) [ -z \"$cmd\" ] && cmd=\"${COMP_WORDS[i]}\" ;;\n"
           "    esac\n"
           "  done\n"
           "  if [ -z \"$cmd\" ]; then\n"
           "    COMPREPLY=($(compgen -W \""
        << names
        << " --config --log-level --help --version\" -- \"$cur\")); return\n"
           "  fi\n"
           "  if [ \"$prev\" = \"$cmd\" ]; then\n"
           "    case \"$cmd\" in\n"
           "      tool) COMPREPLY=($(compgen -W \"$(_agenthost_names tools \"$config\" name)\" -- \"$cur\")); return ;;\n"
           "      show) COMPREPLY=($(compgen -W \"$(_agenthost_names conversations \"$config\" id)\" -- \"$cur\")); return ;;\n"
           "      completion) COMPREPLY=($(compgen -W \"bash zsh fish\" -- \"$cur\")); return ;;\n"
           "    esac\n"
           "  fi\n"
           "  case \"$prev\" in --conversation)\n"
           "    COMPREPLY=($(compgen -W \"$(_agenthost_names conversations \"$config\" id)\" -- \"$cur\")); return ;;\n"
           "  esac\n"
           "  case \"$cmd\" in\n"
        << cases
        << "  esac\n"
           "  COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
           "}\n"
           "complete -o default -F _agenthost agenthost\n";
}

void print_zsh() {
    std::cout << "#compdef agenthost\n# zsh completion for agenthost (agenthost completion zsh)\n"
                 "local cmd i\n"
                 "for (( i = 2; i < CURRENT; i++ )); do\n"
                 "  case $words[i] in --config|--log-level) (( i++ )) ;; -*) ;; *) cmd=$words[i]; break ;; esac\n"
                 "done\n"
                 "if [[ -z $cmd ]]; then\n"
                 "  local -a commands\n"
                 "  commands=(\n";
    for (const auto& c : commands()) std::cout << "    '" << c.name << ":" << plain(first_line(c.help)) << "'\n";
    std::cout << "  )\n"
                 "  _describe -t commands 'agenthost command' commands\n"
                 "  compadd -- --config --log-level --help --version\n"
                 "  return\n"
                 "fi\n"
                 "case $cmd in\n";
    for (const auto& c : commands()) std::cout << "  " << c.name << ") compadd -- " << option_names(c) << " ;;\n";
    std::cout << "esac\n_files\n";
}

void print_fish() {
    std::cout << "# fish completion for agenthost (agenthost completion fish)\n"
                 "complete -c agenthost -f\n"
                 "complete -c agenthost -l config -r -d 'config file'\n"
                 "complete -c agenthost -l log-level -x -a 'trace debug info warn error off'\n";
    for (const auto& c : commands()) {
        std::cout << "complete -c agenthost -n '__fish_use_subcommand' -a " << c.name << " -d '"
                  << plain(first_line(c.help)).substr(0, 60) << "'\n";
        for (auto o : c.options)
            std::cout << "complete -c agenthost -n '__fish_seen_subcommand_from " << c.name << "' -l "
                      << o.substr(2, o.find(' ') - 2) << (o.find(' ') != std::string_view::npos ? " -r" : "") << "\n";
    }
}

// The man page (roff), from the same table as --help.
void print_man() {
    auto roff = [](std::string text) {
        std::string out;
        for (char ch : text) {
            if (ch == '-')
                out += "\\-";
            else if (ch == '\\')
                out += "\\e";
            else
                out += ch;
        }
        return out;
    };
    std::cout << ".TH AGENTHOST 1 \"\" \"agenthost " AGENTHOST_VERSION
                 "\" \"User Commands\"\n"
                 ".SH NAME\nagenthost \\- a native host for LLM agents with plugin tools and providers\n"
                 ".SH SYNOPSIS\n.B agenthost\n[\\fB\\-\\-config\\fR \\fIFILE\\fR] [\\fB\\-\\-log\\-level\\fR \\fILEVEL\\fR] "
                 "\\fICOMMAND\\fR [\\fIARGS\\fR]\n"
                 ".SH DESCRIPTION\nagenthost runs an agent loop (explore, plan, execute) over tools and language-model "
                 "providers that are plugins loaded through one C ABI, keeps every run in SQLite with per-step checkpoints, "
                 "and serves a web panel, an OpenAI-compatible API and an MCP server.\n"
                 ".SH COMMANDS\n";
    for (const auto& c : commands()) {
        std::string help(c.help);
        for (char& ch : help)
            if (ch == '\n') ch = ' ';
        std::cout << ".TP\n.B " << roff(std::string(c.synopsis)) << "\n" << roff(help) << "\n";
    }
    std::cout << ".SH FILES\n.TP\n.I /etc/agenthost/agenthost.toml\nThe system configuration (the service's). Also searched: "
                 "\\fB\\-\\-config\\fR, \\fB$AGENTHOST_CONFIG\\fR, \\fI./agenthost.toml\\fR, "
                 "\\fI$XDG_CONFIG_HOME/agenthost/agenthost.toml\\fR.\n"
                 ".TP\n.I /var/lib/agenthost\nThe service's data: the database, plugin data, the generated server token.\n"
                 ".TP\n.I ~/.local/share/agenthost\nA user's data ($XDG_DATA_HOME/agenthost).\n"
                 ".SH ENVIRONMENT\n.TP\n.B AGENTHOST_CONFIG\nThe config file to use.\n.TP\n.B AGENTHOST_TOKEN\n"
                 "The bearer token of \\fBserve\\fR.\n.TP\n.B NO_COLOR\nTurns colours off.\n"
                 ".SH EXIT STATUS\n0 done; 1 the turn failed or hit a limit (doctor: not ready); 2 a usage or configuration "
                 "error; 3 paused waiting for approval; 130 cancelled by Ctrl\\-C or SIGTERM.\n"
                 ".SH SEE ALSO\nThe documentation in /usr/share/doc/agenthost and the project's docs/ folder.\n";
}

int cmd_completion(Context& ctx) {
    static const std::map<std::string, void (*)()> printers{
        {"bash", print_bash}, {"zsh", print_zsh}, {"fish", print_fish}, {"man", print_man}};
    const auto& args = ctx.invocation.args;
    auto it = args.size() == 1 ? printers.find(args[0]) : printers.end();
    if (it == printers.end()) return usage_error("completion takes one shell: bash, zsh or fish");
    it->second();
    return kExitOk;
}

}  // namespace

}  // namespace agenthost::cli
