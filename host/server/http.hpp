// The server's own view of one HTTP exchange, so route files never include the HTTP library: a
// request to read, a response to fill, and a stream to write server-sent events into. Only
// server_core.cpp knows the library underneath.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace agenthost::server {

class Request {
public:
    explicit Request(const void* native) : native_(native) {}

    const std::string& method() const;
    const std::string& path() const;
    // The route pattern's capture `index` (1 is the first group).
    std::string match(size_t index) const;
    // A header's value ("" when absent), whether it is present, how often it was sent.
    std::string header(const std::string& name) const;
    bool has_header(const std::string& name) const;
    size_t header_count(const std::string& name) const;
    // A query parameter ("" when absent) and whether it is present.
    std::string param(const std::string& name) const;
    bool has_param(const std::string& name) const;
    const std::string& version() const;
    const std::string& remote_addr() const;

private:
    const void* native_;
};

// Where a streamed response is written. write() is false once the client has gone.
class StreamSink {
public:
    explicit StreamSink(void* native) : native_(native) {}
    bool write(std::string_view text);
    void done();  // the stream ends after what was written

private:
    void* native_;
};

class Response {
public:
    explicit Response(void* native) : native_(native) {}

    void set_status(int status);
    int status() const;
    void set_header(const std::string& name, const std::string& value);
    void remove_header(const std::string& name);
    void set_content(const std::string& body, const std::string& content_type);
    void redirect(const std::string& location, int status);
    // A streamed body: `next` is called again and again on the connection's thread until it returns
    // false (stop: the client left) or calls sink.done(); `finished` runs once the stream is over,
    // however it ended.
    void stream(const std::string& content_type, std::function<bool(StreamSink& sink)> next,
                std::function<void()> finished = nullptr);

private:
    void* native_;
};

using Handler = std::function<void(const Request&, Response&)>;
// A POST handler receives the body, read within its route's byte limit.
using BodyHandler = std::function<void(const Request&, const std::string& body, Response&)>;

}  // namespace agenthost::server
