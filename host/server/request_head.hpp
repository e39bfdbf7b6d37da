// A new connection's request head, judged before the HTTP library reads it: the library keeps
// every header line it is sent (no limit on their number), so a flood of small headers grew the
// server by gigabytes. The connection gate (connection_gate.hpp) peeks at the head (nothing is
// taken from the socket) until its blank line, within a size, a field count and a deadline; a head
// past them is answered 431 (or 408) with the response made here and never reaches the parser.
// No I/O and no HTTP library here.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace agenthost::server {

struct HeadLimits {
    size_t max_bytes = 64 << 10;   // the request line and every header line, with their line breaks
    size_t max_fields = 100;       // header lines
    size_t max_line_bytes = 8192;  // one header line: the HTTP library reads no longer one (it would say 400)
    // The whole head must have arrived by then: a client that sends a byte every few seconds is
    // dropped after this long (the library's own timeout is between bytes).
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

// The verdict on the bytes of a head that have arrived so far, or nullopt while it may still come
// whole (timed_out and closed are the gate's to give).
std::optional<HeadVerdict> judge_request_head(std::string_view bytes, const HeadLimits& limits);

// The refusal of a head that was not `complete`, as a whole HTTP/1.1 response with the server's
// JSON error body (code headers_too_large or request_timeout); empty for `complete` and `closed`.
std::string head_refusal(HeadVerdict verdict, const HeadLimits& limits);

// The refusal of a connection from an address that has `limit` open already: 503
// too_many_connections with Retry-After, as a whole HTTP/1.1 response.
std::string too_many_connections_refusal(size_t limit);

// The verdict in words, for the log.
const char* head_verdict_name(HeadVerdict verdict);

}  // namespace agenthost::server
