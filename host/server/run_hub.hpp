// The server's runs: each executes on its own worker (at most max_concurrent_runs at once), its
// events are numbered and kept so a client can reconnect with Last-Event-ID without loss or
// duplicates, and a client that goes away does not stop its run. One run per conversation at a time.
#pragma once

#include "agent/turn_runner.hpp"
#include "app/host_app.hpp"
#include "server/event_publisher.hpp"
#include "server/question_slot.hpp"
#include "server/refusal.hpp"
#include "server/worker_pool.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

namespace agenthost::server {

// One SSE event: `seq` is the run's event number (its SSE id).
struct HubEvent {
    uint64_t seq;
    std::string
        name;  // token, reasoning, tool_call, tool_result, log, tasks, approval, question, usage, queue, status, error, end
    std::string data;  // JSON object
};

// The events of one run, as they happen, kept within a byte budget: past it the oldest events are
// dropped, and a reader that asks for them gets one "gap" event (seq = the last one dropped) telling
// it to reload the transcript from the store, so memory stays bounded while no loss goes unnoticed.
class RunChannel {
public:
    RunChannel(std::string conversation, size_t max_bytes) : conversation_(std::move(conversation)), max_bytes_(max_bytes) {}
    const std::string& conversation() const { return conversation_; }

    void push(HubEvent event);
    // Marks the end of what is executing now (a paused run may be continued and push again).
    void settle(const agent::TurnOutcome& outcome);
    // Events after `after`, waiting up to `timeout` for one; `done` says that the run has settled
    // and every event has been returned.
    std::vector<HubEvent> after(uint64_t after, std::chrono::milliseconds timeout, bool& done);
    // Waits until the run settles; returns its outcome.
    agent::TurnOutcome wait();
    // The same, for at most `timeout` (nullopt: still running).
    std::optional<agent::TurnOutcome> wait_for(std::chrono::milliseconds timeout);
    bool busy() const;
    void set_busy();
    size_t bytes() const;
    // The run these events belong to (0 until the run exists).
    int64_t run() const { return run_; }
    void set_run(int64_t run) { run_ = run; }

    ah_cancel cancel;
    QuestionSlot questions;  // what a plugin asks the person during the run's calls
    // Whether anyone can answer those: not for a run of the OpenAI-compatible API, whose client
    // sees no question (a chat's, and a run continued through the runs API, can).
    std::atomic<bool> person_answers{true};

private:
    std::string conversation_;
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    size_t max_bytes_;
    std::deque<HubEvent> events_;
    size_t bytes_ = 0;           // of the events kept
    uint64_t dropped_upto_ = 0;  // the last seq a reader cannot have from here, 0 when none
    // Why the events up to dropped_upto_ are not here: dropped for the byte budget, or sent before
    // this channel existed (a run resumed after a restart, a takeover, or forgotten and continued).
    enum class Missing { budget, earlier } missing_ = Missing::budget;
    bool pushed_ = false;
    bool busy_ = true;
    agent::TurnOutcome outcome_;
    std::atomic<int64_t> run_{0};
};

class RunHub {
public:
    RunHub(app::HostApp& app, const config::ServerSettings& settings);
    ~RunHub();
    RunHub(const RunHub&) = delete;
    RunHub& operator=(const RunHub&) = delete;

    // Starts a turn; returns its run id once the run exists. Errors: conversation_busy,
    // server_busy (every slot busy and max_waiting_runs waiting), shutting_down, or the runner's.
    // `client_gone`, when given, is asked while the run waits for a slot: once the client has left,
    // the run is never started (error client_gone), so no run exists that no client learnt of.
    // `person_answers`: whether the run's questions can be answered (POST /api/runs/N/answer).
    Result<int64_t, Refusal> start(agent::TurnRequest request, const std::function<bool()>& client_gone = {},
                                   bool person_answers = true);
    // Continues a stored run on a worker (approve / reject / resume). `how` runs the runner.
    Result<int64_t, Refusal> continue_run(int64_t run, const std::string& conversation,
                                          std::function<agent::TurnOutcome(const agent::RunControls&)> how);
    // Takes over a run another process left interrupted: claims it in the store first (so of
    // several hosts trying, exactly one gets it), then continues it on a worker like continue_run.
    // Errors: the claim's (run_not_resumable when another host was first), or reserve's.
    Result<int64_t, Refusal> take_over(int64_t run, const std::string& conversation,
                                       std::function<agent::TurnOutcome(const agent::RunControls&)> how);

    std::shared_ptr<RunChannel> channel(int64_t run);
    // Drops the kept events of a deleted conversation's runs (none of them executes).
    void forget_conversation(const std::string& conversation);
    bool conversation_busy(const std::string& conversation);
    // Fires the run's cancel token; false when it is not executing here.
    bool cancel(int64_t run);

    // Stops every run at its next step boundary, waits up to `grace`, then cancels the rest (they
    // are left interrupted) and joins the workers.
    void shutdown(std::chrono::seconds grace);
    bool shutting_down() const { return stopping_; }
    size_t executing();
    size_t waiting();
    // While no run executes or waits: the store's caches and the allocator's free pages go back
    // to the system (memory_budget.hpp). Called when the last run ends, and by the takeover pass.
    void give_back_memory();

    // Runs this host stopped because the store refused a step or their end (store_failure): the
    // takeover pass resumes them once the store works again, whatever [store] takeover says.
    std::vector<int64_t> stranded();
    bool is_stranded(int64_t run);
    void forget_stranded(int64_t run);

private:
    Result<std::shared_ptr<RunChannel>, Refusal> reserve(const std::string& conversation, int64_t run);
    void unreserve(const std::string& conversation);
    // A run waiting for a slot, which its requester may withdraw (its client left): under mutex_,
    // `taken` once the run has its slot, `withdrawn` once it never will.
    struct Ticket {
        bool taken = false;
        bool withdrawn = false;
    };
    void launch(const std::shared_ptr<RunChannel>& channel, std::function<agent::TurnOutcome(const agent::RunControls&)> how,
                std::function<void(int64_t)> started, uint64_t events_after, std::shared_ptr<Ticket> ticket = nullptr);
    // Gives a waiting run's place back at once (nothing is started for it); false when it already
    // has its slot.
    bool withdraw(Ticket& ticket, const std::string& conversation);
    // Where a continued run's events start: past every event of it any host may have announced.
    uint64_t events_after(int64_t run);
    void remember(int64_t run, std::shared_ptr<RunChannel> channel);
    // Forgets the oldest finished runs while there are too many or their events are too big.
    void forget_oldest();

    app::HostApp& app_;
    const config::ServerSettings& settings_;
    std::atomic<bool> stopping_{false};
    std::mutex mutex_;
    std::condition_variable slots_;
    int running_ = 0;
    int waiting_ = 0;                                      // runs reserved, waiting for a slot
    std::set<std::string> busy_;                           // conversations with a run executing
    std::map<int64_t, std::shared_ptr<RunChannel>> runs_;  // recent runs' events
    std::deque<int64_t> order_;                            // for forgetting the oldest
    std::set<int64_t> stranded_;                           // see stranded()
    // Shares this host's run events with the other hosts (a store with an event log only).
    std::unique_ptr<EventPublisher> publisher_;
    // Cancels the runs other hosts were asked to cancel (a store with cancel requests only).
    void watch_cancels();
    std::mutex watch_mutex_;
    std::condition_variable watch_wake_;
    std::thread cancel_watch_;
    // The runs' threads, reused (max_concurrent_runs at most; more runs wait in order). Declared
    // last, so its threads are joined before anything they use is destroyed.
    std::unique_ptr<WorkerPool> workers_;
};

// The SSE name and JSON data of a runner event.
HubEvent to_hub_event(const agent::TurnEvent& event);

}  // namespace agenthost::server
