// PostgreSQL's LISTEN/NOTIFY behind store::ChangeSignals: a writer tells the other hosts what it
// changed with notify(), in the transaction of the change (PostgreSQL sends a notification when its
// transaction commits, never for one rolled back); each host's listener holds one connection that
// LISTENs and raises the change on its signals. While the listener is not connected the signals
// are not live, and waiters poll as they did without it; after it connects again every count moves,
// because notifications sent meanwhile are lost.
#pragma once

#include "postgres/pg_connection.hpp"
#include "store/change_signals.hpp"

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace agenthost::postgres {

// The channel each change is told on, and the one place that says so.
struct ChangeChannel {
    store::Change change;
    const char* channel;
    bool per_run;  // the payload's run is raised; otherwise the change of any run (0)
};
inline constexpr ChangeChannel kChangeChannels[] = {
    {store::Change::run_events, "agenthost_run_events", true},
    {store::Change::cancel_requested, "agenthost_cancel_requested", false},
    {store::Change::run_waiting, "agenthost_run_waiting", false},
    {store::Change::events_posted, "agenthost_events_posted", false},
};

// Tells every host's listener that `change` happened to each of `runs` (their ids are the
// payloads), when the transaction on `db` commits (at once outside a transaction).
Status notify(Connection& db, store::Change change, const std::vector<int64_t>& runs);

class PgListener {
public:
    // Starts listening on a connection of its own to `url`, raising on `signals` (which must
    // outlive the listener).
    PgListener(std::string url, store::ChangeSignals& signals);
    ~PgListener();
    PgListener(const PgListener&) = delete;
    PgListener& operator=(const PgListener&) = delete;

private:
    void work();
    // Connects, LISTENs, and raises what arrives until the connection is lost or the listener stops.
    void listen_once();
    bool stopping();
    void pause(std::chrono::milliseconds how_long);  // returns early when stopping

    std::string url_;
    store::ChangeSignals& signals_;
    int wake_fd_ = -1;  // an eventfd: written to stop the thread's poll()
    std::mutex mutex_;
    std::condition_variable stop_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace agenthost::postgres
