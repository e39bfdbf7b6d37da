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
    for (RunStatus s : {RunStatus::running, RunStatus::paused, RunStatus::completed, RunStatus::failed, RunStatus::interrupted,
                        RunStatus::cancelled})
        if (run_status_name(s) == name) return s;
    return std::nullopt;
}

// Who started a run, as the store records it (the `runs.origin` column holds the name). A server's
// runs have clients that come back for them (by run id, by Idempotency-Key), so a server resumes
// those a crash or a shutdown left interrupted without being asked; a terminal's are its user's to
// resume ([store] takeover resumes them too).
enum class RunOrigin {
    cli,     // agenthost run / chat, or a program embedding the host
    server,  // agenthost serve: the chat, completions and runs APIs
};

constexpr std::string_view run_origin_name(RunOrigin origin) { return origin == RunOrigin::server ? "server" : "cli"; }

constexpr RunOrigin parse_run_origin(std::string_view name) { return name == "server" ? RunOrigin::server : RunOrigin::cli; }

}  // namespace agenthost
