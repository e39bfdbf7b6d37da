// agenthost — command-line entry point.
#include "agent/toolcall_extractor.hpp"
#include "agent/turn_runner.hpp"
#include "cli/host_app.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#ifndef AGENTHOST_VERSION
#define AGENTHOST_VERSION "0.0.0"
#endif

namespace {

using agenthost::cli::HostApp;
using nlohmann::json;
namespace config = agenthost::config;

constexpr int kExitOk = 0;
constexpr int kExitTurnFailed = 1;
constexpr int kExitUsage = 2;

const char* const kHelp = R"(agenthost — a native host for LLM agents with plugin tools and providers

Usage:
  agenthost [--config FILE] [--log-level LEVEL] COMMAND [ARGS]

Commands:
  run [--conversation ID] "PROMPT"   run one agent turn; streams text and tool calls
  plugins [--json]                   list plugins: status, cause of failure, tools
  parse-toolcalls [--tools FILE]     read a model's raw output on stdin, print the tool calls
                                     found in it as JSON (FILE: OpenAI-shaped tool definitions)
  --version                          print the version and the plugin ABI version
  --help                             this text

Configuration: --config FILE, else $AGENTHOST_CONFIG, else ./agenthost.toml, else built-in defaults.
Logs go to stderr (level: --log-level, else log_level in the config, else "warn").
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

json plugin_json(const agenthost::plugins::PluginInfo& p) {
    json j{{"name", p.name},           {"kind", p.kind},
           {"version", p.version},     {"abi", p.abi},
           {"description", p.description},
           {"file", p.library.string()}, {"manifest", p.manifest.string()},
           {"status", p.status},       {"tools", p.tools},
           {"error", nullptr},         {"warnings", p.warnings}};
    if (p.error) j["error"] = {{"code", p.error->code}, {"message", p.error->message}};
    return j;
}

int cmd_plugins(HostApp& app, bool as_json) {
    const auto& plugins = app.registry().plugins();
    if (as_json) {
        json out{{"abi", AH_ABI_VERSION_STRING}, {"plugins", json::array()}, {"plugin_dirs", json::array()}};
        for (const auto& p : plugins) out["plugins"].push_back(plugin_json(p));
        for (const auto& d : app.config().plugin_dirs) out["plugin_dirs"].push_back(d.string());
        std::cout << out.dump(2) << "\n";
        return kExitOk;
    }
    if (plugins.empty()) std::cout << "No plugins found. Searched:\n";
    for (const auto& p : plugins) {
        std::printf("%-16s %-8s %-8s abi %-5s %-8s %s\n", p.name.c_str(), p.kind.c_str(), p.version.c_str(),
                    p.abi.c_str(), p.status.c_str(), p.library.string().c_str());
        if (p.error) std::printf("    error (%s): %s\n", p.error->code.c_str(), p.error->message.c_str());
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

int cmd_run(HostApp& app, const std::string& prompt, std::string conversation) {
    const auto& cfg = app.config();
    if (conversation.empty()) conversation = new_conversation_id();
    agenthost::agent::TurnRunner runner(app.registry(), cfg.provider.use);
    agenthost::agent::TurnRequest request;
    request.prompt = prompt;
    request.conversation_id = conversation;
    request.max_iterations = cfg.limits.execute_iterations;
    request.system_prompt =
        "You are agenthost, an assistant that uses the tools offered to you. Call a tool when it helps; "
        "answer in plain text when you are done.";

    bool midline = false;  // whether streamed text left the cursor mid-line
    auto end_line = [&] {
        if (midline) std::cout << "\n";
        midline = false;
    };
    auto outcome = runner.run(request, [&](const agenthost::agent::TurnEvent& e) {
        using Kind = agenthost::agent::TurnEvent::Kind;
        switch (e.kind) {
        case Kind::text:
            std::cout << e.text << std::flush;
            midline = !e.text.empty() && e.text.back() != '\n';
            break;
        case Kind::reasoning:
            break;  // not shown in the terminal by default
        case Kind::tool_call:
            end_line();
            std::cout << "→ " << e.tool << " " << e.json << "\n" << std::flush;
            break;
        case Kind::tool_result: {
            std::string shown = e.text.size() > 300 ? e.text.substr(0, 300) + "…" : e.text;
            std::cout << (e.is_error ? "✗ " : "← ") << e.tool << ": " << shown << "\n" << std::flush;
            break;
        }
        case Kind::finished:
            end_line();
            break;
        }
    });
    end_line();
    if (!outcome.ok) {
        std::cerr << "agenthost: turn failed (" << outcome.stop_reason << "): " << outcome.error << "\n";
        return kExitTurnFailed;
    }
    std::cerr << "conversation: " << conversation << "\n";
    return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
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

    auto logger = spdlog::stderr_color_mt("agenthost");
    spdlog::set_default_logger(logger);
    spdlog::set_pattern("%^%l%$ %v");

    auto located = config::locate(config_path);
    if (!located) return usage_error(located.error().message);
    auto cfg = *located ? config::load_file(**located) : agenthost::Result<config::Config>(config::defaults());
    if (!cfg) return usage_error(cfg.error().message);
    std::string level = log_level.value_or(cfg->log_level);
    spdlog::set_level(spdlog::level::from_str(level));

    const std::string command = rest[0];
    if (command != "plugins" && command != "run") return usage_error("unknown command '" + command + "'");

    bool as_json = false;
    std::string conversation;
    std::vector<std::string> positional;
    for (size_t i = 1; i < rest.size(); ++i) {
        if (command == "plugins" && rest[i] == "--json") as_json = true;
        else if (command == "run" && rest[i] == "--conversation" && i + 1 < rest.size()) conversation = rest[++i];
        else if (rest[i].rfind("--", 0) == 0) return usage_error("unknown option '" + rest[i] + "' for " + command);
        else positional.push_back(rest[i]);
    }
    if (command == "plugins" && !positional.empty()) return usage_error("plugins takes no arguments");
    if (command == "run" && positional.size() != 1) return usage_error("run takes exactly one prompt (quote it)");

    auto app = HostApp::start(std::move(*cfg));
    if (!app) {
        std::cerr << "agenthost: " << app.error().message << "\n";
        return kExitUsage;
    }
    if (command == "plugins") return cmd_plugins(**app, as_json);
    return cmd_run(**app, positional[0], conversation);
}
