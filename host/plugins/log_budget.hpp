// How many log lines one plugin may write: a plugin that logs in a loop must not fill the
// operator's terminal, journal or disk, nor slow the host down writing them. Every plugin gets a
// burst of kBurst lines, then kPerSecond lines a second; the lines over that are dropped and
// counted, and the count is said once, with the next line that is let through.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace agenthost::plugins {

class LogBudget {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr double kBurst = 1000;
    static constexpr double kPerSecond = 200;

    struct Pass {
        bool allowed = true;
        uint64_t dropped_before = 0;  // lines dropped since the last one let through (said with this one)
    };

    // One line: let through or dropped. Thread-safe: a plugin's threads log at once.
    Pass take(Clock::time_point now = Clock::now()) {
        std::lock_guard lock(mutex_);
        if (refilled_ != Clock::time_point{})
            tokens_ = std::min(kBurst, tokens_ + std::chrono::duration<double>(now - refilled_).count() * kPerSecond);
        refilled_ = now;
        if (tokens_ < 1) {
            ++dropped_;
            return {false, 0};
        }
        tokens_ -= 1;
        Pass pass{true, dropped_};
        dropped_ = 0;
        return pass;
    }

private:
    std::mutex mutex_;
    double tokens_ = kBurst;
    Clock::time_point refilled_{};
    uint64_t dropped_ = 0;
};

}  // namespace agenthost::plugins
