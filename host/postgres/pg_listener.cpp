#include "postgres/pg_listener.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <charconv>

namespace agenthost::postgres {
namespace {

constexpr auto kReconnectAfter = std::chrono::seconds(1);

const char* channel_of(store::Change change) {
    for (const ChangeChannel& c : kChangeChannels)
        if (c.change == change) return c.channel;
    return kChangeChannels[0].channel;
}

// The run a payload names; 0 when it names none (a change of any run).
int64_t run_of(const std::string& payload) {
    int64_t run = 0;
    std::from_chars(payload.data(), payload.data() + payload.size(), run);
    return run;
}

}  // namespace

Status notify(Connection& db, store::Change change, const std::vector<int64_t>& runs) {
    if (runs.empty()) return Ok{};
    std::string array = "{";
    for (size_t i = 0; i < runs.size(); ++i) array += (i ? "," : "") + std::to_string(runs[i]);
    array += "}";
    auto sent = db.exec("SELECT pg_notify($1, r::text) FROM (SELECT DISTINCT unnest($2::bigint[]) AS r) runs",
                        {param(std::string_view(channel_of(change))), param(std::string_view(array))});
    if (!sent) return sent.error();
    return Ok{};
}

PgListener::PgListener(std::string url, store::ChangeSignals& signals)
    : url_(std::move(url)), signals_(signals), wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    thread_ = std::thread([this] { work(); });
}

PgListener::~PgListener() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    stop_.notify_all();
    if (wake_fd_ >= 0) {
        uint64_t one = 1;
        (void)!::write(wake_fd_, &one, sizeof one);
    }
    thread_.join();
    if (wake_fd_ >= 0) ::close(wake_fd_);
    signals_.set_live(false);
}

bool PgListener::stopping() {
    std::lock_guard lock(mutex_);
    return stopping_;
}

void PgListener::pause(std::chrono::milliseconds how_long) {
    std::unique_lock lock(mutex_);
    stop_.wait_for(lock, how_long, [&] { return stopping_; });
}

void PgListener::work() {
    while (!stopping()) {
        listen_once();
        if (signals_.live()) {
            signals_.set_live(false);
            signals_.raise_all();  // waiters go back to polling at once
        }
        pause(kReconnectAfter);
    }
}

void PgListener::listen_once() {
    auto opened = Connection::open_unless(url_, wake_fd_);
    if (!opened) return;  // out of reach: the store's own connections log it
    Connection& db = **opened;
    for (const ChangeChannel& c : kChangeChannels)
        if (auto listening = db.exec(std::string("LISTEN ") + c.channel); !listening) {
            spdlog::warn("store: could not LISTEN on PostgreSQL, other hosts' changes are polled for: {}",
                         listening.error().message);
            return;
        }
    signals_.set_live(true);
    signals_.raise_all();  // what changed while nobody listened is looked at again
    while (!stopping()) {
        pollfd fds[2] = {{db.socket(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
        if (fds[1].revents != 0) return;  // stopping
        if (fds[0].revents == 0) continue;
        auto arrived = db.notifications();
        if (!arrived) {
            spdlog::warn("store: the PostgreSQL connection that listens for other hosts' changes was lost; listening again");
            return;
        }
        for (const Connection::Notification& n : *arrived)
            for (const ChangeChannel& c : kChangeChannels)
                if (n.channel == c.channel) signals_.raise(c.change, c.per_run ? run_of(n.payload) : 0);
    }
}

}  // namespace agenthost::postgres
