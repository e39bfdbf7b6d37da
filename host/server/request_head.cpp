#include "server/request_head.hpp"

#include "server/security_headers.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <charconv>

namespace agenthost::server {
namespace {

// A whole HTTP/1.1 error response with the server's JSON error body; the connection closes after it.
std::string error_response(const char* status_line, const char* type, const char* code, const std::string& message,
                           const char* extra_headers) {
    nlohmann::json body{{"error", {{"message", message}, {"type", type}, {"code", code}, {"param", nullptr}}}};
    std::string text = body.dump();
    std::string out = std::string(status_line) +
                      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(text.size()) +
                      "\r\nConnection: close\r\n";
    for (const auto& [name, value] : kSecurityHeaders) out += std::string(name) + ": " + value + "\r\n";
    return out + extra_headers + "\r\n" + text;
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

namespace {

bool same_letters(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
    return true;
}

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

// The next line of `bytes` from `pos` (its '\r' dropped), with `pos` moved past it; nullopt when it
// has not ended yet.
std::optional<std::string_view> next_line(std::string_view bytes, size_t& pos) {
    size_t end = bytes.find('\n', pos);
    if (end == std::string_view::npos) return std::nullopt;
    std::string_view line = bytes.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = end + 1;
    return line;
}

}  // namespace

BodyFraming body_framing(std::string_view head) {
    BodyFraming f;
    size_t pos = 0;
    std::string_view request_line = next_line(head, pos).value_or("");
    std::string_view method = request_line.substr(0, request_line.find(' '));
    int lengths = 0, codings = 0;
    bool length_readable = false;
    while (auto line = next_line(head, pos)) {
        if (line->empty()) break;
        size_t colon = line->find(':');
        if (colon == std::string_view::npos) continue;
        std::string_view name = trimmed(line->substr(0, colon));
        std::string_view value = trimmed(line->substr(colon + 1));
        if (same_letters(name, "content-length")) {
            ++lengths;
            auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), f.length);
            length_readable = !value.empty() && error == std::errc() && end == value.data() + value.size();
        } else if (same_letters(name, "transfer-encoding")) {
            ++codings;
            f.chunked = same_letters(value, "chunked");
        } else if (same_letters(name, "expect")) {
            f.expects_continue = same_letters(value, "100-continue");
        }
    }
    f.head_bytes = pos;
    const bool carries_body = method == "POST" || method == "PUT" || method == "PATCH";
    const bool by_length = lengths == 1 && codings == 0 && length_readable && f.length > 0;
    const bool by_chunks = codings == 1 && lengths == 0 && f.chunked;
    f.awaited = carries_body && (by_length || by_chunks);
    if (!by_length) f.length = 0;
    return f;
}

ChunkedBody chunked_body_progress(std::string_view body) {
    size_t pos = 0;
    for (;;) {
        auto size_line = next_line(body, pos);
        if (!size_line) return ChunkedBody::incomplete;
        std::string_view digits = size_line->substr(0, size_line->find_first_of(" \t;"));
        size_t size = 0;
        auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), size, 16);
        if (digits.empty() || error != std::errc() || end != digits.data() + digits.size()) return ChunkedBody::malformed;
        if (size == 0) {  // the last chunk: trailer lines up to a blank one
            while (auto trailer = next_line(body, pos))
                if (trailer->empty()) return ChunkedBody::complete;
            return ChunkedBody::incomplete;
        }
        if (body.size() - pos < size) return ChunkedBody::incomplete;
        pos += size;
        auto rest = next_line(body, pos);
        if (!rest) return body.size() - pos > 1 ? ChunkedBody::malformed : ChunkedBody::incomplete;
        if (!rest->empty()) return ChunkedBody::malformed;  // the data is longer than its size said
    }
}

const char* head_verdict_name(HeadVerdict verdict) {
    switch (verdict) {
        case HeadVerdict::complete: return "complete";
        case HeadVerdict::too_large: return "headers_too_large";
        case HeadVerdict::too_many_fields: return "too_many_headers";
        case HeadVerdict::line_too_long: return "header_line_too_long";
        case HeadVerdict::timed_out: return "request_timeout";
        case HeadVerdict::body_timed_out: return "body_timeout";
        case HeadVerdict::closed: return "closed";
    }
    return "unknown";
}

std::string head_refusal(HeadVerdict verdict, const HeadLimits& limits) {
    if (verdict == HeadVerdict::complete || verdict == HeadVerdict::closed) return {};
    if (verdict == HeadVerdict::timed_out || verdict == HeadVerdict::body_timed_out)
        return error_response("HTTP/1.1 408 Request Timeout", "invalid_request_error", "request_timeout",
                              std::string(verdict == HeadVerdict::timed_out ? "the request's head" : "the request's body") +
                                  " did not arrive within " + std::to_string(limits.deadline.count() / 1000) +
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
