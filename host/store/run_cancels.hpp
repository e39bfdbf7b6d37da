// Cancel requests for runs another host executes: a host asked to cancel a run it does not execute
// records the request; the host executing it is told at once (store/change_signals.hpp; it also
// looks every few seconds, twice a second while not told) and cancels the run
// as if asked directly. Only a store several hosts share keeps them (PostgreSQL).
#pragma once

#include "common/result.hpp"

#include <cstdint>
#include <vector>

namespace agenthost::store {

class RunCancels {
public:
    virtual ~RunCancels() = default;
    // Records a request to cancel `run`; an error when the run is not running.
    virtual Status request(int64_t run) = 0;
    // The running runs this process holds that someone asked to cancel; each is returned once.
    virtual std::vector<int64_t> take_mine() = 0;
};

}  // namespace agenthost::store
