// Benchmark: the cost of a tool call into a plugin in its own process (isolation = "process") and
// in a kernel sandbox (isolation = "sandbox") against the same call in-process: the C example
// plugin's echo tool, N calls each way, through the registry. Prints microseconds per call, the
// difference, and how long the host takes to start with the plugin each way (spawn, sandbox, create).
//   agenthost_isolation_bench [--calls N]
#include "app/host_app.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
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
    std::printf("tool call, in-process:        %8.1f µs   host start %6.1f ms\n", in_process.call_us, in_process.start_ms);
    std::printf("tool call, isolated process:  %8.1f µs   host start %6.1f ms\n", process.call_us, process.start_ms);
    std::printf("tool call, kernel sandbox:    %8.1f µs   host start %6.1f ms\n", sandbox.call_us, sandbox.start_ms);
    std::printf("isolation overhead per call:  %8.1f µs process, %8.1f µs sandbox (%d calls each)\n",
                process.call_us - in_process.call_us, sandbox.call_us - in_process.call_us, calls);
    return 0;
}
