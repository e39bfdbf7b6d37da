#include "mcp/mcp_session.hpp"

#include "common/bounded_json.hpp"

namespace agenthost::mcp {
namespace {

using nlohmann::json;

constexpr std::pair<LogLevel, std::string_view> kLogLevels[] = {
    {LogLevel::debug, "debug"},     {LogLevel::info, "info"},           {LogLevel::notice, "notice"},
    {LogLevel::warning, "warning"}, {LogLevel::error, "error"},         {LogLevel::critical, "critical"},
    {LogLevel::alert, "alert"},     {LogLevel::emergency, "emergency"},
};

// The stream of messages a session queues for its listening stream, at most.
constexpr size_t kMaxOutbox = 100;

}  // namespace

std::optional<LogLevel> parse_log_level(std::string_view name) {
    for (const auto& [level, text] : kLogLevels)
        if (text == name) return level;
    return std::nullopt;
}

std::string_view log_level_name(LogLevel level) {
    for (const auto& [value, text] : kLogLevels)
        if (value == level) return text;
    return "info";
}

void McpSession::set_client_capabilities(const json& capabilities) {
    std::lock_guard lock(mutex_);
    capabilities_.clear();
    if (!capabilities.is_object()) return;
    for (const auto& [name, value] : capabilities.items())
        if (value.is_object()) capabilities_.insert(name);
}

bool McpSession::client_can(std::string_view capability) {
    std::lock_guard lock(mutex_);
    return capabilities_.count(std::string(capability)) > 0;
}

std::shared_ptr<ah_cancel> McpSession::start_call(const std::string& request_id, std::string plugin, Send send) {
    std::lock_guard lock(mutex_);
    auto token = std::make_shared<ah_cancel>();
    calls_[request_id] = Call{token, std::move(plugin), std::move(send)};
    return token;
}

void McpSession::end_call(const std::string& request_id) {
    std::lock_guard lock(mutex_);
    calls_.erase(request_id);
}

void McpSession::cancel(const std::string& request_id) {
    std::lock_guard lock(mutex_);
    if (auto it = calls_.find(request_id); it != calls_.end()) it->second.cancel->cancel();
    answered_.notify_all();  // an ask() of that call stops waiting
}

void McpSession::set_log_level(LogLevel level) {
    std::lock_guard lock(mutex_);
    log_level_ = level;
}

std::optional<LogLevel> McpSession::log_level() {
    std::lock_guard lock(mutex_);
    return log_level_;
}

void McpSession::send_log(const std::string& plugin, const std::string& notification) {
    std::vector<Send> targets;
    {
        std::lock_guard lock(mutex_);
        auto now = std::chrono::steady_clock::now();
        if (now - log_window_ >= std::chrono::seconds(1)) {
            log_window_ = now;
            logs_in_window_ = 0;
        }
        if (++logs_in_window_ > kLogsPerSecond) return;
        for (const auto& [key, call] : calls_)
            if (!plugin.empty() && call.plugin == plugin && call.send) targets.push_back(call.send);
        if (targets.empty()) return post_locked(notification);
    }
    for (const Send& send : targets) send(notification);
}

bool McpSession::subscribe(const std::string& uri) {
    std::lock_guard lock(mutex_);
    if (subscriptions_.size() >= kMaxSubscriptions && !subscriptions_.count(uri)) return false;
    subscriptions_.insert(uri);
    return true;
}

void McpSession::unsubscribe(const std::string& uri) {
    std::lock_guard lock(mutex_);
    subscriptions_.erase(uri);
}

bool McpSession::subscribed(const std::string& uri) {
    std::lock_guard lock(mutex_);
    return subscriptions_.count(uri) > 0;
}

plugins::CallerAnswer McpSession::ask(std::string_view method, const json& params, const Send& send,
                                      std::chrono::milliseconds wait, const std::function<bool()>& stopped) {
    std::string request_id;
    {
        std::lock_guard lock(mutex_);
        if (closed_ || asks_ended_) return {AH_ERR_CANCELLED, "the client's session ended"};
        request_id = "agenthost-" + std::to_string(++next_request_);
        asked_[request_id] = std::nullopt;
    }
    send(json_io::dump({{"jsonrpc", "2.0"}, {"id", request_id}, {"method", std::string(method)}, {"params", params}}));
    std::unique_lock lock(mutex_);
    const auto deadline = std::chrono::steady_clock::now() + wait;
    plugins::CallerAnswer answer{AH_ERR_TIMEOUT, "the client did not answer " + std::string(method) + " in time"};
    for (;;) {
        auto& slot = asked_[request_id];
        if (slot) {
            const json& response = *slot;
            if (response.contains("result"))
                answer = {AH_OK, json_io::dump(response["result"])};
            else
                answer = {AH_ERR_FAILED, json_io::get_string(response.contains("error") ? response["error"] : json(), "message",
                                                             "the client refused the request")};
            break;
        }
        if (closed_ || asks_ended_) {
            answer = {AH_ERR_CANCELLED, "the client's session ended"};
            break;
        }
        if (stopped && stopped()) {
            answer = {AH_ERR_CANCELLED, "the call was cancelled or has ended"};
            break;
        }
        if (answered_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(200))) ==
                std::cv_status::timeout &&
            std::chrono::steady_clock::now() >= deadline)
            break;
    }
    asked_.erase(request_id);
    if (answer.status == AH_ERR_TIMEOUT || (answer.status == AH_ERR_CANCELLED && !closed_ && !asks_ended_)) {
        // The client's dialog closes: nobody waits for its answer any more.
        lock.unlock();
        send(json_io::dump({{"jsonrpc", "2.0"},
                            {"method", "notifications/cancelled"},
                            {"params", {{"requestId", request_id}, {"reason", answer.text}}}}));
    }
    return answer;
}

void McpSession::answered(const json& response) {
    if (!response.contains("id") || !response["id"].is_string()) return;
    std::lock_guard lock(mutex_);
    auto it = asked_.find(response["id"].get<std::string>());
    if (it == asked_.end()) return;
    it->second = response;
    answered_.notify_all();
}

void McpSession::end_asks() {
    std::lock_guard lock(mutex_);
    asks_ended_ = true;
    answered_.notify_all();
}

bool McpSession::open_stream() {
    std::lock_guard lock(mutex_);
    if (streaming_ || closed_) return false;
    streaming_ = true;
    return true;
}

void McpSession::close_stream() {
    std::lock_guard lock(mutex_);
    streaming_ = false;
    outbox_.clear();
}

void McpSession::post(std::string message) {
    std::lock_guard lock(mutex_);
    post_locked(std::move(message));
}

void McpSession::post_locked(std::string message) {
    if (!streaming_ || closed_ || outbox_.size() >= kMaxOutbox) return;
    outbox_.push_back(std::move(message));
    posted_.notify_all();
}

std::optional<std::string> McpSession::next_message(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    posted_.wait_for(lock, timeout, [&] { return !outbox_.empty() || closed_; });
    if (outbox_.empty()) return std::nullopt;
    std::string message = std::move(outbox_.front());
    outbox_.pop_front();
    return message;
}

void McpSession::close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    posted_.notify_all();
    answered_.notify_all();
}

bool McpSession::closed() {
    std::lock_guard lock(mutex_);
    return closed_;
}

}  // namespace agenthost::mcp
