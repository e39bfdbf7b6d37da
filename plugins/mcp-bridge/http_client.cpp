#include "http_client.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace bridge {

namespace {

constexpr size_t kMaxStreamBytes = size_t{32} << 20;  // one answer or event stream, as a stdio line
constexpr int kMaxResumes = 20;                       // reconnections of one answer's stream
// How long one listening GET stays open before it is reopened: the longest stop() can wait when a
// server keeps the stream open after the session's DELETE (the host's HTTP requests end on their
// own, not at a plugin's word).
constexpr int kListenWindowMs = 15000;

// Server-sent events, read as they come: complete events are handed on, the last event id and
// retry delay are remembered for a reconnection.
class SseReader {
public:
    // Takes a chunk; each complete event's data goes to `on_data`, which returns false to stop.
    bool feed(std::string_view chunk, const std::function<bool(const std::string&)>& on_data) {
        buffer_.append(chunk);
        size_t start = 0;
        for (;;) {
            size_t end = buffer_.find('\n', start);
            if (end == std::string::npos) break;
            std::string_view line(buffer_.data() + start, end - start);
            start = end + 1;
            if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
            if (line.empty()) {
                if (!data_.empty() && !on_data(data_)) {
                    buffer_.erase(0, start);
                    data_.clear();
                    return false;
                }
                data_.clear();
                continue;
            }
            size_t colon = line.find(':');
            std::string_view field = line.substr(0, colon);
            std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
            if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
            if (field == "data") {
                if (!data_.empty()) data_ += '\n';
                data_.append(value);
            } else if (field == "id") {
                last_id_ = std::string(value);
            } else if (field == "retry" && !value.empty() && value.size() < 9 &&
                       value.find_first_not_of("0123456789") == std::string_view::npos) {
                retry_ms_ = std::stoi(std::string(value));
            }
        }
        buffer_.erase(0, start);
        return true;
    }
    const std::string& last_id() const { return last_id_; }
    int retry_ms() const { return retry_ms_; }

private:
    std::string buffer_, data_, last_id_;
    int retry_ms_ = 1000;  // the spec leaves the default to the client
};

}  // namespace

// One exchange: POST the message and read its answer (one JSON object, or SSE events as they come:
// the server's own requests answered at once, its notifications passed on), until the response
// to the message arrives. A stream that ends without it is resumed with GET and Last-Event-ID
// after the server's retry delay (SEP-1699), within the same timeout.
Reply HttpClient::post(const json& message, int timeout_ms, const std::function<bool()>& cancelled, bool expect_answer) {
    Reply reply;
    const json id = message.value("id", json());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    SseReader events;
    bool found = false, stopped = false, unreadable_seen = false, asked = false;
    auto take_message = [&](const json& m) {
        if (m.contains("method") && m.contains("id")) {
            answer_server(m);
            asked = true;
            return true;
        }
        if (m.contains("method")) {
            notified(m);
            return true;
        }
        if (m.value("id", json()) != id) return true;
        found = true;
        if (m.contains("error")) {
            reply.error = "MCP error " + m["error"].value("code", json(0)).dump() + ": " + m["error"].value("message", "");
        } else {
            reply.ok = true;
            reply.result = m.value("result", json::object());
        }
        // Done: the stream is closed here. A server that keeps it open after its answer is not
        // waited for, and a stateless one ends the exchange when the client hangs up.
        return false;
    };
    auto take = [&](const std::string& data) {
        json m = json::parse(data, nullptr, false);
        if (m.is_object()) return take_message(m);
        if (!unreadable_seen) unreadable("an event held no JSON-RPC message: '" + data.substr(0, 200) + "'");
        unreadable_seen = true;
        return true;
    };
    for (int attempt = 0; attempt <= kMaxResumes; ++attempt) {
        const bool resuming = attempt > 0;
        agenthost::sdk::HttpRequest http;
        http.method = resuming ? "GET" : "POST";
        http.url = url_;
        if (!resuming) http.body = message.dump(-1, ' ', false, json::error_handler_t::replace);
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
        http.timeout_ms = static_cast<uint32_t>(std::max<int64_t>(left, 1));
        http.headers = headers_;
        if (!resuming) http.headers["Content-Type"] = "application/json";
        http.headers["Accept"] = resuming ? "text/event-stream" : "application/json, text/event-stream";
        if (resuming) http.headers["Last-Event-ID"] = events.last_id();
        {
            std::lock_guard lock(mutex_);
            if (!session_.empty()) http.headers["Mcp-Session-Id"] = session_;
            if (!protocol_.empty()) http.headers["MCP-Protocol-Version"] = protocol_;
        }
        bool streamed = false, too_big = false;
        std::string body;     // a JSON answer
        size_t received = 0;  // an event stream's bytes
        auto response = host_.http(
            http, nullptr,
            [&](std::string_view chunk) {
                if ((stopped = cancelled && cancelled())) return false;
                if ((received += chunk.size()) > kMaxStreamBytes) return !(too_big = true);
                if (streamed) return events.feed(chunk, take);
                body.append(chunk);  // a JSON answer is read whole, within the same bound
                return true;
            },
            [&](int, const json& headers) {
                streamed = headers.value("content-type", "").find("text/event-stream") != std::string::npos;
                // Kept before the answer is read: a request the server makes inside it carries it.
                if (!resuming && headers.contains("mcp-session-id") && headers["mcp-session-id"].is_string()) {
                    std::lock_guard lock(mutex_);
                    session_ = headers["mcp-session-id"].get<std::string>();
                }
            });
        if (found) return reply;
        if (stopped || (cancelled && cancelled())) {
            reply.cancelled = true;
            reply.error = "cancelled";
            if (message.contains("id") && message.contains("method"))
                notify("notifications/cancelled", {{"requestId", message["id"]}, {"reason", "cancelled by the host"}});
            return reply;
        }
        if (too_big) {
            reply.error = "the answer from " + url_ + " is larger than " + std::to_string(kMaxStreamBytes >> 20) + " MiB";
            unreadable(reply.error);
            return reply;
        }
        if (response.status == AH_ERR_TIMEOUT) {
            reply.timed_out = true;
            reply.error = "no answer within " + std::to_string(timeout_ms) + " ms";
            // Over HTTP the server's questions count against its timeout: say so.
            if (asked) reply.error += " (its question to the person took part of that time: raise this server's timeout_ms)";
            return reply;
        }
        if (response.status != AH_OK) {
            reply.error = "could not reach " + url_;
            return reply;
        }
        if (response.code == 404 && !session_.empty()) {
            running_ = false;  // the session is gone: reconnect (initialize again)
            reply.error = "the server forgot the session";
            return reply;
        }
        if (!expect_answer) {
            reply.ok = response.code >= 200 && response.code < 300;
            return reply;
        }
        if (response.code >= 400) {
            reply.error = "HTTP " + std::to_string(response.code) + ": " + body.substr(0, 300);
            return reply;
        }
        if (!streamed) {
            json m = json::parse(body, nullptr, false);
            if (m.is_object()) {
                take_message(m);
                if (found) return reply;
            }
            reply.error = "the answer from " + url_ + " held no response to the request";
            if (!m.is_object()) {
                reply.error += ": it is not JSON-RPC ('" + body.substr(0, 200) + (body.size() > 200 ? "…')" : "')");
                unreadable(reply.error);
            }
            return reply;
        }
        // The stream ended without the response: resumable only when the server numbered its events.
        if (events.last_id().empty()) {
            reply.error = "the answer from " + url_ + " ended without a response to the request";
            return reply;
        }
        auto wait = std::chrono::milliseconds(events.retry_ms());
        if (std::chrono::steady_clock::now() + wait >= deadline) break;
        for (auto until = std::chrono::steady_clock::now() + wait; std::chrono::steady_clock::now() < until;) {
            if (cancelled && cancelled()) break;
            std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(
                std::chrono::milliseconds(20),
                std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now())));
        }
    }
    reply.timed_out = true;
    reply.error = "no answer within " + std::to_string(timeout_ms) + " ms (the event stream ended and was resumed)";
    return reply;
}

Reply HttpClient::request(const std::string& method, const json& params, int timeout_ms, const std::function<bool()>& cancelled) {
    int64_t id;
    {
        std::lock_guard lock(mutex_);
        id = next_id_++;
    }
    Reply reply = post({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}, timeout_ms, cancelled, true);
    if (reply.ok && method == "initialize") {
        std::lock_guard lock(mutex_);
        protocol_ = reply.result.value("protocolVersion", "");
    }
    return reply;
}

void HttpClient::notify(const std::string& method, const json& params) {
    post({{"jsonrpc", "2.0"}, {"method", method}, {"params", params}}, 10000, {}, false);
    if (method != "notifications/initialized") return;
    std::lock_guard lock(mutex_);
    if (!listener_.joinable() && !stopping_) listener_ = std::thread([this] { listen(); });
}

void HttpClient::answer_server(const json& request) {
    answer_request(request, [this](const json& answer) { post(answer, 10000, {}, false); });
}

bool HttpClient::pause(int ms) {
    std::unique_lock lock(mutex_);
    return !wake_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping_; });
}

void HttpClient::listen() {
    SseReader events;
    int backoff_ms = 1000;
    for (;;) {
        agenthost::sdk::HttpRequest http;
        http.method = "GET";
        http.url = url_;
        http.timeout_ms = kListenWindowMs;
        http.headers = headers_;
        http.headers["Accept"] = "text/event-stream";
        {
            std::lock_guard lock(mutex_);
            if (stopping_) return;
            if (!session_.empty()) http.headers["Mcp-Session-Id"] = session_;
            if (!protocol_.empty()) http.headers["MCP-Protocol-Version"] = protocol_;
        }
        if (!events.last_id().empty()) http.headers["Last-Event-ID"] = events.last_id();
        bool streamed = false, heard = false;
        auto response = host_.http(
            http, nullptr,
            [&](std::string_view chunk) {
                if (!streamed) return false;
                heard = true;
                return events.feed(chunk, [this](const std::string& data) {
                    json m = json::parse(data, nullptr, false);
                    if (m.is_object() && m.contains("method") && m.contains("id"))
                        answer_server(m);
                    else if (m.is_object())
                        notified(m);
                    std::lock_guard lock(mutex_);
                    return !stopping_;
                });
            },
            [&](int code, const json& headers) {
                streamed = code == 200 && headers.value("content-type", "").find("text/event-stream") != std::string::npos;
            });
        // No listening stream offered (405, or no such route): the answers carry everything.
        if (response.status == AH_OK && (response.code == 405 || response.code == 404)) return;
        if (response.status == AH_ERR_TIMEOUT || (response.status == AH_OK && streamed)) {
            backoff_ms = 1000;  // the window ended, or the server ended the stream: open it again
            if (heard && !pause(response.status == AH_ERR_TIMEOUT ? 0 : events.retry_ms())) return;
            if (!heard && !pause(100)) return;  // a stream that says nothing is not reopened in a loop
            continue;
        }
        // Refused (another stream is open: 409, the session is unknown …) or unreachable.
        if (!pause(response.code == 409 ? 100 : backoff_ms)) return;
        backoff_ms = std::min(backoff_ms * 2, 30000);
    }
}

// Ends the session politely (DELETE), as the transport asks (a server that does not allow it
// answers 405, which is fine), then waits for the listening stream and the server's requests.
void HttpClient::stop() {
    std::string session;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        session.swap(session_);
    }
    wake_.notify_all();
    running_ = false;
    if (!session.empty()) {
        agenthost::sdk::HttpRequest http;
        http.method = "DELETE";
        http.url = url_;
        http.headers = headers_;
        http.headers["Mcp-Session-Id"] = session;
        http.timeout_ms = 2000;
        host_.http(http);  // a server ends the session's listening stream with it
    }
    if (listener_.joinable()) listener_.join();
    join_requests();
}

}  // namespace bridge
