// Memory benchmark: waves of concurrent chats with large messages against `agenthost serve` (a
// scripted model answering each after 300 ms), and header floods. Prints, per scenario, the payload
// in flight, the server's peak RSS and its idle RSS after each wave, beside its idle RSS before the
// first wave (after one small warm-up chat) — the limits #42 sets: peak under 3x the payload in
// flight plus that baseline, idle back within 10 % of it. Idle is read one second after a wave and
// again --settle seconds after it (the baseline too).
//   agenthost_memory_bench [--chats N] [--mib M] [--waves W] [--settle S] [--dir SCRATCH_DIR]
#include "support/free_port.hpp"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// In MiB to a tenth: the idle limit is 10 % of a baseline of about 15 MiB.
double status_mib(pid_t pid, const char* field) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::string(field).size()) / 1024.0;
    return -1;
}

// Resets the peak (VmHWM) so each wave's is its own.
void reset_peak(pid_t pid) {
    std::ofstream clear("/proc/" + std::to_string(pid) + "/clear_refs");
    clear << "5";
}

int chat(int port, const std::string& conversation, const std::string& message) {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(300, 0);
    json body{{"model", "agenthost"}, {"conversation", conversation}, {"messages", {{{"role", "user"}, {"content", message}}}}};
    auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
    return r ? r->status : -1;
}

// A raw request with `fields` header lines; true when it was answered 431.
bool flood(int port, size_t fields) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return ::close(fd), false;
    std::string head = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (size_t i = 0; i < fields; ++i) head += "X-F" + std::to_string(i) + ": 1\r\n";
    head += "\r\n";
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    (void)::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    char reply[64] = {};
    ssize_t n = ::recv(fd, reply, sizeof reply - 1, 0);
    ::close(fd);
    return n > 12 && std::string(reply).find(" 431 ") != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
    int chats = 24, waves = 3, settle = 7;
    double mib = 3;
    fs::path dir = fs::temp_directory_path() / ("agenthost-memory-bench-" + std::to_string(::getpid()));
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string flag = argv[i];
        if (flag == "--chats") chats = std::atoi(argv[i + 1]);
        if (flag == "--mib") mib = std::atof(argv[i + 1]);
        if (flag == "--waves") waves = std::atoi(argv[i + 1]);
        if (flag == "--settle") settle = std::atoi(argv[i + 1]);
        if (flag == "--dir") dir = argv[i + 1];
    }
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "cassette.json") << R"({"rules": [], "fallback": {"delay_ms": 300, "text": "ok"}})";
    std::ofstream(dir / "agenthost.toml") << "data_dir = \"" << (dir / "data").string()
                                          << "\"\ndefault_plugin_dirs = false\nenabled_plugins = [\"scripted\"]\n"
                                             "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR
                                             "\"]\n[provider]\nuse = \"scripted\"\n"
                                             "[plugins.scripted]\ncassette = \""
                                          << (dir / "cassette.json").string()
                                          << "\"\n[server]\nauth = \"none\"\nmax_body_bytes = 67108864\nmax_concurrent_runs = "
                                          << chats << "\n";
    const int port = test::free_port();
    std::string config = (dir / "agenthost.toml").string(), listen = "127.0.0.1:" + std::to_string(port);
    std::vector<std::string> args{AGENTHOST_CLI, "--config", config, "serve", "--listen", listen};
    std::vector<char*> argv_c;
    for (auto& a : args) argv_c.push_back(a.data());
    argv_c.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 2, (dir / "serve.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    if (posix_spawn(&pid, argv_c[0], &files, nullptr, argv_c.data(), environ) != 0) return std::perror("spawn"), 2;
    httplib::Client probe("127.0.0.1", port);
    bool up = false;
    for (int i = 0; i < 200 && !up; ++i) {
        auto r = probe.Get("/health");
        up = r && r->status == 200;
        if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    if (!up) return std::fprintf(stderr, "serve did not start (see %s)\n", (dir / "serve.log").c_str()), 2;

    chat(port, "warm-up", "hello");  // plugins, SQLite caches, the first threads: the warm baseline
    std::this_thread::sleep_for(std::chrono::seconds(settle));
    const double baseline = status_mib(pid, "VmRSS:");
    const double in_flight = chats * mib;
    const std::string message(static_cast<size_t>(mib * (1 << 20)), 'x');
    std::printf("memory: %d concurrent chats with %.1f MiB messages (%.0f MiB in flight); idle baseline %.1f MiB\n", chats, mib,
                in_flight, baseline);
    std::printf("  limits: peak < 3 x in flight + baseline = %.0f MiB; idle within 10 %% of baseline = %.1f MiB\n",
                3 * in_flight + baseline, baseline * 1.1);
    int failed = 0;
    for (int w = 0; w < waves; ++w) {
        reset_peak(pid);
        std::atomic<int> bad{0};
        std::vector<std::thread> threads;
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < chats; ++i)
            threads.emplace_back([&, i] {
                if (chat(port, "w" + std::to_string(w) + "-" + std::to_string(i), message) != 200) ++bad;
            });
        for (auto& t : threads) t.join();
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        double peak = status_mib(pid, "VmHWM:");
        std::this_thread::sleep_for(std::chrono::seconds(1));
        double soon = status_mib(pid, "VmRSS:");
        std::this_thread::sleep_for(std::chrono::seconds(std::max(0, settle - 1)));
        double idle = status_mib(pid, "VmRSS:");
        failed += bad;
        std::printf(
            "  wave %d: %.1f s, %d failed; peak %.0f MiB (%.1f x in flight); idle %.1f MiB after 1 s, %.1f MiB after %d s "
            "(baseline %.1f)\n",
            w + 1, seconds, bad.load(), peak, peak / in_flight, soon, idle, settle, baseline);
    }
    reset_peak(pid);
    double before = status_mib(pid, "VmRSS:");
    std::atomic<int> refused{0};
    std::vector<std::thread> floods;
    for (int i = 0; i < 100; ++i)
        floods.emplace_back([&] {
            if (flood(port, 100000)) ++refused;
        });
    for (auto& t : floods) t.join();
    std::printf(
        "  header floods: 100 parallel requests of 100,000 headers: %d answered 431; peak %.1f MiB (idle before %.1f; "
        "limit: growth under 50 MiB)\n",
        refused.load(), status_mib(pid, "VmHWM:"), before);
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
    fs::remove_all(dir);
    return failed == 0 ? 0 : 1;
}
