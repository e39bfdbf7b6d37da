// What hosts sharing a store changed, told as it happens, so a host waits for a change instead of
// polling the store for it: new events of a run (a client on this host follows a run another host
// executes), a cancel request (for a run this host may execute), a run left for another host to
// take over. PostgreSQL tells them with LISTEN/NOTIFY (postgres/pg_listener.hpp).
//
// Each change has a count. A waiter reads the count, looks at the store, and if it found nothing
// new waits for the count to move: a change told between the look and the wait is never missed.
// Counts live in a fixed number of slots that runs share by hash, so memory stays bounded however
// many runs are told about; a change to one run may wake a waiter of another, which looks again and
// finds nothing.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace agenthost::store {

enum class Change {
    run_events,        // a run's events were appended (per run)
    cancel_requested,  // someone asked to cancel a run (any run)
    run_waiting,       // a run was left interrupted for a host to take over (any run)
    events_posted,     // a plugin posted an event for a conversation's next turn (any conversation)
};

class ChangeSignals {
public:
    // The count of `change` (of `run`'s events for Change::run_events; 0 for the others).
    uint64_t count(Change change, int64_t run = 0);
    // Waits until the count differs from `seen` or `timeout` passed; true when it moved.
    bool wait(Change change, int64_t run, uint64_t seen, std::chrono::milliseconds timeout);
    // Moves the count and wakes its waiters.
    void raise(Change change, int64_t run = 0);
    // Moves every count: changes may have gone untold (the listener lost its connection).
    void raise_all();

    // Whether changes are being told now. When not, a waiter must poll (wait with a short timeout).
    bool live() const { return live_.load(std::memory_order_acquire); }
    void set_live(bool live) { live_.store(live, std::memory_order_release); }

private:
    struct Slot {
        std::mutex mutex;
        std::condition_variable moved;
        uint64_t count = 0;
    };
    static constexpr size_t kSlots = 256;
    Slot& slot(Change change, int64_t run);

    std::array<Slot, kSlots> slots_;
    std::atomic<bool> live_{false};
};

}  // namespace agenthost::store
