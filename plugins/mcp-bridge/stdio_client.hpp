// A JSON-RPC client for one MCP server run as a child process (stdio transport: one message per
// line). Requests are matched to responses by id, so replies may come in any order and
// notifications may come in between.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <sys/types.h>

namespace bridge {

using nlohmann::json;

struct Reply {
    bool ok = false;
    json result;        // when ok
    std::string error;  // otherwise: why (server error, exited, timed out, cancelled)
    bool timed_out = false;
    bool cancelled = false;
};

// A connection to one MCP server, whatever carries it.
class Transport {
public:
    virtual ~Transport() = default;
    virtual bool running() const = 0;
    // Sends a request and waits for its response, `timeout_ms` at most; `cancelled` is polled and,
    // when it says so, the server is told (notifications/cancelled) and the wait ends.
    virtual Reply request(const std::string& method, const json& params, int timeout_ms,
                          const std::function<bool()>& cancelled = {}) = 0;
    virtual void notify(const std::string& method, const json& params) = 0;
    virtual void stop() = 0;
    // Hears the server's notifications (method and params), on the transport's own thread; keep it
    // short. Set before the first request.
    void on_notification(std::function<void(const std::string& method, const json& params)> handler) {
        notification_handler_ = std::move(handler);
    }
    // Answers the server's own requests (sampling, elicitation, roots; ping is answered here): the
    // handler returns the result, or {"error": {"code", "message"}}. Each runs on a thread of its
    // own, as it may wait long (a person); stop() waits for them. Set before the first request.
    void on_request(std::function<json(const std::string& method, const json& params)> handler) {
        request_handler_ = std::move(handler);
    }
    // Hears each message the server sent that is not JSON-RPC (what was wrong, and the start of
    // it), on the transport's own thread. Set before the first request.
    void on_unreadable(std::function<void(const std::string& what)> handler) { unreadable_handler_ = std::move(handler); }
    // Whether one of the server's requests is being answered now (a person may be filling in a
    // form): a call's wait for its own answer does not run out meanwhile.
    bool answering() const { return answering_ > 0; }

protected:
    void unreadable(const std::string& what) const {
        if (unreadable_handler_) unreadable_handler_(what);
    }

    void notified(const json& message) const {
        if (notification_handler_ && message.is_object() && !message.contains("id") && message.contains("method") &&
            message["method"].is_string())
            notification_handler_(message["method"].get<std::string>(), message.value("params", json::object()));
    }

    // A request from the server: answered through `send` on a thread of its own.
    void answer_request(const json& message, std::function<void(const json&)> send) {
        std::lock_guard lock(requests_mutex_);
        ++answering_;
        requests_.emplace_back([this, message, send = std::move(send)] {
            json answer{{"jsonrpc", "2.0"}, {"id", message["id"]}};
            const std::string method = message.value("method", "");
            json result = method == "ping"   ? json::object()
                          : request_handler_ ? request_handler_(method, message.value("params", json::object()))
                                             : json{{"error", {{"code", -32601}, {"message", "Method not found: " + method}}}};
            if (result.is_object() && result.contains("error") && result.size() == 1)
                answer["error"] = result["error"];
            else
                answer["result"] = result;
            send(answer);
            --answering_;
        });
    }
    void join_requests() {
        std::vector<std::thread> running;
        {
            std::lock_guard lock(requests_mutex_);
            running.swap(requests_);
        }
        for (auto& t : running) t.join();
    }

private:
    std::function<void(const std::string&, const json&)> notification_handler_;
    std::function<void(const std::string&)> unreadable_handler_;
    std::function<json(const std::string&, const json&)> request_handler_;
    std::mutex requests_mutex_;
    std::vector<std::thread> requests_;
    std::atomic<int> answering_{0};
};

class StdioClient : public Transport {
public:
    ~StdioClient() override;

    // Starts the process. `env` entries are added to a filtered copy of this process's environment
    // (no LD_PRELOAD and friends). False with `error` set when it cannot start.
    bool start(const std::string& command, const std::vector<std::string>& args, const json& env, std::string& error);
    bool running() const override { return running_; }
    Reply request(const std::string& method, const json& params, int timeout_ms,
                  const std::function<bool()>& cancelled = {}) override;
    void notify(const std::string& method, const json& params) override;
    void stop() override;

    // The longest line read from a server; a longer one is skipped and reported (bound before parse).
    static constexpr size_t kMaxLineBytes = size_t{32} << 20;

private:
    void read_loop();
    void take_line(std::string_view line);
    void remember_unreadable(const std::string& what);
    bool send(const json& message);

    pid_t pid_ = -1;
    int to_child_ = -1, from_child_ = -1;
    std::thread reader_;
    std::atomic<bool> running_{false};
    std::mutex mutex_;
    std::condition_variable answered_;
    std::map<int64_t, json> replies_;
    int64_t next_id_ = 1;
    // The last few lines that were not JSON-RPC (numbered from 1), for a timeout's error.
    std::deque<std::pair<size_t, std::string>> unreadable_lines_;
    size_t unreadable_count_ = 0;
    std::mutex write_mutex_;
};

}  // namespace bridge
