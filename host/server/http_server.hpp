// agenthost serve: the OpenAI-compatible API (/v1), the SSE chat API (/api/chat), runs,
// conversations, memory, plugins, health, readiness and metrics, over cpp-httplib (in the
// http-server module, loaded by open()).
#pragma once

#include "app/host_app.hpp"

#include <memory>
#include <string>

namespace agenthost::server {

class HttpServer {
public:
    // The server for `app`, its routes added; an error when the http-server module cannot be loaded.
    static Result<std::unique_ptr<HttpServer>> open(app::HostApp& app);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Serves until shutdown() (from another thread, e.g. a signal watcher). `listen` is HOST:PORT.
    // Refuses a non-loopback address without a token.
    Status serve(const std::string& listen);
    // Stops accepting, lets running steps reach a checkpoint (bounded), leaves the rest interrupted.
    void shutdown();

    struct Impl;
    explicit HttpServer(std::unique_ptr<Impl> impl);  // for open(): Impl is defined in http_server.cpp alone

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace agenthost::server
