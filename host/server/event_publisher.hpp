// Copies the events of the runs this host executes into the shared event log (PostgreSQL), so a
// host streaming a run it does not execute can read them. Batches leave on a thread of its own:
// the runner never waits for the database, and a run's events are written in the order they
// happened.
#pragma once

#include "store/run_events.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

namespace agenthost::server {

class EventPublisher {
public:
    explicit EventPublisher(store::RunEventLog& log);
    ~EventPublisher();  // writes what is queued (a few tries), then stops
    EventPublisher(const EventPublisher&) = delete;
    EventPublisher& operator=(const EventPublisher&) = delete;

    void publish(store::RunEvent event);
    // Waits until everything published so far has been written (or given up on).
    void flush();

    // Events queued while the database is out of reach are kept up to this many bytes; past it the
    // oldest are dropped (with a warning): other hosts' followers miss them, the transcript does not.
    static constexpr size_t kMaxQueuedBytes = size_t{64} << 20;

private:
    void work();

    store::RunEventLog& log_;
    std::mutex mutex_;
    std::condition_variable wake_, written_;
    std::deque<store::RunEvent> queue_;
    size_t queued_bytes_ = 0;
    uint64_t published_ = 0, settled_ = 0;  // events handed in / written or dropped
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace agenthost::server
