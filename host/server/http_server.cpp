#include "server/http_server.hpp"

#include "common/ids.hpp"
#include "server/memory_budget.hpp"
#include "server/replies.hpp"
#include "server/routes/routes.hpp"
#include "server/run_takeover.hpp"
#include "server/server_core.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

namespace agenthost::server {

// The core, the shared state and the route files, in the order they are torn down in reverse:
// the MCP sessions, then the core (no longer serving), then the runs.
struct HttpServer::Impl {
    Impl(app::HostApp& app, std::unique_ptr<ServerCore> c) : state(app), core(std::move(c)), mcp(*core, app) {
        add_status_routes(*core, state);
        add_openai_routes(*core, state);
        add_chat_routes(*core, state);
        add_run_routes(*core, state);
        add_memory_routes(*core, state);
        add_panel_routes(*core, state);
        add_attachment_routes(*core, state);
    }
    ServerState state;
    std::unique_ptr<ServerCore> core;  // never null
    McpRoutes mcp;
    std::mutex takeover_mutex;              // serve() starts it, shutdown() (another thread) stops it
    std::unique_ptr<RunTakeover> takeover;  // [store] takeover: started with serving, stopped first
};

Result<std::unique_ptr<ServerCore>> make_server_core(const config::Config& config) {
    auto module = modules::load_table<HttpServerModule>("http-server");
    if (!module) return module.error();
    return (*module)->make(config);
}

Result<std::unique_ptr<HttpServer>> HttpServer::open(app::HostApp& app) {
    tune_allocator_for_serving();
    auto core = make_server_core(app.config());
    if (!core) return core.error();
    return std::make_unique<HttpServer>(std::make_unique<Impl>(app, std::move(*core)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() = default;

namespace {

bool loopback(const std::string& host) {
    return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

// The token of a server without token_env: read from data_dir/server-token, or generated there
// (0600) on first start.
Result<std::string> stored_token(const std::filesystem::path& data_dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(data_dir, ec);
    fs::path file = data_dir / "server-token";
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        std::string token = random_hex(32);
        bool written = ::write(fd, token.data(), token.size()) == static_cast<ssize_t>(token.size()) && ::fsync(fd) == 0;
        ::close(fd);
        if (!written) return Error{"token_unwritable", "cannot write " + file.string() + ": check the permissions of data_dir"};
        spdlog::info("generated a server token: file={}", file.string());
        return token;
    }
    if (errno != EEXIST)
        return Error{"token_unwritable", "cannot create " + file.string() + ": check the permissions of data_dir"};
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && (st.st_mode & 077)) {
        spdlog::warn("server token readable by others: file={} mode={:o}; made 0600", file.string(), st.st_mode & 0777);
        ::chmod(file.c_str(), 0600);
    }
    std::ifstream in(file);
    std::string token;
    std::getline(in, token);
    token = trim(token);
    if (token.size() < 16)
        return Error{"token_invalid",
                     file.string() + " holds no usable token (16 characters at least): delete it to have a new one generated"};
    return token;
}

}  // namespace

Status HttpServer::serve(const std::string& listen) {
    size_t colon = listen.rfind(':');
    std::string host = colon == std::string::npos ? listen : listen.substr(0, colon);
    int port = colon == std::string::npos ? 8642 : std::atoi(listen.c_str() + colon + 1);
    if (host.empty() || port <= 0 || port > 65535)
        return Error{"invalid_listen", "listen address '" + listen + "' is not HOST:PORT (e.g. 127.0.0.1:8642)"};
    const auto& s = impl_->state.settings;
    const std::filesystem::path& data_dir = impl_->state.app.config().data_dir;
    const std::string bind_host =
        host.size() > 2 && host.front() == '[' && host.back() == ']' ? host.substr(1, host.size() - 2) : host;
    std::string login;
    bool generated = false;
    if (s.auth == config::ServerAuth::none) {
        if (!loopback(host))
            return Error{"insecure_listen",
                         "refusing to listen on " + host +
                             " with [server] auth = \"none\": anyone who can reach it could "
                             "run the agent; remove auth = \"none\" (a token is then used), or listen on 127.0.0.1"};
        spdlog::warn(
            "serving without authentication ([server] auth = \"none\"): every local user and program can use this server");
        std::cerr << "agenthost: WARNING: no authentication ([server] auth = \"none\"); loopback only" << std::endl;
    } else {
        const char* value = std::getenv(s.token_env.c_str());
        std::string token = value ? trim(value) : "";
        if (token.empty() && s.token_env_set)
            return Error{"token_env_unset",
                         "[server] token_env names " + s.token_env + ", which is unset or empty: export " + s.token_env +
                             "=<a long random string>, or remove token_env to have serve generate a token in " +
                             (data_dir / "server-token").string()};
        if (token.empty()) {
            auto stored = stored_token(data_dir);
            if (!stored) return stored.error();
            token = *stored;
            generated = true;
            login = "agenthost: token in " + (data_dir / "server-token").string() + "; log the web panel in at ";
        } else {
            login = "agenthost: token from $" + s.token_env + "; log the web panel in at ";
        }
        impl_->core->set_token(token, port);
    }
    impl_->core->set_listen_host(host);
    // A socket per connection: the soft descriptor limit (often 1024) would cap them below max_connections.
    if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &files);
    }
    if (!impl_->core->bind(bind_host, port))
        return Error{"listen_failed", "cannot listen on " + listen + " (in use, or not an address of this machine)"};
    std::cerr << "agenthost: listening on http://" << host << ":" << port << std::endl;
    if (!login.empty()) {
        std::string browse = host == "0.0.0.0" ? "127.0.0.1" : host == "::" || host == "[::]" ? "[::1]" : host;
        std::cerr << login << "http://" << browse << ":" << port
                  << "/login?token=" << (generated ? impl_->core->token() : "$" + s.token_env)
                  << "\nagenthost: API clients send Authorization: Bearer <token>" << std::endl;
    }
    {
        const auto& store = impl_->state.app.config().store;
        std::lock_guard lock(impl_->takeover_mutex);
        if (!impl_->state.hub.shutting_down())
            impl_->takeover = std::make_unique<RunTakeover>(impl_->state.app, impl_->state.hub,
                                                            RunTakeover::period(store.lease_seconds), store.takes_over());
    }
    return impl_->core->listen_after_bind();
}

void HttpServer::shutdown() {
    spdlog::info("shutting down: letting running steps reach a checkpoint");
    impl_->mcp.close_sessions();  // ends the MCP listening streams now
    {
        std::lock_guard lock(impl_->takeover_mutex);
        impl_->takeover.reset();  // takes no more runs over
    }
    impl_->state.hub.shutdown(std::chrono::seconds(impl_->state.settings.shutdown_grace_seconds));
    impl_->core->stop();
}

}  // namespace agenthost::server
