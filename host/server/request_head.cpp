#include "server/request_head.hpp"

#include <nlohmann/json.hpp>

namespace agenthost::server {
namespace {

// A whole HTTP/1.1 error response with the server's JSON error body; the connection closes after it.
std::string error_response(const char* status_line, const char* type, const char* code, const std::string& message,
                           const char* extra_headers) {
    nlohmann::json body{{"error", {{"message", message}, {"type", type}, {"code", code}, {"param", nullptr}}}};
    std::string text = body.dump();
    return std::string(status_line) + "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(text.size()) +
           "\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\n" + extra_headers + "\r\n" + text;
}

}  // namespace

std::optional<HeadVerdict> judge_request_head(std::string_view bytes, const HeadLimits& limits) {
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

std::string head_refusal(HeadVerdict verdict, const HeadLimits& limits) {
    if (verdict == HeadVerdict::complete || verdict == HeadVerdict::closed) return {};
    if (verdict == HeadVerdict::timed_out)
        return error_response("HTTP/1.1 408 Request Timeout", "invalid_request_error", "request_timeout",
                              "the request's head did not arrive within " + std::to_string(limits.deadline.count() / 1000) +
                                  " seconds; send the whole request at once",
                              "x-should-retry: false\r\n");
    std::string message =
        verdict == HeadVerdict::too_many_fields
            ? "the request has more than " + std::to_string(limits.max_fields) + " header lines; send fewer headers"
        : verdict == HeadVerdict::line_too_long
            ? "a header line of the request is longer than " + std::to_string(limits.max_line_bytes >> 10) +
                  " KiB; send shorter headers (data belongs in the body)"
            : "the request's headers are larger than " + std::to_string(limits.max_bytes >> 10) +
                  " KiB; send smaller headers (data belongs in the body)";
    return error_response("HTTP/1.1 431 Request Header Fields Too Large", "invalid_request_error", "headers_too_large", message,
                          "x-should-retry: false\r\n");
}

std::string too_many_connections_refusal(size_t limit) {
    return error_response("HTTP/1.1 503 Service Unavailable", "server_error", "too_many_connections",
                          "this address already has " + std::to_string(limit) +
                              " connections open to the server ([server] max_connections_per_address); close idle "
                              "ones, or raise the limit in agenthost.toml",
                          "Retry-After: 1\r\n");
}

}  // namespace agenthost::server
