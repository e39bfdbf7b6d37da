#include "isolation/isolated_plugin.hpp"

#include "plugins/abi_text.hpp"

#include "isolation/frames.hpp"
#include "isolation/protocol.hpp"
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

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

using plugins::view;
ah_str str(std::string_view s) { return {s.data(), s.size()}; }

ah_status write_text(const ah_writer* out, const std::string& text) {
    return out && out->write ? out->write(out->ctx, text.data(), text.size()) : AH_OK;
}

struct TextWriter {
    std::string text;
    ah_writer writer{sizeof(ah_writer), this, [](void* ctx, const char* data, size_t len) -> ah_status {
                         static_cast<TextWriter*>(ctx)->text.append(data, len);
                         return AH_OK;
                     }};
};

std::string describe_exit(int status) {
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        return "crashed with signal " + std::to_string(sig) + " (" + std::string(strsignal(sig)) + ")";
    }
    if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
    return "stopped";
}

// The socket to one child. Shared by everything that may still write to it (a waiting call, a host
// service answering late), so its descriptor closes only when the last of them is done and can
// never be reused under them by a restart.
struct Channel {
    explicit Channel(int socket) : fd(socket), writer(socket), frames(socket) {}
    ~Channel() { ::close(fd); }
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;
    int fd;
    FrameWriter writer;
    FrameReader frames;  // read by one thread at a time: the one whose turn it is (`reading`)
    // Guarded by IsolatedPlugin::mutex_:
    bool reading = false;  // a thread reads `frames` now
    bool ended = false;    // the end of the stream was read; the reader thread takes it from there
    int waiting = 0;       // calls waiting to read their reply (the reader thread leaves it to them)
};

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

// One running child: its pid, its channel and the thread reading its frames.
struct Child {
    pid_t pid = -1;
    std::shared_ptr<Channel> channel;
    std::thread reader;
};

// What a caller waits for: the reply to its request, and chat events before it.
struct Pending {
    std::optional<json> reply;
    std::deque<json> events;
    const ah_cancel* cancel = nullptr;  // the host's token, for forwarded HTTP requests
};

class IsolatedPlugin {
public:
    IsolatedPlugin(const ah_host_api* api, ah_host* host, Settings settings)
        : api_(api), host_(host), settings_(std::move(settings)) {}

    ~IsolatedPlugin() { shutdown(); }

    // Starts the child and creates the plugin in it.
    ah_status start(std::string& error) {
        std::unique_lock lock(mutex_);
        if (!spawn(lock, error)) return AH_ERR_FAILED;
        return AH_OK;
    }

    const json& slots() const { return slots_; }
    std::string plugin_name() const { return host_->plugin; }

    struct Outcome {
        ah_status status = AH_OK;
        json reply;
        std::string failure;  // why the child failed this call (crash, timeout …); empty when it answered
        bool final = false;   // the plugin is disabled or unloaded: no restart follows
    };

    // Sends a request and waits for its reply; chat events go to `on_event` on this thread.
    Outcome request(json message, const ah_cancel* cancel,
                    const std::function<ah_status(int32_t, std::string_view)>& on_event = {}, bool bootstrap = false) {
        Outcome out;
        std::unique_lock lock(mutex_);
        // A plugin that is not thread-safe runs one call at a time. The next call waits here, not
        // in the child: its deadline starts when it is sent, and a call stuck in the child is not
        // blamed on the ones behind it.
        SerialTurn turn(*this);
        if (!bootstrap && serial_) {
            while (serial_busy_) {
                if (cancel && api_->is_cancelled(host_, cancel)) {
                    out.status = AH_ERR_CANCELLED;
                    return out;
                }
                changed_.wait_for(lock, std::chrono::milliseconds(50));
            }
            serial_busy_ = turn.held = true;
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
        FrameWriter* writer = &channel->writer;
        lock.unlock();
        writer->write(message);
        lock.lock();
        const auto deadline = Clock::now() + std::chrono::milliseconds(settings_.call_timeout_ms);
        bool cancel_sent = false;
        Clock::time_point cancel_deadline{};
        // Written without the lock, like the call itself: a child that stops reading fills the
        // socket, and the write would hold every other caller of this plugin behind it.
        auto send_cancel = [&] {
            cancel_sent = true;
            cancel_deadline = Clock::now() + std::chrono::seconds(2);
            lock.unlock();
            writer->write({{"op", op_name(Op::cancel)}, {"call", id}});
            lock.lock();
        };
        for (;;) {
            Pending& p = pending_[id];
            while (!p.events.empty()) {
                json e = std::move(p.events.front());
                p.events.pop_front();
                lock.unlock();
                ah_status s = on_event
                                  ? on_event(static_cast<int32_t>(json_io::get_int(e, "type", 0)), get_plugin_text(e, "payload"))
                                  : AH_OK;
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
                out.failure = death_;
                // Calls that overlap share the process: any one of them may have ended it for all.
                // (in_flight_at_death_ counts the last death: this call's, unless a newer child died too)
                const bool last_death_is_ours = generation == generation_ || generation + 1 == generation_;
                if (last_death_is_ours && in_flight_at_death_ > 1)
                    out.failure +=
                        " (" + std::to_string(in_flight_at_death_ - 1) +
                        " other call(s) of this plugin were running in the same process; any of them may have caused it)";
                break;
            }
            if (!cancel_sent && cancel && api_->is_cancelled(host_, cancel)) send_cancel();
            if (cancel_sent && Clock::now() > cancel_deadline) {  // the plugin ignores cancellation
                out.status = AH_ERR_CANCELLED;
                // A thread-safe plugin's other calls go on beside it: it is left running. One that
                // is not would hold every later call behind this one: its process is stopped (not
                // counted as a failure) and the next call starts a new one.
                if (serial_ && generation == generation_ && alive_) {
                    spdlog::warn(
                        "plugin process stopped: plugin={} cause=ignored the cancellation of a call for 2 s (not thread-safe: "
                        "later calls would wait behind it)",
                        host_->plugin);
                    ::kill(child_.pid, SIGKILL);
                    alive_ = false;
                    death_ = "was stopped: it ignored the cancellation of an earlier call";
                    changed_.notify_all();
                }
                break;
            }
            if (Clock::now() > deadline) {
                out.status = AH_ERR_TIMEOUT;
                out.failure =
                    "did not answer within " + std::to_string(settings_.call_timeout_ms) + " ms; its process was stopped";
                if (generation == generation_ && alive_) {  // counts as a failure now, not when the reader sees it die
                    ::kill(child_.pid, SIGKILL);
                    alive_ = false;
                    note_failure(out.failure);
                    changed_.notify_all();
                }
                break;
            }
            // The bootstrap's create does not read: what the plugin logs while it is created arrives
            // on the reader thread, as it always has, not as the creating thread's warnings.
            wait_or_read(lock, channel, generation,
                         std::min<Clock::duration>(std::chrono::milliseconds(50), deadline - Clock::now()), !bootstrap);
        }
        last_call_ = Clock::now();
        pending_.erase(id);
        // A failure that used up the crash budget is final: it says so, and the plugin is disabled.
        if (!out.failure.empty()) {
            out.final = stopped_ || disabled_;
            if (disabled_ && out.failure.find("is disabled after") == std::string::npos) out.failure += disabled_words();
        }
        return out;
    }

    // Ends the plugin: destroy in the child, then the process.
    void shutdown() {
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

    ProcessHealth health() {
        std::lock_guard lock(mutex_);
        return {restarts_, recent_failures(), disabled_, disabled_after_, last_failure_};
    }

private:
    // Failures within the crash window (mutex_ held).
    int recent_failures() const {
        auto now = Clock::now();
        return static_cast<int>(std::count_if(crashes_.begin(), crashes_.end(), [&](Clock::time_point t) {
            return now - t <= std::chrono::seconds(settings_.crash_window_seconds);
        }));
    }

    // Starts the runner and creates the plugin in it (mutex_ held).
    bool spawn(std::unique_lock<std::mutex>& lock, std::string& error) {
        int fds[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
            error = std::string("socketpair failed: ") + std::strerror(errno);
            return false;
        }
        std::vector<std::string> args{settings_.runner.string(), "--manifest", settings_.manifest.string()};
        if (settings_.memory_mb > 0) args.insert(args.end(), {"--memory-mb", std::to_string(settings_.memory_mb)});
        if (settings_.cpu_seconds > 0) args.insert(args.end(), {"--cpu-seconds", std::to_string(settings_.cpu_seconds)});
        if (settings_.sandbox) args.insert(args.end(), {"--sandbox", to_json(*settings_.sandbox)});
        std::vector<char*> argv;
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
            return false;
        }
        child_.pid = pid;
        child_.channel = std::make_shared<Channel>(fds[0]);
        alive_ = true;
        death_.clear();
        ++generation_;
        child_.reader =
            std::thread([this, channel = child_.channel, generation = generation_] { read_loop(channel, generation); });

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
            error = !created.failure.empty() ? "its process " + created.failure
                    : said.empty()           ? std::string("create failed")
                                             : said;
            alive_ = false;
            reap(lock);
            return false;
        }
        slots_ = created.reply.contains("slots") && created.reply["slots"].is_object() ? created.reply["slots"] : json::object();
        serial_ = created.reply.contains("thread_safe") && created.reply["thread_safe"].is_boolean() &&
                  !created.reply["thread_safe"].get<bool>();
        return true;
    }

    // A live child for the next call: restarts a dead one after its backoff, or says why not.
    bool ensure_running(std::unique_lock<std::mutex>& lock, std::string& why) {
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
        if (!spawn(lock, error)) {
            note_failure(error);
            why = "could not be restarted: " + error;
            return false;
        }
        ++restarts_;
        return true;
    }

    void note_failure(const std::string& why) {
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

    // Why a failed call is the last one: the words that end its message.
    std::string disabled_words() const {
        return "; the plugin is now disabled after " + std::to_string(disabled_after_) + " failures within " +
               std::to_string(settings_.crash_window_seconds) + " s: fix it and restart agenthost";
    }

    // Waits for the dead (or dying) child and joins its reader (mutex_ held).
    void reap(std::unique_lock<std::mutex>& lock) {
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

    // Waits for the reply (mutex_ held), reading the child's frames itself while no one else does:
    // a caller that reads its own reply is not woken by another thread, which costs about as much
    // as the rest of a short call's round trip. Returns after one frame, or `limit`.
    void wait_or_read(std::unique_lock<std::mutex>& lock, const std::shared_ptr<Channel>& channel, uint64_t generation,
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

    // Gives up the turn to read (mutex_ held): to a waiting call at once; after the end of the
    // stream, to the reader thread, which finds out why (exit, crash or a broken protocol).
    void release_reading(Channel& channel, bool ended) {
        channel.reading = false;
        if (ended) {
            channel.ended = true;
            reader_turn_.notify_all();
        }
        if (channel.waiting > 0) changed_.notify_all();
    }

    // Reads the child's frames while no call waits for its reply (the calls read their own), and
    // takes the end of the stream. Waiting calls read for themselves; while calls come this thread
    // looks every few milliseconds, after a quiet second it waits in read().
    void read_loop(std::shared_ptr<Channel> channel, uint64_t generation) {
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

    // One frame from the child, for whoever waits for it (mutex_ held; released while a host
    // service or a log line is handled).
    void dispatch(json m, const std::shared_ptr<Channel>& channel, std::unique_lock<std::mutex>& lock) {
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
            api_->log(host_, static_cast<int32_t>(json_io::get_int(m, "level", AH_LOG_INFO)),
                      str(json_io::get_string(m, "message")), str(json_io::get_string(m, "fields")));
            lock.lock();
        } else if (m.contains("op")) {
            const ah_cancel* cancel = nullptr;
            if (auto it = pending_.find(std::atoll(json_io::get_string(m, "call", "0").c_str())); it != pending_.end())
                cancel = it->second.cancel;
            if (services_running_ >= kMaxServiceThreads) {
                // A flood of requests is served one at a time here, which slows the child
                // down, instead of a thread each until the host can start no more.
                lock.unlock();
                channel->writer.write(serve(m, cancel));
                lock.lock();
                return;
            }
            ++services_running_;
            std::thread([this, m = std::move(m), cancel, channel] {
                channel->writer.write(serve(m, cancel));
                std::lock_guard done(mutex_);
                --services_running_;
                changed_.notify_all();
            }).detach();
        }
    }

    // The end of the child's stream (read by the reader thread or by a waiting call): the child
    // exited or crashed (its status tells which), or it broke the protocol (a malformed frame) and
    // lives on: then it is stopped. The wait happens without the lock, so calls waiting on it are
    // not blocked behind a child that never exits.
    void stream_ended(uint64_t generation) {
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

    // One host service for the child, through the host's own table.
    json serve(const json& m, const ah_cancel* cancel) {
        const std::optional<Op> op = parse_op(json_io::get_string(m, "op"));
        json reply{{"reply", m.contains("id") ? m["id"] : json()}};
        TextWriter text;
        ah_status status = AH_ERR_UNSUPPORTED;
        std::string a = json_io::get_string(m, "key"), conversation = json_io::get_string(m, "conversation"),
                    value = json_io::get_string(m, "value"), event = json_io::get_string(m, "event");
        if (op == Op::kv_get)
            status = api_->kv_get(host_, str(a), &text.writer);
        else if (op == Op::kv_set)
            status = api_->kv_set(host_, str(a), str(value));
        else if (op == Op::kv_delete)
            status = api_->kv_delete(host_, str(a));
        else if (op == Op::memory_get)
            status = api_->memory_get(host_, str(conversation), str(a), &text.writer);
        else if (op == Op::memory_set)
            status = api_->memory_set(host_, str(conversation), str(a), str(value));
        else if (op == Op::post_event)
            status = api_->post_event(host_, str(conversation), str(event));
        else if (op == Op::tools_changed)
            status = api_->tools_changed ? api_->tools_changed(host_) : AH_ERR_UNSUPPORTED;
        else if (op == Op::http) {
            std::string method = json_io::get_string(m, "method"), url = json_io::get_string(m, "url"),
                        headers = json_io::get_string(m, "headers_json"), body = from_base64(json_io::get_string(m, "body")),
                        resolve_to = json_io::get_string(m, "resolve_to");
            ah_http_request r{};
            r.struct_size = sizeof r;
            r.method = str(method);
            r.url = str(url);
            r.headers_json = str(headers);
            r.body = str(body);
            r.timeout_ms = static_cast<uint32_t>(json_io::get_int(m, "timeout_ms", 0));
            r.connect_timeout_ms = static_cast<uint32_t>(json_io::get_int(m, "connect_timeout_ms", 0));
            r.flags = static_cast<uint32_t>(json_io::get_int(m, "flags", 0));
            r.resolve_to = str(resolve_to);
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
            status = api_->http_request(host_, &r, &sink, cancel);
            if (got.code) {
                reply["code"] = got.code;
                reply["headers"] = got.headers;
            }
            reply["body"] = to_base64(got.body);
        }
        reply["status"] = status;
        reply["text"] = std::move(text.text);
        return reply;
    }

    const ah_host_api* api_;
    ah_host* host_;
    Settings settings_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::condition_variable reader_turn_;                          // the reader thread's: a caller read the end of the stream
    Clock::time_point last_call_{};                                // when a call last had its reply
    static constexpr auto kReaderWatch = std::chrono::seconds(1);  // the reader thread looks while calls came this recently …
    static constexpr auto kReaderLook = std::chrono::milliseconds(5);  // … this often
    Child child_;
    bool alive_ = false, stopped_ = false, starting_ = false;
    bool disabled_ = false;          // too many failures in the crash window: calls fail without a restart
    int disabled_after_ = 0;         // the failures that disabled it
    size_t in_flight_at_death_ = 0;  // calls waiting on the child when it died
    int restarts_ = 0;
    uint64_t generation_ = 0;   // which child a reader or a waiting call belongs to
    std::string death_;         // why the last child ended
    std::string last_failure_;  // the same, kept after a restart (for health())
    std::deque<Clock::time_point> crashes_;
    Clock::time_point retry_after_{};
    int64_t next_id_ = 1;
    std::map<int64_t, Pending> pending_;
    int services_running_ = 0;
    json slots_ = json::object();
    bool serial_ = false;       // the plugin is not thread-safe: one call at a time (SerialTurn)
    bool serial_busy_ = false;  // a call of a plugin that is not thread-safe is under way

    // The turn of one call of a plugin that is not thread-safe, given back however the call ends
    // (mutex_ held: it is declared after the lock that request() holds to its end).
    struct SerialTurn {
        explicit SerialTurn(IsolatedPlugin& p) : plugin(p) {}
        ~SerialTurn() {
            if (!held) return;
            plugin.serial_busy_ = false;
            plugin.changed_.notify_all();
        }
        SerialTurn(const SerialTurn&) = delete;
        SerialTurn& operator=(const SerialTurn&) = delete;
        IsolatedPlugin& plugin;
        bool held = false;
    };
};

IsolatedPlugin* self(ah_instance* instance) { return reinterpret_cast<IsolatedPlugin*>(instance); }

json call_fields(const ah_call* raw) {
    ah_call c{};
    std::memcpy(&c, raw, std::min(raw->struct_size, sizeof c));
    return {{"call_id", view(c.call_id)},
            {"tool_name", view(c.tool_name)},
            {"arguments_json", view(c.arguments_json)},
            {"conversation_id", view(c.conversation_id)},
            {"request_context_json", view(c.request_context_json)}};
}

const ah_cancel* call_cancel(const ah_call* raw) { return raw->struct_size >= sizeof(ah_call) ? raw->cancel : nullptr; }

// The child's answer as the plugin gave it: its text (written even with a failing status, as the
// in-process path keeps it) and its status.
ah_status write_reply(const ah_writer* out, const IsolatedPlugin::Outcome& outcome) {
    std::string text = get_plugin_text(outcome.reply, "text");
    if (!text.empty()) {
        ah_status written = write_text(out, text);
        if (outcome.status == AH_OK) return written;
    }
    return outcome.status;
}

// A text-answering slot (context, list_models, list_resources, read_resource, health).
ah_status text_slot(ah_instance* instance, Op op, const ah_call* call, const ah_writer* out) {
    json message = call_fields(call);
    message["op"] = op_name(op);
    auto outcome = self(instance)->request(std::move(message), call_cancel(call));
    if (!outcome.failure.empty()) return outcome.status == AH_OK ? AH_ERR_FAILED : outcome.status;
    return write_reply(out, outcome);
}

}  // namespace

ProcessHealth process_health(ah_instance* instance) { return self(instance)->health(); }

ah_plugin isolated_descriptor(const plugins::Manifest& m) {
    ah_plugin d{};
    d.struct_size = sizeof d;
    d.abi_major = AH_ABI_MAJOR;
    d.abi_minor = AH_ABI_MINOR;
    d.flags = AH_PLUGIN_THREAD_SAFE;  // calls may overlap here; the registry still serialises a plugin that is not thread-safe
    d.kind = m.kind == plugins::PluginKind::provider ? AH_PLUGIN_KIND_PROVIDER : AH_PLUGIN_KIND_TOOL;
    d.create = [](const ah_host_api* api, ah_host* host, ah_instance** out, const ah_writer* error) -> ah_status {
        if (!host || !host->isolation) return AH_ERR_INVALID_ARGUMENT;
        auto plugin = std::make_unique<IsolatedPlugin>(api, host, *host->isolation);
        std::string why;
        if (plugin->start(why) != AH_OK) {
            write_text(error, "in its own process: " + why);
            return AH_ERR_FAILED;
        }
        *out = reinterpret_cast<ah_instance*>(plugin.release());  // owned by the registry until destroy()
        return AH_OK;
    };
    d.destroy = [](ah_instance* instance) { std::unique_ptr<IsolatedPlugin> owned(self(instance)); };
    d.list_tools = [](ah_instance* instance, const ah_tool_sink* sink) -> ah_status {
        auto outcome = self(instance)->request({{"op", op_name(Op::list_tools)}}, nullptr);
        if (outcome.status != AH_OK) return outcome.status;
        const json& listed = outcome.reply.contains("tools") ? outcome.reply["tools"] : json::array();
        if (!listed.is_array()) return AH_ERR_INVALID_ARGUMENT;
        for (const auto& t : listed) {
            std::string name = json_io::get_string(t, "name"), description = json_io::get_string(t, "description"),
                        schema = json_io::get_string(t, "input_schema_json", "{}");
            ah_tool_def def{sizeof(ah_tool_def), str(name), str(description), str(schema),
                            static_cast<uint32_t>(json_io::get_int(t, "hints", 0))};
            sink->add(sink->ctx, &def);
        }
        return AH_OK;
    };
    d.call_tool = [](ah_instance* instance, const ah_call* call, const ah_writer* result) -> ah_status {
        json message = call_fields(call);
        message["op"] = op_name(Op::call_tool);
        auto outcome = self(instance)->request(std::move(message), call_cancel(call));
        if (!outcome.failure.empty())  // the process failed: a clear tool error, the host goes on
            return write_text(result, json{{"content", "the process of plugin '" + self(instance)->plugin_name() + "' running '" +
                                                           std::string(view(call->tool_name)) + "' " + outcome.failure +
                                                           (outcome.final ? "" : "; it is restarted for the next call")},
                                           {"is_error", true},
                                           {"error_code", "plugin_failure"}}
                                          .dump());
        if (json_io::get_string(outcome.reply, "error") == "output_too_large")
            return write_text(result,
                              json{{"content", "plugin '" + self(instance)->plugin_name() + "' answered '" +
                                                   std::string(view(call->tool_name)) + "' with more than " +
                                                   std::to_string(kMaxFrameBytes >> 20) +
                                                   " MiB (the limit of one answer from its process); the result was dropped"},
                                   {"is_error", true},
                                   {"error_code", "output_too_large"}}
                                  .dump());
        if (outcome.status == AH_ERR_CANCELLED && outcome.reply.is_null())
            return write_text(result, json{{"content", "cancelled"}, {"is_error", true}, {"error_code", "cancelled"}}.dump());
        return write_reply(result, outcome);
    };
    d.context = [](ah_instance* i, const ah_call* c, const ah_writer* o) { return text_slot(i, Op::context, c, o); };
    d.list_models = [](ah_instance* i, const ah_call* c, const ah_writer* o) { return text_slot(i, Op::list_models, c, o); };
    d.list_resources = [](ah_instance* i, const ah_call* c, const ah_writer* o) {
        return text_slot(i, Op::list_resources, c, o);
    };
    d.read_resource = [](ah_instance* i, const ah_call* c, const ah_writer* o) { return text_slot(i, Op::read_resource, c, o); };
    d.health = [](ah_instance* i, const ah_call* c, const ah_writer* o) { return text_slot(i, Op::health, c, o); };
    d.chat = [](ah_instance* instance, const ah_call* call, const ah_event_sink* events) -> ah_status {
        json message = call_fields(call);
        message["op"] = op_name(Op::chat);
        auto outcome = self(instance)->request(
            std::move(message), call_cancel(call),
            [events](int32_t type, std::string_view payload) { return events->emit(events->ctx, type, str(payload)); });
        if (!outcome.failure.empty()) {
            std::string error =
                json{{"type", "provider_failure"}, {"message", "the provider plugin's process " + outcome.failure}}.dump();
            events->emit(events->ctx, AH_EVENT_ERROR, str(error));
            return AH_OK;
        }
        return outcome.status;
    };
    return d;
}

void keep_present_slots(ah_plugin& d, ah_instance* instance) {
    const json& slots = self(instance)->slots();
    if (!json_io::get_bool(slots, op_name(Op::context), false)) d.context = nullptr;
    if (!json_io::get_bool(slots, op_name(Op::chat), false)) d.chat = nullptr;
    if (!json_io::get_bool(slots, op_name(Op::list_models), false)) d.list_models = nullptr;
    if (!json_io::get_bool(slots, op_name(Op::list_resources), false)) d.list_resources = nullptr;
    if (!json_io::get_bool(slots, op_name(Op::read_resource), false)) d.read_resource = nullptr;
    if (!json_io::get_bool(slots, op_name(Op::health), false)) d.health = nullptr;
}

std::filesystem::path default_runner() { return layout::install_layout().runner; }

}  // namespace agenthost::isolation
