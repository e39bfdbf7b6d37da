#include "server/event_publisher.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <vector>

namespace agenthost::server {

namespace {
constexpr size_t kBatch = 1000;                          // events per transaction at most
constexpr auto kGather = std::chrono::milliseconds(10);  // lets a burst of tokens share a commit
constexpr auto kRetryAfter = std::chrono::milliseconds(500);
constexpr int kTries = 3;  // per batch, then it is dropped (logged)

size_t bytes_of(const store::RunEvent& e) { return e.name.size() + e.data.size() + 32; }
}  // namespace

EventPublisher::EventPublisher(store::RunEventLog& log) : log_(log), thread_([this] { work(); }) {}

EventPublisher::~EventPublisher() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void EventPublisher::publish(store::RunEvent event) {
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(event));
        queued_bytes_ += bytes_of(queue_.back());
        ++published_;
        size_t dropped = 0;
        while (queued_bytes_ > kMaxQueuedBytes && queue_.size() > 1) {
            queued_bytes_ -= bytes_of(queue_.front());
            queue_.pop_front();
            ++settled_;
            ++dropped;
        }
        if (dropped) spdlog::warn("run events not shared: dropped={} reason=\"the event log is out of reach\"", dropped);
    }
    wake_.notify_one();
}

void EventPublisher::flush() {
    std::unique_lock lock(mutex_);
    uint64_t target = published_;
    written_.wait(lock, [&] { return settled_ >= target; });
}

void EventPublisher::work() {
    std::unique_lock lock(mutex_);
    while (true) {
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and all written
        if (!stopping_ && queue_.size() < kBatch) {
            lock.unlock();
            std::this_thread::sleep_for(kGather);
            lock.lock();
        }
        std::vector<store::RunEvent> batch;
        while (!queue_.empty() && batch.size() < kBatch) {
            queued_bytes_ -= bytes_of(queue_.front());
            batch.push_back(std::move(queue_.front()));
            queue_.pop_front();
        }
        lock.unlock();
        Status written = Error{"", ""};
        for (int attempt = 1; attempt <= kTries; ++attempt) {
            written = log_.append(batch);
            if (written) break;
            if (attempt < kTries) std::this_thread::sleep_for(kRetryAfter);
        }
        if (!written) spdlog::warn("run events not shared: dropped={} reason=\"{}\"", batch.size(), written.error().message);
        lock.lock();
        settled_ += batch.size();
        written_.notify_all();
    }
}

}  // namespace agenthost::server
