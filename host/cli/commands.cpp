// The table of the agenthost commands, their help, and the few-line handlers of serve, mcp and
// config (the others: cli/command_handlers.hpp).
#include "cli/commands.hpp"

#include "app/reports.hpp"
#include "cli/chat.hpp"
#include "cli/command_handlers.hpp"
#include "cli/init.hpp"
#include "mcp/mcp_server.hpp"
#include "server/http_server.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <ctime>
#include <filesystem>
#include <iostream>
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

int store_unreadable(const Error& why) {
    std::cerr << "agenthost: the store cannot be read now: " << why.message
              << "\n(agenthost doctor checks the database: one out of reach answers again by itself; one whose tables"
                 " cannot be read is damaged or not agenthost's)\n";
    return kExitTurnFailed;
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

// JSON as the commands print it: indented, invalid UTF-8 replaced.
std::string dump(const json& j, int indent) { return j.dump(indent, ' ', false, json::error_handler_t::replace); }

Output output_of(const Invocation& in) {
    if (in.has("--json")) return Output::json;
    return in.has("--quiet") ? Output::quiet : Output::terminal;
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

// ---- the table -----------------------------------------------------------------------------------

namespace {

// Every command, in the order --help lists them.
const std::vector<CommandSpec> kCommands{
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
     "asked, or the run pauses), lets a tool use the model ([sampling] policy = \"ask\") and takes\n"
     "the defaults of a tool's questions; --json prints every event as one JSON line; Ctrl-C cancels",
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
     "policy as the agent: a call that needs approval asks, or runs with --yes (which also lets\n"
     "the tool use the model and takes the defaults of its questions)",
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

}  // namespace

const std::vector<CommandSpec>& commands() { return kCommands; }

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

}  // namespace agenthost::cli
