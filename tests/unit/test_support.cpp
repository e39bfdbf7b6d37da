#include "unit/test_support.hpp"

#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace test {

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

int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

agenthost::config::Config config(const fs::path& data_dir, bool with_fixtures) {
    agenthost::config::Config cfg = agenthost::config::defaults();
    cfg.data_dir = data_dir;
    cfg.plugin_dirs = {AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS};
    if (with_fixtures) cfg.plugin_dirs.push_back(AGENTHOST_FIXTURE_PLUGIN_DIR);
    cfg.use_default_plugin_dirs = false;
    return cfg;
}

std::unique_ptr<agenthost::cli::HostApp> start(agenthost::config::Config cfg) {
    auto app = agenthost::cli::HostApp::start(std::move(cfg));
    if (!app) FAIL("host did not start: " << app.error().message);
    return std::move(*app);
}

nlohmann::json call_tool(agenthost::cli::HostApp& app, const std::string& tool, const nlohmann::json& args,
                         const std::string& conversation, const ah_cancel* cancel) {
    agenthost::plugins::CallInput in;
    in.call_id = "test-call";
    in.tool_name = tool;
    in.arguments_json = args.dump();
    in.conversation_id = conversation;
    in.cancel = cancel;
    return nlohmann::json::parse(app.registry().call_tool(in));
}

}  // namespace test
