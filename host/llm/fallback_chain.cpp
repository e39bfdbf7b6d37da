#include "llm/fallback_chain.hpp"

#include <algorithm>

namespace agenthost::llm {

void Cooldowns::cool(const std::string& provider, Clock::time_point until) {
    std::lock_guard lock(mutex_);
    until_[provider] = until;
}

bool Cooldowns::cooling(const std::string& provider, Clock::time_point now) const {
    std::lock_guard lock(mutex_);
    auto until = until_.find(provider);
    return until != until_.end() && now < until->second;
}

FallbackChain::FallbackChain(const config::Config& config, std::string provider, Cooldowns& cooldowns) : cooldowns_(cooldowns) {
    order_.push_back(std::move(provider));
    const config::ProviderSettings* settings = config.provider_named(order_.front());
    if (!settings) return;
    for (const std::string& next : settings->fallback)
        if (std::find(order_.begin(), order_.end(), next) == order_.end()) order_.push_back(next);
    for (const std::string& name : settings->fallback_on)
        if (auto reason = model_call_stop_reason(name)) also_on_.push_back(*reason);
    cooldown_ = std::chrono::seconds(settings->fallback_cooldown_s);
}

std::string FallbackChain::current(Clock::time_point now) const {
    for (const std::string& provider : order_)
        if (!cooldowns_.cooling(provider, now)) return provider;
    return order_.back();
}

std::optional<std::string> FallbackChain::after_failure(const std::string& failed, StopReason reason, Clock::time_point now) {
    const bool falls = falls_back_by_default(reason) || std::find(also_on_.begin(), also_on_.end(), reason) != also_on_.end();
    if (empty() || !falls) return std::nullopt;
    cooldowns_.cool(failed, now + cooldown_);
    auto at = std::find(order_.begin(), order_.end(), failed);
    for (auto next = at == order_.end() ? order_.begin() : std::next(at); next != order_.end(); ++next)
        if (!cooldowns_.cooling(*next, now)) return *next;
    return std::nullopt;
}

}  // namespace agenthost::llm
