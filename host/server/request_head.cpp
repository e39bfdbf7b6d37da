#include "server/request_head.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/socket.h>

namespace agenthost::server {
namespace {

using Clock = std::chrono::steady_clock;

// The verdict on what has arrived so far, or nullopt while the head may still come whole.
std::optional<HeadVerdict> judge(std::string_view bytes, const HeadLimits& limits) {
    size_t fields = 0;
    size_t start = 0;
    bool request_line = true;
    for (size_t end; (end = bytes.find('\n', start)) != std::string_view::npos; start = end + 1) {
        std::string_view line = bytes.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (request_line) {
            request_line = false;
            continue;
        }
        if (line.empty()) return end + 1 <= limits.max_bytes ? HeadVerdict::complete : HeadVerdict::too_large;
        if (line.size() + 2 > limits.max_line_bytes) return HeadVerdict::line_too_long;
        if (++fields > limits.max_fields) return HeadVerdict::too_many_fields;
    }
    // A header line still arriving may already be too long.
    if (!request_line && bytes.size() - start + 2 > limits.max_line_bytes) return HeadVerdict::line_too_long;
    if (bytes.size() > limits.max_bytes) return HeadVerdict::too_large;
    return std::nullopt;
}

void set_low_water(int sock, size_t bytes) {
    int value = static_cast<int>(bytes);
    ::setsockopt(sock, SOL_SOCKET, SO_RCVLOWAT, &value, sizeof value);
}

}  // namespace

HeadVerdict screen_request_head(int sock, const HeadLimits& limits) {
    const auto deadline = Clock::now() + limits.deadline;
    std::vector<char> buffer(limits.max_bytes + 1);
    size_t seen = 0;  // bytes already judged incomplete
    HeadVerdict verdict = HeadVerdict::timed_out;
    for (;;) {
        // Woken only when more than what was already looked at has arrived (the kernel may wake it
        // sooner when its buffer is small; then it looks again).
        set_low_water(sock, seen + 1);
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) break;
        pollfd ready{sock, POLLIN | POLLRDHUP, 0};
        int n = ::poll(&ready, 1, static_cast<int>(left.count()));
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) break;
        if (n < 0) {
            verdict = HeadVerdict::closed;
            break;
        }
        ssize_t got = ::recv(sock, buffer.data(), buffer.size(), MSG_PEEK | MSG_DONTWAIT);
        if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (got <= 0) {
            verdict = HeadVerdict::closed;
            break;
        }
        if (auto judged = judge(std::string_view(buffer.data(), static_cast<size_t>(got)), limits)) {
            verdict = *judged;
            break;
        }
        if (static_cast<size_t>(got) == seen) {
            // Nothing new: the client stopped sending (a half-close ends the head unfinished), or
            // the kernel woke us early; look again shortly.
            if (ready.revents & (POLLRDHUP | POLLHUP | POLLERR)) {
                verdict = HeadVerdict::closed;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        seen = static_cast<size_t>(got);
    }
    set_low_water(sock, 1);  // the HTTP library reads as usual from here
    return verdict;
}

const char* head_verdict_name(HeadVerdict verdict) {
    switch (verdict) {
        case HeadVerdict::complete: return "complete";
        case HeadVerdict::too_large: return "headers_too_large";
        case HeadVerdict::too_many_fields: return "too_many_headers";
        case HeadVerdict::line_too_long: return "header_line_too_long";
        case HeadVerdict::timed_out: return "request_timeout";
        case HeadVerdict::closed: return "closed";
    }
    return "unknown";
}

void refuse_request_head(int sock, HeadVerdict verdict, const HeadLimits& limits) {
    if (verdict == HeadVerdict::complete || verdict == HeadVerdict::closed) return;
    const bool timed_out = verdict == HeadVerdict::timed_out;
    std::string message =
        timed_out ? "the request's head did not arrive within " + std::to_string(limits.deadline.count() / 1000) +
                        " seconds; send the whole request at once"
        : verdict == HeadVerdict::too_many_fields
            ? "the request has more than " + std::to_string(limits.max_fields) + " header lines; send fewer headers"
        : verdict == HeadVerdict::line_too_long
            ? "a header line of the request is longer than " + std::to_string(limits.max_line_bytes >> 10) +
                  " KiB; send shorter headers (data belongs in the body)"
            : "the request's headers are larger than " + std::to_string(limits.max_bytes >> 10) +
                  " KiB; send smaller headers (data belongs in the body)";
    nlohmann::json body{{"error",
                         {{"message", message},
                          {"type", "invalid_request_error"},
                          {"code", timed_out ? "request_timeout" : "headers_too_large"},
                          {"param", nullptr}}}};
    std::string text = body.dump();
    std::string response =
        std::string(timed_out ? "HTTP/1.1 408 Request Timeout" : "HTTP/1.1 431 Request Header Fields Too Large") +
        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(text.size()) +
        "\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\nx-should-retry: false\r\n\r\n" + text;
    for (size_t sent = 0; sent < response.size();) {
        ssize_t n = ::send(sock, response.data() + sent, response.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
    }
    ::shutdown(sock, SHUT_WR);
    // What the client still sends is read and dropped for a moment: closing with unread bytes would
    // reset the connection, and the client might never see the answer.
    const auto until = Clock::now() + std::chrono::milliseconds(500);
    char sink[16384];
    size_t dropped = 0;
    while (dropped < (1u << 20) && Clock::now() < until) {
        pollfd readable{sock, POLLIN, 0};
        if (::poll(&readable, 1, 100) <= 0) continue;
        ssize_t n = ::recv(sock, sink, sizeof sink, MSG_DONTWAIT);
        if (n <= 0) break;
        dropped += static_cast<size_t>(n);
    }
}

}  // namespace agenthost::server
