// How a turn's events look outside the process: one name and one JSON object per event. The SSE
// chat API (event: NAME / data: JSON) and `agenthost run --json` (one {"event": NAME, …} per line)
// both print this, so a script reads the same fields from either.
#pragma once

#include "agent/turn_runner.hpp"

#include <string>

namespace agenthost::agent {

struct WireEvent {
    std::string name;  // token, reasoning, tool_call, tool_result, log, tasks, approval, usage, queue, status, error, end
    std::string data;  // a JSON object; always has "seq"
};

WireEvent to_wire(const TurnEvent& event);

}  // namespace agenthost::agent
