// Renders a turn's events: the answer's text on stdout; the trace (a spinner while the model thinks,
// one compact line per tool call and result, the plan, warnings) on stderr, so `agenthost run … >
// answer.txt` keeps only the answer; and the approval prompt. With Output::json every event is one
// JSON line on stdout instead (agent/event_wire.hpp); with Output::quiet nothing is printed here and
// the caller prints the final answer alone (report()).
#pragma once

#include "agent/turn_runner.hpp"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace agenthost::cli {

enum class Output { terminal, json, quiet };

class TurnPrinter {
public:
    // `assume_yes`: approve every call; otherwise ask on the terminal, or pause when stdin is not one.
    explicit TurnPrinter(bool assume_yes, Output output = Output::terminal);
    Output output() const { return output_; }
    ~TurnPrinter();
    TurnPrinter(const TurnPrinter&) = delete;
    TurnPrinter& operator=(const TurnPrinter&) = delete;

    void on_event(const agent::TurnEvent& event);
    // Asks on the terminal; a cancel (Ctrl-C) ends the question at once, answered "later".
    agent::ApprovalDecision approve(const agent::ApprovalRequest& request, const ah_cancel* cancel = nullptr);
    // Asks what a plugin asks during a call (cli/terminal_form.hpp); --yes accepts its defaults
    // (and says yes to consent); without a terminal nobody can be asked.
    plugins::CallerAnswer ask(const agent::PersonQuestion& question, const ah_cancel* cancel = nullptr);
    // Ends the last streamed line.
    void close_line();

private:
    void spin(bool on);

    bool assume_yes_;
    Output output_;
    bool interactive_;
    bool midline_ = false;
    std::mutex mutex_;  // the spinner thread and the printer share stderr
    std::atomic<bool> spinning_{false};
    std::chrono::steady_clock::time_point spin_since_;  // under mutex_: when the model was asked
    std::atomic<bool> quit_{false};
    std::thread spinner_;
};

}  // namespace agenthost::cli
