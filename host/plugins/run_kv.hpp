// A run's copy of what its provider wrote in the plugins' key-value store, so the provider reads
// its own writes back without asking the store (on PostgreSQL, a round trip per model call).
//
// Why a copy can be trusted: a provider's state for a run (the scripted provider's progress, a
// vendor's conversation id) is written only by that run, as a run holds its conversation on every
// host. And the copies see every write this host makes: another run, a tool plugin or a delete
// writing the same key drops it from every other run's copy. What a copy cannot see is another
// host writing the same key while the run goes on; agenthost.h says so (a key shared between
// conversations, such as a token every run refreshes, is read as this run last wrote it).
//
// A write reaches the copy when the provider runs in the host's process and writes on the thread
// the host called chat() from (RunKv::Bound, set around that call). A provider in a process of its
// own, or one writing from a thread of its own, reads the store every time.
#pragma once

#include "common/result.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace agenthost::plugins {

class RunKv;

// Where kv_get was answered from, counted for /metrics.
struct KvReads {
    uint64_t from_store = 0;
    uint64_t from_run = 0;
};

// Every live RunKv of one host's services: the one place a write tells the others.
class RunKvCopies {
public:
    // The run whose provider call runs on this thread, when it belongs to these copies.
    RunKv* bound() const;
    // What `run` wrote under (plugin, key); nullopt when it wrote nothing there (ask the store).
    std::optional<std::string> written(RunKv& run, std::string_view plugin, std::string_view key);
    // Stores a value `run` writes through `store_write`, and keeps it in that run's copy (or drops
    // it there when the store refused it). Every other copy forgets the key.
    Status write_kept(RunKv& run, std::string_view plugin, std::string_view key, std::string_view value,
                      const std::function<Status()>& store_write);
    // A write or delete no run keeps: every copy forgets the key, before and after it is stored
    // (a run keeping a write meanwhile wrote either before this one, or after it and so last).
    Status write_around(std::string_view plugin, std::string_view key, const std::function<Status()>& store_write);

    void count_read(bool from_run);
    KvReads reads() const;

private:
    friend class RunKv;
    void add(RunKv* run);
    void remove(RunKv* run);
    void forget_locked(const std::pair<std::string, std::string>& where);

    std::mutex mutex_;
    std::set<RunKv*> runs_;
    std::atomic<uint64_t> reads_from_store_{0};
    std::atomic<uint64_t> reads_from_run_{0};
};

// One run's copy; it lives as long as the run's turn.
class RunKv {
public:
    // What one run's copy holds at most, beside what the store holds: past it, the store answers.
    static constexpr size_t kMaxKeptBytes = size_t{4} * 1024 * 1024;

    explicit RunKv(RunKvCopies& copies);
    ~RunKv();
    RunKv(const RunKv&) = delete;
    RunKv& operator=(const RunKv&) = delete;

    // While it lives, key-value calls made on this thread are the run's; a null run: no run's (a
    // model call made outside a run). The binding before it comes back when it goes.
    class Bound {
    public:
        explicit Bound(RunKv* run);
        ~Bound();
        Bound(const Bound&) = delete;
        Bound& operator=(const Bound&) = delete;

    private:
        RunKv* previous_;
    };

private:
    friend class RunKvCopies;
    RunKvCopies& copies_;
    // Both guarded by copies_.mutex_.
    std::map<std::pair<std::string, std::string>, std::string> written_;
    size_t kept_bytes_ = 0;  // of the keys and values in written_

    void keep(std::pair<std::string, std::string> at, std::string_view value);
    void forget(const std::pair<std::string, std::string>& at);
};

}  // namespace agenthost::plugins
