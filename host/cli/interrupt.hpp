// Ctrl-C (SIGINT) and SIGTERM as a request to stop cleanly: the first signal calls a function (cancel
// the turn, shut the server down); a second one exits at once (130).
#pragma once

#include "plugins/host_services.hpp"

#include <atomic>
#include <functional>
#include <thread>

namespace agenthost::cli {

class OnInterrupt {
public:
    explicit OnInterrupt(std::function<void()> first);
    ~OnInterrupt();
    OnInterrupt(const OnInterrupt&) = delete;
    OnInterrupt& operator=(const OnInterrupt&) = delete;

private:
    std::atomic<bool> done_{false};
    std::thread watcher_;
};

// Cancels a turn on the first signal.
class CancelOnInterrupt {
public:
    explicit CancelOnInterrupt(ah_cancel& cancel);

private:
    OnInterrupt watch_;
};

}  // namespace agenthost::cli
