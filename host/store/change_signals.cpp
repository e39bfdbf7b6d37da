#include "store/change_signals.hpp"

#include <functional>

namespace agenthost::store {

ChangeSignals::Slot& ChangeSignals::slot(Change change, int64_t run) {
    const size_t mixed = std::hash<int64_t>{}(run)*31 + static_cast<size_t>(change);
    return slots_[mixed % kSlots];
}

uint64_t ChangeSignals::count(Change change, int64_t run) {
    Slot& s = slot(change, run);
    std::lock_guard lock(s.mutex);
    return s.count;
}

bool ChangeSignals::wait(Change change, int64_t run, uint64_t seen, std::chrono::milliseconds timeout) {
    Slot& s = slot(change, run);
    std::unique_lock lock(s.mutex);
    return s.moved.wait_for(lock, timeout, [&] { return s.count != seen; });
}

void ChangeSignals::raise(Change change, int64_t run) {
    Slot& s = slot(change, run);
    {
        std::lock_guard lock(s.mutex);
        ++s.count;
    }
    s.moved.notify_all();
}

void ChangeSignals::raise_all() {
    for (Slot& s : slots_) {
        {
            std::lock_guard lock(s.mutex);
            ++s.count;
        }
        s.moved.notify_all();
    }
}

}  // namespace agenthost::store
