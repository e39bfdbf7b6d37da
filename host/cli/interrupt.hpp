// Turns Ctrl-C (SIGINT) and SIGTERM into a cancelled turn instead of a killed process: the first
// signal fires the cancel token the runner and plugins watch; a second one exits at once (130).
#pragma once

#include "plugins/host_services.hpp"

#include <atomic>
#include <thread>

namespace agenthost::cli {

class CancelOnInterrupt {
public:
    explicit CancelOnInterrupt(ah_cancel& cancel);
    ~CancelOnInterrupt();
    CancelOnInterrupt(const CancelOnInterrupt&) = delete;
    CancelOnInterrupt& operator=(const CancelOnInterrupt&) = delete;

private:
    std::atomic<bool> done_{false};
    std::thread watcher_;
};

}  // namespace agenthost::cli
