// A client for one MCP server over Streamable HTTP, through the host's HTTP service (so the host's
// proxy, TLS and cancellation apply): POST per message, a JSON or SSE answer, Mcp-Session-Id kept.
#pragma once

#include "stdio_client.hpp"

#include <agenthost/plugin.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace bridge {

class HttpClient : public Transport {
public:
    HttpClient(agenthost::sdk::Host host, std::string url, json headers)
        : host_(std::move(host)), url_(std::move(url)), headers_(std::move(headers)) {}
    ~HttpClient() override { stop(); }
    bool running() const override { return running_; }
    Reply request(const std::string& method, const json& params, int timeout_ms,
                  const std::function<bool()>& cancelled = {}) override;
    void notify(const std::string& method, const json& params) override;
    void stop() override;

private:
    Reply post(const json& message, int timeout_ms, const std::function<bool()>& cancelled, bool expect_answer);
    // The listening stream (GET): what the server sends outside any answer — its requests
    // (elicitation, sampling, roots) and notifications. Reopened when it ends, every
    // kListenWindowMs, and after a failure (backing off); not at all when the server offers none.
    void listen();
    void answer_server(const json& request);
    // Waits `ms` or until stop(); false once stopping.
    bool pause(int ms);

    agenthost::sdk::Host host_;
    std::string url_;
    json headers_;
    std::string session_, protocol_;
    std::atomic<bool> running_ = true;  // false once the server forgot our session
    std::mutex mutex_;
    int64_t next_id_ = 1;
    std::thread listener_;
    bool stopping_ = false;  // under mutex_
    std::condition_variable wake_;
};

}  // namespace bridge
