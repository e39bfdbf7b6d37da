#include "cli/interrupt.hpp"

#include <csignal>
#include <ctime>
#include <iostream>
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

// The signals are blocked in this thread (and so in every thread started later) and taken by a
// watcher with sigtimedwait, so no signal handler and no global state is needed.
OnInterrupt::OnInterrupt(std::function<void()> first) {
    sigset_t set = interrupt_signals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    watcher_ = std::thread([this, set, first = std::move(first)] {
        timespec tick{0, 100 * 1000 * 1000};
        bool fired = false;
        while (!done_) {
            if (sigtimedwait(&set, nullptr, &tick) < 0) continue;
            if (fired) _exit(130);
            fired = true;
            first();
        }
    });
}

OnInterrupt::~OnInterrupt() {
    done_ = true;
    watcher_.join();
    sigset_t set = interrupt_signals();
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

CancelOnInterrupt::CancelOnInterrupt(ah_cancel& cancel)
    : watch_([&cancel] {
          std::cerr << "\nagenthost: cancelling the turn (press Ctrl-C again to quit now)\n" << std::flush;
          cancel.cancel();
      }) {}

}  // namespace agenthost::cli
