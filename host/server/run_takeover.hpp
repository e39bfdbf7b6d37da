// Takes over the work of processes that stopped: every few seconds, runs left `running` by a dead
// process are marked interrupted, and interrupted runs are resumed on this host's workers — of
// several hosts trying, the store's claim gives each run to exactly one. The tool journal's rules
// are the resume's: no call that is not idempotent runs twice; one whose outcome is unknown is
// reported so. Also drops the shared event log's events of runs that ended long ago, and gives free
// memory back to the system while no run executes.
// Every server runs it, and resumes the runs servers started (a crash, a restart, a store that
// refused them: their clients come back for them); with [store] takeover (the default for
// PostgreSQL) also the runs `agenthost run` and `chat` left.
#pragma once

#include "app/host_app.hpp"
#include "server/run_hub.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace agenthost::server {

// Whether a run that stopped this way goes on without a person: a run failed by the store is resumed
// once the store works; an interrupted one when a server started it, or [store] takeover is on.
bool resumed_by_itself(RunOrigin origin, StopReason reason, bool takeover);
// The origins of the interrupted runs a server resumes (nullopt: every origin), by the same rule.
std::optional<RunOrigin> resumed_origins(bool takeover);

class RunTakeover {
public:
    // Passes `every` apart on a thread of its own, the first at once. `every_host`: [store] takeover.
    RunTakeover(app::HostApp& app, RunHub& hub, std::chrono::milliseconds every, bool every_host);
    ~RunTakeover();  // stops between passes
    RunTakeover(const RunTakeover&) = delete;
    RunTakeover& operator=(const RunTakeover&) = delete;

    // How often a host looks for work to take over, from the lease period: a third of it, 1 to 10 s.
    static std::chrono::milliseconds period(int lease_seconds);
    // Events of runs that ended this long ago leave the shared event log.
    static constexpr double kKeepEndedEventsSeconds = 3600;

private:
    void work();
    void pass();

    app::HostApp& app_;
    RunHub& hub_;
    std::chrono::milliseconds every_;
    bool every_host_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::chrono::steady_clock::time_point last_prune_{};
    // How often this process took each run over: a run that keeps coming back interrupted (a
    // checkpoint this version cannot read) is left to a human or another version after
    // kMaxTakeovers, not retaken every pass.
    static constexpr int kMaxTakeovers = 3;
    std::map<int64_t, int> takeovers_;
    std::thread thread_;
};

}  // namespace agenthost::server
