// Benchmark: the cost of a tool call into a plugin in its own process (isolation = "process")
// against the same call in-process: the C example plugin's echo tool, N calls each way, through the
// registry. Prints microseconds per call and the difference.   agenthost_isolation_bench [--calls N]
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

double micros_per_call(bool isolated, int calls, const fs::path& dir) {
    auto cfg = agenthost::config::defaults();
    cfg.data_dir = dir / (isolated ? "process" : "in-process");
    cfg.plugin_dirs = {AGENTHOST_BUILD_PLUGIN_DIR, AGENTHOST_EXAMPLE_PLUGIN_DIR};
    cfg.use_default_plugin_dirs = false;
    cfg.enabled_plugins = {"example_c"};
    if (isolated) cfg.plugin_tables["example_c"] = json{{"isolation", "process"}}.dump();
    auto app = agenthost::app::HostApp::start(std::move(cfg));
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
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / calls;
}

}  // namespace

int main(int argc, char** argv) {
    int calls = 5000;
    for (int i = 1; i + 1 < argc; i += 2)
        if (std::string(argv[i]) == "--calls") calls = std::stoi(argv[i + 1]);
    spdlog::set_level(spdlog::level::warn);
    fs::path dir = fs::temp_directory_path() / ("agenthost-isolation-bench-" + std::to_string(::getpid()));
    double in_process = micros_per_call(false, calls, dir);
    double process = micros_per_call(true, calls, dir);
    fs::remove_all(dir);
    std::printf("tool call, in-process:        %8.1f µs\n", in_process);
    std::printf("tool call, isolated process:  %8.1f µs\n", process);
    std::printf("isolation overhead per call:  %8.1f µs (%d calls each)\n", process - in_process, calls);
    return 0;
}
