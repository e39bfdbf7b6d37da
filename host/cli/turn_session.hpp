// What run, resume, approve and chat share: the turn options they read, how a turn's events are
// shown and how its end maps to an exit status, and Ctrl-C as "cancel this turn".
#pragma once

#include "agent/turn_runner.hpp"
#include "common/ids.hpp"
#include "cli/commands.hpp"
#include "cli/turn_printer.hpp"

#include <string>

namespace agenthost::cli {

struct TurnSettings {
    agent::Mode mode = agent::Mode::execute;
    bool mode_given = false;  // --mode was on the command line
    std::string provider, model, conversation;
    std::string context = "{}";  // --context: a JSON object
    bool yes = false;
    Output output = Output::terminal;
    bool summary = true;  // "conversation: ID (N iterations …)" after a turn (chat leaves it out)
};

// Reads --mode, --provider, --model, --conversation, --context, --yes, --json, --quiet.
Result<TurnSettings> turn_settings(const Context& ctx);

// Runs one turn of `conversation` and reports it; returns the exit status.
int run_turn(Signals& signals, HostApp& app, const TurnSettings& settings, const std::string& prompt,
             const std::string& conversation);

// Prints how a turn ended (the answer a tool gave, a pause, the failure) and picks the exit status.
int report(HostApp& app, TurnPrinter& printer, const agent::TurnOutcome& outcome, const std::string& conversation,
           bool summary = true);

agent::RunControls controls(TurnPrinter& printer, const ah_cancel& cancel);

// While the guard lives, Ctrl-C / SIGTERM cancel the turn (it ends `cancelled`).
Signals::Scope cancel_on_signal(Signals& signals, ah_cancel& cancel);

// "2026-12-02 14:05" in local time; "-" for 0.
std::string clock_time(double unix_seconds);

}  // namespace agenthost::cli
