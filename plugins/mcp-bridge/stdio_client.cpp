#include "stdio_client.hpp"

#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <future>

extern char** environ;

namespace bridge {
namespace {

// Variables that let a parent change what a child loads: never passed on.
bool filtered(const std::string& entry) {
    static const char* names[] = {"LD_PRELOAD=", "LD_LIBRARY_PATH=", "LD_AUDIT=", "LD_DEBUG=", "DYLD_", "NODE_OPTIONS="};
    for (const char* n : names)
        if (entry.rfind(n, 0) == 0) return true;
    return false;
}

}  // namespace

StdioClient::~StdioClient() { stop(); }

// Whether `command` names an executable, directly or through PATH (so a typo is reported as such,
// not as a server that "exited").
static bool executable(const std::string& command) {
    if (command.find('/') != std::string::npos) return access(command.c_str(), X_OK) == 0;
    const char* path = getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    size_t start = 0;
    while (start <= dirs.size()) {
        size_t end = dirs.find(':', start);
        std::string dir = dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (!dir.empty() && access((dir + "/" + command).c_str(), X_OK) == 0) return true;
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return false;
}

bool StdioClient::start(const std::string& command, const std::vector<std::string>& args, const json& env, std::string& error) {
    if (!executable(command)) {
        error = "not found or not executable (check the command and PATH)";
        return false;
    }
    // A socket pair rather than pipes: writes to a dead server then fail with EPIPE instead of
    // raising SIGPIPE in the host (MSG_NOSIGNAL).
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        error = std::string("socketpair: ") + std::strerror(errno);
        return false;
    }
    std::vector<std::string> environment;
    for (char** e = environ; *e; ++e)
        if (!filtered(*e)) environment.emplace_back(*e);
    if (env.is_object())
        for (const auto& [key, value] : env.items())
            if (value.is_string() && !filtered(key + "=")) environment.push_back(key + "=" + value.get<std::string>());
    std::vector<std::string> argv_text{command};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv, envp;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : environment) envp.push_back(e.data());
    envp.push_back(nullptr);

    // The server is started by the thread that then reads its answers, and is killed by the kernel
    // when that thread ends (PR_SET_PDEATHSIG follows the thread that forked): with the host killed,
    // crashed or stopped, or this connection closed. So a server busy with a call when the host
    // dies cannot finish it after the host's next start has reported the call's outcome unknown.
    std::promise<std::string> spawned;
    auto spawn_error = spawned.get_future();
    to_child_ = pair[0];
    from_child_ = dup(pair[0]);
    // The promise lives in the thread: start() may return the moment it is set.
    reader_ = std::thread([this, &argv, &envp, spawned = std::move(spawned), child_end = pair[1]]() mutable {
        const pid_t host = getpid();
        pid_t pid = fork();
        const int fork_errno = errno;
        if (pid == 0) {  // the child: stdin and stdout are its end of the pair, stderr is quiet
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != host) _exit(127);  // the host died before the line above
            dup2(child_end, 0);
            dup2(child_end, 1);
            int null = open("/dev/null", O_WRONLY);
            if (null >= 0) dup2(null, 2);
            signal(SIGPIPE, SIG_DFL);
            execvpe(argv[0], argv.data(), envp.data());
            _exit(127);
        }
        close(child_end);
        pid_ = pid;
        running_ = pid > 0;  // before read_loop can see the server end
        spawned.set_value(pid < 0 ? std::string("fork: ") + std::strerror(fork_errno) : std::string());
        if (pid > 0) read_loop();  // argv and envp are not used past set_value: start() returns after it
    });
    error = spawn_error.get();
    if (!error.empty()) {
        reader_.join();
        close(to_child_);
        close(from_child_);
        to_child_ = from_child_ = -1;
        pid_ = -1;
        return false;
    }
    return true;
}

void StdioClient::read_loop() {
    std::string buffer;
    bool skipping = false;  // inside a line longer than kMaxLineBytes: dropped up to its newline
    char chunk[65536];
    while (true) {
        ssize_t n = read(from_child_, chunk, sizeof chunk);
        if (n <= 0) break;
        buffer.append(chunk, static_cast<size_t>(n));
        size_t start = 0, newline;
        while ((newline = buffer.find('\n', start)) != std::string::npos) {
            if (!skipping) take_line(std::string_view(buffer).substr(start, newline - start));
            skipping = false;
            start = newline + 1;
        }
        buffer.erase(0, start);
        if (!skipping && buffer.size() > kMaxLineBytes) {
            skipping = true;
            std::string what = "a line longer than " + std::to_string(kMaxLineBytes >> 20) + " MiB (skipped)";
            remember_unreadable(what);
        }
        if (skipping) buffer.clear();
    }
    running_ = false;
    std::lock_guard lock(mutex_);
    answered_.notify_all();
}

void StdioClient::remember_unreadable(const std::string& what) {
    {
        std::lock_guard lock(mutex_);
        unreadable_lines_.emplace_back(++unreadable_count_, what);
        if (unreadable_lines_.size() > 8) unreadable_lines_.pop_front();
    }
    unreadable(what);
}

// One line from the server: a reply for a waiting request, a notification, a request of its own,
// or something else, which is reported (never silence: a timeout then says what the server wrote).
void StdioClient::take_line(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;
    json message = json::parse(line, nullptr, false);
    if (!message.is_object() || (message.contains("id") && !message.contains("method") && !message["id"].is_number_integer())) {
        std::string what = std::string(message.is_discarded() ? "not JSON" : "not a JSON-RPC message") + ": '" +
                           std::string(line.substr(0, 200)) + (line.size() > 200 ? "…'" : "'");
        remember_unreadable(what);
        return;
    }
    if (!message.contains("id")) {
        notified(message);
        return;
    }
    if (message.contains("method")) {  // a request from the server
        answer_request(message, [this](const json& answer) { send(answer); });
        return;
    }
    if (!message.contains("result") && !message.contains("error")) return;
    int64_t id = message["id"];  // read before the move below (the right side is evaluated first)
    std::lock_guard lock(mutex_);
    replies_[id] = std::move(message);
    answered_.notify_all();
}

bool StdioClient::send(const json& message) {
    std::string line = message.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    std::lock_guard lock(write_mutex_);
    size_t done = 0;
    while (done < line.size()) {
        ssize_t n = ::send(to_child_, line.data() + done, line.size() - done, MSG_NOSIGNAL);
        if (n <= 0) return false;
        done += static_cast<size_t>(n);
    }
    return true;
}

void StdioClient::notify(const std::string& method, const json& params) {
    if (running_) send({{"jsonrpc", "2.0"}, {"method", method}, {"params", params}});
}

Reply StdioClient::request(const std::string& method, const json& params, int timeout_ms,
                           const std::function<bool()>& cancelled) {
    Reply reply;
    if (!running_) {
        reply.error = "the server is not running";
        return reply;
    }
    int64_t id;
    size_t unreadable_before;  // what the server writes from now on that is not JSON-RPC is said on a timeout
    {
        std::lock_guard lock(mutex_);
        id = next_id_++;
        unreadable_before = unreadable_count_;
    }
    if (!send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}})) {
        reply.error = "the server closed its input";
        return reply;
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::unique_lock lock(mutex_);
    while (true) {
        if (auto it = replies_.find(id); it != replies_.end()) {
            json message = std::move(it->second);
            replies_.erase(it);
            if (message.contains("error")) {
                reply.error =
                    "MCP error " + message["error"].value("code", json(0)).dump() + ": " + message["error"].value("message", "");
            } else {
                reply.ok = true;
                reply.result = message["result"];
            }
            return reply;
        }
        if (!running_) {
            reply.error = "the server exited during the call";
            return reply;
        }
        if (cancelled && cancelled()) {
            lock.unlock();
            notify("notifications/cancelled", {{"requestId", id}, {"reason", "cancelled by the agent"}});
            reply.cancelled = true;
            reply.error = "cancelled";
            return reply;
        }
        // A question of the server's being answered stops the clock: the server gets its whole
        // timeout once the answer is back.
        if (answering()) deadline = std::max(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms));
        if (std::chrono::steady_clock::now() >= deadline) {
            reply.timed_out = true;
            reply.error = "no answer within " + std::to_string(timeout_ms) + " ms";
            if (unreadable_count_ > unreadable_before) {
                auto first = std::find_if(unreadable_lines_.begin(), unreadable_lines_.end(),
                                          [&](const auto& line) { return line.first > unreadable_before; });
                reply.error +=
                    "; it wrote " + std::to_string(unreadable_count_ - unreadable_before) + " line(s) that are not JSON-RPC";
                if (first != unreadable_lines_.end()) reply.error += ", the first " + first->second;
            }
            lock.unlock();
            notify("notifications/cancelled", {{"requestId", id}, {"reason", "timed out"}});
            return reply;
        }
        answered_.wait_for(lock, std::chrono::milliseconds(50));
    }
}

void StdioClient::stop() {
    if (pid_ > 0) {
        kill(pid_, SIGTERM);
        for (int i = 0; i < 40 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) usleep(25000);
        if (waitpid(pid_, nullptr, WNOHANG) == 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
        pid_ = -1;
    }
    if (to_child_ >= 0) shutdown(to_child_, SHUT_RDWR);  // wakes the reader
    if (reader_.joinable()) reader_.join();
    join_requests();  // each ends with the call that asked (its caller's answer, or its end)
    if (to_child_ >= 0) close(to_child_);
    if (from_child_ >= 0) close(from_child_);
    to_child_ = from_child_ = -1;
    running_ = false;
}

}  // namespace bridge
