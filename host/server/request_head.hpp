// A new connection's request head, judged before the HTTP library reads it: the library keeps
// every header line it is sent (no limit on their number), so a flood of small headers grew the
// server by gigabytes. The connection gate (connection_gate.hpp) peeks at the head (nothing is
// taken from the socket) until its blank line, within a size, a field count and a deadline; a head
// past them is answered 431 (or 408) with the response made here and never reaches the parser.
// Then the gate waits the same way for the body (its first kGateBodyBytes): how long it is and
// when a chunked one has ended are read here. No I/O and no HTTP library here.
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
    body_timed_out,   // the body (its first kGateBodyBytes) did not arrive by the deadline: 408
    closed,           // the client closed or reset the connection first
};

// The verdict on the bytes of a head that have arrived so far, or nullopt while it may still come
// whole (timed_out and closed are the gate's to give).
std::optional<HeadVerdict> judge_request_head(std::string_view bytes, const HeadLimits& limits);

// How much of a body the gate waits for before a serving thread reads the request: a whole body
// up to this size, the first this many bytes of a longer one. A slow body then holds no thread
// until most of it has come, and a small one (nearly every API request) never does.
inline constexpr size_t kGateBodyBytes = 256 << 10;

// What a whole head says of the body that follows it.
struct BodyFraming {
    size_t head_bytes = 0;          // the head's own bytes, through its blank line
    size_t length = 0;              // Content-Length (0 without one)
    bool chunked = false;           // Transfer-Encoding: chunked (the length is then unknown)
    bool expects_continue = false;  // Expect: 100-continue: the client waits for a 100 first
    // A POST, PUT or PATCH whose body is framed one plain way: one readable Content-Length over 0,
    // or Transfer-Encoding: chunked alone. Anything else (no body, two lengths, a length and
    // chunked, another coding, a body on a GET or DELETE) goes to the HTTP library at once, which
    // answers it without reading the body.
    bool awaited = false;
};
// Reads a whole head (one judge_request_head() called complete).
BodyFraming body_framing(std::string_view head);

enum class ChunkedBody {
    incomplete,  // more is to come
    complete,    // the last chunk and the trailers' blank line are here
    malformed,   // not chunked framing: the HTTP library answers it (400)
};
// How far the bytes of a chunked body (those after the head) have got.
ChunkedBody chunked_body_progress(std::string_view body);

// The refusal of a head that was not `complete`, as a whole HTTP/1.1 response with the server's
// JSON error body (code headers_too_large or request_timeout); empty for `complete` and `closed`.
std::string head_refusal(HeadVerdict verdict, const HeadLimits& limits);

// The refusal of a connection from an address that has `limit` open already: 503
// too_many_connections with Retry-After, as a whole HTTP/1.1 response.
std::string too_many_connections_refusal(size_t limit);

// The verdict in words, for the log.
const char* head_verdict_name(HeadVerdict verdict);

}  // namespace agenthost::server
