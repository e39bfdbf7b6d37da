// cpp-httplib behind the connection gate, for the http-server module only (it includes the HTTP
// library): the server that serves one screened request per connection, the stream it reads a
// connection through, and what a handler on a serving thread may ask of its connection.
#pragma once

#include "server/connection_gate.hpp"

#include <httplib.h>

#include <chrono>
#include <cstdint>
#include <memory>

namespace agenthost::server {

// How a request must keep coming once a serving thread reads it (ConnectionStream).
inline constexpr auto kReadGrace = std::chrono::seconds(10);
inline constexpr int64_t kMinReadRate = 64 << 10;  // bytes a second, on average past the grace

// Whether the client of the connection this thread serves has closed its end or reset it.
bool served_client_gone();
// Whether this thread's request was dropped because it came too slowly (its read failed on purpose).
bool served_too_slowly();

// cpp-httplib's task queue that runs each hand-off on the accepting thread (allocated for the library).
httplib::TaskQueue* make_accept_inline();

// cpp-httplib behind the connection gate (connection_gate.hpp): the library parses only heads that
// arrived whole and within the header limits, so a header flood is refused before any allocation
// grows with it, and idle or slow sockets hold no thread. It overrides the library's
// per-connection entry point and serves the one request a connection carries (keep-alive is off)
// with the library's own process_request().
class ScreenedServer final : public httplib::Server {
public:
    void open_gate(const GateLimits& limits) {
        gate_ = std::make_unique<ConnectionGate>(limits, [this](int sock) { serve(sock); });
        new_task_queue = make_accept_inline;  // the library owns what it returns
    }
    void close_gate() {
        if (gate_) gate_->stop();
    }

private:
    bool process_and_close_socket(socket_t sock) override {
        gate_->admit(sock);
        return true;
    }
    // Serves the one request of connection `sock`, on this thread, through a ConnectionStream.
    void serve(int sock);

    std::unique_ptr<ConnectionGate> gate_;
};

}  // namespace agenthost::server
