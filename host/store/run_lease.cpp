#include "store/run_lease.hpp"

#include <algorithm>
#include <vector>

namespace agenthost::store {

LeaseKeeper::LeaseKeeper(RunJournal& journal, int lease_seconds)
    : journal_(journal), every_(std::max(200, lease_seconds * 1000 / 3)) {}

LeaseKeeper::~LeaseKeeper() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void LeaseKeeper::add(int64_t run) {
    std::lock_guard lock(mutex_);
    runs_.insert(run);
    if (!thread_.joinable()) thread_ = std::thread([this] { renew_loop(); });
}

void LeaseKeeper::remove(int64_t run) {
    std::unique_lock lock(mutex_);
    runs_.erase(run);
    changed_.wait(lock, [&] { return renewing_ != run; });
}

size_t LeaseKeeper::size() {
    std::lock_guard lock(mutex_);
    return runs_.size();
}

void LeaseKeeper::renew_loop() {
    std::unique_lock lock(mutex_);
    while (!changed_.wait_for(lock, every_, [this] { return stopping_; })) {
        std::vector<int64_t> due(runs_.begin(), runs_.end());
        for (int64_t run : due) {
            if (stopping_ || !runs_.count(run)) continue;  // removed meanwhile: its end may be written already
            renewing_ = run;
            lock.unlock();
            (void)journal_.renew(run);
            lock.lock();
            renewing_ = 0;
            changed_.notify_all();
        }
    }
}

}  // namespace agenthost::store
