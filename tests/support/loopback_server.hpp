// An in-process HTTP server on 127.0.0.1 and an ephemeral port, for tests that need a real peer
// (a web page, an indexer, a model server): routes are added to `http`, then start(); it stops and
// joins its thread when it goes out of scope (or at stop()).
#pragma once

#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>

namespace test {

class LoopbackServer {
public:
    LoopbackServer() = default;
    ~LoopbackServer() { stop(); }
    LoopbackServer(const LoopbackServer&) = delete;
    LoopbackServer& operator=(const LoopbackServer&) = delete;

    // Binds, serves on its own thread and returns the port once the server runs.
    int start() {
        // As model servers do (llama.cpp, Ollama, uvicorn): without it, a reply on a kept
        // connection waits for the client's delayed ACK (40 ms) between its head and its body.
        http.set_tcp_nodelay(true);
        port_ = http.bind_to_any_port("127.0.0.1");
        thread_ = std::thread([this] { http.listen_after_bind(); });
        while (!http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return port_;
    }
    void stop() {
        if (!thread_.joinable()) return;
        http.stop();
        thread_.join();
    }
    int port() const { return port_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

    httplib::Server http;

private:
    std::thread thread_;
    int port_ = 0;
};

}  // namespace test
