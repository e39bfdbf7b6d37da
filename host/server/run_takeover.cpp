#include "server/run_takeover.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace agenthost::server {

namespace {
constexpr int kRunsPerPass = 16;  // the rest wait for the next pass (and for other hosts)
constexpr auto kPruneEvery = std::chrono::minutes(1);
}  // namespace

std::chrono::milliseconds RunTakeover::period(int lease_seconds) {
    return std::clamp(std::chrono::milliseconds(lease_seconds * 1000 / 3), std::chrono::milliseconds(1000),
                      std::chrono::milliseconds(10000));
}

RunTakeover::RunTakeover(app::HostApp& app, RunHub& hub, std::chrono::milliseconds every)
    : app_(app), hub_(hub), every_(every), thread_([this] { work(); }) {}

RunTakeover::~RunTakeover() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void RunTakeover::work() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        lock.unlock();
        pass();
        lock.lock();
        wake_.wait_for(lock, every_, [&] { return stopping_; });
    }
}

void RunTakeover::pass() {
    if (hub_.shutting_down()) return;
    auto& runs = app_.runs();
    runs.recover_interrupted();
    for (const auto& run : runs.interrupted_runs(kRunsPerPass)) {
        if (hub_.shutting_down()) break;
        if (hub_.conversation_busy(run.conversation) || takeovers_[run.id] >= kMaxTakeovers) continue;
        int64_t id = run.id;
        auto took = hub_.take_over(id, run.conversation, [this, id](const agent::RunControls& c) {
            agent::ResumeOptions options;
            options.claimed = true;
            return app_.runner().resume_run(id, options, c);
        });
        if (took) {
            spdlog::info("took over run: run={} conversation={} stopped_because=\"{}\"", id, run.conversation, run.error);
            ++takeovers_[id];
        } else if (took.error().code == "server_busy") {
            break;  // every slot is busy: leave the rest to hosts with room
        }
        // run_not_resumable: another host claimed it first.
    }
    auto now = std::chrono::steady_clock::now();
    if (auto* log = app_.stores().events(); log && now - last_prune_ >= kPruneEvery) {
        last_prune_ = now;
        if (auto pruned = log->prune(kKeepEndedEventsSeconds); pruned && *pruned > 0)
            spdlog::info("pruned run events: rows={}", *pruned);
    }
}

}  // namespace agenthost::server
