// Who made a tool call that is running, as a plugin reaches them through ah_host_api.progress,
// sample and elicit (ABI 1.5). A front end that can carry such messages (the MCP server) opens a
// channel for each call it makes, under the call's id; the host services look the id up. Calls
// nobody opened a channel for (the agent's own) have none: progress goes nowhere, and sampling and
// elicitation are unsupported.
#pragma once

#include <agenthost/agenthost.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace agenthost::plugins {

// What the caller answered a request with: AH_OK and its result (JSON text), or a failure status
// (AH_ERR_UNSUPPORTED, AH_ERR_CANCELLED, AH_ERR_TIMEOUT, AH_ERR_FAILED with the caller's words).
struct CallerAnswer {
    ah_status status = AH_ERR_UNSUPPORTED;
    std::string text;
};

// The requests a plugin may put to the caller, and how long the host waits for each.
enum class CallerRequest { sample, elicit };
struct CallerRequestInfo {
    CallerRequest request;
    std::string_view method;      // MCP's method
    std::string_view capability;  // what the client declares to be asked it
    std::chrono::milliseconds wait;
};
inline constexpr CallerRequestInfo kCallerRequests[] = {
    {CallerRequest::sample, "sampling/createMessage", "sampling", std::chrono::seconds(120)},
    {CallerRequest::elicit, "elicitation/create", "elicitation", std::chrono::minutes(10)},
};
inline const CallerRequestInfo& caller_request(CallerRequest r) {
    for (const auto& row : kCallerRequests)
        if (row.request == r) return row;
    return kCallerRequests[0];
}

struct CallChannel {
    // Reports progress (already checked to grow); empty when the caller did not ask for it.
    std::function<void(double progress, double total, const std::string& message)> progress;
    // Puts a request to the caller and waits for its answer; empty when nobody can be asked.
    // It answers AH_ERR_UNSUPPORTED itself for a request the caller does not take.
    std::function<CallerAnswer(CallerRequest request, const nlohmann::json& params)> ask;
    // The last progress sent (MCP requires each to be larger), its total, and when.
    double last_progress = -1;
    double last_total = 0;
    std::chrono::steady_clock::time_point last_sent{};
};

// Who reports a call's progress: the plugin itself, or the host's heartbeat while it says nothing.
enum class ProgressFrom { plugin, heartbeat };
// How long a call may be silent before the heartbeat speaks for it.
inline constexpr auto kHeartbeatSilence = std::chrono::milliseconds(200);

class CallChannels {
public:
    // Keeps a channel open for as long as it lives.
    class Open {
    public:
        Open(CallChannels& owner, std::string call_id) : owner_(&owner), call_id_(std::move(call_id)) {}
        ~Open() { owner_->close(call_id_); }
        Open(const Open&) = delete;
        Open& operator=(const Open&) = delete;

    private:
        CallChannels* owner_;
        std::string call_id_;
    };

    [[nodiscard]] std::unique_ptr<Open> open(const std::string& call_id, std::shared_ptr<CallChannel> channel) {
        std::lock_guard lock(mutex_);
        channel->last_sent = std::chrono::steady_clock::now();  // the heartbeat waits for a first silence
        channels_[call_id] = std::move(channel);
        return std::make_unique<Open>(*this, call_id);
    }
    std::shared_ptr<CallChannel> find(const std::string& call_id) {
        std::lock_guard lock(mutex_);
        auto it = channels_.find(call_id);
        return it == channels_.end() ? nullptr : it->second;
    }
    // Reports progress on a call; false when it was not sent. A plugin's report goes out when it
    // grew. The heartbeat speaks only after kHeartbeatSilence without a report, and with the
    // smallest step above the last value (same total), so it never gets ahead of the plugin's own
    // numbers. Sent under the lock, so reports keep their order.
    bool report_progress(const std::string& call_id, ProgressFrom from, double progress, double total,
                         const std::string& message) {
        std::lock_guard lock(mutex_);
        auto it = channels_.find(call_id);
        if (it == channels_.end() || !it->second->progress) return false;
        CallChannel& channel = *it->second;
        const auto now = std::chrono::steady_clock::now();
        if (from == ProgressFrom::heartbeat) {
            if (now - channel.last_sent < kHeartbeatSilence) return false;
            const double last = channel.last_progress;
            progress = last < 0 ? 0 : last + std::max(1.0, last) * 1e-9;
            total = channel.last_total;
        } else if (progress <= channel.last_progress) {
            return false;
        }
        channel.last_progress = progress;
        channel.last_total = total;
        channel.last_sent = now;
        channel.progress(progress, total, message);
        return true;
    }

private:
    void close(const std::string& call_id) {
        std::lock_guard lock(mutex_);
        channels_.erase(call_id);
    }

    std::mutex mutex_;
    std::map<std::string, std::shared_ptr<CallChannel>> channels_;
};

}  // namespace agenthost::plugins
