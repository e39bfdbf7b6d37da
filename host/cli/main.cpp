// agenthost — command-line entry point.
#include "agent/toolcall_extractor.hpp"
#include "agent/turn_runner.hpp"
#include "cli/host_app.hpp"
#include "cli/interrupt.hpp"
#include "plugins/crash_note.hpp"
#include "cli/reports.hpp"
#include "cli/turn_printer.hpp"
#include "mcp/mcp_server.hpp"
#include "server/http_server.hpp"

#include <unistd.h>

#include <iterator>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#ifndef AGENTHOST_VERSION
#define AGENTHOST_VERSION "0.0.0"
#endif

namespace {

using agenthost::cli::HostApp;
using agenthost::cli::Signals;
using agenthost::cli::TurnPrinter;
using nlohmann::json;
namespace config = agenthost::config;

constexpr int kExitOk = 0;
constexpr int kExitTurnFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitPaused = 3;

const char* const kHelp = R"(agenthost — a native host for LLM agents with plugin tools and providers

Usage:
  agenthost [--config FILE] [--log-level LEVEL] COMMAND [ARGS]

Commands:
  run [--mode explore|plan|execute] [--yes] [--conversation ID] [--context JSON]
      [--provider NAME] [--model MODEL] "PROMPT"
                                     run one agent turn; streams text and tool calls.
                                     --yes approves every call that needs approval; without it
                                     you are asked on the terminal, or the run pauses.
                                     --context passes request context (selected nodes, active
                                     graph …) to the tools and the model; --provider picks a
                                     [providers.NAME] for this conversation. Ctrl-C cancels the turn
  runs [--conversation ID] [--json]  list runs: status, mode, iterations, stop reason / error code
  resume RUN [--mode M] [--provider NAME] [--model MODEL] [--yes]
                                     continue an interrupted or paused run from its last
                                     checkpoint (finished tool calls are never run again)
  compact                            drop old checkpoints ([store] keep_runs / keep_days) and
                                     shrink the database; messages are kept
  approve --conversation ID          run the call a paused run waits on, and continue
  reject --conversation ID [--reason TEXT]
                                     refuse it (the reason goes to the model), and continue
  plugins [--json]                   list plugins: status, cause of failure, tools
  serve [--listen HOST:PORT]         the HTTP API: OpenAI-compatible /v1, SSE chat /api/chat, runs,
                                     conversations, memory, /metrics (default 127.0.0.1:8080)
  mcp                                an MCP server on stdin/stdout: the plugins' tools for other
                                     agents (logs go to stderr)
  doctor                             the config in use, each plugin's state, each provider's
                                     readiness (exit 1 when the default provider is not ready)
  parse-toolcalls [--tools FILE]     read a model's raw output on stdin, print the tool calls
                                     found in it as JSON (FILE: OpenAI-shaped tool definitions)
  --version                          print the version and the plugin ABI version
  --help                             this text

  config                             the config file in use (or where it was looked for) and every
                                     effective setting, secrets shown only as set / NOT SET

Configuration: --config FILE, else $AGENTHOST_CONFIG, else ./agenthost.toml, else
$XDG_CONFIG_HOME/agenthost/agenthost.toml (~/.config/…), else /etc/agenthost/agenthost.toml, else
built-in defaults. data_dir and plugin_dirs in a config file are relative to that file.
Logs go to stderr (level: --log-level, else log_level in the config, else "warn").
Exit status: 0 done, 1 the turn failed or hit a limit, 2 usage or configuration error,
3 paused waiting for approval, 130 cancelled by Ctrl-C or SIGTERM (a second one quits at once).
)";

int usage_error(const std::string& message) {
    std::cerr << "agenthost: " << message << "\nRun 'agenthost --help' for usage.\n";
    return kExitUsage;
}

std::string new_conversation_id() {
    std::random_device random;
    std::uniform_int_distribution<int> hex(0, 15);
    std::string id = "c-";
    for (int i = 0; i < 16; ++i) id += "0123456789abcdef"[hex(random)];
    return id;
}

int cmd_plugins(HostApp& app, bool as_json) {
    const auto& plugins = app.registry().plugins();
    if (as_json) {
        std::cout << agenthost::cli::plugins_report(app) << "\n";
        return kExitOk;
    }
    if (plugins.empty()) std::cout << "No plugins found. Searched:\n";
    for (const auto& p : plugins) {
        std::printf("%-16s %-8s %-8s abi %-5s %-8s %s\n", p.name.c_str(), p.kind.c_str(), p.version.c_str(),
                    p.abi.c_str(), app.registry().status_now(p).c_str(), p.library.string().c_str());
        if (auto health = app.registry().process_health(p.name)) {
            std::printf("    isolation: process");  // restarts happen in a long-running host (serve, mcp): /api/plugins
            if (health->restarts > 0) std::printf(", %d restart%s", health->restarts, health->restarts == 1 ? "" : "s");
            if (health->disabled) std::printf(", DISABLED (last failure: %s)", health->last_failure.c_str());
            else if (!health->last_failure.empty()) std::printf(", last failure: %s", health->last_failure.c_str());
            std::printf("\n");
        }
        if (p.error) std::printf("    error (%s): %s\n", p.error->code.c_str(), p.error->message.c_str());
        for (const auto& r : p.refused_tools) std::printf("    refused tool %s: %s\n", r.name.c_str(), r.reason.c_str());
        for (const auto& w : p.warnings) std::printf("    warning: %s\n", w.c_str());
        if (!p.tools.empty()) {
            std::string tools;
            for (const auto& t : p.tools) tools += (tools.empty() ? "" : ", ") + t;
            std::printf("    tools: %s\n", tools.c_str());
        }
    }
    if (plugins.empty())
        for (const auto& d : app.config().plugin_dirs) std::cout << "  " << d.string() << "\n";
    return kExitOk;
}

int cmd_parse_toolcalls(const std::string& tools_file) {
    agenthost::agent::ToolSet tools;
    if (!tools_file.empty()) {
        std::ifstream in(tools_file, std::ios::binary);
        if (!in) return usage_error("cannot read --tools file " + tools_file);
        std::stringstream text;
        text << in.rdbuf();
        auto parsed = agenthost::agent::ToolSet::from_json(text.str());
        if (!parsed) return usage_error(tools_file + ": " + parsed.error().message);
        tools = *parsed;
    }
    std::stringstream raw;
    raw << std::cin.rdbuf();
    auto found = agenthost::agent::extract_tool_calls(raw.str(), tools);
    json out{{"calls", json::array()}, {"content", found.content}, {"reasoning", found.reasoning},
             {"incomplete", found.incomplete}, {"problems", found.problems}};
    for (const auto& call : found.calls)
        out["calls"].push_back({{"name", call.name}, {"arguments", json::parse(call.arguments_json)}, {"format", call.format}});
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return kExitOk;
}

// The configuration in use, each plugin's state and each provider's readiness.
int cmd_doctor(HostApp& app) {
    const auto& cfg = app.config();
    std::cout << "config:    " << (cfg.source.empty() ? "(built-in defaults)" : cfg.source.string()) << "\n"
              << "data dir:  " << cfg.data_dir.string() << "\n"
              << "abi:       " << AH_ABI_VERSION_STRING << "\n\nplugins:\n";
    for (const auto& p : app.registry().plugins()) {
        std::printf("  %-16s %-8s %-8s %s\n", p.name.c_str(), p.kind.c_str(), p.status.c_str(),
                    p.error ? p.error->message.c_str() : "");
        for (const auto& w : p.warnings) std::printf("      warning: %s\n", w.c_str());
    }
    std::vector<const agenthost::config::ProviderSettings*> providers{&cfg.provider};
    for (const auto& [name, settings] : cfg.providers) providers.push_back(&settings);
    bool default_ready = false;
    std::cout << "\nproviders:\n";
    for (const auto* p : providers) {
        bool is_default = p == &cfg.provider;
        std::string key = p->api_key_env.empty() ? "none" : p->api_key_env + (p->api_key.empty() ? " (NOT SET)" : " (set)");
        std::cout << "  " << p->name << (is_default ? " (default)" : "") << ": plugin " << p->use
                  << (p->preset.empty() ? "" : ", preset " + p->preset) << ", model " << (p->model.empty() ? "(plugin default)" : p->model)
                  << ", base_url " << (p->base_url.empty() ? "(plugin default)" : p->base_url) << ", key " << key
                  << ", concurrency " << p->concurrency << "\n";
        auto readiness = app.queue().check(p->name);
        if (readiness.ready) std::cout << "    ready (" << readiness.models.size() << " models)\n";
        else std::cout << "    NOT READY " << readiness.code << ": " << readiness.message << "\n";
        if (is_default) default_ready = readiness.ready;
    }
    return default_ready ? kExitOk : kExitTurnFailed;
}

// Prints how a turn ended and picks the exit code.
int report(HostApp& app, TurnPrinter& printer, const agenthost::agent::TurnOutcome& outcome, const std::string& conversation) {
    printer.close_line();
    if (outcome.stop_reason == "approval_pending") {
        std::cerr << "agenthost: paused: " << outcome.error << "\n";
        if (auto waiting = app.runner().pending_approval(conversation))
            std::cerr << "  agenthost approve --conversation " << conversation << "\n"
                      << "  agenthost reject --conversation " << conversation << " --reason \"...\"\n";
        std::cerr << "conversation: " << conversation << "\n";
        return kExitPaused;
    }
    // A streamed answer is already on stdout; one given by a tool (the done marker, ask_user) is not.
    if (outcome.ok && (outcome.stop_reason == "done" || outcome.stop_reason == "ask_user") && !outcome.answer.empty())
        std::cout << outcome.answer << (outcome.answer.back() == '\n' ? "" : "\n") << std::flush;
    std::cerr << "conversation: " << conversation << " (" << outcome.iterations << " iterations, " << outcome.tool_calls
              << " tool calls; continue with --conversation " << conversation << ")\n";
    if (!outcome.ok) {
        std::cerr << "agenthost: turn stopped (" << outcome.stop_reason << "): " << outcome.error << "\n";
        return outcome.stop_reason == "cancelled" ? agenthost::cli::kExitInterrupted : kExitTurnFailed;
    }
    return kExitOk;
}

agenthost::agent::RunControls controls(TurnPrinter& printer, const ah_cancel& cancel) {
    agenthost::agent::RunControls c;
    c.cancel = &cancel;
    c.on_event = [&printer](const agenthost::agent::TurnEvent& e) { printer.on_event(e); };
    c.approve = [&printer, &cancel](const agenthost::agent::ApprovalRequest& r) { return printer.approve(r, &cancel); };
    return c;
}

// Ctrl-C / SIGTERM during a turn cancel it (the run ends `cancelled`).
Signals::Scope cancel_on_signal(Signals& signals, ah_cancel& cancel) {
    return signals.on_first([&cancel] {
        std::cerr << "\nagenthost: cancelling the turn (press Ctrl-C again to quit now)\n" << std::flush;
        cancel.cancel();
    });
}

int cmd_run(Signals& signals, HostApp& app, const std::string& prompt, std::string conversation, agenthost::agent::Mode mode, bool yes,
            const std::string& context, const std::string& provider, const std::string& model) {
    if (conversation.empty()) conversation = new_conversation_id();
    agenthost::agent::TurnRequest request;
    request.prompt = prompt;
    request.conversation_id = conversation;
    request.mode = mode;
    request.request_context_json = context;
    request.provider = provider;
    request.model = model;
    TurnPrinter printer(yes);
    ah_cancel cancel;
    auto on_signal = cancel_on_signal(signals, cancel);
    auto outcome = app.runner().run(request, controls(printer, cancel));
    return report(app, printer, outcome, conversation);
}

int cmd_runs(HostApp& app, const std::string& conversation, bool as_json) {
    app.runs().recover_interrupted();
    auto runs = app.runs().runs(conversation, 200);
    if (as_json) {
        json out = json::array();
        for (const auto& r : runs) out.push_back(json::parse(agenthost::cli::run_report(r)));
        std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
        return kExitOk;
    }
    if (runs.empty()) std::cout << "No runs" << (conversation.empty() ? "" : " in conversation " + conversation) << ".\n";
    for (const auto& r : runs) {
        std::string prompt = r.prompt.size() > 40 ? r.prompt.substr(0, 40) + "…" : r.prompt;
        std::printf("%6lld  %-11s %-8s %-20s %4d it %4d calls  %-16s %s\n", static_cast<long long>(r.id), r.status.c_str(),
                    r.mode.c_str(), r.conversation.c_str(), r.counters.iterations, r.counters.tool_calls,
                    r.error_code.empty() ? r.stop_reason.c_str() : r.error_code.c_str(), prompt.c_str());
    }
    return kExitOk;
}

int cmd_resume(Signals& signals, HostApp& app, int64_t run, std::optional<agenthost::agent::Mode> mode, const std::string& provider,
               const std::string& model, bool yes) {
    agenthost::agent::ResumeOptions options;
    options.mode = mode;
    options.provider = provider;
    options.model = model;
    auto record = app.runs().run(run);
    TurnPrinter printer(yes);
    ah_cancel cancel;
    auto on_signal = cancel_on_signal(signals, cancel);
    auto outcome = app.runner().resume_run(run, options, controls(printer, cancel));
    if (!record || outcome.stop_reason == "run_not_resumable" || outcome.stop_reason == "store_not_found") {
        std::cerr << "agenthost: " << outcome.error << "\n";
        return kExitUsage;
    }
    return report(app, printer, outcome, record->conversation);
}

int cmd_compact(HostApp& app) {
    const auto& cfg = app.config().store;
    auto deleted = app.runs().compact(cfg.keep_runs, cfg.keep_days);
    if (!deleted) {
        std::cerr << "agenthost: " << deleted.error().message << "\n";
        return kExitTurnFailed;
    }
    auto size = [&] { return std::filesystem::file_size(app.database().file()); };
    auto before = size();
    if (auto s = app.database().exec("PRAGMA wal_checkpoint(TRUNCATE)"); !s) std::cerr << "agenthost: " << s.error().message << "\n";
    if (auto s = app.database().exec("VACUUM"); !s) std::cerr << "agenthost: " << s.error().message << "\n";
    std::cout << "removed " << *deleted << " checkpoint and journal rows of runs beyond the newest " << cfg.keep_runs
              << " per conversation or older than " << cfg.keep_days << " days (messages are kept); database "
              << before / 1024 << " KiB -> " << size() / 1024 << " KiB\n";
    return kExitOk;
}

int cmd_serve(Signals& signals, HostApp& app, const std::string& listen) {
    agenthost::server::HttpServer server(app);
    std::thread stopper;
    auto on_signal = signals.on_first([&] {
        std::cerr << "agenthost: shutting down (running steps reach a checkpoint; Ctrl-C again to quit now)" << std::endl;
        stopper = std::thread([&] { server.shutdown(); });
    });
    auto served = server.serve(listen.empty() ? app.config().server.listen : listen);
    if (stopper.joinable()) stopper.join();
    if (!served) {
        std::cerr << "agenthost: " << served.error().message << "\n";
        return kExitUsage;
    }
    std::cerr << "agenthost: stopped" << std::endl;
    return kExitOk;
}

int cmd_decide(Signals& signals, HostApp& app, const std::string& conversation, bool approve, const std::string& reason) {
    if (!app.runner().pending_approval(conversation)) {
        std::cerr << "agenthost: conversation " << conversation << " has no run waiting for approval\n";
        return kExitUsage;
    }
    using Kind = agenthost::agent::ApprovalDecision::Kind;
    TurnPrinter printer(false);
    ah_cancel cancel;
    auto on_signal = cancel_on_signal(signals, cancel);
    auto outcome = app.runner().resume(conversation, {approve ? Kind::approve : Kind::reject, reason}, controls(printer, cancel));
    return report(app, printer, outcome, conversation);
}

}  // namespace

// Sanitizers report a crash better than a note can (and own these signals).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

int main(int argc, char** argv) {
    agenthost::cli::Signals signals;  // before any thread: every later thread inherits the blocked mask
    if (!kSanitized) agenthost::plugins::install_crash_note_handlers();  // an in-process plugin that crashes is named
    std::vector<std::string> args(argv + 1, argv + argc);
    std::optional<std::string> config_path;
    std::optional<std::string> log_level;
    std::vector<std::string> rest;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            std::cout << kHelp;
            return kExitOk;
        }
        if (a == "--version") {
            std::cout << "agenthost " << AGENTHOST_VERSION << " (plugin ABI " << AH_ABI_VERSION_STRING << ")\n";
            return kExitOk;
        }
        if ((a == "--config" || a == "--log-level") && i + 1 >= args.size()) return usage_error(a + " needs a value");
        if (a == "--config") config_path = args[++i];
        else if (a == "--log-level") log_level = args[++i];
        else rest.push_back(a);
    }
    if (rest.empty()) return usage_error("no command given");
    if (rest[0] == "parse-toolcalls") {  // needs no configuration, database or plugins
        if (rest.size() == 3 && rest[1] == "--tools") return cmd_parse_toolcalls(rest[2]);
        if (rest.size() == 1) return cmd_parse_toolcalls("");
        return usage_error("parse-toolcalls takes only [--tools FILE]");
    }

    // NO_COLOR (no-color.org): any non-empty value turns colours off.
    const char* no_color = std::getenv("NO_COLOR");
    auto color = no_color && *no_color ? spdlog::color_mode::never : spdlog::color_mode::automatic;
    auto logger = spdlog::stderr_color_mt("agenthost", color);
    spdlog::set_default_logger(logger);
    spdlog::set_pattern("%^%l%$ %v");
    static const std::vector<std::string> levels{"trace", "debug", "info", "warn", "error", "off"};
    if (log_level && std::find(levels.begin(), levels.end(), *log_level) == levels.end())
        return usage_error("--log-level must be one of trace, debug, info, warn, error, off, not '" + *log_level + "'");

    const std::string command = rest[0];
    static const std::vector<std::string> commands{"plugins", "run", "approve", "reject", "doctor", "runs", "resume", "compact", "serve", "mcp", "config"};
    if (std::find(commands.begin(), commands.end(), command) == commands.end())
        return usage_error("unknown command '" + command + "'");

    auto located = config::locate(config_path);
    if (!located) return usage_error(located.error().message);
    auto cfg = *located ? config::load_file(**located) : agenthost::Result<config::Config>(config::defaults());
    if (!cfg) return usage_error(cfg.error().message);
    std::string level = log_level.value_or(cfg->log_level);
    spdlog::set_level(spdlog::level::from_str(level));
    if (command == "config") {  // needs no database or plugins
        if (rest.size() > 1) return usage_error("config takes no arguments");
        std::cout << agenthost::cli::config_report(*cfg, config::search_path()) << "\n";
        return kExitOk;
    }

    bool as_json = false, yes = false;
    std::optional<agenthost::agent::Mode> mode_override;
    std::string conversation, reason, context = "{}", provider, model, listen;
    auto mode = agenthost::agent::parse_mode(cfg->agent.default_mode).value_or(agenthost::agent::Mode::execute);
    std::vector<std::string> positional;
    for (size_t i = 1; i < rest.size(); ++i) {
        const std::string& a = rest[i];
        bool has_value = i + 1 < rest.size();
        if ((command == "plugins" || command == "runs") && a == "--json") as_json = true;
        else if ((command == "run" || command == "resume") && a == "--yes") yes = true;
        else if (command != "plugins" && a == "--conversation" && has_value) {
            conversation = rest[++i];
            // run may start a conversation: a new id must be plain (approve, reject and runs name existing ones).
            if (command == "run")
                if (auto problem = agenthost::store::conversation_id_problem(conversation)) return usage_error("--conversation: " + *problem);
        }
        else if (command == "reject" && a == "--reason" && has_value) reason = rest[++i];
        else if (command == "serve" && a == "--listen" && has_value) listen = rest[++i];
        else if ((command == "run" || command == "resume") && a == "--model" && has_value) model = rest[++i];
        else if ((command == "run" || command == "resume") && a == "--provider" && has_value) {
            provider = rest[++i];
            if (!cfg->provider_named(provider))
                return usage_error("--provider '" + provider + "' is neither [provider] nor a [providers." + provider + "] in the config");
        }
        else if (command == "run" && a == "--context" && has_value) {
            context = rest[++i];
            json parsed = json::parse(context, nullptr, false);
            if (!parsed.is_object()) return usage_error("--context must be a JSON object, e.g. '{\"active_graph\": \"marvel\"}'");
        }
        else if ((command == "run" || command == "resume") && a == "--mode" && has_value) {
            auto m = agenthost::agent::parse_mode(rest[++i]);
            if (!m) return usage_error("--mode must be explore, plan or execute, not '" + rest[i] + "'");
            mode = *m;
            mode_override = *m;
        } else if (a.rfind("--", 0) == 0) return usage_error("unknown option '" + a + "' for " + command + " (or it needs a value)");
        else positional.push_back(a);
    }
    if ((command == "plugins" || command == "doctor" || command == "runs" || command == "compact" || command == "serve" ||
         command == "mcp") &&
        !positional.empty())
        return usage_error(command + " takes no arguments");
    int64_t resume_id = 0;
    if (command == "resume") {
        char* end = nullptr;
        if (positional.size() == 1) resume_id = std::strtoll(positional[0].c_str(), &end, 10);
        if (positional.size() != 1 || !end || *end != '\0' || resume_id <= 0)
            return usage_error("resume takes one run id (agenthost runs lists them)");
    }
    // The prompt from stdin when none is given or it is "-" (echo "add 1 and 2" | agenthost run).
    if (command == "run" && (positional.empty() || (positional.size() == 1 && positional[0] == "-"))) {
        if (isatty(STDIN_FILENO)) return usage_error("run needs a prompt: agenthost run 'your request' (or pipe it in)");
        std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
        while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
        if (text.empty()) return usage_error("run read an empty prompt from stdin");
        positional = {text};
    }
    if (command == "run" && positional.size() != 1) return usage_error("run takes exactly one prompt (quote it)");
    if ((command == "approve" || command == "reject") && (conversation.empty() || !positional.empty()))
        return usage_error(command + " needs --conversation ID and nothing else");

    auto app = HostApp::start(std::move(*cfg));
    if (!app) {
        std::cerr << "agenthost: " << app.error().message << "\n";
        return kExitUsage;
    }
    if (command == "plugins") return cmd_plugins(**app, as_json);
    if (command == "doctor") return cmd_doctor(**app);
    if (command == "runs") return cmd_runs(**app, conversation, as_json);
    if (command == "resume") return cmd_resume(signals, **app, resume_id, mode_override, provider, model, yes);
    if (command == "compact") return cmd_compact(**app);
    if (command == "serve") return cmd_serve(signals, **app, listen);
    if (command == "mcp") {
        std::atomic<bool> stop{false};
        auto on_signal = signals.on_first([&stop] { stop = true; });  // the session ends after the calls in flight
        return agenthost::mcp::serve_stdio(**app, &stop);
    }
    if (command == "run") return cmd_run(signals, **app, positional[0], conversation, mode, yes, context, provider, model);
    return cmd_decide(signals, **app, conversation, command == "approve", reason);
}
