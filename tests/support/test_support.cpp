#include "support/test_support.hpp"
#include "test_paths.h"

#include "isolation/sandbox.hpp"

#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <spawn.h>
#include <csignal>
#include <thread>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

extern char** environ;

namespace test {

const char* source_dir() { return AGENTHOST_SOURCE_DIR; }
const char* binary_dir() { return AGENTHOST_BINARY_DIR; }
const char* cli() { return AGENTHOST_CLI; }

TempDir::TempDir() {
    static std::atomic<int> counter{0};
    path = fs::path(binary_dir()) / "test-tmp" / (std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
}

TempDir::~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
}

std::string read_file(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

void write_file(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << text;
}

CommandResult run_command(const std::string& command) {
    TempDir dir;
    fs::path err = dir.path / "stderr";
    std::string full = command + " 2>" + err.string();
    FILE* pipe = ::popen(full.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string out;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
    int status = ::pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, read_file(err)};
}

Process::Process(std::vector<std::string> args, const std::vector<std::pair<std::string, std::string>>& env) {
    std::vector<std::string> environment;
    for (char** e = environ; *e; ++e) environment.emplace_back(*e);
    for (const auto& [name, value] : env) environment.push_back(name + "=" + value);
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : environment) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t child = -1;
    if (posix_spawnp(&child, argv[0], nullptr, nullptr, argv.data(), envp.data()) == 0) pid = child;
}

int terminate(pid_t& pid, std::chrono::seconds grace) {
    if (pid <= 0) return 0;
    ::kill(pid, SIGTERM);
    int status = 0;
    const auto give_up = std::chrono::steady_clock::now() + grace;
    int exited = 0;
    while ((exited = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const bool ignored = exited == 0;
    if (ignored) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
    }
    pid = -1;
    if (ignored) return -2;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Process::~Process() { terminate(pid); }

bool Process::wait_for_port(int port) const {
    for (int i = 0; i < 400 && pid > 0; ++i) {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(static_cast<uint16_t>(port));
        bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
        ::close(fd);
        if (up) return true;
        if (::waitpid(pid, nullptr, WNOHANG) == pid) return false;  // it exited
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return false;
}

namespace {
// /proc/PID/stat: "pid (comm) state ppid …"; comm may hold spaces and parentheses.
bool read_stat(int pid, std::string& comm, char& state, int& ppid) {
    std::string stat = read_file(fs::path("/proc") / std::to_string(pid) / "stat");
    size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close + 4 > stat.size()) return false;
    comm = stat.substr(open + 1, close - open - 1);
    std::istringstream rest(stat.substr(close + 2));
    return static_cast<bool>(rest >> state >> ppid);
}
}  // namespace

std::vector<int> descendants(int pid) {
    std::vector<int> found{pid};
    for (size_t at = 0; at < found.size(); ++at) {
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator("/proc", ec)) {
            std::string name = entry.path().filename();
            if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
            std::string comm;
            char state = 0;
            int ppid = 0;
            if (read_stat(std::stoi(name), comm, state, ppid) && ppid == found[at]) found.push_back(std::stoi(name));
        }
    }
    found.erase(found.begin());
    return found;
}

std::string process_name(int pid) {
    std::string comm;
    char state = 0;
    int ppid = 0;
    return read_stat(pid, comm, state, ppid) ? comm : "";
}

bool process_gone(int pid) {
    std::string comm;
    char state = 0;
    int ppid = 0;
    return !read_stat(pid, comm, state, ppid) || state == 'Z' || state == 'X';
}

agenthost::config::Config config(const fs::path& data_dir, bool with_fixtures) {
    agenthost::config::Config cfg = agenthost::config::defaults();
    cfg.data_dir = data_dir;
    cfg.plugin_dirs = {AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS, AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS};
    if (with_fixtures) cfg.plugin_dirs.push_back(AGENTHOST_FIXTURE_PLUGIN_DIR);
    cfg.use_default_plugin_dirs = false;
    return cfg;
}

std::unique_ptr<agenthost::app::HostApp> start(agenthost::config::Config cfg) {
    auto app = agenthost::app::HostApp::start(std::move(cfg));
    if (!app) FAIL("host did not start: " << app.error().message);
    return std::move(*app);
}

nlohmann::json call_tool(agenthost::app::HostApp& app, const std::string& tool, const nlohmann::json& args,
                         const std::string& conversation, const ah_cancel* cancel) {
    // The tools layer's own path, without the policy or the schema check: what the plugin answers.
    auto found = app.catalogue().find(tool, agenthost::tools::Scope::plugins_only);
    if (!found) return agenthost::tools::error_result("unknown_tool", "there is no tool named '" + tool + "'");
    agenthost::tools::Invocation in;
    in.call_id = "test-call";
    in.arguments = args;
    in.conversation_id = conversation;
    in.cancel = cancel;
    return app.invoker().call(*found, in);
}

bool kernel_can_sandbox() {
    auto support = agenthost::isolation::kernel_support();
    if (support.landlock_abi >= 4 && support.seccomp) return true;
    WARN("this kernel cannot sandbox plugins (" << agenthost::isolation::describe(support) << "): sandbox tests skipped");
    return false;
}

}  // namespace test
