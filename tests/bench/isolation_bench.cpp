// Benchmark: the cost of a tool call into a plugin in its own process (isolation = "process") and
// in a kernel sandbox (isolation = "sandbox") against the same call in-process: the C example
// plugin's echo tool, N calls each way, through the registry. Prints microseconds per call, the
// difference, how long the host takes to start with the plugin each way (spawn, sandbox, create),
// and the physical limit beside them: a socket-pair round trip to another process, in the same run.
//   agenthost_isolation_bench [--calls N]
#include "app/host_app.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Measured {
    double start_ms = 0;  // HostApp::start with only this plugin
    double call_us = 0;   // one echo call
};

Measured measure(const std::string& isolation, int calls, const fs::path& dir) {
    auto cfg = agenthost::config::defaults();
    cfg.data_dir = dir / isolation;
    cfg.plugin_dirs = {AGENTHOST_BUILD_PLUGIN_DIR, AGENTHOST_EXAMPLE_PLUGIN_DIR};
    cfg.use_default_plugin_dirs = false;
    cfg.enabled_plugins = {"example_c"};
    cfg.plugin_tables["example_c"] = json{{"isolation", isolation}}.dump();
    auto started = Clock::now();
    auto app = agenthost::app::HostApp::start(std::move(cfg));
    Measured m;
    m.start_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    if (!app) {
        std::fprintf(stderr, "agenthost_isolation_bench: %s\n", app.error().message.c_str());
        std::exit(2);
    }
    auto echo = (*app)->catalogue().find("echo");
    if (!echo) {
        std::fprintf(stderr, "agenthost_isolation_bench: the echo tool did not load\n");
        std::exit(2);
    }
    agenthost::tools::Invocation in;
    in.arguments = json::parse(R"({"text": "a short message of about forty bytes"})");
    (*app)->invoker().call(*echo, in);  // warm up
    auto start = Clock::now();
    for (int i = 0; i < calls; ++i) {
        in.call_id = "b" + std::to_string(i);
        std::string result = (*app)->invoker().call(*echo, in).dump();
        if (result.find("forty") == std::string::npos) {
            std::fprintf(stderr, "agenthost_isolation_bench: unexpected result %s\n", result.c_str());
            std::exit(1);
        }
    }
    m.call_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / calls;
    return m;
}

// The physical limit of a call into another process: one small message there and back over a
// socket pair to a child that echoes it, measured in the same run.
double socketpair_round_trip_us(int trips) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return 0;
    char message[64] = "a short message of about forty bytes";
    pid_t child = ::fork();
    if (child == 0) {
        ::close(fds[0]);
        char buffer[64];
        while (::read(fds[1], buffer, sizeof buffer) > 0) (void)!::write(fds[1], buffer, sizeof buffer);
        ::_exit(0);
    }
    ::close(fds[1]);
    auto start = Clock::now();
    for (int i = 0; i < trips; ++i) {
        (void)!::write(fds[0], message, sizeof message);
        size_t got = 0;
        while (got < sizeof message) {
            ssize_t n = ::read(fds[0], message + got, sizeof message - got);
            if (n <= 0) break;
            got += static_cast<size_t>(n);
        }
    }
    double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / trips;
    ::close(fds[0]);
    ::waitpid(child, nullptr, 0);
    return us;
}

}  // namespace

int main(int argc, char** argv) {
    int calls = 5000;
    for (int i = 1; i + 1 < argc; i += 2)
        if (std::string(argv[i]) == "--calls") calls = std::stoi(argv[i + 1]);
    spdlog::set_level(spdlog::level::warn);
    fs::path dir = fs::temp_directory_path() / ("agenthost-isolation-bench-" + std::to_string(::getpid()));
    Measured in_process = measure("in-process", calls, dir);
    Measured process = measure("process", calls, dir);
    Measured sandbox = measure("sandbox", calls, dir);
    fs::remove_all(dir);
    double limit = socketpair_round_trip_us(calls);
    std::printf("tool call, in-process:        %8.1f µs   host start %6.1f ms\n", in_process.call_us, in_process.start_ms);
    std::printf("tool call, isolated process:  %8.1f µs   host start %6.1f ms\n", process.call_us, process.start_ms);
    std::printf("tool call, kernel sandbox:    %8.1f µs   host start %6.1f ms\n", sandbox.call_us, sandbox.start_ms);
    std::printf("isolation overhead per call:  %8.1f µs process, %8.1f µs sandbox (%d calls each)\n",
                process.call_us - in_process.call_us, sandbox.call_us - in_process.call_us, calls);
    std::printf("limit: a socket-pair round trip to another process %6.1f µs; isolated call %.1fx, sandboxed call %.1fx of it\n",
                limit, process.call_us / limit, sandbox.call_us / limit);
    return 0;
}
