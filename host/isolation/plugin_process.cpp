#include "isolation/plugin_process.hpp"

#include "plugins/abi_text.hpp"

#include "isolation/frames.hpp"
#include "isolation/protocol.hpp"
#include "common/base64.hpp"
#include "common/bounded_json.hpp"
#include "common/install_layout.hpp"
#include "plugins/host_services.hpp"
#include "plugins/manifest.hpp"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <thread>

extern char** environ;

namespace agenthost::isolation {

using plugins::view;

namespace {

// Host services served at once for one plugin process, each on its own thread; more wait in line.
constexpr int kMaxServiceThreads = 32;

// What a sandboxed plugin writes to stderr, line by line into the host's log (escaped), until the
// plugin and every program it started have closed it.
void log_lines(int fd, const std::string& plugin) {
    std::string line;
    char buffer[4096];
    ssize_t n = 0;
    plugins::LogBudget budget;  // a plugin printing in a loop is kept to the rate of its log lines
    auto flush = [&] {
        if (!line.empty() && plugins::admit_log_line(budget, plugin))
            spdlog::warn("plugin stderr: plugin={} {}", plugin, plugins::printable(line));
        line.clear();
    };
    while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
        for (ssize_t i = 0; i < n; ++i) {
            if (buffer[i] == '\n' || line.size() >= 4096) flush();
            if (buffer[i] != '\n') line += buffer[i];
        }
    flush();
    plugins::say_dropped_log_lines(budget, plugin);
    ::close(fd);
}

std::string describe_exit(int status) {
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        return "crashed with signal " + std::to_string(sig) + " (" + std::string(strsignal(sig)) + ")";
    }
    if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
    return "stopped";
}

// What one turn of reading gave: a frame, nothing within the time, or the end of the stream (end
// of file, a broken socket or a malformed frame).
struct ReadTurn {
    std::optional<json> frame;
    bool ended = false;
};

// Reads the next frame within `timeout` (no limit when negative), by the thread whose turn it is.
// It waits with poll() and reads only what is there, so a peer that never finishes a frame holds
// the reader no longer than the timeout.
ReadTurn read_turn(Channel& channel, std::chrono::milliseconds timeout) {
    const auto until = Clock::now() + timeout;
    for (;;) {
        if (channel.frames.has_frame()) {
            ReadTurn turn;
            turn.frame = channel.frames.next();
            turn.ended = !turn.frame;
            return turn;
        }
        if (timeout.count() >= 0) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
            pollfd wanted{channel.fd, POLLIN, 0};
            int ready = ::poll(&wanted, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
            if (ready == 0 || (ready < 0 && errno == EINTR)) return {};
            if (ready < 0) return {std::nullopt, true};
        }
        if (!channel.frames.read_some()) return {std::nullopt, true};
    }
}

}  // namespace

ah_status PluginProcess::start(std::string& error) {
    std::unique_lock lock(mutex_);
    return spawn(lock, error);
}

bool PluginProcess::take_serial_turn(std::unique_lock<std::mutex>& lock, const ah_cancel* cancel, SerialTurn& turn) {
    while (serial_busy_) {
        if (cancel && api_->is_cancelled(host_, cancel)) return false;
        changed_.wait_for(lock, std::chrono::milliseconds(50));
    }
    serial_busy_ = turn.held = true;
    return true;
}

std::string PluginProcess::death_words(uint64_t generation) const {
    std::string words = death_;
    // Calls that overlap share the process: any one of them may have ended it for all.
    // (in_flight_at_death_ counts the last death: this call's, unless a newer child died too)
    const bool last_death_is_ours = generation == generation_ || generation + 1 == generation_;
    if (last_death_is_ours && in_flight_at_death_ > 1)
        words += " (" + std::to_string(in_flight_at_death_ - 1) +
                 " other call(s) of this plugin were running in the same process; any of them may have caused it)";
    return words;
}

void PluginProcess::stop_ignoring_cancel(uint64_t generation) {
    if (generation != generation_ || !alive_) return;
    // Not counted as a failure: the next call starts a new process.
    spdlog::warn(
        "plugin process stopped: plugin={} cause=ignored the cancellation of a call for 2 s (not thread-safe: later calls "
        "would wait behind it)",
        host_->plugin);
    ::kill(child_.pid, SIGKILL);
    alive_ = false;
    death_ = "was stopped: it ignored the cancellation of an earlier call";
    changed_.notify_all();
}

void PluginProcess::stop_overdue(uint64_t generation, const std::string& why) {
    if (generation != generation_ || !alive_) return;
    ::kill(child_.pid, SIGKILL);
    alive_ = false;
    note_failure(why);  // counts as a failure now, not when the reader sees it die
    changed_.notify_all();
}

PluginProcess::Outcome PluginProcess::request(json message, const ah_cancel* cancel,
                                              const std::function<ah_status(int32_t, std::string_view)>& on_event,
                                              bool bootstrap) {
    Outcome out;
    std::unique_lock lock(mutex_);
    // A plugin that is not thread-safe runs one call at a time. The next call waits here, not
    // in the child: its deadline starts when it is sent, and a call stuck in the child is not
    // blamed on the ones behind it.
    SerialTurn turn(*this);
    if (!bootstrap && serial_ && !take_serial_turn(lock, cancel, turn)) {
        out.status = AH_ERR_CANCELLED;
        return out;
    }
    if (!bootstrap && !ensure_running(lock, out.failure)) {
        out.status = AH_ERR_FAILED;
        out.final = stopped_ || disabled_;
        return out;
    }
    const int64_t id = next_id_++;
    message["id"] = id;
    pending_[id].cancel = cancel;
    const uint64_t generation = generation_;
    std::shared_ptr<Channel> channel = child_.channel;
    lock.unlock();
    channel->writer.write(message);
    lock.lock();
    await_reply(lock, id, generation, channel, cancel, on_event, bootstrap, call_timeout_ms(message), out);
    last_call_ = Clock::now();
    pending_.erase(id);
    // A failure that used up the crash budget is final: it says so, and the plugin is disabled.
    if (!out.failure.empty()) {
        out.final = stopped_ || disabled_;
        if (disabled_) out.failure += disabled_words();  // a refusal by ensure_running() says so itself and returned above
    }
    return out;
}

int PluginProcess::call_timeout_ms(const json& message) const {
    return json_io::get_string(message, "op") == op_name(Op::chat) ? chat_timeout_ms_ : settings_.call_timeout_ms;
}

int PluginProcess::model_call_timeout_ms() const {
    constexpr int64_t kMargin = 30000;
    const json config = json::parse(host_->config_json, nullptr, false);
    if (!config.is_object()) return settings_.call_timeout_ms;
    const int64_t model = json_io::get_int(config, "timeout_ms", 0) + json_io::get_int(config, "connect_timeout_ms", 0);
    if (model <= 0) return settings_.call_timeout_ms;
    return static_cast<int>(std::clamp<int64_t>(model + kMargin, settings_.call_timeout_ms, 24LL * 3600 * 1000));
}

void PluginProcess::await_reply(std::unique_lock<std::mutex>& lock, int64_t id, uint64_t generation,
                                const std::shared_ptr<Channel>& channel, const ah_cancel* cancel,
                                const std::function<ah_status(int32_t, std::string_view)>& on_event, bool bootstrap,
                                int timeout_ms, Outcome& out) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    bool cancel_sent = false;
    Clock::time_point cancel_deadline{};
    // Written without the lock, like the call itself: a child that stops reading fills the
    // socket, and the write would hold every other caller of this plugin behind it.
    auto send_cancel = [&] {
        cancel_sent = true;
        cancel_deadline = Clock::now() + std::chrono::seconds(2);
        lock.unlock();
        channel->writer.write({{"op", op_name(Op::cancel)}, {"call", id}});
        lock.lock();
    };
    for (;;) {
        Pending& p = pending_[id];
        while (!p.events.empty()) {
            json e = std::move(p.events.front());
            p.events.pop_front();
            lock.unlock();
            ah_status s =
                on_event ? on_event(static_cast<int32_t>(json_io::get_int(e, "type", 0)), get_plugin_text(e, "payload")) : AH_OK;
            lock.lock();
            if (s != AH_OK && !cancel_sent) send_cancel();  // the host stopped listening: stop the call
        }
        if (Pending& done = pending_[id]; done.reply) {  // after its events: they come first on the wire
            out.reply = std::move(*done.reply);
            out.status = static_cast<ah_status>(json_io::get_int(out.reply, "status", AH_ERR_INTERNAL));
            break;
        }
        if (generation != generation_ || !alive_) {  // the child died under this call
            out.status = AH_ERR_FAILED;
            out.failure = death_words(generation);
            break;
        }
        if (!cancel_sent && cancel && api_->is_cancelled(host_, cancel)) send_cancel();
        if (cancel_sent && Clock::now() > cancel_deadline) {  // the plugin ignores cancellation
            out.status = AH_ERR_CANCELLED;
            // A thread-safe plugin's other calls go on beside it: it is left running. One that
            // is not would hold every later call behind this one.
            if (serial_) stop_ignoring_cancel(generation);
            break;
        }
        if (Clock::now() > deadline) {
            out.status = AH_ERR_TIMEOUT;
            out.failure = "did not answer within " + std::to_string(timeout_ms) + " ms; its process was stopped";
            stop_overdue(generation, out.failure);
            break;
        }
        // The bootstrap's create does not read: what the plugin logs while it is created arrives
        // on the reader thread, as it always has, not as the creating thread's warnings.
        wait_or_read(lock, channel, generation, std::min<Clock::duration>(std::chrono::milliseconds(50), deadline - Clock::now()),
                     !bootstrap);
    }
}

void PluginProcess::shutdown() {
    std::unique_lock lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
    if (alive_) {
        const int64_t id = next_id_++;
        pending_[id];
        std::shared_ptr<Channel> channel = child_.channel;
        lock.unlock();
        channel->writer.write({{"op", op_name(Op::destroy)}, {"id", id}});
        lock.lock();
        changed_.wait_for(lock, std::chrono::seconds(3), [&] { return pending_[id].reply.has_value() || !alive_; });
        pending_.erase(id);
    }
    reap(lock);
    // Host services still answering the child use this object: wait for them (each is bounded by
    // its own timeout, e.g. an HTTP request's).
    changed_.wait(lock, [&] { return services_running_ == 0; });
}

ProcessHealth PluginProcess::health() {
    std::lock_guard lock(mutex_);
    return {restarts_, recent_failures(), disabled_, disabled_after_, last_failure_};
}

int PluginProcess::recent_failures() const {
    auto now = Clock::now();
    return static_cast<int>(std::count_if(crashes_.begin(), crashes_.end(), [&](Clock::time_point t) {
        return now - t <= std::chrono::seconds(settings_.crash_window_seconds);
    }));
}

ah_status PluginProcess::spawn(std::unique_lock<std::mutex>& lock, std::string& error) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
        error = std::string("socketpair failed: ") + std::strerror(errno);
        return AH_ERR_FAILED;
    }
    std::vector<std::string> args{settings_.runner.string(), "--manifest", settings_.manifest.string()};
    if (settings_.memory_mb > 0) args.insert(args.end(), {"--memory-mb", std::to_string(settings_.memory_mb)});
    if (settings_.cpu_seconds > 0) args.insert(args.end(), {"--cpu-seconds", std::to_string(settings_.cpu_seconds)});
    if (settings_.sandbox) args.insert(args.end(), {"--sandbox", to_json(*settings_.sandbox)});
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // A sandboxed plugin sees only the variables it was granted, not the host's secrets.
    std::vector<std::string> env_vars;
    std::vector<char*> envp;
    if (settings_.sandbox) {
        env_vars = sandbox_environment(*settings_.sandbox, environ);
        for (auto& v : env_vars) envp.push_back(v.data());
        envp.push_back(nullptr);
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    // An isolated plugin's stderr (and its prints, which the runner sends there) is a pipe into
    // the host's log, each line labelled with the plugin and its control bytes escaped, not the
    // operator's terminal (whose modes, size and flow it could otherwise change).
    int err[2] = {-1, -1};
    if (::pipe2(err, O_CLOEXEC) == 0) posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), settings_.sandbox ? envp.data() : environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (err[1] >= 0) {
        ::close(err[1]);
        std::thread([fd = err[0], plugin = host_->plugin] { log_lines(fd, plugin); }).detach();
    }
    if (rc != 0) {
        ::close(fds[0]);
        error = "cannot start " + settings_.runner.string() + ": " + std::strerror(rc);
        return AH_ERR_FAILED;
    }
    child_.pid = pid;
    child_.channel = std::make_shared<Channel>(fds[0]);
    alive_ = true;
    death_.clear();
    ++generation_;
    child_.reader = std::thread([this, channel = child_.channel, generation = generation_] { read_loop(channel, generation); });

    TextWriter config;
    api_->get_config(host_, &config.writer);
    TextWriter data_dir;
    api_->data_dir(host_, &data_dir.writer);
    starting_ = true;  // other callers wait until the plugin exists in the new child
    lock.unlock();
    Outcome created =
        request({{"op", op_name(Op::create)}, {"config", config.text}, {"data_dir", data_dir.text}}, nullptr, {}, true);
    lock.lock();
    starting_ = false;
    changed_.notify_all();
    if (created.status != AH_OK || !created.failure.empty()) {
        std::string said = get_plugin_text(created.reply, "text");
        error = !created.failure.empty() ? "its process " + created.failure : said.empty() ? std::string("create failed") : said;
        alive_ = false;
        reap(lock);
        // The plugin's own status when its create() said no, as in process; a process that failed says FAILED.
        return created.failure.empty() && created.status != AH_OK ? created.status : AH_ERR_FAILED;
    }
    slots_ = created.reply.contains("slots") && created.reply["slots"].is_object() ? created.reply["slots"] : json::object();
    serial_ = created.reply.contains("thread_safe") && created.reply["thread_safe"].is_boolean() &&
              !created.reply["thread_safe"].get<bool>();
    built_abi_.reset();
    if (auto abi = created.reply.find("abi"); abi != created.reply.end() && abi->is_array() && abi->size() == 2 &&
                                              (*abi)[0].is_number_unsigned() && (*abi)[1].is_number_unsigned())
        built_abi_ = BuiltAbi{(*abi)[0].get<uint32_t>(), (*abi)[1].get<uint32_t>()};
    return AH_OK;
}

std::optional<BuiltAbi> PluginProcess::built_abi() {
    std::lock_guard lock(mutex_);
    return built_abi_;
}

bool PluginProcess::ensure_running(std::unique_lock<std::mutex>& lock, std::string& why) {
    if (stopped_) {
        why = "was stopped: the plugin is unloaded";
        return false;
    }
    changed_.wait(lock, [&] { return !starting_; });
    if (alive_) return true;
    reap(lock);
    if (disabled_) {  // for good: its tools are withdrawn, only a restart of agenthost brings it back
        why = "is disabled after " + std::to_string(disabled_after_) + " failures within " +
              std::to_string(settings_.crash_window_seconds) + " s (last: " + last_failure_ +
              "); fix the plugin and restart agenthost";
        return false;
    }
    auto now = Clock::now();
    while (!crashes_.empty() && now - crashes_.front() > std::chrono::seconds(settings_.crash_window_seconds))
        crashes_.pop_front();
    if (now < retry_after_) {
        lock.unlock();
        std::this_thread::sleep_until(retry_after_);
        lock.lock();
        if (alive_) return true;
    }
    std::string error;
    spdlog::warn("plugin restarting in a new process: plugin={} after={}", host_->plugin, death_);
    if (spawn(lock, error) != AH_OK) {
        note_failure(error);
        why = "could not be restarted: " + error;
        return false;
    }
    ++restarts_;
    return true;
}

void PluginProcess::note_failure(const std::string& why) {
    death_ = why;
    last_failure_ = why;
    crashes_.push_back(Clock::now());
    int backoff = std::min(5000, 200 << std::min<int>(static_cast<int>(crashes_.size()) - 1, 5));
    retry_after_ = Clock::now() + std::chrono::milliseconds(backoff);
    if (!stopped_ && !disabled_ && recent_failures() >= settings_.max_crashes) {
        // Disabled for good, and said once, when it happens: the log names it, and the registry
        // drops the plugin's tools (through the same path as a plugin's own tools_changed), so
        // no model or MCP client is offered tools that can only fail.
        disabled_ = true;
        disabled_after_ = recent_failures();
        spdlog::error("plugin disabled: plugin={} failures={} window_s={} last={} (fix the plugin and restart agenthost)",
                      host_->plugin, recent_failures(), settings_.crash_window_seconds, why);
        api_->tools_changed(host_);
    }
}

std::string PluginProcess::disabled_words() const {
    return "; the plugin is now disabled after " + std::to_string(disabled_after_) + " failures within " +
           std::to_string(settings_.crash_window_seconds) + " s: fix it and restart agenthost";
}

void PluginProcess::reap(std::unique_lock<std::mutex>& lock) {
    pid_t pid = child_.pid;
    child_.pid = -1;
    std::thread reader = std::move(child_.reader);
    lock.unlock();
    if (pid > 0) {
        ::kill(pid, SIGKILL);
        int status = 0;
        ::waitpid(pid, &status, 0);
    }
    if (reader.joinable()) reader.join();
    lock.lock();
    child_.channel.reset();  // closes once no late writer holds it
}

void PluginProcess::wait_or_read(std::unique_lock<std::mutex>& lock, const std::shared_ptr<Channel>& channel, uint64_t generation,
                                 Clock::duration limit, bool may_read) {
    if (!may_read || channel->reading || channel->ended || generation != generation_ || !alive_) {
        if (may_read) ++channel->waiting;
        changed_.wait_for(lock, limit);
        if (may_read) --channel->waiting;
        return;
    }
    channel->reading = true;
    lock.unlock();
    ReadTurn turn = read_turn(
        *channel, std::chrono::ceil<std::chrono::milliseconds>(std::max<Clock::duration>(limit, Clock::duration::zero())));
    lock.lock();
    release_reading(*channel, turn.ended);
    if (turn.frame) dispatch(std::move(*turn.frame), channel, lock);
}

void PluginProcess::release_reading(Channel& channel, bool ended) {
    channel.reading = false;
    if (ended) {
        channel.ended = true;
        reader_turn_.notify_all();
    }
    if (channel.waiting > 0) changed_.notify_all();
}

void PluginProcess::read_loop(const std::shared_ptr<Channel>& channel, uint64_t generation) {
    std::unique_lock lock(mutex_);
    while (!channel->ended) {
        const bool watching = channel->waiting > 0 || Clock::now() - last_call_ < kReaderWatch;
        if (channel->reading || channel->waiting > 0) {
            reader_turn_.wait_for(lock, kReaderLook);
            continue;
        }
        channel->reading = true;
        lock.unlock();
        ReadTurn turn = read_turn(*channel, watching ? std::chrono::milliseconds(0) : std::chrono::milliseconds(-1));
        lock.lock();
        release_reading(*channel, turn.ended);
        if (turn.ended) break;
        if (turn.frame)
            dispatch(std::move(*turn.frame), channel, lock);
        else
            reader_turn_.wait_for(lock, kReaderLook);
    }
    lock.unlock();
    stream_ended(generation);
}

void PluginProcess::dispatch(json m, const std::shared_ptr<Channel>& channel, std::unique_lock<std::mutex>& lock) {
    if (m.contains("reply")) {
        if (auto it = pending_.find(json_io::get_int(m, "reply", -1)); it != pending_.end()) it->second.reply = std::move(m);
        changed_.notify_all();
    } else if (m.contains("event") && !m.contains("op")) {
        // A chat stream's event. A service request (post_event) also has an "event" field:
        // read as a stream event, it was dropped and its caller waited for ever.
        if (auto it = pending_.find(json_io::get_int(m, "event", -1)); it != pending_.end())
            it->second.events.push_back(std::move(m));
        changed_.notify_all();
    } else if (parse_op(json_io::get_string(m, "op")) == Op::log) {
        lock.unlock();
        api_->log(host_, static_cast<int32_t>(json_io::get_int(m, "level", AH_LOG_INFO)), str(json_io::get_string(m, "message")),
                  str(json_io::get_string(m, "fields")));
        lock.lock();
    } else if (parse_op(json_io::get_string(m, "op")) == Op::http_abort) {
        if (auto it = http_aborts_.find(json_io::get_int(m, "service", -1)); it != http_aborts_.end()) *it->second = true;
    } else if (m.contains("op")) {
        const ah_cancel* cancel = nullptr;
        if (auto it = pending_.find(std::atoll(json_io::get_string(m, "call", "0").c_str())); it != pending_.end())
            cancel = it->second.cancel;
        if (services_running_ >= kMaxServiceThreads) {
            // A flood of requests is served one at a time here, which slows the child
            // down, instead of a thread each until the host can start no more.
            lock.unlock();
            channel->writer.write(serve(m, cancel, *channel));
            lock.lock();
            return;
        }
        ++services_running_;
        std::thread([this, m = std::move(m), cancel, channel] {
            channel->writer.write(serve(m, cancel, *channel));
            std::lock_guard done(mutex_);
            --services_running_;
            changed_.notify_all();
        }).detach();
    }
}

void PluginProcess::stream_ended(uint64_t generation) {
    pid_t pid = -1;
    {
        std::lock_guard lock(mutex_);
        if (generation != generation_) return;
        pid = child_.pid;
    }
    int status = 0;
    bool reaped = false, stopped_for_protocol = false;
    if (pid > 0) {
        pid_t got = 0;
        for (int i = 0; i < 100 && (got = ::waitpid(pid, &status, WNOHANG)) == 0; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (got == 0) {  // still running after a second: it sent what is not a frame
            ::kill(pid, SIGKILL);
            got = ::waitpid(pid, &status, 0);
            stopped_for_protocol = true;
        }
        reaped = got == pid;
    }
    std::unique_lock lock(mutex_);
    if (generation != generation_) return;
    if (reaped && child_.pid == pid) child_.pid = -1;
    if (alive_ && !stopped_) {
        in_flight_at_death_ = pending_.size();
        std::string why = stopped_for_protocol ? "sent a malformed frame (not the host's protocol); its process was stopped"
                          : reaped             ? describe_exit(status)
                                               : "closed its connection";
        spdlog::error("plugin process failed: plugin={} cause={}", host_->plugin, why);
        note_failure(why);
    }
    alive_ = false;
    changed_.notify_all();
}

namespace {

// One host service a runner asked for on its plugin's behalf: the message names the arguments.
struct ServiceRequest {
    const ah_host_api& api;
    ah_host* host;
    const json& m;
    const ah_cancel* cancel;
    TextWriter& text;                            // what the service writes back
    json& reply;                                 // fields beyond status and text (http's code, headers, body)
    Channel& channel;                            // for the parts of a streamed answer, written before the reply
    const std::atomic<bool>* aborted = nullptr;  // a streamed http request the plugin stopped

    std::string field(const char* name) const { return json_io::get_string(m, name); }
};

// A runner that asked for a stream gets the head and each piece of the body as a part frame
// ({"part": id, …}) the moment it arrives, so a provider in its own process streams as one in
// process does, and no answer is too long to collect. The reply then carries only the status.
ah_status serve_http_streamed(ServiceRequest& q, const ah_http_request& r) {
    struct Streaming {
        ServiceRequest& q;
        json id;
    } streaming{q, q.m.contains("id") ? q.m["id"] : json()};
    ah_http_sink sink{sizeof(ah_http_sink), &streaming,
                      [](void* ctx, int32_t code, ah_str h) -> ah_status {
                          auto* s = static_cast<Streaming*>(ctx);
                          if (s->q.aborted && *s->q.aborted) return AH_ERR_CANCELLED;
                          s->q.channel.writer.write({{"part", s->id}, {"code", code}, {"headers", std::string(view(h))}});
                          return AH_OK;
                      },
                      [](void* ctx, const char* data, size_t len) -> ah_status {
                          auto* s = static_cast<Streaming*>(ctx);
                          if (s->q.aborted && *s->q.aborted) return AH_ERR_CANCELLED;  // the plugin's sink said stop
                          s->q.channel.writer.write({{"part", s->id}, {"body", to_base64(std::string_view(data, len))}});
                          return AH_OK;
                      }};
    return q.api.http_request(q.host, &r, &sink, q.cancel);
}

ah_status serve_http(ServiceRequest& q) {
    std::string method = q.field("method"), url = q.field("url"), headers = q.field("headers_json"),
                body = from_base64(q.field("body")), resolve_to = q.field("resolve_to");
    ah_http_request r{};
    r.struct_size = sizeof r;
    r.method = str(method);
    r.url = str(url);
    r.headers_json = str(headers);
    r.body = str(body);
    r.timeout_ms = static_cast<uint32_t>(json_io::get_int(q.m, "timeout_ms", 0));
    r.connect_timeout_ms = static_cast<uint32_t>(json_io::get_int(q.m, "connect_timeout_ms", 0));
    r.flags = static_cast<uint32_t>(json_io::get_int(q.m, "flags", 0));
    r.resolve_to = str(resolve_to);
    if (json_io::get_bool(q.m, "stream", false)) return serve_http_streamed(q, r);
    struct Collected {
        int code = 0;
        std::string headers, body;
    } got;
    ah_http_sink sink{sizeof(ah_http_sink), &got,
                      [](void* ctx, int32_t code, ah_str h) -> ah_status {
                          auto* c = static_cast<Collected*>(ctx);
                          c->code = code;
                          c->headers = std::string(view(h));
                          c->body.clear();
                          return AH_OK;
                      },
                      [](void* ctx, const char* data, size_t len) -> ah_status {
                          auto* c = static_cast<Collected*>(ctx);
                          if (c->body.size() + len > kMaxFrameBytes / 2) return AH_ERR_NO_MEMORY;
                          c->body.append(data, len);
                          return AH_OK;
                      }};
    ah_status status = q.api.http_request(q.host, &r, &sink, q.cancel);
    if (got.code) {
        q.reply["code"] = got.code;
        q.reply["headers"] = got.headers;
    }
    q.reply["body"] = to_base64(got.body);
    return status;
}

// The services a runner may ask for, by op: each reads its arguments and calls the host API.
using ServeFn = ah_status (*)(ServiceRequest&);
constexpr std::pair<Op, ServeFn> kServices[] = {
    {Op::kv_get, [](ServiceRequest& q) { return q.api.kv_get(q.host, str(q.field("key")), &q.text.writer); }},
    {Op::kv_set, [](ServiceRequest& q) { return q.api.kv_set(q.host, str(q.field("key")), str(q.field("value"))); }},
    {Op::kv_delete, [](ServiceRequest& q) { return q.api.kv_delete(q.host, str(q.field("key"))); }},
    {Op::memory_get,
     [](ServiceRequest& q) {
         return q.api.memory_get(q.host, str(q.field("conversation")), str(q.field("key")), &q.text.writer);
     }},
    {Op::memory_set,
     [](ServiceRequest& q) {
         return q.api.memory_set(q.host, str(q.field("conversation")), str(q.field("key")), str(q.field("value")));
     }},
    {Op::post_event,
     [](ServiceRequest& q) { return q.api.post_event(q.host, str(q.field("conversation")), str(q.field("event"))); }},
    {Op::tools_changed, [](ServiceRequest& q) { return q.api.tools_changed ? q.api.tools_changed(q.host) : AH_ERR_UNSUPPORTED; }},
    {Op::http, serve_http},
    {Op::progress,
     [](ServiceRequest& q) {
         return q.api.progress ? q.api.progress(q.host, str(q.field("call_id")), json_io::get_number(q.m, "progress", 0),
                                                json_io::get_number(q.m, "total", 0), str(q.field("message")))
                               : AH_ERR_UNSUPPORTED;
     }},
    {Op::sample,
     [](ServiceRequest& q) {
         return q.api.sample ? q.api.sample(q.host, str(q.field("call_id")), str(q.field("request")), &q.text.writer)
                             : AH_ERR_UNSUPPORTED;
     }},
    {Op::elicit,
     [](ServiceRequest& q) {
         return q.api.elicit ? q.api.elicit(q.host, str(q.field("call_id")), str(q.field("request")), &q.text.writer)
                             : AH_ERR_UNSUPPORTED;
     }},
    {Op::resource_updated,
     [](ServiceRequest& q) {
         return q.api.resource_updated ? q.api.resource_updated(q.host, str(q.field("uri"))) : AH_ERR_UNSUPPORTED;
     }},
};

}  // namespace

json PluginProcess::serve(const json& m, const ah_cancel* cancel, Channel& channel) {
    const std::optional<Op> op = parse_op(json_io::get_string(m, "op"));
    json reply{{"reply", m.contains("id") ? m["id"] : json()}};
    TextWriter text;
    ServiceRequest request{*api_, host_, m, cancel, text, reply, channel};
    // A streamed http request can be stopped by the plugin while it runs.
    const int64_t id = json_io::get_int(m, "id", -1);
    std::shared_ptr<std::atomic<bool>> aborted;
    if (op == Op::http && json_io::get_bool(m, "stream", false)) {
        aborted = std::make_shared<std::atomic<bool>>(false);
        request.aborted = aborted.get();
        std::lock_guard lock(mutex_);
        http_aborts_[id] = aborted;
    }
    ah_status status = AH_ERR_UNSUPPORTED;  // an op of a newer runner, or none
    for (const auto& [service_op, serve_it] : kServices)
        if (op == service_op) status = serve_it(request);
    if (aborted) {
        std::lock_guard lock(mutex_);
        http_aborts_.erase(id);
    }
    reply["status"] = status;
    reply["text"] = std::move(text.text);
    return reply;
}

}  // namespace agenthost::isolation
