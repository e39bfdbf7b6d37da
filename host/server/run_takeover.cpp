#include "server/run_takeover.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace agenthost::server {

namespace {
constexpr int kRunsPerPass = 16;  // the rest wait for the next pass (and for other hosts)
constexpr auto kPruneEvery = std::chrono::minutes(1);
}  // namespace

bool resumed_by_itself(RunOrigin origin, StopReason reason, bool takeover) {
    return reason == StopReason::store_failure ||
           (reason == StopReason::interrupted && (takeover || origin == RunOrigin::server));
}

std::optional<RunOrigin> resumed_origins(bool takeover) {
    return takeover ? std::nullopt : std::optional<RunOrigin>(RunOrigin::server);
}

std::chrono::milliseconds RunTakeover::period(int lease_seconds) {
    return std::clamp(std::chrono::milliseconds(lease_seconds * 1000 / 3), std::chrono::milliseconds(1000),
                      std::chrono::milliseconds(10000));
}

RunTakeover::RunTakeover(app::HostApp& app, RunHub& hub, std::chrono::milliseconds every, bool every_host)
    : app_(app), hub_(hub), every_(every), every_host_(every_host), thread_([this] { work(); }) {}

RunTakeover::~RunTakeover() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (auto* signals = app_.storage().signals()) signals->raise(store::Change::run_waiting);  // work() sees stopping_
    thread_.join();
}

void RunTakeover::work() {
    // A run another host left interrupted (stopped with SIGTERM) is told of at once where the store
    // tells changes; a host that died leaves no word, so a pass still comes every `every_`.
    store::ChangeSignals* signals = app_.storage().signals();
    std::unique_lock lock(mutex_);
    while (true) {
        // Read before stopping_ is (both under mutex_, which the destructor holds to set stopping_
        // before it moves the count), so the wait below never sleeps through the stop.
        const uint64_t seen = signals ? signals->count(store::Change::run_waiting) : 0;
        if (stopping_) break;
        lock.unlock();
        pass();
        if (signals && signals->live()) {
            signals->wait(store::Change::run_waiting, 0, seen, every_);
            lock.lock();
            continue;
        }
        lock.lock();
        wake_.wait_for(lock, every_, [&] { return stopping_; });
    }
}

void RunTakeover::pass() {
    if (hub_.shutting_down()) return;
    auto& runs = app_.runs();
    // The store failing: nothing is taken over this pass, the next one tries again.
    if (auto recovered = runs.recover_interrupted(); !recovered)
        spdlog::warn("takeover: abandoned runs could not be marked interrupted: {}", recovered.error().message);
    auto waiting_runs = runs.interrupted_runs(kRunsPerPass, resumed_origins(every_host_));
    if (!waiting_runs) {
        spdlog::warn("takeover: could not read the runs waiting to be resumed: {}", waiting_runs.error().message);
        return;
    }
    std::vector<store::RunRecord> candidates = std::move(*waiting_runs);
    // This host's own runs that stopped for the store: resumed here once they can be (a run whose
    // end could not be written is still `running` until its lease lapses and it is recovered).
    for (int64_t id : hub_.stranded()) {
        auto read = runs.run(id);
        if (!read) continue;  // unreadable now: asked again next pass
        const std::optional<store::RunRecord>& run = *read;
        if (!run) {
            hub_.forget_stranded(id);  // deleted since
            continue;
        }
        const bool waiting = run->status == RunStatus::interrupted ||
                             (run->status == RunStatus::failed && run->stop_reason == StopReason::store_failure);
        if (run->status == RunStatus::running) continue;
        if (!waiting) {
            hub_.forget_stranded(id);  // resumed, cancelled or ended meanwhile
            continue;
        }
        if (std::none_of(candidates.begin(), candidates.end(), [&](const store::RunRecord& c) { return c.id == id; }))
            candidates.push_back(*run);
    }
    for (const auto& run : candidates) {
        if (hub_.shutting_down()) break;
        if (takeovers_[run.id] >= kMaxTakeovers) {
            hub_.forget_stranded(run.id);
            continue;
        }
        if (hub_.conversation_busy(run.conversation)) continue;
        int64_t id = run.id;
        auto took = hub_.take_over(id, run.conversation, [this, id](const agent::RunControls& c) {
            agent::ResumeOptions options;
            options.claimed = true;
            return app_.runner().resume_run(id, options, c);
        });
        if (took) {
            spdlog::info("resumed run: run={} conversation={} stopped_because=\"{}\"", id, run.conversation, run.error);
            ++takeovers_[id];
            hub_.forget_stranded(id);
        } else if (took.error().reason == StopReason::server_busy) {
            break;  // every slot is busy: leave the rest to hosts with room
        }
        // run_not_resumable: another host claimed it first.
    }
    // What this pass read (pages in the store's cache) and what serving threads that ended since
    // the last run gave back to the allocator go back to the system while the server is idle.
    hub_.give_back_memory();
    auto now = std::chrono::steady_clock::now();
    if (auto* log = app_.storage().events(); log && now - last_prune_ >= kPruneEvery) {
        last_prune_ = now;
        if (auto pruned = log->prune(kKeepEndedEventsSeconds); pruned && *pruned > 0)
            spdlog::info("pruned run events: rows={}", *pruned);
    }
}

}  // namespace agenthost::server
