// Why the server did not start or continue a run (RunHub's refusals): typed, so a caller decides by
// the stop reason itself, and the HTTP answer is that reason's row of the stop-reason table
// (error_table.hpp).
#pragma once

#include "common/stop_reason.hpp"

#include <string>

namespace agenthost::server {

struct Refusal {
    StopReason reason = StopReason::internal_error;
    std::string message;  // for the client: what refused the run, and what to do
};

}  // namespace agenthost::server
