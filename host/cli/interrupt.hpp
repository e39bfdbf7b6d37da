// Ctrl-C (SIGINT) and SIGTERM as a request to stop cleanly. Signals is made first thing in main(),
// before any thread exists: the signals are blocked there, so every later thread (plugins', the
// LLM queue's, the server's) inherits the mask, and only its watcher ever takes them — a signal can
// no longer kill the process mid-step. The first signal runs the action the current command set
// (cancel the turn, drain the server, end the MCP session); without one it ends the process
// (exit 130). A second signal before the next action is set quits at once (130).
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <thread>

namespace agenthost::cli {

constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as shells report an interrupted command

class Signals {
public:
    Signals();
    ~Signals();
    Signals(const Signals&) = delete;
    Signals& operator=(const Signals&) = delete;

    // While the returned guard lives, the first signal calls `action` (on the watcher thread).
    class Scope {
    public:
        explicit Scope(Signals& signals) : signals_(&signals) {}
        ~Scope() { signals_->set(nullptr); }
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        Signals* signals_;
    };
    [[nodiscard]] Scope on_first(std::function<void()> action);

private:
    void set(std::function<void()> action);

    std::mutex mutex_;
    std::function<void()> action_;
    std::atomic<bool> done_{false};
    std::atomic<bool> fired_{false};  // the current action has run
    std::thread watcher_;
};

}  // namespace agenthost::cli
