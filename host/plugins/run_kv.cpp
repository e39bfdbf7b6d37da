#include "plugins/run_kv.hpp"

namespace agenthost::plugins {
namespace {

// The run whose provider call this thread is making (RunKv::Bound): a provider's kv calls carry no
// run, only the thread they are made on tells it.
thread_local RunKv* bound_run = nullptr;

std::pair<std::string, std::string> where(std::string_view plugin, std::string_view key) {
    return {std::string(plugin), std::string(key)};
}

}  // namespace

RunKv* RunKvCopies::bound() const { return bound_run && &bound_run->copies_ == this ? bound_run : nullptr; }

std::optional<std::string> RunKvCopies::written(RunKv& run, std::string_view plugin, std::string_view key) {
    std::lock_guard lock(mutex_);
    auto found = run.written_.find(where(plugin, key));
    if (found == run.written_.end()) return std::nullopt;
    return found->second;
}

Status RunKvCopies::write_kept(RunKv& run, std::string_view plugin, std::string_view key, std::string_view value,
                               const std::function<Status()>& store_write) {
    auto at = where(plugin, key);
    // Under the lock: the order of kept writes is the order the store took them in.
    std::lock_guard lock(mutex_);
    Status stored = store_write();
    forget_locked(at);
    if (stored) run.keep(std::move(at), value);
    return stored;
}

Status RunKvCopies::write_around(std::string_view plugin, std::string_view key, const std::function<Status()>& store_write) {
    auto at = where(plugin, key);
    {
        std::lock_guard lock(mutex_);
        forget_locked(at);
    }
    Status stored = store_write();
    std::lock_guard lock(mutex_);
    forget_locked(at);
    return stored;
}

void RunKvCopies::count_read(bool from_run) { ++(from_run ? reads_from_run_ : reads_from_store_); }

KvReads RunKvCopies::reads() const { return {reads_from_store_.load(), reads_from_run_.load()}; }

void RunKvCopies::add(RunKv* run) {
    std::lock_guard lock(mutex_);
    runs_.insert(run);
}

void RunKvCopies::remove(RunKv* run) {
    std::lock_guard lock(mutex_);
    runs_.erase(run);
}

void RunKvCopies::forget_locked(const std::pair<std::string, std::string>& at) {
    for (RunKv* run : runs_) run->forget(at);
}

RunKv::RunKv(RunKvCopies& copies) : copies_(copies) { copies_.add(this); }

RunKv::~RunKv() { copies_.remove(this); }

void RunKv::keep(std::pair<std::string, std::string> at, std::string_view value) {
    const size_t bytes = at.first.size() + at.second.size() + value.size();
    if (kept_bytes_ + bytes > kMaxKeptBytes) return;  // the store answers for it
    kept_bytes_ += bytes;
    written_.emplace(std::move(at), std::string(value));
}

void RunKv::forget(const std::pair<std::string, std::string>& at) {
    auto found = written_.find(at);
    if (found == written_.end()) return;
    kept_bytes_ -= found->first.first.size() + found->first.second.size() + found->second.size();
    written_.erase(found);
}

RunKv::Bound::Bound(RunKv* run) : previous_(bound_run) { bound_run = run; }

RunKv::Bound::~Bound() { bound_run = previous_; }

}  // namespace agenthost::plugins
