// One MCP client's state, whichever transport carries it: its protocol version and capabilities,
// its calls in flight (to cancel them and to route their log lines), the requests the server put
// to it (sampling, elicitation) and their answers, its log level and subscriptions, and the
// messages the server sends it unasked (over HTTP through its listening stream, GET /mcp).
#pragma once

#include "common/cancel.hpp"
#include "plugins/call_channels.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace agenthost::mcp {

// How a message reaches the client now: the stream of the request being answered, or stdout.
using Send = std::function<void(const std::string& message)>;

// MCP's log levels (RFC 5424's), least severe first.
enum class LogLevel { debug, info, notice, warning, error, critical, alert, emergency };
std::optional<LogLevel> parse_log_level(std::string_view name);
std::string_view log_level_name(LogLevel level);

class McpSession : public std::enable_shared_from_this<McpSession> {
public:
    std::string id;
    std::string protocol_version;
    std::atomic<bool> initialized{false};

    // What the client declared at initialize ("sampling", "elicitation", "roots").
    void set_client_capabilities(const nlohmann::json& capabilities);
    bool client_can(std::string_view capability);

    // A cancel token for a request id (its JSON text), removed when the call ends. `plugin` and
    // `send` route the plugin's log lines to the call's own stream while it runs.
    std::shared_ptr<ah_cancel> start_call(const std::string& request_id, std::string plugin = {}, Send send = {});
    void end_call(const std::string& request_id);
    void cancel(const std::string& request_id);

    // logging/setLevel; no log notifications before the client sets a level.
    void set_log_level(LogLevel level);
    std::optional<LogLevel> log_level();
    // A log record for this client (already at its level): to the streams of `plugin`'s calls in
    // flight, else to the listening stream. At most kLogsPerSecond a second; the rest is dropped.
    void send_log(const std::string& plugin, const std::string& notification);
    static constexpr int kLogsPerSecond = 100;

    // resources/subscribe and unsubscribe; at most kMaxSubscriptions URIs.
    bool subscribe(const std::string& uri);
    void unsubscribe(const std::string& uri);
    bool subscribed(const std::string& uri);
    static constexpr size_t kMaxSubscriptions = 1000;

    // Puts a request to the client through `send` and waits for its answer (answered() below),
    // at most `wait`, while `stopped` (when given) says no and the session lives.
    plugins::CallerAnswer ask(std::string_view method, const nlohmann::json& params, const Send& send,
                              std::chrono::milliseconds wait, const std::function<bool()>& stopped = {});
    // A response from the client: wakes the ask() waiting for its id. Unknown ids are ignored.
    void answered(const nlohmann::json& response);
    // The client will answer nothing more (its input ended): asks end now and later ones fail
    // at once; the session's messages still go out until close().
    void end_asks();

    // The listening stream: open_stream() is false when one is open already. post() queues a
    // message for it (dropped when none is open: the client re-lists when it reconnects).
    bool open_stream();
    void close_stream();
    void post(std::string message);
    // The next queued message (those queued before close() too); nothing after `timeout`.
    std::optional<std::string> next_message(std::chrono::milliseconds timeout);
    // Ends the listening stream for good (session deleted, server stopping); waiting asks end.
    void close();
    bool closed();

private:
    struct Call {
        std::shared_ptr<ah_cancel> cancel;
        std::string plugin;
        Send send;
    };
    void post_locked(std::string message);

    std::mutex mutex_;
    std::map<std::string, Call> calls_;
    std::condition_variable posted_;
    std::deque<std::string> outbox_;
    bool streaming_ = false;
    bool closed_ = false;
    bool asks_ended_ = false;
    std::set<std::string> capabilities_;
    std::optional<LogLevel> log_level_;
    std::chrono::steady_clock::time_point log_window_{};
    int logs_in_window_ = 0;
    std::set<std::string> subscriptions_;
    uint64_t next_request_ = 0;
    std::map<std::string, std::optional<nlohmann::json>> asked_;  // by request id: its answer once here
    std::condition_variable answered_;
};

}  // namespace agenthost::mcp
