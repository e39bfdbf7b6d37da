// What the connection gate reads of a request before the HTTP library does: whether its head is
// whole and within the limits, how long its body is, and when a chunked body has ended.
#include "server/request_head.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace agenthost::server;

TEST_CASE("request head: a head is judged whole only at its blank line, within its limits", "[unit][server][head]") {
    HeadLimits limits;
    CHECK_FALSE(judge_request_head("GET / HTTP/1.1\r\nHost: a\r\n", limits));
    CHECK(judge_request_head("GET / HTTP/1.1\r\nHost: a\r\n\r\n", limits) == HeadVerdict::complete);
    CHECK(judge_request_head("GET / HTTP/1.1\nHost: a\n\n", limits) == HeadVerdict::complete);
    std::string many = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < 101; ++i) many += "X-" + std::to_string(i) + ": 1\r\n";
    CHECK(judge_request_head(many, limits) == HeadVerdict::too_many_fields);
    CHECK(judge_request_head("GET / HTTP/1.1\r\nX: " + std::string(9000, 'a'), limits) == HeadVerdict::line_too_long);
}

TEST_CASE("request head: the body's framing is read whatever the case and spacing of its headers", "[unit][server][head]") {
    const std::string head = "POST /api/chat HTTP/1.1\r\nHost: a\r\ncontent-LENGTH:  1234 \r\nExpect: 100-Continue\r\n\r\n";
    BodyFraming f = body_framing(head + "{\"message\"");
    CHECK(f.head_bytes == head.size());
    CHECK(f.length == 1234);
    CHECK_FALSE(f.chunked);
    CHECK(f.expects_continue);
    CHECK(f.awaited);

    BodyFraming chunked = body_framing("PATCH / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n");
    CHECK(chunked.chunked);
    CHECK(chunked.awaited);
    CHECK(chunked.length == 0);  // a chunked body's length is its chunks'

    // Framings the HTTP library answers at once, without reading a body: not awaited.
    for (const char* odd :
         {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
          "POST / HTTP/1.1\r\nContent-Length: 12x\r\n\r\n", "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
          "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
          "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
          "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
          "POST / HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n",
          "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
          "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
          "DELETE /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\n"}) {
        INFO(odd);
        CHECK_FALSE(body_framing(odd).awaited);
    }
}

TEST_CASE("request head: a chunked body ends at its last chunk and the trailers' blank line", "[unit][server][head]") {
    CHECK(chunked_body_progress("") == ChunkedBody::incomplete);
    CHECK(chunked_body_progress("5\r\nhel") == ChunkedBody::incomplete);
    CHECK(chunked_body_progress("5\r\nhello\r\n") == ChunkedBody::incomplete);
    CHECK(chunked_body_progress("5\r\nhello\r\n0\r\n") == ChunkedBody::incomplete);
    CHECK(chunked_body_progress("5\r\nhello\r\n0\r\n\r\n") == ChunkedBody::complete);
    CHECK(chunked_body_progress("5;ext=1\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n") == ChunkedBody::complete);
    CHECK(chunked_body_progress("A\r\n0\r\n\r\n01234\r\n0\r\n\r\n") == ChunkedBody::complete);  // "0\r\n\r\n" inside data is data
    CHECK(chunked_body_progress("A\r\n0\r\n\r\n") == ChunkedBody::incomplete);
    CHECK(chunked_body_progress("zz\r\n") == ChunkedBody::malformed);
    CHECK(chunked_body_progress("3\r\nhello\r\n") == ChunkedBody::malformed);  // longer than it said
    CHECK(chunked_body_progress("FFFFFFFFFFFFFFFFFFFF\r\n") == ChunkedBody::malformed);
}
