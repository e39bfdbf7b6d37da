// Threads started on demand, up to `max_threads`, and reused: a job gets a thread at once while
// fewer than `max_threads` are busy (more wait in order), and a thread idle for a while ends (down
// to `min_threads`). Starting a thread costs about 0.1 ms and a run or a connection would otherwise
// start one each.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace agenthost::server {

class WorkerPool {
public:
    WorkerPool(size_t min_threads, size_t max_threads) : min_(min_threads), max_(std::max(min_threads, max_threads)) {
        std::lock_guard lock(mutex_);
        for (size_t i = 0; i < min_; ++i) spawn();
    }
    ~WorkerPool() { shutdown(); }
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    // False (and `fn` not run) once shutdown() has begun.
    bool enqueue(std::function<void()> fn) {
        std::lock_guard lock(mutex_);
        if (stopping_) return false;
        jobs_.push_back(std::move(fn));
        if (idle_ < jobs_.size() && live_ < max_) spawn();
        changed_.notify_one();
        return true;
    }

    // Runs every job already queued, then waits for the threads to end.
    void shutdown() {
        std::unique_lock lock(mutex_);
        stopping_ = true;
        changed_.notify_all();
        ended_.wait(lock, [&] { return live_ == 0; });
    }

    size_t threads() {
        std::lock_guard lock(mutex_);
        return live_;
    }

private:
    // Workers are detached: one that ends gives its stack back at once. A joinable thread's stack
    // stays mapped until someone joins it, and nobody would until the next job came (measured: 35
    // ended workers held 24 KiB each after a wave, 0.8 MiB of the idle process).
    void spawn() {
        ++live_;
        std::thread([this] { work(); }).detach();
    }

    void work() {
        std::unique_lock lock(mutex_);
        for (;;) {
            ++idle_;
            bool woke = changed_.wait_for(lock, kIdle, [&] { return !jobs_.empty() || stopping_; });
            --idle_;
            if (stopping_ && jobs_.empty()) break;
            if (!woke) {
                if (live_ > min_) break;  // idle too long: end this one
                continue;
            }
            auto job = std::move(jobs_.front());
            jobs_.pop_front();
            lock.unlock();
            job();
            lock.lock();
        }
        // Woken under the lock: shutdown() returns only after this unlock, this thread's last use
        // of the pool (a notify after the unlock could reach a pool already destroyed).
        if (--live_ == 0) ended_.notify_all();
    }

    static constexpr std::chrono::seconds kIdle{10};
    const size_t min_, max_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::condition_variable ended_;  // the last worker ended
    std::deque<std::function<void()>> jobs_;
    size_t idle_ = 0;
    size_t live_ = 0;
    bool stopping_ = false;
};

}  // namespace agenthost::server
