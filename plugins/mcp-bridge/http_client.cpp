#include "http_client.hpp"

namespace bridge {

Reply HttpClient::post(const json& message, int timeout_ms, const std::function<bool()>& cancelled, bool expect_answer) {
    Reply reply;
    agenthost::sdk::HttpRequest http;
    http.method = "POST";
    http.url = url_;
    http.body = message.dump(-1, ' ', false, json::error_handler_t::replace);
    http.timeout_ms = static_cast<uint32_t>(timeout_ms);
    http.headers = headers_;
    http.headers["Content-Type"] = "application/json";
    http.headers["Accept"] = "application/json, text/event-stream";
    {
        std::lock_guard lock(mutex_);
        if (!session_.empty()) http.headers["Mcp-Session-Id"] = session_;
        if (!protocol_.empty()) http.headers["MCP-Protocol-Version"] = protocol_;
    }
    // The body is taken chunk by chunk so that a cancelled call stops waiting at the next chunk
    // (a streamed answer sends progress and keep-alives).
    std::string body;
    bool stopped = false;
    auto response = host_.http(http, nullptr, [&](std::string_view chunk) {
        body.append(chunk);
        stopped = cancelled && cancelled();
        return !stopped;
    });
    response.body = std::move(body);
    if (stopped || (cancelled && cancelled())) {
        reply.cancelled = true;
        reply.error = "cancelled";
        if (message.contains("id"))
            notify("notifications/cancelled", {{"requestId", message["id"]}, {"reason", "cancelled by the host"}});
        return reply;
    }
    if (response.headers.contains("mcp-session-id")) {
        std::lock_guard lock(mutex_);
        session_ = response.headers["mcp-session-id"];
    }
    if (response.status == AH_ERR_TIMEOUT) {
        reply.timed_out = true;
        reply.error = "no answer within " + std::to_string(timeout_ms) + " ms";
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
        reply.error = "HTTP " + std::to_string(response.code) + ": " + response.body.substr(0, 300);
        return reply;
    }
    // The answer: one JSON object, or SSE events of which one carries the response.
    std::string type = response.headers.value("content-type", "");
    std::vector<json> messages;
    if (type.find("text/event-stream") != std::string::npos) {
        std::string data;
        size_t start = 0;
        std::string body = response.body + "\n\n";
        while (start < body.size()) {
            size_t end = body.find('\n', start);
            std::string line = body.substr(start, end - start);
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (line.rfind("data:", 0) == 0)
                data += (data.empty() ? "" : "\n") + line.substr(line.size() > 5 && line[5] == ' ' ? 6 : 5);
            if (line.empty() && !data.empty()) {
                messages.push_back(json::parse(data, nullptr, false));
                data.clear();
            }
            start = end + 1;
        }
    } else {
        messages.push_back(json::parse(response.body, nullptr, false));
    }
    for (const auto& m : messages) notified(m);
    for (const auto& m : messages) {
        if (!m.is_object() || m.value("id", json()) != message["id"]) continue;
        if (m.contains("error")) {
            reply.error = "MCP error " + m["error"].value("code", json(0)).dump() + ": " + m["error"].value("message", "");
        } else {
            reply.ok = true;
            reply.result = m.value("result", json::object());
        }
        return reply;
    }
    reply.error = "the answer from " + url_ + " held no response to the request";
    for (const auto& m : messages)
        if (!m.is_object()) {
            std::string start = response.body.substr(0, 200);
            reply.error += ": it is not JSON-RPC ('" + start + (response.body.size() > 200 ? "…')" : "')");
            unreadable(reply.error);
            break;
        }
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
}

// Ends the session politely (DELETE), as the transport asks; a server that does not allow it
// answers 405, which is fine.
void HttpClient::stop() {
    std::string session;
    {
        std::lock_guard lock(mutex_);
        session.swap(session_);
    }
    running_ = false;
    if (session.empty()) return;
    agenthost::sdk::HttpRequest http;
    http.method = "DELETE";
    http.url = url_;
    http.headers = headers_;
    http.headers["Mcp-Session-Id"] = session;
    http.timeout_ms = 2000;
    host_.http(http);
}

}  // namespace bridge
