// plugins, tools, tool and parse-toolcalls: the plugins and their tools, from the outside.
#include "cli/command_handlers.hpp"

#include "toolcalls/extractor.hpp"
#include "app/reports.hpp"
#include "cli/turn_session.hpp"
#include "common/spelling.hpp"
#include "plugins/loader.hpp"
#include "plugins/manifest.hpp"
#include "tools/policy.hpp"
#include "tools/tool_families.hpp"

#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

namespace agenthost::cli {

using nlohmann::json;

namespace {

// `agenthost plugins` is where a plugin's author learns whether it loads. The host leaves a
// provider plugin no table uses unopened (PluginStatus::unused), so this command opens it, in this
// process, unless its isolation keeps its code out of the host (it then runs only in its own,
// confined process, and is checked there once a table uses it).
std::map<std::string, Error> unopenable_providers(HostApp& app) {
    std::map<std::string, Error> out;
    for (const auto& p : app.registry().plugins()) {
        if (p.status != plugins::PluginStatus::unused || p.isolation != Isolation::in_process) continue;
        auto manifest = plugins::read_manifest(p.manifest);
        auto library = manifest ? plugins::load_library(*manifest) : Result<plugins::LoadedLibrary>(manifest.error());
        if (!library) out.emplace(p.name, library.error());
    }
    return out;
}

}  // namespace

int cmd_plugins(Context& ctx) {
    HostApp& app = *ctx.app;
    const bool config_ok = app.config_problems().errors.empty();  // listed either way; exit 2 says the file is wrong
    const auto unopenable = unopenable_providers(app);
    if (ctx.invocation.has("--json")) {
        json report = json::parse(app::plugins_report(app));
        for (auto& p : report["plugins"])
            if (auto it = unopenable.find(p.value("name", "")); it != unopenable.end()) {
                p["status"] = "failed";
                p["error"] = {{"code", it->second.code}, {"message", it->second.message}};
            }
        std::cout << report.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
        return config_ok ? kExitOk : kExitUsage;
    }
    const auto& plugins = app.registry().plugins();
    if (plugins.empty()) {
        std::cout << "No plugins found. Searched:\n";
        for (const auto& d : app.config().plugin_dirs) std::cout << "  " << d.string() << "\n";
    }
    for (const auto& p : plugins) {
        const auto broken = unopenable.find(p.name);
        const std::string status = broken != unopenable.end() ? "failed" : std::string(name(app.registry().status_now(p)));
        std::printf("%-16s %-8s %-8s %-9s %-8s %s\n", p.name.c_str(), std::string(name(p.kind)).c_str(), p.version.c_str(),
                    p.abi.empty() ? "" : ("abi " + p.abi).c_str(), status.c_str(), p.library.string().c_str());
        if (broken != unopenable.end())
            std::printf("    error (%s): %s\n", broken->second.code.c_str(), indented(broken->second.message, "      ").c_str());
        if (auto health = app.registry().process_health(p.name)) {
            // restarts happen in a long-running host (serve, mcp): /api/plugins
            std::printf("    isolation: %s", std::string(plugins::name(p.isolation)).c_str());
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
        if (p.status == plugins::PluginStatus::unused && broken == unopenable.end())
            std::printf("    not opened: no provider table uses it (use = \"%s\" in [provider] or a [providers.NAME] table)\n",
                        p.name.c_str());
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
        std::cerr << "agenthost: " << verdict.message << " (" << verdict.error_code() << ")\n";
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
    // What the plugin asks during the call is asked here, as in a turn (agent/person_channel.hpp).
    TurnPrinter printer(ctx.invocation.has("--yes"), Output::quiet);
    agent::PersonCall asks;
    asks.tool = tool->name;
    asks.call_id = call.call_id;
    asks.ask = [&printer, &cancel](const agent::PersonQuestion& q) { return printer.ask(q, &cancel); };
    asks.model = &app.queue();
    asks.sampling = app.config().sampling;
    asks.provider = app.config().provider.name;
    asks.cancel = &cancel;
    agent::PersonChannel person(std::move(asks));
    json result;
    {
        auto open = app.registry().services().call_channels().open(call.call_id, person.channel());
        result = app.invoker().call(*tool, call);
    }
    person.close();
    std::cout << dump(result) << "\n";
    return result.value("is_error", false) ? kExitTurnFailed : kExitOk;
}

int cmd_parse_toolcalls(Context& ctx) {
    toolcalls::ToolSet tools;
    const std::string tools_file = ctx.invocation.value("--tools");
    if (!tools_file.empty()) {
        std::ifstream in(tools_file, std::ios::binary);
        if (!in) return usage_error("cannot read --tools file " + tools_file);
        std::stringstream text;
        text << in.rdbuf();
        auto parsed = toolcalls::ToolSet::from_json(text.str());
        if (!parsed) return usage_error(tools_file + ": " + parsed.error().message);
        tools = *parsed;
    }
    std::stringstream raw;
    raw << std::cin.rdbuf();
    auto found = toolcalls::extract_tool_calls(raw.str(), tools);
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

}  // namespace agenthost::cli
