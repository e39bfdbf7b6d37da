// Shared by the provider adapters (built only against the SDK): stream decoders for Server-Sent
// Events and NDJSON, and the mapping of HTTP and transport failures to the SDK's typed errors.
#pragma once

#include <agenthost/agenthost.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

namespace agenthost::providers {

using nlohmann::json;

// The text with every invalid UTF-8 sequence replaced by U+FFFD, so a server's bad bytes cost one
// character instead of the whole record (a JSON parser refuses invalid UTF-8).
inline std::string repair_utf8(std::string_view in) {
    std::string out;
    out.reserve(in.size());
    size_t i = 0;
    while (i < in.size()) {
        unsigned char c = static_cast<unsigned char>(in[i]);
        size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
        bool ok = n > 0 && i + n <= in.size() && !(n == 2 && c < 0xc2);
        for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(in[i + k]) & 0xc0) == 0x80;
        if (ok && n == 3) {
            unsigned char c1 = static_cast<unsigned char>(in[i + 1]);
            ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);  // overlong, surrogates
        }
        if (ok && n == 4) {
            unsigned char c1 = static_cast<unsigned char>(in[i + 1]);
            ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90) && c <= 0xf4;
        }
        if (ok) {
            out.append(in.substr(i, n));
            i += n;
        } else {
            out += "\xEF\xBF\xBD";
            ++i;
        }
    }
    return out;
}

// Incremental Server-Sent Events decoder (WHATWG rules): lines end in \n, \r\n or \r; the data
// lines of one event are joined with \n; an empty line dispatches the event; "event:" names it;
// lines starting with ':' are comments. Feed any split of the stream; events come out whole.
// One event (or line, or a whole non-streamed body) larger than this is a broken or hostile server:
// reading stops, so memory stays bounded whatever it sends.
constexpr size_t kMaxEventBytes = 32u << 20;

class SseDecoder {
public:
    // Calls on_event(name, data) for each complete event; returns false as soon as on_event does,
    // or when one event grows past kMaxEventBytes (then too_large() is true).
    template <typename OnEvent>
    bool feed(std::string_view chunk, OnEvent&& on_event) {
        if (line_.size() + data_.size() + chunk.size() > kMaxEventBytes && line_.size() + data_.size() > 0) {
            too_large_ = true;
            return false;
        }
        for (char c : chunk) {
            if (after_cr_ && c == '\n') {  // the \n of a \r\n pair
                after_cr_ = false;
                continue;
            }
            after_cr_ = c == '\r';
            if (c != '\n' && c != '\r') {
                line_ += c;
                continue;
            }
            if (!line(on_event)) return false;
        }
        return true;
    }

    // Bytes of an event that never ended (a stream cut mid-way).
    bool has_partial() const { return !line_.empty() || has_data_; }
    bool too_large() const { return too_large_; }

private:
    template <typename OnEvent>
    bool line(OnEvent& on_event) {
        const std::string text = line_;  // a copy: the line is short, and moving trips a GCC false warning
        line_.clear();
        if (text.empty()) {
            if (!has_data_) {
                event_.clear();
                return true;
            }
            std::string name = event_.empty() ? "message" : event_;
            std::string data = repair_utf8(data_);
            data_.clear();
            event_.clear();
            has_data_ = false;
            return on_event(std::string_view(name), std::string_view(data));
        }
        if (text[0] == ':') return true;
        size_t colon = text.find(':');
        std::string field = text.substr(0, colon);
        std::string value = colon == std::string::npos ? "" : text.substr(colon + 1);
        if (!value.empty() && value[0] == ' ') value.erase(0, 1);
        if (field == "data") {
            if (has_data_) data_ += '\n';
            data_ += value;
            has_data_ = true;
        } else if (field == "event") {
            event_ = value;
        }
        return true;
    }

    std::string line_, data_, event_;
    bool has_data_ = false;
    bool after_cr_ = false;
    bool too_large_ = false;
};

// Incremental newline-delimited JSON: calls on_line(text) for each complete non-empty line.
class NdjsonDecoder {
public:
    template <typename OnLine>
    bool feed(std::string_view chunk, OnLine&& on_line) {
        if (line_.size() + chunk.size() > kMaxEventBytes && !line_.empty()) {
            too_large_ = true;
            return false;
        }
        for (char c : chunk) {
            if (c != '\n') {
                line_ += c;
                continue;
            }
            std::string text = std::move(line_);
            line_.clear();
            if (!text.empty() && text.back() == '\r') text.pop_back();
            if (!text.empty() && !on_line(std::string_view(repair_utf8(text)))) return false;
        }
        return true;
    }
    bool has_partial() const { return !line_.empty(); }
    bool too_large() const { return too_large_; }

private:
    std::string line_;
    bool too_large_ = false;
};

// Appends a chunk of a non-streamed body; false once it would pass kMaxEventBytes.
inline bool append_capped(std::string& body, std::string_view chunk) {
    if (body.size() + chunk.size() > kMaxEventBytes) return false;
    body.append(chunk);
    return true;
}

// A chat answer read chunk by chunk: SSE events when streamed, else the whole JSON body; either
// way within kMaxEventBytes.
class ChatBody {
public:
    explicit ChatBody(bool stream) : stream_(stream) {}
    template <typename OnEvent>
    bool feed(std::string_view chunk, OnEvent&& on_event) {
        if (stream_) return sse_.feed(chunk, on_event);
        too_large_ = !append_capped(whole_, chunk);
        return !too_large_;
    }
    bool too_large() const { return too_large_ || sse_.too_large(); }
    const std::string& whole() const { return whole_; }  // the non-streamed body

private:
    bool stream_;
    SseDecoder sse_;
    std::string whole_;
    bool too_large_ = false;
};

inline constexpr const char* kTooLargeMessage =
    "the provider sent a single event (or body) larger than 32 MiB; reading stopped (a broken or hostile server)";

// A token count in a usage object: 0 when absent, null or not an integer (servers send all three).
inline long long count_of(const json& usage, const char* key) {
    if (!usage.is_object()) return 0;
    auto it = usage.find(key);
    return it != usage.end() && it->is_number_integer() ? it->get<long long>() : 0LL;
}

inline std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

inline std::string join_url(std::string base, std::string_view path) {
    while (!base.empty() && base.back() == '/') base.pop_back();
    return base + std::string(path);
}

// Retry-After as seconds ("7", "1.5") or an HTTP date ("Wed, 21 Oct 2026 07:28:00 GMT").
inline std::optional<double> parse_retry_after(std::string_view value) {
    std::string v(value);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
    if (v.empty()) return std::nullopt;
    char* end = nullptr;
    double seconds = std::strtod(v.c_str(), &end);
    if (end && *end == '\0') return std::max(0.0, seconds);
    std::tm tm{};
    if (!strptime(v.c_str(), "%a, %d %b %Y %H:%M:%S", &tm)) return std::nullopt;
    double delta = std::difftime(timegm(&tm), std::time(nullptr));
    return std::max(0.0, delta);
}

// The server's own words for a failure: {"error": {"message"}}, {"error": "…"}, {"message": "…"}
// or the body text itself.
inline std::string error_message(std::string_view body) {
    json j = json::parse(body.begin(), body.end(), nullptr, false);
    if (j.is_object()) {
        if (auto e = j.find("error"); e != j.end()) {
            if (e->is_string()) return *e;
            if (e->is_object() && e->contains("message") && (*e)["message"].is_string()) return (*e)["message"];
        }
        if (j.contains("message") && j["message"].is_string()) return j["message"];
        if (j.contains("detail") && j["detail"].is_string()) return j["detail"];
    }
    std::string text(body.substr(0, 500));
    return text.empty() ? "no message" : text;
}

// Whether a vendor's message says the prompt does not fit the model's context: OpenAI, DeepSeek,
// vLLM ("maximum context length is N tokens", "longer than the maximum model length"), llama.cpp
// ("exceeds the available context size"), Anthropic ("prompt is too long"), Gemini ("the input
// token count … exceeds the maximum number of tokens allowed"), Ollama, LM Studio.
inline bool says_context_too_large(std::string_view message) {
    static const char* phrases[] = {"maximum context length",
                                    "context_length_exceeded",
                                    "context length",
                                    "exceeds the available context",
                                    "exceed_context_size",
                                    "prompt is too long",
                                    "maximum model length",
                                    "context window",
                                    "too many tokens",
                                    "context size",
                                    "exceeds the maximum number of tokens"};
    std::string m = lower(message);
    return std::any_of(std::begin(phrases), std::end(phrases), [&](const char* p) { return m.find(p) != std::string::npos; });
}

struct WireError {
    std::string type;  // auth | rate_limit | model_unavailable | context_too_large | transient | bad_request
    std::string message;
    std::optional<double> retry_after;
};

// An HTTP status with its body → the SDK's typed error. The message is the server's, prefixed with
// the status; it never contains the request's headers (and so never the key).
inline WireError classify_http_error(int code, const json& headers, std::string_view body) {
    std::string message = error_message(body);
    std::string said = "HTTP " + std::to_string(code) + ": " + message;
    std::string m = lower(message);
    if (code == 401 || code == 403) return {"auth", said, std::nullopt};
    if (code == 429) {
        std::optional<double> after;
        if (headers.is_object() && headers.contains("retry-after") && headers["retry-after"].is_string())
            after = parse_retry_after(headers["retry-after"].get<std::string>());
        json j = json::parse(body.begin(), body.end(), nullptr, false);
        if (!after && j.is_object()) {
            const json* holder = j.contains("error") && j["error"].is_object() ? &j["error"] : &j;
            if (holder->contains("retry_after") && (*holder)["retry_after"].is_number())
                after = (*holder)["retry_after"].get<double>();
        }
        return {"rate_limit", said, after};
    }
    if (says_context_too_large(message) && code < 500) return {"context_too_large", said, std::nullopt};
    if (code == 404 && (m.find("model") != std::string::npos || m.find("not found") != std::string::npos))
        return {"model_unavailable", said, std::nullopt};
    if (code == 408 || code == 409 || code >= 500) return {"transient", said, std::nullopt};
    return {"bad_request", said, std::nullopt};
}

// A failed transfer (no HTTP answer, or a stream cut off) → the SDK's typed error.
inline WireError classify_transport(ah_status status, const std::string& url) {
    switch (status) {
        case AH_ERR_TIMEOUT: return {"timeout", "the request to " + url + " timed out", std::nullopt};
        case AH_ERR_INVALID_ARGUMENT:  // the host refused to send it; its log says which of the two
            return {"bad_request",
                    "the request to " + url +
                        " was refused before it was sent: the URL is not valid, or its host is outside the "
                        "plugin's network permissions (check base_url, and the host's log)",
                    std::nullopt};
        case AH_ERR_UNSUPPORTED:  // not worth retrying: the host's log says why
            return {"bad_request", "this agenthost cannot make HTTP requests (its http-client module is not usable: see its log)",
                    std::nullopt};
        default: return {"transient", "could not reach " + url + " (connection failed or the stream broke)", std::nullopt};
    }
}

}  // namespace agenthost::providers
