// Threads started on demand, up to `max_threads`, and reused: a job gets a thread at once while
// fewer than `max_threads` are busy (more wait in order), and a thread idle for a while ends (down
// to `min_threads`). Starting a thread costs about 0.1 ms and a run or a connection would otherwise
// start one each.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <memory>
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
        reap();
        jobs_.push_back(std::move(fn));
        if (idle_ < jobs_.size() && live_ < max_) spawn();
        changed_.notify_one();
        return true;
    }

    // Runs every job already queued, then joins the threads.
    void shutdown() {
        std::list<Worker> workers;
        {
            std::lock_guard lock(mutex_);
            if (stopping_) return;
            stopping_ = true;
            changed_.notify_all();
            workers.swap(workers_);
        }
        for (auto& w : workers)
            if (w.thread.joinable()) w.thread.join();
    }

    size_t threads() {
        std::lock_guard lock(mutex_);
        return live_;
    }

private:
    struct Worker {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done;
    };

    void spawn() {
        auto done = std::make_shared<std::atomic<bool>>(false);
        ++live_;
        workers_.push_back({std::thread([this, done] { work(*done); }), done});
    }

    // Joins the workers that ended (idle too long).
    void reap() {
        for (auto it = workers_.begin(); it != workers_.end();) {
            if (!it->done->load()) {
                ++it;
                continue;
            }
            it->thread.join();
            it = workers_.erase(it);
        }
    }

    void work(std::atomic<bool>& done) {
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
        --live_;
        done = true;
    }

    static constexpr std::chrono::seconds kIdle{30};
    const size_t min_, max_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<std::function<void()>> jobs_;
    std::list<Worker> workers_;
    size_t idle_ = 0;
    size_t live_ = 0;  // workers not ended (workers_ lists ended ones until they are reaped)
    bool stopping_ = false;
};

}  // namespace agenthost::server
