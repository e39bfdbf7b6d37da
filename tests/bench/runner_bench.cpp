// Benchmark: one scripted turn of N iterations (default 500), each calling the C example plugin's
// echo tool, through the real runner, registry, SQLite transcript and plugins. Prints iterations per
// second and the host's own microseconds per iteration: the turn's wall time minus the time the
// same provider replies and echo calls take when made directly, without the runner.
//   agenthost_bench [--iterations N] [--dir SCRATCH_DIR]
#include "cli/host_app.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::unique_ptr<agenthost::cli::HostApp> start_host(const fs::path& dir, const fs::path& cassette, int iterations) {
    auto cfg = agenthost::config::defaults();
    cfg.data_dir = dir;
    cfg.plugin_dirs = {AGENTHOST_BUILD_PLUGIN_DIR};
    cfg.use_default_plugin_dirs = false;
    cfg.enabled_plugins = {"scripted", "example_c"};
    cfg.plugin_tables["scripted"] = json{{"cassette", cassette.string()}, {"delta_chars", 64}}.dump();
    cfg.limits.execute_iterations = iterations + 1;
    auto app = agenthost::cli::HostApp::start(std::move(cfg));
    if (!app) {
        std::fprintf(stderr, "agenthost_bench: %s\n", app.error().message.c_str());
        std::exit(2);
    }
    return std::move(*app);
}

// The provider and tool work of the turn, done directly: the floor the runner cannot go under.
double plugin_floor(agenthost::cli::HostApp& app, int iterations) {
    json request{{"model", ""},
                 {"messages", json::array({{{"role", "system"}, {"content", "bench"}}, {{"role", "user"}, {"content", "go"}}})},
                 {"tools", json::array()},
                 {"stream", true}};
    ah_event_sink sink{sizeof(ah_event_sink), nullptr, [](void*, int32_t, ah_str) -> ah_status { return AH_OK; }};
    auto start = Clock::now();
    for (int i = 0; i < iterations; ++i) {
        agenthost::plugins::CallInput chat;
        chat.conversation_id = "floor";
        chat.arguments_json = request.dump();
        (void)app.registry().chat("scripted", chat, sink);
        agenthost::plugins::CallInput echo;
        echo.call_id = "c" + std::to_string(i);
        echo.tool_name = "echo";
        echo.arguments_json = json{{"text", "step " + std::to_string(i)}}.dump();
        echo.conversation_id = "floor";
        (void)app.registry().call_tool(echo);
    }
    return seconds_since(start);
}

}  // namespace

int main(int argc, char** argv) {
    int iterations = 500;
    fs::path dir = fs::temp_directory_path() / ("agenthost-bench-" + std::to_string(::getpid()));
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string flag = argv[i];
        if (flag == "--iterations") iterations = std::max(1, std::atoi(argv[i + 1]));
        else if (flag == "--dir") dir = argv[i + 1];
    }
    spdlog::set_level(spdlog::level::err);
    fs::remove_all(dir);
    fs::create_directories(dir);

    json replies = json::array();
    for (int i = 0; i < iterations; ++i)
        replies.push_back({{"text", "Step " + std::to_string(i) + "."},
                           {"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", "step " + std::to_string(i)}}}}}}});
    replies.push_back({{"text", "All steps done."}});
    std::ofstream(dir / "cassette.json") << json{{"replies", replies}, {"fallback", replies.back()}}.dump();

    auto app = start_host(dir, dir / "cassette.json", iterations);
    agenthost::agent::TurnRequest request{"run the benchmark", "bench", agenthost::agent::Mode::execute, "{}"};
    size_t events = 0;
    agenthost::agent::RunControls controls;
    controls.on_event = [&](const agenthost::agent::TurnEvent&) { ++events; };
    auto db_before = fs::file_size(dir / "agenthost.db");
    auto start = Clock::now();
    auto outcome = app->runner().run(request, controls);
    double turn = seconds_since(start);
    if (!outcome.ok || outcome.tool_calls != iterations) {
        std::fprintf(stderr, "agenthost_bench: the turn failed (%s): %s\n", outcome.stop_reason.c_str(), outcome.error.c_str());
        return 1;
    }
    double floor = plugin_floor(*app, iterations + 1);
    app.reset();  // closing the database checkpoints its write-ahead log into the file
    std::uintmax_t stored = fs::file_size(dir / "agenthost.db") - db_before;
    int model_calls = outcome.iterations;

    std::printf("runner benchmark: one turn, %d iterations, scripted provider + C echo plugin\n", model_calls);
    std::printf("  turn wall time        %10.3f s\n", turn);
    std::printf("  iterations per second %10.0f\n", model_calls / turn);
    std::printf("  µs per iteration      %10.1f  (all: runner + provider + tool + SQLite)\n", 1e6 * turn / model_calls);
    std::printf("  plugin floor          %10.1f µs per iteration (same replies and echo calls, no runner)\n",
                1e6 * floor / model_calls);
    std::printf("  host µs per iteration %10.1f  (wall minus floor)\n", 1e6 * (turn - floor) / model_calls);
    std::printf("  events                %10zu\n", events);
    std::printf("  database growth       %10.1f KiB (%.0f bytes per iteration: transcript rows, appended)\n",
                stored / 1024.0, static_cast<double>(stored) / model_calls);
    fs::remove_all(dir);
    return 0;
}
