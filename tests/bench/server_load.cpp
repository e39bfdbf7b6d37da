// Load benchmark: N concurrent streaming chats (default 50 and 200) against `agenthost serve` with a
// scripted provider answering each call after 20 ms. Each chat is one agent turn: a tool call, its
// result, the answer. Prints throughput, p50/p99 host-added latency (a chat's time minus the 40 ms the
// two scripted replies take), the server's peak RSS, and checks every run completed with its full
// transcript.
//   agenthost_server_load [--chats N] [--dir SCRATCH_DIR]
#include "unit/free_port.hpp"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

extern char** environ;

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kScriptedSeconds = 0.040;  // two replies of 20 ms each

long peak_rss_kib(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
    return -1;
}

struct Server {
    pid_t pid = -1;
    int port = test::free_port();

    Server(const fs::path& dir) {
        std::ofstream(dir / "cassette.json") << json{
            {"rules", {{{"match", "load"},
                        {"replies", {{{"delay_ms", 20}, {"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", "ping"}}}}}}},
                                     {{"delay_ms", 20}, {"text", "pong"}}}}}}}}.dump();
        std::ofstream(dir / "agenthost.toml")
            << "data_dir = \"" << (dir / "data").string() << "\"\ndefault_plugin_dirs = false\n"
            << "plugin_dirs = [\"" << AGENTHOST_BUILD_PLUGIN_DIR << "\", \"" << AGENTHOST_EXAMPLE_PLUGIN_DIR << "\"]\nenabled_plugins = [\"scripted\", \"example_c\"]\n"
            << "[provider]\nuse = \"scripted\"\nconcurrency = 512\n"
            << "[plugins.scripted]\ncassette = \"" << (dir / "cassette.json").string() << "\"\n"
            << "[server]\nauth = \"none\"\nmax_concurrent_runs = 256\nmax_waiting_runs = 256\n";
        std::string config = (dir / "agenthost.toml").string(), listen = "127.0.0.1:" + std::to_string(port);
        std::vector<std::string> args{AGENTHOST_CLI, "--config", config, "serve", "--listen", listen};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) std::exit(2);
        httplib::Client c("127.0.0.1", port);
        for (int i = 0; i < 400; ++i) {
            if (auto r = c.Get("/health"); r && r->status == 200) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(25));
        }
        std::fprintf(stderr, "agenthost_server_load: the server did not start\n");
        std::exit(2);
    }
    ~Server() {
        ::kill(pid, SIGTERM);
        ::waitpid(pid, nullptr, 0);
    }
};

void run(const fs::path& dir, int chats) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    Server server(dir);
    std::vector<double> seconds(static_cast<size_t>(chats), 0);
    std::atomic<int> failures{0};
    auto started = Clock::now();
    std::vector<std::thread> clients;
    for (int i = 0; i < chats; ++i) {
        clients.emplace_back([&, i] {
            httplib::Client c("127.0.0.1", server.port);
            c.set_read_timeout(120, 0);
            httplib::Request req;
            req.method = "POST";
            req.path = "/v1/chat/completions";
            req.set_header("Content-Type", "application/json");
            req.body = json{{"model", "agenthost"}, {"stream", true}, {"conversation", "load-" + std::to_string(i)},
                            {"messages", {{{"role", "user"}, {"content", "load test"}}}}}
                           .dump();
            std::string streamed;
            req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
                streamed.append(data, len);
                return true;
            };
            auto t0 = Clock::now();
            auto res = c.send(req);
            seconds[static_cast<size_t>(i)] = std::chrono::duration<double>(Clock::now() - t0).count();
            if (!res || res->status != 200 || streamed.find("pong") == std::string::npos ||
                streamed.find("data: [DONE]") == std::string::npos) {
                if (failures++ == 0)
                    std::fprintf(stderr, "first failure: HTTP %d %s\n", res ? res->status : 0,
                                 (res ? res->body + streamed : streamed).substr(0, 600).c_str());
            }
        });
    }
    for (auto& t : clients) t.join();
    double wall = std::chrono::duration<double>(Clock::now() - started).count();

    // Every run completed, with its whole transcript: prompt, tool call, tool result, answer.
    int incomplete = 0;
    httplib::Client c("127.0.0.1", server.port);
    for (int i = 0; i < chats; ++i) {
        auto r = c.Get("/api/conversations/load-" + std::to_string(i));
        json body = r && r->status == 200 ? json::parse(r->body) : json();
        if (!body.is_object() || body["runs"].size() != 1 || body["runs"][0]["status"] != "completed" || body["messages"].size() != 4)
            ++incomplete;
    }
    long rss = peak_rss_kib(server.pid);

    std::vector<double> added;
    for (double s : seconds) added.push_back(std::max(0.0, s - kScriptedSeconds) * 1000);
    std::sort(added.begin(), added.end());
    auto pct = [&](double p) { return added[std::min(added.size() - 1, static_cast<size_t>(p * added.size()))]; };
    std::printf("%6d chats  %7.2f s  %8.1f chats/s  host-added latency p50 %8.1f ms  p99 %8.1f ms  peak RSS %6.1f MiB  "
                "failed %d  incomplete transcripts %d\n",
                chats, wall, chats / wall, pct(0.50), pct(0.99), rss / 1024.0, failures.load(), incomplete);
    fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> sizes{50, 200};
    fs::path dir = fs::temp_directory_path() / ("agenthost-load-" + std::to_string(::getpid()));
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string flag = argv[i];
        if (flag == "--chats") sizes = {std::max(1, std::atoi(argv[i + 1]))};
        else if (flag == "--dir") dir = argv[i + 1];
    }
    std::printf("server load: concurrent streaming /v1/chat/completions, scripted provider 20 ms per reply, one tool call "
                "per chat, every step durable\n");
    for (int n : sizes) run(dir, n);
    return 0;
}
