// Helpers shared by the tests: temporary folders, files, commands, and a host wired for tests.
#pragma once

#include "app/host_app.hpp"
#include "config/config.hpp"
#include "support/free_port.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace test {

namespace fs = std::filesystem;

// A fresh folder under the build tree, removed when the test ends.
struct TempDir {
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    fs::path path;
};

std::string read_file(const fs::path& file);
void write_file(const fs::path& file, const std::string& text);

struct CommandResult {
    int exit_code;
    std::string out;
    std::string err;
};
// Runs a shell command; stdout and stderr are captured separately.
CommandResult run_command(const std::string& command);

// A configuration with data in `data_dir`, scanning the build's plugins and, when asked, the
// fixture plugins; the user's own plugin directories are never scanned.
agenthost::config::Config config(const fs::path& data_dir, bool with_fixtures);

// Starts a host (database + plugins) or fails the test.
std::unique_ptr<agenthost::app::HostApp> start(agenthost::config::Config cfg);

// Runs a tool through the registry and returns its result object.
nlohmann::json call_tool(agenthost::app::HostApp& app, const std::string& tool, const nlohmann::json& args,
                         const std::string& conversation = "c1", const ah_cancel* cancel = nullptr);

// Stops a child: SIGTERM, then SIGKILL if it has not exited within `grace` (a child that ignores
// SIGTERM must fail its test, not hang the suite). Returns its exit status, or -1 when a signal
// ended it (-2 when SIGTERM was not enough). Sets `pid` to -1.
int terminate(pid_t& pid, std::chrono::seconds grace = std::chrono::seconds(60));

// A child process (a peer server) that is stopped with SIGTERM when the test ends. `env` entries
// are added to this process's environment; `args[0]` is looked up in PATH.
struct Process {
    Process(std::vector<std::string> args, const std::vector<std::pair<std::string, std::string>>& env = {});
    ~Process();
    Process(const Process&) = delete;
    Process& operator=(const Process&) = delete;
    // True once something accepts TCP connections on 127.0.0.1:port (10 s at most).
    bool wait_for_port(int port) const;
    int pid = -1;
};

// Every process below `pid` (its children, theirs, …), read from /proc.
std::vector<int> descendants(int pid);
// A process's command name as the kernel keeps it (at most 15 characters), "" once it is gone.
std::string process_name(int pid);
// True once `pid` runs no more: gone, or dead and not yet reaped (a zombie).
bool process_gone(int pid);

// Whether this kernel can sandbox plugins (Landlock ABI 4 and seccomp); when not, says so as a
// test warning, so a skipped sandbox test is seen.
bool kernel_can_sandbox();

const char* source_dir();
const char* binary_dir();
const char* cli();

}  // namespace test
