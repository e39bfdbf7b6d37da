// agenthost — command-line entry point: global options, then the command from cli/commands.hpp's
// table with the options that command declares.
#include "app/data_dir_owner.hpp"
#include "app/storage.hpp"
#include "cli/commands.hpp"
#include "common/spelling.hpp"
#include "plugins/crash_note.hpp"
#include "store/store_error.hpp"

#include <agenthost/agenthost.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#ifndef AGENTHOST_VERSION
#define AGENTHOST_VERSION "0.0.0"
#endif

namespace {

using namespace agenthost::cli;
namespace config = agenthost::config;
namespace app = agenthost::app;

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

// Applies `spec` to the words after the command name.
agenthost::Result<Invocation> parse_command(const CommandSpec& spec, const std::vector<std::string>& words) {
    Invocation in;
    in.command = std::string(spec.name);
    for (size_t i = 0; i < words.size(); ++i) {
        const std::string& w = words[i];
        if (w.size() < 2 || w.rfind("--", 0) != 0) {
            in.args.push_back(w);
            continue;
        }
        auto option = std::find_if(spec.options.begin(), spec.options.end(),
                                   [&](std::string_view o) { return o.substr(0, o.find(' ')) == w; });
        if (option == spec.options.end()) {
            std::string known;
            for (auto o : spec.options) known += (known.empty() ? "" : ", ") + std::string(o.substr(0, o.find(' ')));
            return agenthost::Error{"usage", "unknown option '" + w + "' for " + in.command +
                                                 (known.empty() ? " (it takes none)" : " (its options: " + known + ")")};
        }
        if (option->find(' ') == std::string_view::npos) {
            in.options[w] = "";
            continue;
        }
        if (i + 1 >= words.size()) return agenthost::Error{"usage", w + " needs a value: " + std::string(*option)};
        in.options[w] = words[++i];
    }
    if (spec.max_args >= 0 && in.args.size() > static_cast<size_t>(spec.max_args))
        return agenthost::Error{
            "usage",
            in.command +
                (spec.max_args == 0 ? " takes no arguments" : " takes at most " + std::to_string(spec.max_args) + " arguments") +
                " (got '" + in.args[static_cast<size_t>(spec.max_args)] + "')"};
    if (in.has("--json") && in.has("--quiet")) return agenthost::Error{"usage", "--json and --quiet exclude each other"};
    return in;
}

// The global options, wherever they are on the line, and the command line without them. --help
// and --version are answered at once (`answered`: the exit status).
struct GlobalOptions {
    std::vector<std::string> args;
    std::optional<std::string> config_path, log_level;
    std::optional<int> answered;
};

GlobalOptions global_options(int argc, char** argv) {
    GlobalOptions g;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--help" || a == "-h") {  // after a command word: that command's help
            const CommandSpec* about = g.args.empty() ? nullptr : find_command(g.args[0]);
            std::cout << (about ? command_help(*about) : help_text());
            g.answered = kExitOk;
            return g;
        }
        if (a == "--version") {
            std::cout << "agenthost " << AGENTHOST_VERSION << " (plugin ABI " << AH_ABI_VERSION_STRING << ")\n";
            g.answered = kExitOk;
            return g;
        }
        if (a == "--config" || a == "--log-level") {
            if (i + 1 >= argc) {
                g.answered = usage_error(a + " needs a value");
                return g;
            }
            (a == "--config" ? g.config_path : g.log_level) = argv[++i];
        } else {
            g.args.push_back(a);
        }
    }
    return g;
}

// spdlog for this command: coloured unless NO_COLOR; a server's lines carry the time (UTC,
// milliseconds), as they are read later beside other logs; a command's are read as they come.
void start_logging(const CommandSpec& spec) {
    const char* no_color = std::getenv("NO_COLOR");
    auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>(no_color && *no_color ? spdlog::color_mode::never
                                                                                               : spdlog::color_mode::automatic);
    // Where more sinks come and go while the command runs: MCP clients that set a log level
    // (mcp/log_tap.hpp) hear the records from there.
    auto taps = std::make_shared<spdlog::sinks::dist_sink_mt>();
    auto logger = std::make_shared<spdlog::logger>("agenthost", spdlog::sinks_init_list{console, taps});
    spdlog::set_default_logger(logger);
    const bool long_running = std::string_view(spec.name) == "serve";
    spdlog::set_pattern(long_running ? "%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v" : "%^%l%$ %v", spdlog::pattern_time_type::utc);
}

// The console shows records from `level` up. The logger makes them from there, or from lower while
// an MCP client asks for more (mcp/log_tap.cpp lowers the logger's level, never the console's).
void set_log_level(spdlog::level::level_enum level) {
    auto logger = spdlog::default_logger();
    logger->sinks().front()->set_level(level);
    logger->set_level(level);
}

spdlog::level::level_enum spdlog_level(config::LogLevel level) {
    static constexpr spdlog::level::level_enum kLevels[] = {spdlog::level::trace, spdlog::level::debug, spdlog::level::info,
                                                            spdlog::level::warn,  spdlog::level::err,   spdlog::level::off};
    return kLevels[static_cast<size_t>(level)];
}

// Every problem of a config file, one per line, each with its place.
int config_error(const agenthost::Error& e) {
    std::istringstream lines(e.message);
    for (std::string line; std::getline(lines, line);) std::cerr << "agenthost: " << line << "\n";
    return kExitUsage;
}

// The configuration as found (or the built-in defaults), with its secrets file in the environment:
// the keys the file names by variable (api_key_env, token_env, url_env) are read again after it.
// Nothing when it cannot be read; the problems are printed then.
std::optional<config::Config> load_config(const std::optional<std::string>& config_path) {
    auto located = config::locate(config_path);
    if (!located) {
        usage_error(located.error().message);
        return std::nullopt;
    }
    auto read_config = [&] {
        return *located ? config::load_file(**located) : agenthost::Result<config::Config>(config::defaults());
    };
    auto cfg = read_config();
    if (!cfg) {
        config_error(cfg.error());
        return std::nullopt;
    }
    if (cfg->secrets_file.empty()) return std::move(*cfg);
    auto loaded = config::export_secrets(cfg->secrets_file);
    if (!loaded) {
        usage_error(loaded.error().message);
        return std::nullopt;
    }
    if (!loaded->set.empty() && !(cfg = read_config())) {
        config_error(cfg.error());
        return std::nullopt;
    }
    cfg->secrets = std::move(*loaded);
    return std::move(*cfg);
}

// Why the host did not start, in words with the cause and its fix, as the exit status: a database
// server out of reach or a full or read-only disk is no mistake in the file (not ready, 1), the
// rest is (2).
int start_failed(const CommandSpec& spec, const config::Config& cfg, const agenthost::Error& e) {
    const bool store_open = agenthost::store::is(e, agenthost::store::StoreFault::open);
    // SQLite says "unable to open database file" or "disk I/O error", at opening or at its first
    // statements: the data dir's state (read-only, full, not writable) says why.
    std::optional<std::string> disk;
    if (cfg.store.backend != config::StoreBackend::postgresql) disk = app::data_dir_problem(cfg.data_dir);
    std::cerr << "agenthost: " << e.message << (store_open ? app::data_dir_owner_hint(cfg.data_dir) : "")
              << (disk ? "\nagenthost: the cause: " + *disk : "") << "\n";
    if (spec.name == "doctor") std::cout << "NOT READY: the store cannot be opened (see above)\n";
    bool unreachable = (store_open && cfg.store.backend == config::StoreBackend::postgresql) || disk;
    return unreachable ? kExitTurnFailed : kExitUsage;
}

int run_command(int argc, char** argv) {
    Signals signals;  // before any thread: every later thread inherits the blocked mask
    if (!kSanitized) agenthost::plugins::install_crash_note_handlers();  // an in-process plugin that crashes is named
    GlobalOptions g = global_options(argc, argv);
    if (g.answered) return *g.answered;
    if (g.args.empty()) return usage_error("no command given");
    const CommandSpec* spec = find_command(g.args[0]);
    if (!spec) {
        std::vector<std::string> names;
        for (const auto& c : commands()) names.emplace_back(c.name);
        return usage_error("unknown command '" + g.args[0] + "'" + agenthost::spelling::did_you_mean(g.args[0], names));
    }
    auto invocation = parse_command(*spec, {g.args.begin() + 1, g.args.end()});
    if (!invocation) return usage_error(invocation.error().message, spec->name);
    Context ctx{signals, *invocation, nullptr, g.config_path, nullptr};
    start_logging(*spec);
    std::optional<config::LogLevel> level;
    if (g.log_level) {
        level = choice_from<config::LogLevel>(config::kLogLevels, *g.log_level);
        if (!level) return usage_error("--log-level " + unknown_choice<config::LogLevel>(config::kLogLevels, *g.log_level));
    }
    if (spec->needs == Needs::nothing) {  // init, completion, parse-toolcalls: no configuration read
        set_log_level(spdlog_level(level.value_or(config::LogLevel::warn)));
        return spec->run(ctx);
    }
    auto cfg = load_config(g.config_path);
    if (!cfg) return kExitUsage;
    set_log_level(spdlog_level(level.value_or(cfg->log_level)));
    ctx.config = &*cfg;
    if (spec->needs == Needs::config) return spec->run(ctx);
    // Root on the service's data dir acts as its owner: no file made here is one the service cannot open.
    if (auto acting = app::act_as_data_dir_owner(cfg->data_dir); !acting) {
        std::cerr << "agenthost: " << acting.error().message << "\n";
        return kExitUsage;
    }
    auto app = HostApp::start(*cfg);
    if (!app) return start_failed(*spec, *cfg, app.error());
    ctx.app = app->get();
    ctx.config = &(*app)->config();
    // A configuration that cannot mean what it says stops every command but the ones that report it.
    const auto& problems = (*app)->config_problems();
    for (const auto& w : problems.warnings) spdlog::warn("{}", w);
    if (!problems.errors.empty() && spec->name != "plugins" && spec->name != "doctor" && spec->name != "config") {
        for (const auto& e : problems.errors) std::cerr << "agenthost: " << e << "\n";
        std::cerr << "agenthost: fix the configuration (agenthost doctor shows every problem)\n";
        return kExitUsage;
    }
    return spec->run(ctx);
}

}  // namespace

int main(int argc, char** argv) {
    // Errors cross module lines as Results; should a bug still let an exception out, it is named
    // instead of ending the process without a word.
    try {
        return run_command(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "agenthost: internal error: " << e.what() << " (please report it)\n";
    } catch (...) {
        std::cerr << "agenthost: internal error (please report it)\n";
    }
    return 70;  // EX_SOFTWARE
}
