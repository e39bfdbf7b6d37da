// Where accepted connections wait for their request: on one thread (epoll), not one thread each.
// A connection gets a serving thread only once its head has arrived whole and within the limits
// (request_head.hpp), and its body too (up to kGateBodyBytes of it), so idle and slow sockets cost
// a descriptor and the bytes they sent, never a thread: thousands of them no longer delay /health,
// and a body sent a byte at a time holds no thread. Also here: the per-address cap (an address
// at its cap loses its oldest connection still waiting for a head; if none waits, the new one is
// refused 503 too_many_connections), a cap on all waiting connections (the oldest goes), and a
// small pool of its own for the health probes (GET /health and /readyz), so they are answered
// even when every serving thread is busy. Linux only (epoll, SO_RCVLOWAT); no HTTP library here.
#pragma once

#include "server/request_head.hpp"

#include <cstddef>
#include <functional>
#include <memory>

namespace agenthost::server {

struct GateLimits {
    HeadLimits head;
    size_t max_served = 1024;         // connections served at once, a thread each; more wait in order
    size_t max_per_address = 256;     // connections open from one address: waiting, queued and served
    size_t max_waiting = 4096;        // connections waiting for their head or body, from every address
    size_t max_body_bytes = 4 << 20;  // a longer declared body is handed over at once (refused 413)
};

class ConnectionGate {
public:
    // Serves one connection whose head is whole (on a serving thread); the gate closes the socket
    // after it returns.
    using Serve = std::function<void(int sock)>;

    ConnectionGate(GateLimits limits, Serve serve);
    ~ConnectionGate();  // stop()
    ConnectionGate(const ConnectionGate&) = delete;
    ConnectionGate& operator=(const ConnectionGate&) = delete;

    // Takes a newly accepted socket (the gate owns it from here). Never blocks on the client.
    void admit(int sock);

    // Closes the connections still waiting for a head, lets the ones handed over finish, joins
    // the threads. Connections admitted afterwards are closed at once.
    void stop();

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace agenthost::server
