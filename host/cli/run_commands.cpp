// run, resume, approve / reject, and the turn options and reporting chat shares.
#include "cli/command_handlers.hpp"

#include "agent/turn_runner.hpp"
#include "app/reports.hpp"
#include "cli/turn_session.hpp"
#include "common/spelling.hpp"

#include <agenthost/agenthost.h>

#include <iostream>

namespace agenthost::cli {

using nlohmann::json;

Result<TurnSettings> turn_settings(const Context& ctx) {
    const Invocation& in = ctx.invocation;
    TurnSettings s;
    s.mode = ctx.config->agent.default_mode;
    if (in.has("--mode")) {
        auto m = agent::parse_mode(in.value("--mode"));
        if (!m) return Error{"usage", "--mode must be explore, plan or execute, not '" + in.value("--mode") + "'"};
        s.mode = *m;
        s.mode_given = true;
    }
    s.provider = in.value("--provider");
    if (!s.provider.empty() && !ctx.config->provider_named(s.provider)) {
        std::vector<std::string> names{ctx.config->provider.name};
        for (const auto& [name, settings] : ctx.config->providers) names.push_back(name);
        return Error{"usage", "--provider '" + s.provider + "' is neither [provider] nor a [providers." + s.provider +
                                  "] in the config" + spelling::did_you_mean(s.provider, names) +
                                  "; the providers: " + spelling::join_names(names)};
    }
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
        if (auto last = ctx.app->runs().runs(s.conversation, 1); last && !last->empty()) s.mode = last->front().mode;
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
        auto waiting = app.runner().pending_approval(conversation);
        const bool is_waiting = waiting && *waiting;
        if (is_waiting && !summary)  // inside chat: its own commands
            std::cerr << "  /approve, or /reject REASON\n";
        else if (is_waiting)
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
    if (printer.output() == Output::terminal && summary && outcome.run > 0)  // a refused run has nothing to continue
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
        auto read = names_provider && outcome.run > 0 ? app.runs().run(outcome.run) : std::optional<store::RunRecord>();
        if (read && *read) {  // a hint, when the run can be read
            const store::RunRecord& record = **read;
            provider = app.config().provider_named(record.provider);
            if (outcome.stop_reason == StopReason::model_unavailable) served = app.queue().check(record.provider).models;
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
        if (cancel.cancelled() && (e.is<agent::events::Text>() || e.is<agent::events::Reasoning>())) return;
        printer.on_event(e);
    };
    c.approve = [&printer, &cancel](const agent::ApprovalRequest& r) { return printer.approve(r, &cancel); };
    c.ask_person = [&printer, &cancel](const agent::PersonQuestion& q) { return printer.ask(q, &cancel); };
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
    ah_cancel cancel;
    auto on_signal = cancel_on_signal(signals, cancel);
    auto outcome = app.runner().run(request, controls(printer, cancel));
    return report(app, printer, outcome, conversation, s.summary);
}

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
    if (!settings->conversation.empty() && settings->output == Output::terminal) {
        auto earlier = ctx.app->runs().runs(conversation, 1);  // unreadable: no notice; the run says why it cannot start
        if (earlier && earlier->empty())
            std::cerr << "agenthost: no conversation '" << conversation
                      << "' yet: starting it (agenthost conversations lists them)\n";
    }
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
    auto read = app.runs().run(run);
    if (!read) {
        std::cerr << "agenthost: run " << run << " cannot be read now: " << read.error().message << "\n";
        return kExitTurnFailed;
    }
    const std::optional<store::RunRecord>& record = *read;
    TurnPrinter printer(settings->yes, settings->output);
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

}  // namespace agenthost::cli
