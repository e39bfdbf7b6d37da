// The host's side of one isolated plugin's process (internal to isolation/): it starts the runner,
// sends each call as a frame and waits for its reply, restarts a process that died (after a
// backoff, up to max_crashes in the crash window), and serves the host services the plugin asks
// for on threads of their own. isolated_plugin.cpp wraps it in the ah_plugin descriptor.
#pragma once

#include "isolation/frames.hpp"
#include "isolation/isolated_plugin.hpp"
#include "plugins/host_services.hpp"

#include <agenthost/agenthost.h>
#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace agenthost::isolation {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

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
    // Guarded by PluginProcess::mutex_:
    bool reading = false;  // a thread reads `frames` now
    bool ended = false;    // the end of the stream was read; the reader thread takes it from there
    int waiting = 0;       // calls waiting to read their reply (the reader thread leaves it to them)
};

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

class PluginProcess {
public:
    PluginProcess(const ah_host_api* api, ah_host* host, Settings settings)
        : api_(api), host_(host), settings_(std::move(settings)), chat_timeout_ms_(model_call_timeout_ms()) {}

    ~PluginProcess() { shutdown(); }

    // Starts the child and creates the plugin in it.
    ah_status start(std::string& error);

    const json& slots() const { return slots_; }
    // The ABI version the plugin's library reports, as its process read it (nullopt before create).
    std::optional<BuiltAbi> built_abi();
    std::string plugin_name() const { return host_->plugin; }

    struct Outcome {
        ah_status status = AH_OK;
        json reply;
        std::string failure;  // why the child failed this call (crash, timeout …); empty when it answered
        bool final = false;   // the plugin is disabled or unloaded: no restart follows
    };

    // Sends a request and waits for its reply; chat events go to `on_event` on this thread.
    Outcome request(json message, const ah_cancel* cancel,
                    const std::function<ah_status(int32_t, std::string_view)>& on_event = {}, bool bootstrap = false);

    // Ends the plugin: destroy in the child, then the process.
    void shutdown();

    ProcessHealth health();

private:
    struct SerialTurn;
    // Waits for the one call a plugin that is not thread-safe may have running (mutex_ held);
    // false when the host cancelled the call meanwhile.
    bool take_serial_turn(std::unique_lock<std::mutex>& lock, const ah_cancel* cancel, SerialTurn& turn);
    // Why the child died under a call of `generation`, with the other calls it shared the process with.
    std::string death_words(uint64_t generation) const;
    // Stops the process of `generation` (mutex_ held): one that ignored a cancellation (not a
    // failure), or one past its call's deadline (a failure, counted now).
    void stop_ignoring_cancel(uint64_t generation);
    void stop_overdue(uint64_t generation, const std::string& why);

    // Failures within the crash window (mutex_ held).
    int recent_failures() const;

    // Starts the runner and creates the plugin in it (mutex_ held).
    ah_status spawn(std::unique_lock<std::mutex>& lock, std::string& error);

    // A live child for the next call: restarts a dead one after its backoff, or says why not.
    bool ensure_running(std::unique_lock<std::mutex>& lock, std::string& why);

    void note_failure(const std::string& why);

    // Why a failed call is the last one: the words that end its message.
    std::string disabled_words() const;

    // Waits for the dead (or dying) child and joins its reader (mutex_ held).
    void reap(std::unique_lock<std::mutex>& lock);

    // Waits for the reply (mutex_ held), reading the child's frames itself while no one else does:
    // a caller that reads its own reply is not woken by another thread, which costs about as much
    // as the rest of a short call's round trip. Returns after one frame, or `limit`.
    // Waits for call `id`'s reply into `out`, passing its events on, cancelling it when asked or when
    // the host stops listening, and stopping a child that overruns the call timeout. The lock is held
    // on entry and on return.
    void await_reply(std::unique_lock<std::mutex>& lock, int64_t id, uint64_t generation, const std::shared_ptr<Channel>& channel,
                     const ah_cancel* cancel, const std::function<ah_status(int32_t, std::string_view)>& on_event, bool bootstrap,
                     int timeout_ms, Outcome& out);
    // How long a call may take before its process is stopped: isolation_timeout_ms, but a model
    // call at least the provider's own timeout_ms and connect_timeout_ms and a margin, so a slow
    // model ends as the provider's typed timeout (retried), never as a stopped plugin.
    int call_timeout_ms(const json& message) const;
    int model_call_timeout_ms() const;  // read once from the instance's config, at construction
    void wait_or_read(std::unique_lock<std::mutex>& lock, const std::shared_ptr<Channel>& channel, uint64_t generation,
                      Clock::duration limit, bool may_read);

    // Gives up the turn to read (mutex_ held): to a waiting call at once; after the end of the
    // stream, to the reader thread, which finds out why (exit, crash or a broken protocol).
    void release_reading(Channel& channel, bool ended);

    // Reads the child's frames while no call waits for its reply (the calls read their own), and
    // takes the end of the stream. Waiting calls read for themselves; while calls come this thread
    // looks every few milliseconds, after a quiet second it waits in read().
    // `channel`: the lambda starting the thread holds it for the thread's life.
    void read_loop(const std::shared_ptr<Channel>& channel, uint64_t generation);

    // One frame from the child, for whoever waits for it (mutex_ held; released while a host
    // service or a log line is handled).
    void dispatch(json m, const std::shared_ptr<Channel>& channel, std::unique_lock<std::mutex>& lock);

    // The end of the child's stream (read by the reader thread or by a waiting call): the child
    // exited or crashed (its status tells which), or it broke the protocol (a malformed frame) and
    // lives on: then it is stopped. The wait happens without the lock, so calls waiting on it are
    // not blocked behind a child that never exits.
    void stream_ended(uint64_t generation);

    // One host service for the child, through the host's own table.
    json serve(const json& m, const ah_cancel* cancel, Channel& channel);

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
    // Streamed http requests in flight, by the runner's request id: set when the plugin's sink
    // asked to stop (Op::http_abort).
    std::map<int64_t, std::shared_ptr<std::atomic<bool>>> http_aborts_;
    json slots_ = json::object();
    std::optional<BuiltAbi> built_abi_;
    int chat_timeout_ms_ = 0;   // a model call's limit (call_timeout_ms)
    bool serial_ = false;       // the plugin is not thread-safe: one call at a time (SerialTurn)
    bool serial_busy_ = false;  // a call of a plugin that is not thread-safe is under way

    // The turn of one call of a plugin that is not thread-safe, given back however the call ends
    // (mutex_ held: it is declared after the lock that request() holds to its end).
    struct SerialTurn {
        explicit SerialTurn(PluginProcess& p) : plugin(p) {}
        ~SerialTurn() {
            if (!held) return;
            plugin.serial_busy_ = false;
            plugin.changed_.notify_all();
        }
        SerialTurn(const SerialTurn&) = delete;
        SerialTurn& operator=(const SerialTurn&) = delete;
        PluginProcess& plugin;
        bool held = false;
    };
};

// An ABI string over `s` (borrowed).
inline ah_str str(std::string_view s) { return {s.data(), s.size()}; }

// Collects what a slot writes, for a reply frame.
struct TextWriter {
    std::string text;
    ah_writer writer{sizeof(ah_writer), this, [](void* ctx, const char* data, size_t len) -> ah_status {
                         static_cast<TextWriter*>(ctx)->text.append(data, len);
                         return AH_OK;
                     }};
};

}  // namespace agenthost::isolation
