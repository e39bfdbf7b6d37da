#include "cli/turn_printer.hpp"

#include "agent/event_wire.hpp"
#include "cli/terminal_form.hpp"
#include "common/bounded_json.hpp"
#include "common/overloaded.hpp"
#include "tools/policy.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>
#include <optional>
#include <cerrno>
#include <poll.h>
#include <unistd.h>

namespace agenthost::cli {

using agent::TurnEvent;
namespace events = agent::events;
using nlohmann::json;

namespace {

std::string clip(const std::string& s, size_t max) {
    if (s.size() <= max) return s;
    size_t n = max;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    return s.substr(0, n) + "…";
}

// A line from stdin once one is there, or nullopt at a cancel (Ctrl-C), an error or its end.
std::optional<std::string> read_line(const ah_cancel* cancel, const ah_cancel* withdrawn = nullptr) {
    for (;;) {
        if ((cancel && cancel->cancelled()) || (withdrawn && withdrawn->cancelled())) return std::nullopt;
        pollfd input{STDIN_FILENO, POLLIN, 0};
        int ready = ::poll(&input, 1, 100);
        if (ready > 0) break;
        if (ready < 0 && errno != EINTR) return std::nullopt;
    }
    std::string line;
    if (!std::getline(std::cin, line)) return std::nullopt;
    return line;
}

std::string one_line(std::string s) {
    for (char& c : s)
        if (c == '\n' || c == '\r') c = ' ';
    return s;
}

// One line to the terminal's error stream in one write: std::cerr writes every piece on its own
// (unbuffered), which cost a tool step ten system calls.
void say(const std::string& line) {
    std::string whole = line + "\n";
    std::cerr.write(whole.data(), static_cast<std::streamsize>(whole.size()));
    std::cerr.flush();
}

}  // namespace

TurnPrinter::TurnPrinter(bool assume_yes, Output output)
    : assume_yes_(assume_yes), output_(output), interactive_(isatty(STDIN_FILENO) && isatty(STDERR_FILENO)) {
    if (!isatty(STDERR_FILENO) || output_ != Output::terminal) return;
    spinner_ = std::thread([this] {
        static const char* frames[] = {"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"};
        for (size_t i = 0; !quit_; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(90));
            std::lock_guard lock(mutex_);
            if (!spinning_) continue;
            // A model server that stalls must not look like a hung program: after a few seconds
            // the wait is counted, and the way out named.
            auto waited =
                std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - spin_since_).count();
            std::string line = std::string("\r") + frames[i % 10] + " waiting for the model";
            if (waited >= 5) line += " · " + std::to_string(waited) + " s (Ctrl-C stops the turn; it can be resumed)";
            std::cerr << line << "\033[K" << std::flush;
        }
    });
}

TurnPrinter::~TurnPrinter() {
    quit_ = true;
    if (spinner_.joinable()) spinner_.join();
    spin(false);
}

void TurnPrinter::spin(bool on) {
    if (!spinner_.joinable()) return;
    if (on && !spinning_) spin_since_ = std::chrono::steady_clock::now();
    bool was = spinning_.exchange(on);
    if (was && !on) std::cerr << "\r\033[K" << std::flush;
}

void TurnPrinter::close_line() {
    std::lock_guard lock(mutex_);
    spin(false);
    if (midline_) std::cout << "\n" << std::flush;
    midline_ = false;
}

void TurnPrinter::on_event(const TurnEvent& e) {
    if (output_ == Output::json) {
        auto wire = agent::to_wire(e);
        json line = json::parse(wire.data, nullptr, false);
        if (!line.is_object()) return;
        line["event"] = wire.name;
        std::lock_guard lock(mutex_);
        std::cout << line.dump(-1, ' ', false, json::error_handler_t::replace) << "\n" << std::flush;
        return;
    }
    if (output_ == Output::quiet) return;
    if (e.is<events::ModelRequest>()) {
        std::lock_guard lock(mutex_);
        spin(true);
        return;
    }
    if (e.is<events::Reasoning>()) return;  // not shown in the terminal
    if (!e.is<events::Text>()) close_line();
    std::lock_guard lock(mutex_);
    spin(false);
    std::visit(Overloaded{
                   [this](const events::Text& t) {
                       std::cout << t.delta << std::flush;
                       midline_ = !t.delta.empty() && t.delta.back() != '\n';
                   },
                   [](const events::ToolCall& c) { say("→ " + c.tool + " " + clip(c.arguments_json, 300)); },
                   [](const events::ToolResult& r) {
                       // ← a result, ✗ a failure, – a call the user rejected (their choice, not a failure).
                       const char* mark = r.is_error && r.error_code == tools::refused_code(tools::Refused::rejected) ? "– "
                                          : r.is_error                                                                ? "✗ "
                                                                                                                      : "← ";
                       say(mark + r.tool + ": " + clip(one_line(r.content), 300));
                   },
                   [](const events::Tasks& t) {
                       std::string lines;
                       for (const auto& task : t.plan)  // ☑ done, ☐ still to do (or blocked, skipped: named)
                           lines += std::string(task.status == memory::TaskStatus::done ? "  ☑ " : "  ☐ ") +
                                    std::to_string(task.id) + ". [" + memory::status_name(task.status) + "] " + task.title + "\n";
                       if (!lines.empty()) say(lines.substr(0, lines.size() - 1));
                   },
                   [](const events::Log& l) {
                       // The runner logs through spdlog too, to this same terminal: print only what it does not.
                       const auto level = l.level == agent::EventLevel::error ? spdlog::level::err : spdlog::level::warn;
                       if (l.level != agent::EventLevel::info && !spdlog::should_log(level)) say("! " + l.message);
                   },
                   [](const events::ProviderSwitch& s) { say("⇄ " + s.from + " → " + s.to + ": " + s.reason); },
                   [](const events::Question&) {},  // ask() shows it with its form
                   [](const events::Approval& a) {
                       say("? " + a.tool + " " + clip(a.arguments_json, 300) + " needs approval: " + a.reason);
                   },
                   [](const auto&) {},  // usage, queue, the end: the caller reports the outcome
               },
               e.body);
}

agent::ApprovalDecision TurnPrinter::approve(const agent::ApprovalRequest&, const ah_cancel* cancel) {
    using Kind = agent::ApprovalDecision::Kind;
    if (assume_yes_) return {Kind::approve};
    if (!interactive_) return {Kind::later};
    std::lock_guard lock(mutex_);
    std::cerr << "  approve? [y]es / [n]o, optionally followed by a reason (\"n use the backup folder\"): " << std::flush;
    // Wait for a line, but not past a cancel: Ctrl-C must end the question, not leave it waiting
    // for an answer that would then run the call.
    auto line = read_line(cancel);
    if (!line) {
        std::cerr << "\n" << std::flush;
        return {Kind::later};
    }
    if (*line == "y" || *line == "yes" || *line == "Y") return {Kind::approve};
    size_t space = line->find(' ');
    return {Kind::reject, space == std::string::npos ? "" : line->substr(space + 1)};
}

plugins::CallerAnswer TurnPrinter::ask(const agent::PersonQuestion& question, const ah_cancel* cancel) {
    if (assume_yes_ && question.consent)
        return {AH_OK, json_io::dump(json{{"action", "accept"}, {"content", {{"allow", true}}}})};
    if (assume_yes_) return accept_defaults(question.params);
    if (!interactive_)
        return {AH_ERR_UNSUPPORTED, std::string("nobody can be asked: stdin is not a terminal (--yes ") +
                                        (question.consent ? "lets it use the model)" : "takes a question's defaults)")};
    std::lock_guard lock(mutex_);
    spin(false);
    if (midline_) std::cout << "\n" << std::flush;
    midline_ = false;
    return ask_form(question.tool, question.params,
                    FormIo{[cancel, &question] { return read_line(cancel, question.withdrawn); }, std::cerr});
}

}  // namespace agenthost::cli
