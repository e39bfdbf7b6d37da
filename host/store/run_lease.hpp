// Leases of the runs this process executes: one thread renews them all (a third of the lease period
// apart), so a long tool call does not make a live run look abandoned, and a run costs no thread of
// its own for it.
#pragma once

#include "store/run_journal.hpp"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>

namespace agenthost::store {

class LeaseKeeper {
public:
    LeaseKeeper(RunJournal& journal, int lease_seconds);
    ~LeaseKeeper();
    LeaseKeeper(const LeaseKeeper&) = delete;
    LeaseKeeper& operator=(const LeaseKeeper&) = delete;

    // Renews `run` from now on (its thread starts with the first run).
    void add(int64_t run);
    // Stops renewing `run`; returns once no renewal of it is in progress, so none races its end.
    void remove(int64_t run);
    // Runs renewed now.
    size_t size();

private:
    void renew_loop();

    RunJournal& journal_;
    const std::chrono::milliseconds every_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::set<int64_t> runs_;
    int64_t renewing_ = 0;  // the run whose renewal is in progress, 0 when none
    bool stopping_ = false;
    std::thread thread_;
};

// A run's place in the keeper, for as long as it lives.
class RunLease {
public:
    RunLease(LeaseKeeper& keeper, int64_t run) : keeper_(keeper), run_(run) { keeper_.add(run_); }
    ~RunLease() { keeper_.remove(run_); }
    RunLease(const RunLease&) = delete;
    RunLease& operator=(const RunLease&) = delete;

private:
    LeaseKeeper& keeper_;
    int64_t run_;
};

}  // namespace agenthost::store
