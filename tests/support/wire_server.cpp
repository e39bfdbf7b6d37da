#include "support/wire_server.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <memory>

namespace test {

WireServer::WireServer() {
    auto handler = [this](const httplib::Request& req, httplib::Response& res) { serve(req, res); };
    loopback_.http.Get(".*", handler);
    loopback_.http.Post(".*", handler);
    port_ = loopback_.start();
}

WireServer::~WireServer() = default;

void WireServer::push(const std::string& path, CannedResponse response) {
    std::lock_guard lock(mutex_);
    queued_[path].push_back(std::move(response));
}

std::vector<RecordedRequest> WireServer::requests() {
    std::lock_guard lock(mutex_);
    return requests_;
}

size_t WireServer::requests_to(const std::string& path) {
    std::lock_guard lock(mutex_);
    return static_cast<size_t>(std::count_if(requests_.begin(), requests_.end(), [&](const auto& r) { return r.path == path; }));
}

void WireServer::serve(const httplib::Request& req, httplib::Response& res) {
    CannedResponse canned;
    {
        std::lock_guard lock(mutex_);
        RecordedRequest record{std::chrono::steady_clock::now(), req.method, req.path, req.body, {}, req.remote_port, {}};
        for (const auto& [name, value] : req.headers) {
            std::string lower = name;
            std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
            record.headers[lower] = value;
        }
        for (const auto& [name, value] : req.params) record.query[name] = value;
        requests_.push_back(std::move(record));
        auto& queue = queued_[req.path];
        if (queue.empty()) {
            res.status = 500;
            res.set_content(R"({"error": {"message": "the test server has no response queued for )" + req.path + R"("}})",
                            "application/json");
            return;
        }
        canned = std::move(queue.front());
        queue.pop_front();
    }
    res.status = canned.status;
    for (const auto& [name, value] : canned.headers) res.set_header(name, value);
    auto state = std::make_shared<CannedResponse>(std::move(canned));
    auto next = std::make_shared<size_t>(0);
    res.set_chunked_content_provider(state->content_type, [state, next](size_t, httplib::DataSink& sink) {
        if (*next < state->chunks.size()) {
            if (state->chunk_delay_ms) std::this_thread::sleep_for(std::chrono::milliseconds(state->chunk_delay_ms));
            const std::string& chunk = state->chunks[(*next)++];
            return sink.write(chunk.data(), chunk.size());
        }
        if (state->cut) return false;  // the connection drops mid-response
        if (state->endless) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            return sink.write(state->keep_alive.data(), state->keep_alive.size());  // fails once the client has gone
        }
        sink.done();
        return true;
    });
}

}  // namespace test
