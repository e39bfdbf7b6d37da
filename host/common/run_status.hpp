// A run's status as the store records it (the `runs.status` column holds the name).
#pragma once

#include <optional>
#include <string_view>

namespace agenthost {

enum class RunStatus {
    running,      // leased by a process that is advancing it
    paused,       // waiting for the user's approval of a call
    completed,    // ended with an answer
    failed,       // ended without one (its stop reason says why)
    interrupted,  // stopped by a shutdown or a crash; resumable
    cancelled,    // stopped by the user
};

constexpr std::string_view run_status_name(RunStatus status) {
    switch (status) {
    case RunStatus::running: return "running";
    case RunStatus::paused: return "paused";
    case RunStatus::completed: return "completed";
    case RunStatus::failed: return "failed";
    case RunStatus::interrupted: return "interrupted";
    case RunStatus::cancelled: return "cancelled";
    }
    return "failed";
}

constexpr std::optional<RunStatus> parse_run_status(std::string_view name) {
    for (RunStatus s : {RunStatus::running, RunStatus::paused, RunStatus::completed, RunStatus::failed,
                        RunStatus::interrupted, RunStatus::cancelled})
        if (run_status_name(s) == name) return s;
    return std::nullopt;
}

}  // namespace agenthost
