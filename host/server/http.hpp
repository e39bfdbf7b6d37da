// The server's own view of one HTTP exchange, so route files never include the HTTP library: a
// request to read, a response to fill, and a stream to write server-sent events into. Only
// server_core.cpp, in the http-server module, knows the library underneath.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace agenthost::server {

class Request {
public:
    virtual ~Request() = default;

    virtual const std::string& method() const = 0;
    virtual const std::string& path() const = 0;
    // The route pattern's capture `index` (1 is the first group).
    virtual std::string match(size_t index) const = 0;
    // A header's value ("" when absent), whether it is present, how often it was sent.
    virtual std::string header(const std::string& name) const = 0;
    virtual bool has_header(const std::string& name) const = 0;
    virtual size_t header_count(const std::string& name) const = 0;
    // A query parameter ("" when absent) and whether it is present.
    virtual std::string param(const std::string& name) const = 0;
    virtual bool has_param(const std::string& name) const = 0;
    virtual const std::string& version() const = 0;
    virtual const std::string& remote_addr() const = 0;
    // True once the client has closed its end of the connection (it gave up waiting). Asked only on
    // the thread serving the request, while the handler runs.
    virtual bool client_gone() const = 0;
};

// Where a streamed response is written. write() is false once the client has gone.
class StreamSink {
public:
    virtual ~StreamSink() = default;
    virtual bool write(std::string_view text) = 0;
    virtual void done() = 0;  // the stream ends after what was written
    // The client closed its end (it left the stream), seen without writing to it.
    virtual bool client_gone() const = 0;
};

class Response {
public:
    virtual ~Response() = default;

    virtual void set_status(int status) = 0;
    virtual int status() const = 0;
    virtual void set_header(const std::string& name, const std::string& value) = 0;
    virtual void remove_header(const std::string& name) = 0;
    virtual void set_content(const std::string& body, const std::string& content_type) = 0;
    virtual void redirect(const std::string& location, int status) = 0;
    // A streamed body: `next` is called again and again on the connection's thread until it returns
    // false (stop: the client left) or calls sink.done(); `finished` runs once the stream is over,
    // however it ended.
    virtual void stream(const std::string& content_type, std::function<bool(StreamSink& sink)> next,
                        std::function<void()> finished = nullptr) = 0;
};

using Handler = std::function<void(const Request&, Response&)>;
// A POST handler receives the body, read within its route's byte limit. It may take the text (a
// large prompt is then held once, not once more for as long as its run takes).
using BodyHandler = std::function<void(const Request&, std::string& body, Response&)>;

}  // namespace agenthost::server
