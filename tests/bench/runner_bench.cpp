// Benchmark. First, a one-turn `agenthost run` from start to exit; a 500-step one's wall and CPU per
// step beside raw SQLite's one synced commit per step (the whole process: provider, plugin, store);
// and the peak RSS of the 500-step one and of one whose tool returns 60 MiB, beside
// `agenthost --version` (start and exit). Then scripted turns of 100, 500 and
// 1000 iterations (or --iterations N), each calling the C example plugin's echo tool, through the real runner, registry, LLM
// queue, SQLite store and plugins, with every step durable (checkpoint + journal, synchronous=FULL). Prints iterations per
// second, the host's own microseconds per iteration (the turn's wall time minus the floor: the same provider answering the very
// requests the turn sent, and the same echo calls, without the runner), database bytes per iteration, and the ratio of the
// per-iteration cost at 1000 to that at 100 (flat when close to 1). The longest turn runs again with echo taken for a tool that
// changes things (its intent synced before each call). Then the physical limit, measured in the same run: raw SQLite doing 3
// inserts and a commit per step (and the same committed twice) with the same bytes per step, same journal mode and synchronous
// setting, and the host's cost as a multiple of it.
//   agenthost_bench [--iterations N] [--durability full|process] [--dir SCRATCH_DIR]
#include "app/host_app.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// What the echo tool is taken for: as the plugin declares it (read-only, so a power cut may lose
// its intent: one synced commit per step), or as a tool that changes things (its intent synced
// before each call: two).
enum class Echo { repeatable, changes_things };

std::unique_ptr<agenthost::app::HostApp> start_host(const fs::path& dir, int iterations, const std::string& durability, Echo echo,
                                                    const fs::path& request_log = {}) {
    auto cfg = agenthost::config::defaults();
    cfg.data_dir = dir;
    cfg.plugin_dirs = {AGENTHOST_BUILD_PLUGIN_DIR, AGENTHOST_EXAMPLE_PLUGIN_DIR};
    cfg.use_default_plugin_dirs = false;
    cfg.enabled_plugins = {"scripted", "example_c"};
    json scripted{{"cassette", (dir / "cassette.json").string()}, {"delta_chars", 64}};
    if (!request_log.empty()) scripted["request_log"] = request_log.string();
    cfg.plugin_tables["scripted"] = scripted.dump();
    cfg.limits.execute_iterations = iterations + 1;
    cfg.store.durability = durability == "process" ? agenthost::config::Durability::process : agenthost::config::Durability::full;
    if (echo == Echo::changes_things) {
        cfg.tools["echo"].read_only = false;
        cfg.tools["echo"].idempotent = false;
    }
    auto app = agenthost::app::HostApp::start(std::move(cfg));
    if (!app) {
        std::fprintf(stderr, "agenthost_bench: %s\n", app.error().message.c_str());
        std::exit(2);
    }
    return std::move(*app);
}

// A cassette of `steps` echo calls, then an answer.
void write_cassette(const fs::path& dir, int steps) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    json replies = json::array();
    for (int i = 0; i < steps; ++i)
        replies.push_back({{"text", "Step " + std::to_string(i) + "."},
                           {"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", "step " + std::to_string(i)}}}}}}});
    replies.push_back({{"text", "All steps done."}});
    std::ofstream(dir / "cassette.json") << json{{"replies", replies}, {"fallback", replies.back()}}.dump();
}

const agenthost::agent::TurnRequest kTurn{"run the benchmark", "bench", agenthost::agent::Mode::execute, "{}"};

// The model requests a turn of `steps` sends, exactly as the provider receives them: the same
// turn, run untimed in its own scratch folder with the scripted provider logging each request.
std::vector<std::string> turn_requests(const fs::path& dir, int steps, const std::string& durability, Echo echo) {
    write_cassette(dir, steps);
    const fs::path log = dir / "requests.jsonl";
    {
        auto app = start_host(dir, steps, durability, echo, log);
        (void)app->runner().run(kTurn, {});
    }
    std::vector<std::string> requests;
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) requests.push_back(line);
    fs::remove_all(dir);
    return requests;
}

// The provider and tool work of the turn, done directly: the floor the runner cannot go under. The
// provider gets the very requests the turn sent (so its parsing, fingerprinting and progress write
// cost what they cost in the turn), each with a model-call id as the host names them.
double plugin_floor(agenthost::app::HostApp& app, const std::vector<std::string>& requests) {
    ah_event_sink sink{sizeof(ah_event_sink), nullptr, [](void*, int32_t, ah_str) -> ah_status { return AH_OK; }};
    const agenthost::tools::Tool echo_tool = app.catalogue().find("echo").value();
    auto start = Clock::now();
    for (size_t i = 0; i < requests.size(); ++i) {
        agenthost::plugins::CallInput chat;
        chat.call_id = "floor-1-llm-" + std::to_string(i);
        chat.conversation_id = "floor";
        chat.arguments_json = requests[i];
        (void)app.registry().chat("scripted", chat, sink);
        if (i + 1 == requests.size()) break;  // the last reply answers: no call follows it
        agenthost::tools::Invocation echo;
        echo.call_id = "c" + std::to_string(i);
        echo.arguments = json{{"text", "step " + std::to_string(i)}};
        echo.conversation_id = "floor";
        (void)app.invoker().call(echo_tool, echo);
    }
    return seconds_since(start);
}

struct Figures {
    int iterations;
    double wall_s, floor_s;
    double bytes;
    double syncs;    // commits that synced the disk, during the turn
    double commits;  // every commit of the turn, synced or not
    double host_us() const { return 1e6 * (wall_s - floor_s) / iterations; }
};

using Stats = agenthost::app::Storage::WriteStats;

Figures measure(const fs::path& dir, int steps, const std::string& durability, Echo echo = Echo::repeatable) {
    const std::vector<std::string> requests = turn_requests(dir, steps, durability, echo);
    write_cassette(dir, steps);
    auto app = start_host(dir, steps, durability, echo);
    auto db_before = fs::file_size(dir / "agenthost.db");
    auto synced = [&] { return static_cast<double>(app->storage().write_stats().value_or(Stats{}).synced_commits); };
    auto committed = [&] { return static_cast<double>(app->storage().write_stats().value_or(Stats{}).commits); };
    const double synced_before = synced();
    const double commits_before = committed();
    auto start = Clock::now();
    auto outcome = app->runner().run(kTurn, {});
    double wall = seconds_since(start);
    const double syncs = synced() - synced_before;
    const double commits = committed() - commits_before;
    if (!outcome.ok() || outcome.tool_calls != steps || requests.size() != static_cast<size_t>(outcome.iterations)) {
        std::fprintf(stderr, "agenthost_bench: the turn failed (%s, %zu requests logged): %s\n",
                     std::string(outcome.stop_reason_name()).c_str(), requests.size(), outcome.error.c_str());
        std::exit(1);
    }
    double floor = plugin_floor(*app, requests);
    app.reset();  // closing the database checkpoints its write-ahead log into the file
    double bytes = static_cast<double>(fs::file_size(dir / "agenthost.db") - db_before);
    fs::remove_all(dir);
    return {outcome.iterations, wall, floor, bytes, syncs, commits};
}

// Microseconds per step of bare SQLite: 3 inserts holding `bytes` together, in WAL with the host's
// synchronous setting for `durability`, committed once per step (BEGIN, 3 inserts, COMMIT: the floor
// a durable step cannot go under) or twice (the first insert committed alone, as a tool call's
// intent must be durable before the call runs and its result before it is shown).
double raw_sqlite_us(const fs::path& dir, int steps, size_t bytes, const std::string& durability, int commits_per_step) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    sqlite3* db = nullptr;
    if (sqlite3_open((dir / "raw.db").c_str(), &db) != SQLITE_OK) return -1;
    std::string sync = durability == "full" ? "FULL" : "NORMAL";
    sqlite3_exec(db, ("PRAGMA journal_mode=WAL; PRAGMA synchronous=" + sync + ";").c_str(), nullptr, nullptr, nullptr);
    sqlite3_exec(db, "CREATE TABLE rows (id INTEGER PRIMARY KEY, step INTEGER, body BLOB)", nullptr, nullptr, nullptr);
    sqlite3_stmt* insert = nullptr;
    sqlite3_prepare_v2(db, "INSERT INTO rows (step, body) VALUES (?1, ?2)", -1, &insert, nullptr);
    const std::string body(std::max<size_t>(1, bytes / 3), 'x');
    auto start = Clock::now();
    for (int step = 0; step < steps; ++step) {
        sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
        for (int row = 0; row < 3; ++row) {
            if (row == 1 && commits_per_step == 2) sqlite3_exec(db, "COMMIT; BEGIN", nullptr, nullptr, nullptr);
            sqlite3_bind_int(insert, 1, step);
            sqlite3_bind_blob(insert, 2, body.data(), static_cast<int>(body.size()), SQLITE_STATIC);
            sqlite3_step(insert);
            sqlite3_reset(insert);
        }
        sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    }
    double us = 1e6 * seconds_since(start) / steps;
    sqlite3_finalize(insert);
    sqlite3_close(db);
    fs::remove_all(dir);
    return us;
}

struct ProcessRun {
    double ms = 0;
    double peak_rss_mib = 0;
    double cpu_ms = 0;  // user + system
};

// Median wall milliseconds (and the peak RSS of that median run) of `argv` run to its exit,
// `times` times, output discarded.
ProcessRun median_process(std::vector<std::string> args, int times) {
    std::vector<ProcessRun> runs;
    for (int i = 0; i < times; ++i) {
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t quiet;
        posix_spawn_file_actions_init(&quiet);
        posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
        auto start = Clock::now();
        pid_t pid = -1;
        rusage usage{};
        if (posix_spawn(&pid, argv[0], &quiet, nullptr, argv.data(), environ) == 0) ::wait4(pid, nullptr, 0, &usage);
        auto ms = [](const timeval& t) {
            return 1000.0 * static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1000.0;
        };
        runs.push_back({1000 * seconds_since(start), usage.ru_maxrss / 1024.0, ms(usage.ru_utime) + ms(usage.ru_stime)});
        posix_spawn_file_actions_destroy(&quiet);
    }
    std::sort(runs.begin(), runs.end(), [](const ProcessRun& a, const ProcessRun& b) { return a.ms < b.ms; });
    return runs[runs.size() / 2];
}
double median_process_ms(std::vector<std::string> args, int times) { return median_process(std::move(args), times).ms; }

// An `agenthost run` of a scripted turn with `calls` echo calls, in `dir`; returns its config file.
// `every_plugin`: every plugin of the build and its examples enabled (a default install), not only
// the scripted provider and the C example.
std::string cli_turn(const fs::path& dir, int calls, bool every_plugin = false) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    json replies = json::array();
    for (int i = 0; i < calls; ++i)
        replies.push_back({{"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", "step " + std::to_string(i)}}}}}}});
    replies.push_back({{"text", "done"}});
    std::ofstream(dir / "cassette.json") << json{{"replies", replies}}.dump();
    const char* enabled = every_plugin ? "[]" : R"(["scripted", "example_c"])";
    std::ofstream(dir / "agenthost.toml") << "data_dir = \"" << (dir / "data").string() << "\"\ndefault_plugin_dirs = false\n"
                                          << "plugin_dirs = [\"" << AGENTHOST_BUILD_PLUGIN_DIR << "\", \""
                                          << AGENTHOST_EXAMPLE_PLUGIN_DIR << "\"]\n"
                                          << "enabled_plugins = " << enabled << "\n[provider]\nuse = \"scripted\"\n"
                                          << "[plugins.scripted]\ncassette = \"" << (dir / "cassette.json").string() << "\"\n"
                                          << "[limits]\nexecute_iterations = " << calls + 1 << "\n";
    return (dir / "agenthost.toml").string();
}

// An `agenthost run` whose one tool call (the careless fixture's careless_big, written in 1 MiB
// pieces) returns `mib` MiB; returns its config file.
std::string big_result_turn(const fs::path& dir, int mib) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    json replies =
        json::array({{{"tool_calls", {{{"name", "careless_big"}, {"arguments", {{"mib", mib}}}}}}}, {{"text", "done"}}});
    std::ofstream(dir / "cassette.json") << json{{"replies", replies}}.dump();
    std::ofstream(dir / "agenthost.toml")
        << "data_dir = \"" << (dir / "data").string() << "\"\ndefault_plugin_dirs = false\n"
        << "plugin_dirs = [\"" << AGENTHOST_BUILD_PLUGIN_DIR << "\", \"" << AGENTHOST_CARELESS_PLUGIN_DIR
        << "\"]\nenabled_plugins = [\"scripted\", \"careless\"]\n[provider]\nuse = \"scripted\"\n"
        << "[plugins.scripted]\ncassette = \"" << (dir / "cassette.json").string() << "\"\n";
    return (dir / "agenthost.toml").string();
}

// A one-turn `agenthost run` (scripted reply, one echo call, answer), start to exit, and the peak
// memory of a 500-step one and of one whose tool returns 60 MiB, beside the same binary doing
// nothing but start and exit (`--version`: loading and linking, the floor).
void cli_runs(const fs::path& dir) {
    std::string config = cli_turn(dir, 1);
    (void)median_process_ms({AGENTHOST_CLI, "--config", config, "run", "hi"}, 1);  // creates the database
    double run = median_process_ms({AGENTHOST_CLI, "--config", config, "run", "hi"}, 21);
    ProcessRun floor = median_process({AGENTHOST_CLI, "--version"}, 21);
    std::printf(
        "one-turn `agenthost run`, start to exit (median of 21): %.1f ms (issue #21 goal: ≤ 30 ms)\n"
        "limit: `agenthost --version`, the same binary starting and exiting: %.1f ms -> the run costs %.1f ms more\n",
        run, floor.ms, run - floor.ms);
    // The same turn with every bundled plugin (their manifests, the tool plugins created at start);
    // the first run creates the database and keeps the checked manifests (plugins/manifest_cache).
    config = cli_turn(dir, 1, true);
    (void)median_process_ms({AGENTHOST_CLI, "--config", config, "run", "hi"}, 1);
    double every = median_process_ms({AGENTHOST_CLI, "--config", config, "run", "hi"}, 21);
    std::printf(
        "the same with every bundled plugin enabled (median of 21): %.1f ms (issue #49 goal: ≤ 20 ms)\n"
        "limit: the smallest setup above, %.1f ms; `--version`, %.1f ms\n",
        every, run, floor.ms);
    constexpr int kLongSteps = 500;
    config = cli_turn(dir, kLongSteps);
    ProcessRun long_run = median_process({AGENTHOST_CLI, "--config", config, "run", "hi"}, 3);
    // The limit of a durable step: one synced commit, measured beside it (the host's step writes
    // about 600 bytes; the same bytes here).
    const double one_commit_us = raw_sqlite_us(dir / "raw", kLongSteps, 600, "full", 1);
    std::printf(
        "%d-step `agenthost run`, whole process (median of 3): %.0f ms, %.3f ms per step wall, %.3f ms CPU per step "
        "(issue #49 goal: ≤ 0.25 ms per step)\n"
        "limit: raw SQLite, one synced commit per step: %.3f ms per step -> the whole step costs %.1f× it\n",
        kLongSteps, long_run.ms, (long_run.ms - floor.ms) / kLongSteps, (long_run.cpu_ms - floor.cpu_ms) / kLongSteps,
        one_commit_us / 1000, 1000 * (long_run.ms - floor.ms) / kLongSteps / one_commit_us);
    std::printf(
        "peak RSS of a 500-step `agenthost run` (median of 3): %.1f MiB (issue #21 goal: ≤ 16 MiB)\n"
        "limit: `agenthost --version`'s peak RSS: %.1f MiB\n",
        long_run.peak_rss_mib, floor.peak_rss_mib);
    constexpr int kBigMib = 60;
    ProcessRun big = median_process({AGENTHOST_CLI, "--config", big_result_turn(dir, kBigMib), "run", "hi"}, 3);
    std::printf(
        "peak RSS of a run whose tool returns %d MiB (median of 3): %.1f MiB = %.1f× the result above `--version`'s\n"
        "limit: the result held once, %d MiB, plus `--version`'s %.1f MiB\n",
        kBigMib, big.peak_rss_mib, (big.peak_rss_mib - floor.peak_rss_mib) / kBigMib, kBigMib, floor.peak_rss_mib);
    fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> lengths{100, 500, 1000};
    std::string durability = "full";
    fs::path dir = fs::temp_directory_path() / ("agenthost-bench-" + std::to_string(::getpid()));
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string flag = argv[i];
        if (flag == "--iterations")
            lengths = {std::max(1, std::atoi(argv[i + 1]))};
        else if (flag == "--durability")
            durability = argv[i + 1];
        else if (flag == "--dir")
            dir = argv[i + 1];
    }
    spdlog::set_level(spdlog::level::err);
    // The CLI runs first: a child's peak RSS counts this process's own peak at the time it was
    // started (posix_spawn shares memory until exec), so they start while this one is small.
    cli_runs(dir);

    std::printf("runner benchmark: one scripted turn per length, C echo plugin, every step durable (%s)\n", durability.c_str());
    std::printf("%10s %10s %12s %14s %14s %14s %12s %13s\n", "iterations", "wall s", "iter/s", "µs/iter all", "host µs/iter",
                "DB bytes/iter", "syncs/iter", "commits/iter");
    std::vector<Figures> all;
    for (int steps : lengths) {
        Figures f = measure(dir, steps, durability);
        all.push_back(f);
        std::printf("%10d %10.3f %12.0f %14.1f %14.1f %14.0f %12.2f %13.2f\n", f.iterations, f.wall_s, f.iterations / f.wall_s,
                    1e6 * f.wall_s / f.iterations, f.host_us(), f.bytes / f.iterations, f.syncs / f.iterations,
                    f.commits / f.iterations);
    }
    if (all.size() > 1)
        std::printf("per-iteration cost, longest / shortest turn: %.2f (1.00 = flat; linear growth would be ~%.0f)\n",
                    all.back().host_us() / all.front().host_us(),
                    static_cast<double>(all.back().iterations) / all.front().iterations);
    const Figures& longest = all.back();
    // The same longest turn with echo taken for a tool that changes things: its intent is synced
    // before each call, so each step syncs twice.
    Figures changing = measure(dir, longest.iterations - 1, durability, Echo::changes_things);
    std::printf("%10d %10.3f %12.0f %14.1f %14.1f %14.0f %12.2f %13.2f  (echo taken for a tool that changes things)\n",
                changing.iterations, changing.wall_s, changing.iterations / changing.wall_s,
                1e6 * changing.wall_s / changing.iterations, changing.host_us(), changing.bytes / changing.iterations,
                changing.syncs / changing.iterations, changing.commits / changing.iterations);
    const size_t step_bytes = static_cast<size_t>(longest.bytes / longest.iterations);
    double raw = raw_sqlite_us(dir, longest.iterations, step_bytes, durability, 1);
    double raw_two = raw_sqlite_us(dir, longest.iterations, step_bytes, durability, 2);
    std::printf(
        "limit: raw SQLite, BEGIN + 3 inserts of the same %zu bytes + COMMIT per step (WAL, synchronous=%s): %.1f µs/step\n",
        step_bytes, durability == "full" ? "FULL" : "NORMAL", raw);
    std::printf(
        "a read-only tool's step (its result synced; its intent synced with it): host µs/iter / raw SQLite µs/step: "
        "%.1f× (issue #21 goal: ≤ 2×)\n",
        longest.host_us() / raw);
    std::printf(
        "a changing tool's step commits twice (its intent synced before the call, its result after): raw SQLite doing "
        "the same %.1f µs/step -> host %.1f× (%.1f× of one commit)\n",
        raw_two, changing.host_us() / raw_two, changing.host_us() / raw);
    return 0;
}
