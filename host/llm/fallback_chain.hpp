// Which provider answers a turn's next model call: the run's provider, or, while it cools down
// after failing, the next of its fallback chain ([provider] fallback = ["cloud", "local"]). One
// place decides both whether a failed call goes on elsewhere and where.
#pragma once

#include "common/stop_reason.hpp"
#include "config/config.hpp"

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace agenthost::llm {

// When each provider that failed may be asked again: shared by every run of the process (the LLM
// queue holds it), so a provider that is down is passed over by the next request too.
class Cooldowns {
public:
    using Clock = std::chrono::steady_clock;
    void cool(const std::string& provider, Clock::time_point until);
    bool cooling(const std::string& provider, Clock::time_point now) const;

private:
    mutable std::mutex mutex_;
    std::map<std::string, Clock::time_point> until_;
};

class FallbackChain {
public:
    using Clock = std::chrono::steady_clock;

    // The chain of `provider` (its own settings' fallback), as `config` names it; which providers
    // cool down is kept in `cooldowns`, which must outlive the chain.
    FallbackChain(const config::Config& config, std::string provider, Cooldowns& cooldowns);

    // The provider to ask now: the first of the chain that is not cooling down (the run's own
    // provider once its cool-down has passed; the last of the chain when every one is cooling).
    std::string current(Clock::time_point now) const;
    // After `failed` failed with `reason` (its retries used up): it cools down, and the next
    // provider of the chain after it that is not cooling is returned; nullopt when the chain does
    // not fall back for that reason or has no provider left.
    std::optional<std::string> after_failure(const std::string& failed, StopReason reason, Clock::time_point now);
    // Whether there is any chain at all.
    bool empty() const { return order_.size() < 2; }

private:
    std::vector<std::string> order_;  // the run's provider first
    std::vector<StopReason> also_on_;
    std::chrono::seconds cooldown_{60};
    Cooldowns& cooldowns_;
};

}  // namespace agenthost::llm
