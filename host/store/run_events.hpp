// The events of runs, shared between hosts: the host executing a run appends them as they happen;
// a host asked to stream a run it does not execute reads them from here, after the client's
// Last-Event-ID. Only a store several hosts share keeps them (PostgreSQL); on SQLite the one host's
// run hub is the only source.
#pragma once

#include "common/result.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace agenthost::store {

// One event as SSE sends it: `seq` is its id within the run.
struct RunEvent {
    int64_t run = 0;
    uint64_t seq = 0;
    std::string name;
    std::string data;  // a JSON object
};

class RunEventLog {
public:
    virtual ~RunEventLog() = default;
    // Appends events (of any runs) in one transaction. An event whose (run, seq) is there already
    // replaces it: the later writer is the host executing the run now.
    virtual Status append(const std::vector<RunEvent>& events) = 0;
    // The run's events after `seq`, oldest first, at most `limit`.
    virtual std::vector<RunEvent> after(int64_t run, uint64_t seq, int limit) = 0;
    // The highest event number kept for the run (0 when none).
    virtual uint64_t last_seq(int64_t run) = 0;
    // Drops the events of runs that ended more than `seconds` ago. Returns rows deleted.
    virtual Result<int64_t> prune(double seconds) = 0;
};

}  // namespace agenthost::store
