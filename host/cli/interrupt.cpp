#include "cli/interrupt.hpp"

#include <csignal>
#include <ctime>
#include <unistd.h>

namespace agenthost::cli {
namespace {

sigset_t interrupt_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
}

}  // namespace

// Taken by a watcher with sigtimedwait: no signal handler and no global state.
Signals::Signals() {
    sigset_t set = interrupt_signals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    watcher_ = std::thread([this, set] {
        timespec tick{0, 100L * 1000 * 1000};
        while (!done_) {
            int signal = sigtimedwait(&set, nullptr, &tick);
            if (done_) break;  // woken by the destructor
            if (signal < 0) continue;
            if (fired_.exchange(true)) _exit(kExitInterrupted);
            std::function<void()> action;
            {
                std::lock_guard lock(mutex_);
                action = action_;
            }
            if (!action) _exit(kExitInterrupted);
            action();
        }
    });
}

Signals::~Signals() {
    done_ = true;
    // Wakes the watcher now instead of at its next tick (up to 100 ms on every exit): the signal
    // goes to its thread alone, where it is blocked, so sigtimedwait takes it and sees done_.
    pthread_kill(watcher_.native_handle(), SIGTERM);  // NOLINT(bugprone-bad-signal-to-kill-thread): blocked there, taken
    watcher_.join();
}

Signals::Scope Signals::on_first(std::function<void()> action) {
    set(std::move(action));
    return Scope(*this);
}

void Signals::set(std::function<void()> action) {
    std::lock_guard lock(mutex_);
    if (action) fired_ = false;  // a new action (the next turn of a chat) starts counting again
    action_ = std::move(action);
}

}  // namespace agenthost::cli
