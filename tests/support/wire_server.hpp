// A scripted HTTP server on 127.0.0.1 for provider tests: each request to a path gets the next
// canned response queued for it (streamed in chunks, optionally slow, cut off or endless), and every
// request is recorded.
#pragma once

#include "support/loopback_server.hpp"

#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace test {

struct CannedResponse {
    int status = 200;
    std::string content_type = "text/event-stream";
    std::map<std::string, std::string> headers;
    std::vector<std::string> chunks;
    int chunk_delay_ms = 0;
    bool cut = false;      // drop the connection after the chunks, before the response ends
    bool endless = false;  // after the chunks, keep the stream open (sending keep-alives) until the client leaves
    std::string keep_alive = ": keep-alive\n\n";  // what an endless stream repeats: an SSE comment unless set
};

struct RecordedRequest {
    std::chrono::steady_clock::time_point at;  // when it arrived
    std::string method;
    std::string path;
    std::string body;
    std::map<std::string, std::string> headers;  // lower-case names
    int client_port = 0;                         // the client's end: which connection carried it
    std::map<std::string, std::string> query;    // the URL's query parameters
};

class WireServer {
public:
    WireServer();
    ~WireServer();
    WireServer(const WireServer&) = delete;
    WireServer& operator=(const WireServer&) = delete;

    void push(const std::string& path, CannedResponse response);
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    int port() const { return port_; }
    std::vector<RecordedRequest> requests();
    size_t requests_to(const std::string& path);

private:
    void serve(const httplib::Request& req, httplib::Response& res);

    std::mutex mutex_;
    std::map<std::string, std::deque<CannedResponse>> queued_;
    std::vector<RecordedRequest> requests_;
    int port_ = 0;
    LoopbackServer loopback_;  // last: it stops before the members its handler uses go
};

}  // namespace test
