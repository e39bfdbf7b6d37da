// A new connection's request head, looked at before the HTTP library reads it: the library keeps
// every header line it is sent (no limit on their number), so a flood of small headers grew the
// server by gigabytes. The head is peeked (MSG_PEEK: nothing is taken from the socket) until its
// blank line, within a size, a field count and a deadline; a head past them is answered 431 (or
// 408) here and never reaches the parser. Used by server_core.cpp on the thread serving the
// connection; no HTTP library here.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace agenthost::server {

struct HeadLimits {
    size_t max_bytes = 64 << 10;   // the request line and every header line, with their line breaks
    size_t max_fields = 100;       // header lines
    size_t max_line_bytes = 8192;  // one header line: the HTTP library reads no longer one (it would say 400)
    // The whole head must have arrived by then: a client that sends a byte every few seconds holds
    // a thread no longer than this (the library's own timeout is between bytes).
    std::chrono::milliseconds deadline{10000};
};

enum class HeadVerdict {
    complete,         // the blank line that ends the head is here, within the limits
    too_large,        // more than max_bytes before the blank line: 431
    too_many_fields,  // more than max_fields header lines: 431
    line_too_long,    // a header line longer than max_line_bytes: 431
    timed_out,        // the head did not arrive by the deadline: 408
    closed,           // the client closed or reset the connection first
};

// Waits for `sock`'s request head and judges it, reading nothing from the socket.
HeadVerdict screen_request_head(int sock, const HeadLimits& limits);

// The refusal of a head that was not `complete`, as a whole HTTP/1.1 response with the server's
// JSON error body (code headers_too_large or request_timeout), written to `sock`, which is then
// shut down gracefully (what the client still sends is read and dropped for a moment, so it gets
// the answer instead of a reset). Nothing for `closed`. The caller closes the socket.
void refuse_request_head(int sock, HeadVerdict verdict, const HeadLimits& limits);

// The verdict in words, for the log.
const char* head_verdict_name(HeadVerdict verdict);

}  // namespace agenthost::server
