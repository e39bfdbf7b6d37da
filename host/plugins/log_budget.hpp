// How many log lines one plugin may write: a plugin that logs in a loop must not fill the
// operator's terminal, journal or disk, nor slow the host down writing them. Every plugin gets a
// burst of kBurst lines, then kPerSecond lines a second; the lines over that are dropped and
// counted, and the count is said with the next line let through (at most once a second), or when
// the plugin stops.
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
        uint64_t dropped_before = 0;  // lines dropped, to be said with this one (at most once a second)
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
        Pass pass;
        if (dropped_ > 0 && (said_ == Clock::time_point{} || now - said_ >= std::chrono::seconds(1))) {
            pass.dropped_before = dropped_;
            dropped_ = 0;
            said_ = now;
        }
        return pass;
    }

    // The lines dropped and not yet said (when the plugin stops logging for good).
    uint64_t take_dropped() {
        std::lock_guard lock(mutex_);
        uint64_t dropped = dropped_;
        dropped_ = 0;
        return dropped;
    }

private:
    std::mutex mutex_;
    double tokens_ = kBurst;
    Clock::time_point refilled_{};
    Clock::time_point said_{};  // when dropped lines were last said
    uint64_t dropped_ = 0;
};

}  // namespace agenthost::plugins
