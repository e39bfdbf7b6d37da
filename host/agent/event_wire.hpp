// How a turn's events look outside the process: one name and one JSON object per event. The SSE
// chat API (event: NAME / data: JSON) and `agenthost run --json` (one {"event": NAME, …} per line)
// both print this, so a script reads the same fields from either.
#pragma once

#include "agent/turn_runner.hpp"

#include <string>

namespace agenthost::agent {

// The wire names, written once: to_wire() gives them and the front ends that pick events by name
// compare with them.
namespace wire {
inline constexpr const char* token = "token";
inline constexpr const char* reasoning = "reasoning";
inline constexpr const char* tool_call = "tool_call";
inline constexpr const char* tool_result = "tool_result";
inline constexpr const char* log = "log";
inline constexpr const char* tasks = "tasks";
inline constexpr const char* approval = "approval";
inline constexpr const char* question = "question";
inline constexpr const char* usage = "usage";
inline constexpr const char* queue = "queue";
inline constexpr const char* provider_switch = "provider_switch";
inline constexpr const char* status = "status";
inline constexpr const char* error = "error";
inline constexpr const char* end = "end";
}  // namespace wire

struct WireEvent {
    std::string name;  // token, reasoning, tool_call, tool_result, log, tasks, approval, question, usage, queue, provider_switch,
                       // status, error, end
    std::string data;  // a JSON object; always has "seq"
};

WireEvent to_wire(const TurnEvent& event);

}  // namespace agenthost::agent
