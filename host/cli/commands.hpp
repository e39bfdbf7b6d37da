// The agenthost commands, as one table: each command's name, synopsis, help, options, what it
// needs (nothing, the configuration, or a started host) and its handler. main() parses the command
// line against this table; --help is printed from it; completions are generated from it.
#pragma once

#include "app/host_app.hpp"
#include "cli/interrupt.hpp"
#include "config/config.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agenthost::cli {

using app::HostApp;

constexpr int kExitOk = 0;
constexpr int kExitTurnFailed = 1;  // the turn failed or hit a limit; doctor: something is not ready (the database too)
constexpr int kExitUsage = 2;       // a usage or configuration error
constexpr int kExitPaused = 3;      // the run waits for approval

// One command line after the table was applied.
struct Invocation {
    std::string command;
    std::vector<std::string> args;               // positional arguments
    std::map<std::string, std::string> options;  // "--json" → "", "--mode" → "plan"
    bool has(const std::string& option) const { return options.count(option) > 0; }
    std::string value(const std::string& option, const std::string& fallback = "") const {
        auto it = options.find(option);
        return it == options.end() ? fallback : it->second;
    }
};

struct Context {
    Signals& signals;
    const Invocation& invocation;
    const config::Config* config = nullptr;  // Needs::config and Needs::host
    std::optional<std::string> config_path;  // --config as given (init writes there)
    HostApp* app = nullptr;                  // Needs::host
};

enum class Needs { nothing, config, host };

struct CommandSpec {
    std::string_view name;
    std::string_view synopsis;              // "run [OPTIONS] PROMPT"
    std::string_view help;                  // what it does, in a few lines
    std::vector<std::string_view> options;  // "--json", "--mode MODE" (a word after a space: takes a value)
    Needs needs;
    int (*run)(Context&);
    int max_args = -1;  // positional arguments allowed; -1: the handler checks them
};

const std::vector<CommandSpec>& commands();
const CommandSpec* find_command(std::string_view name);
// The full --help text, from the table.
std::string help_text();
// One command's help (agenthost COMMAND --help): its synopsis, what it does, its options.
std::string command_help(const CommandSpec& command);

// Prints "agenthost: MESSAGE" and the usage hint (that command's --help when one is named);
// returns kExitUsage.
int usage_error(const std::string& message, std::string_view command = {});
// Prints "agenthost: the store cannot be read now: WHY" and what to check; returns kExitTurnFailed.
int store_unreadable(const Error& why);

// How a hint names agenthost for the config in `config_file`: "agenthost", or "agenthost --config
// 'FILE'" when a bare command would find another config (a hint pasted as printed must act on the
// same data). `config_file` empty: the built-in defaults.
std::string agenthost_command(const std::filesystem::path& config_file);

}  // namespace agenthost::cli
