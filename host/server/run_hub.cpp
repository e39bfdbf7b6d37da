#include "server/run_hub.hpp"

#include "agent/event_wire.hpp"
#include "server/memory_budget.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace agenthost::server {

using agent::TurnEvent;
using nlohmann::json;

HubEvent to_hub_event(const TurnEvent& e) {
    auto wire = agent::to_wire(e);
    return {e.seq, std::move(wire.name), std::move(wire.data)};
}

// ---- RunChannel ----------------------------------------------------------------------------------

namespace {
size_t cost(const HubEvent& e) { return e.name.size() + e.data.size() + 64; }

// A run whose client left while it waited for a slot: it was never started.
constexpr const char* kClientGone = "the client left before a run slot was free; nothing was started";

agent::TurnOutcome client_gone_outcome() {
    agent::TurnOutcome out;
    out.stop_reason = StopReason::client_gone;
    out.error = kClientGone;
    return out;
}
}  // namespace

void RunChannel::push(HubEvent event) {
    {
        std::lock_guard lock(mutex_);
        // A continued run: what came before is not here. Its last ending's events (the ids just
        // before this one) are superseded by the continuation: a reader who saw everything before
        // them missed nothing.
        if (!pushed_ && event.seq > 1 + agent::kEndingEvents) {
            dropped_upto_ = event.seq - 1 - agent::kEndingEvents;
            missing_ = Missing::earlier;
        }
        pushed_ = true;
        bytes_ += cost(event);
        events_.push_back(std::move(event));
        while (bytes_ > max_bytes_ && events_.size() > 1) {  // the newest event always stays
            bytes_ -= cost(events_.front());
            dropped_upto_ = events_.front().seq;
            missing_ = Missing::budget;
            events_.pop_front();
        }
    }
    changed_.notify_all();
}

size_t RunChannel::bytes() const {
    std::lock_guard lock(mutex_);
    return bytes_;
}

void RunChannel::settle(const agent::TurnOutcome& outcome) {
    {
        std::lock_guard lock(mutex_);
        busy_ = false;
        outcome_ = outcome;
    }
    changed_.notify_all();
}

void RunChannel::set_busy() {
    std::lock_guard lock(mutex_);
    busy_ = true;
    cancel.fired = false;   // a continued run starts uncancelled
    person_answers = true;  // and is continued through the runs API, whose client can answer
}

bool RunChannel::busy() const {
    std::lock_guard lock(mutex_);
    return busy_;
}

std::vector<HubEvent> RunChannel::after(uint64_t after, std::chrono::milliseconds timeout, bool& done) {
    std::unique_lock lock(mutex_);
    auto newer = [&] { return !events_.empty() && events_.back().seq > after; };
    changed_.wait_for(lock, timeout, [&] { return newer() || !busy_; });
    std::vector<HubEvent> out;
    if (after < dropped_upto_) {  // what the reader missed is no longer kept: say so, once, and go on
        const std::string range = "events " + std::to_string(after + 1) + " to " + std::to_string(dropped_upto_);
        json gap{{"seq", dropped_upto_},
                 {"from", after + 1},
                 {"to", dropped_upto_},
                 {"message", missing_ == Missing::budget
                                 ? range + " are no longer kept ([server] run_events_mb); reload the conversation for them"
                                 : range + " were sent before the run was resumed here (ids may skip: none is given twice)"
                                           " and are not kept; reload the conversation for them"}};
        out.push_back({dropped_upto_, "gap", gap.dump()});
    }
    for (const auto& e : events_)
        if (e.seq > after) out.push_back(e);
    done = !busy_;
    return out;
}

std::optional<agent::TurnOutcome> RunChannel::wait_for(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, timeout, [&] { return !busy_; })) return std::nullopt;
    return outcome_;
}

agent::TurnOutcome RunChannel::wait() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !busy_; });
    return outcome_;
}

// ---- RunHub --------------------------------------------------------------------------------------

RunHub::RunHub(app::HostApp& app, const config::ServerSettings& settings)
    : app_(app),
      settings_(settings),
      workers_(std::make_unique<WorkerPool>(0, static_cast<size_t>(std::max(1, settings.max_concurrent_runs)))) {
    if (auto* log = app_.storage().events()) publisher_ = std::make_unique<EventPublisher>(*log);
    if (app_.storage().cancels()) cancel_watch_ = std::thread([this] { watch_cancels(); });
}

void RunHub::watch_cancels() {
    constexpr auto kEvery = std::chrono::milliseconds(500);  // while no one tells of requests
    constexpr auto kToldEvery = std::chrono::seconds(5);     // while told: a look now and then all the same
    store::ChangeSignals* signals = app_.storage().signals();
    while (true) {
        // Read before stopping_ is: shutdown sets stopping_, then moves the count, so a wait below
        // never sleeps through it.
        const uint64_t seen = signals ? signals->count(store::Change::cancel_requested) : 0;
        if (stopping_) break;
        for (int64_t run : app_.storage().cancels()->take_mine())
            if (cancel(run)) spdlog::info("run cancelled at another host's request: run={}", run);
        if (signals && signals->live()) {
            signals->wait(store::Change::cancel_requested, 0, seen, kToldEvery);
            continue;
        }
        std::unique_lock lock(watch_mutex_);
        watch_wake_.wait_for(lock, kEvery, [&] { return stopping_.load(); });
    }
}

RunHub::~RunHub() { shutdown(std::chrono::seconds(0)); }

Result<std::shared_ptr<RunChannel>, Refusal> RunHub::reserve(const std::string& conversation, int64_t run) {
    std::lock_guard lock(mutex_);
    if (stopping_) return Refusal{StopReason::shutting_down, "the server is shutting down; try again after it restarts"};
    if (busy_.count(conversation))
        return Refusal{StopReason::conversation_busy,
                       "conversation " + conversation + " has a run in progress; wait for it to end"};
    // A run waiting for a slot holds the request that started it: bounded, so requests are answered
    // at once (429 with Retry-After) instead of holding HTTP threads.
    if (running_ + waiting_ >= settings_.max_concurrent_runs + settings_.max_waiting_runs) {
        spdlog::warn("run refused: server_busy running={} waiting={} max_concurrent_runs={} max_waiting_runs={}", running_,
                     waiting_, settings_.max_concurrent_runs, settings_.max_waiting_runs);
        return Refusal{StopReason::server_busy, "all " + std::to_string(settings_.max_concurrent_runs) +
                                                    " run slots are busy and " + std::to_string(waiting_) +
                                                    " runs wait for one ([server] max_concurrent_runs, "
                                                    "max_waiting_runs); try again after Retry-After"};
    }
    ++waiting_;
    busy_.insert(conversation);
    if (run) {
        if (auto it = runs_.find(run); it != runs_.end()) {
            it->second->set_busy();
            return it->second;
        }
    }
    auto channel = std::make_shared<RunChannel>(conversation, static_cast<size_t>(settings_.run_events_mb) << 20);
    channel->set_run(run);
    return channel;
}

void RunHub::unreserve(const std::string& conversation) {
    {
        std::lock_guard lock(mutex_);
        --waiting_;
        busy_.erase(conversation);
    }
    slots_.notify_all();
}

uint64_t RunHub::events_after(int64_t run) {
    if (!publisher_) return 0;
    // Events the host that ran it last had not written yet when it stopped are not in the log: the
    // margin numbers the continuation past them too (SSE ids may skip, never repeat).
    constexpr uint64_t kUnwrittenMargin = 1000;
    uint64_t last = app_.storage().events()->last_seq(run);
    return last == 0 ? 0 : last + kUnwrittenMargin;
}

void RunHub::remember(int64_t run, std::shared_ptr<RunChannel> channel) {
    std::lock_guard lock(mutex_);
    if (runs_.emplace(run, std::move(channel)).second) order_.push_back(run);
    forget_oldest();
}

void RunHub::forget_oldest() {
    size_t budget = static_cast<size_t>(settings_.kept_events_mb) << 20, total = 0;
    for (const auto& [id, channel] : runs_) total += channel->bytes();
    while (!order_.empty() && (order_.size() > static_cast<size_t>(settings_.kept_event_runs) || total > budget)) {
        auto oldest = runs_.find(order_.front());
        if (oldest != runs_.end() && oldest->second->busy()) break;  // never forget a live run
        if (oldest != runs_.end()) {
            total -= oldest->second->bytes();
            runs_.erase(oldest);
        }
        order_.pop_front();
    }
}

void RunHub::launch(const std::shared_ptr<RunChannel>& channel, std::function<agent::TurnOutcome(const agent::RunControls&)> how,
                    std::function<void(int64_t)> started, uint64_t events_after, std::shared_ptr<Ticket> ticket) {
    auto refused = [this, channel, started] {  // the hub stopped between reserve() and now: nothing starts
        agent::TurnOutcome outcome;
        outcome.stop_reason = StopReason::interrupted;
        outcome.error = "the server is shutting down; try again after it restarts";
        if (started) started(0);
        channel->settle(outcome);
        unreserve(channel->conversation());
    };
    bool queued = workers_->enqueue([this, channel, events_after, how = std::move(how), started = std::move(started), ticket] {
        {
            std::unique_lock slot(mutex_);
            slots_.wait(slot,
                        [&] { return running_ < settings_.max_concurrent_runs || stopping_ || (ticket && ticket->withdrawn); });
            if (ticket && ticket->withdrawn) {  // its place was given back already: nothing to count, nothing to run
                slot.unlock();
                if (started) started(0);
                channel->settle(client_gone_outcome());
                return;
            }
            if (ticket) ticket->taken = true;
            --waiting_;
            ++running_;
        }
        agent::RunControls controls;
        controls.cancel = &channel->cancel;
        controls.stop_requested = &stopping_;
        controls.on_event = [this, channel](const TurnEvent& e) {
            HubEvent event = to_hub_event(e);
            if (publisher_) publisher_->publish({channel->run(), event.seq, event.name, event.data});
            channel->push(std::move(event));
        };
        controls.on_started = [channel, started](int64_t run) {
            channel->set_run(run);
            if (started) started(run);
        };
        controls.events_after = events_after;
        if (channel->person_answers)
            controls.ask_person = [channel](const agent::PersonQuestion& q) {
                return channel->questions.ask(q, channel->cancel, plugins::caller_request(plugins::CallerRequest::elicit).wait);
            };
        agent::TurnOutcome outcome;
        try {
            outcome = how(controls);
        } catch (const std::exception& e) {  // nothing may take the server down
            outcome.stop_reason = StopReason::internal_error;
            outcome.error = e.what();
            spdlog::error("run failed with an exception: {}", e.what());
        }
        if (started && outcome.run == 0) started(0);  // the run never started: wake whoever waits for it
        if (outcome.run && outcome.stop_reason == StopReason::store_failure) {
            std::lock_guard slot(mutex_);
            stranded_.insert(outcome.run);  // before its end is seen: a stream holds that end back
        }
        channel->settle(outcome);
        bool idle = false;
        {
            std::lock_guard slot(mutex_);
            --running_;
            idle = running_ == 0 && waiting_ == 0;
            busy_.erase(channel->conversation());
            forget_oldest();  // this run's events now count among the finished ones
        }
        slots_.notify_all();
        if (idle) give_back_memory();
    });
    if (!queued) refused();
}

Result<int64_t, Refusal> RunHub::start(agent::TurnRequest request, const std::function<bool()>& client_gone,
                                       bool person_answers) {
    auto channel = reserve(request.conversation_id, 0);
    if (!channel) return channel.error();
    (*channel)->person_answers = person_answers;
    struct Started {
        std::mutex mutex;
        std::condition_variable ready;
        std::optional<int64_t> run;
    };
    auto started = std::make_shared<Started>();
    // The request, held until the run takes it: a withdrawn one is dropped at once (its prompt too).
    struct Held {
        std::mutex mutex;
        std::optional<agent::TurnRequest> request;
    };
    auto held = std::make_shared<Held>();
    const std::string conversation = request.conversation_id;
    request.origin = RunOrigin::server;
    held->request = std::move(request);
    auto ticket = std::make_shared<Ticket>();
    launch(
        *channel,
        [this, held](const agent::RunControls& c) {
            std::optional<agent::TurnRequest> taken;
            {
                std::lock_guard lock(held->mutex);
                taken.swap(held->request);
            }
            if (!taken) return client_gone_outcome();        // its client left while it waited for a slot
            return app_.runner().run(std::move(*taken), c);  // a large prompt is held by the run alone
        },
        [started](int64_t run) {
            std::lock_guard lock(started->mutex);
            if (!started->run) started->run = run;
            started->ready.notify_all();
        },
        0, ticket);
    std::unique_lock lock(started->mutex);
    constexpr auto kLookAtClient = std::chrono::milliseconds(200);
    bool abandoned = false;
    while (!started->ready.wait_for(lock, kLookAtClient, [&] { return started->run.has_value(); }))
        if (client_gone && !abandoned && client_gone()) {
            abandoned = true;
            {
                std::lock_guard drop(held->mutex);
                held->request.reset();  // never started: its prompt goes now, not when a slot frees
            }
            spdlog::info("run not started: client_gone conversation={}", conversation);
            if (withdraw(*ticket, conversation))  // its waiting place goes now too; nobody waits for the answer
                return Refusal{StopReason::client_gone, kClientGone};
        }
    if (*started->run == 0) {
        auto outcome = (*channel)->wait();
        return Refusal{outcome.stop_reason, outcome.error};
    }
    remember(*started->run, *channel);
    return *started->run;
}

Result<int64_t, Refusal> RunHub::continue_run(int64_t run, const std::string& conversation,
                                              std::function<agent::TurnOutcome(const agent::RunControls&)> how) {
    auto channel = reserve(conversation, run);
    if (!channel) return channel.error();
    remember(run, *channel);
    launch(*channel, std::move(how), nullptr, events_after(run));
    return run;
}

Result<int64_t, Refusal> RunHub::take_over(int64_t run, const std::string& conversation,
                                           std::function<agent::TurnOutcome(const agent::RunControls&)> how) {
    auto channel = reserve(conversation, run);
    if (!channel) return channel.error();
    if (auto claimed = app_.runs().claim(run); !claimed) {
        unreserve(conversation);
        return Refusal{agent::store_refusal(claimed.error(), StopReason::store_unavailable), claimed.error().message};
    }
    remember(run, *channel);
    launch(*channel, std::move(how), nullptr, events_after(run));
    return run;
}

void RunHub::forget_conversation(const std::string& conversation) {
    std::lock_guard lock(mutex_);
    for (auto it = runs_.begin(); it != runs_.end();) {
        if (it->second->conversation() == conversation && !it->second->busy()) {
            stranded_.erase(it->first);
            it = runs_.erase(it);
        } else {
            ++it;
        }
    }
}

bool RunHub::withdraw(Ticket& ticket, const std::string& conversation) {
    {
        std::lock_guard lock(mutex_);
        if (ticket.taken || ticket.withdrawn) return false;
        ticket.withdrawn = true;
        --waiting_;
        busy_.erase(conversation);
    }
    slots_.notify_all();
    return true;
}

void RunHub::give_back_memory() {
    {
        std::lock_guard lock(mutex_);
        if (running_ != 0 || waiting_ != 0) return;
    }
    app_.storage().release_memory();
    release_free_memory();
}

bool RunHub::is_stranded(int64_t run) {
    std::lock_guard lock(mutex_);
    return stranded_.count(run) > 0;
}

std::vector<int64_t> RunHub::stranded() {
    std::lock_guard lock(mutex_);
    return {stranded_.begin(), stranded_.end()};
}

void RunHub::forget_stranded(int64_t run) {
    std::lock_guard lock(mutex_);
    stranded_.erase(run);
}

std::shared_ptr<RunChannel> RunHub::channel(int64_t run) {
    std::lock_guard lock(mutex_);
    auto it = runs_.find(run);
    return it == runs_.end() ? nullptr : it->second;
}

bool RunHub::conversation_busy(const std::string& conversation) {
    std::lock_guard lock(mutex_);
    return busy_.count(conversation) > 0;
}

bool RunHub::cancel(int64_t run) {
    auto c = channel(run);
    if (!c || !c->busy()) return false;
    c->cancel.cancel();
    return true;
}

size_t RunHub::executing() {
    std::lock_guard lock(mutex_);
    return static_cast<size_t>(running_);
}

size_t RunHub::waiting() {
    std::lock_guard lock(mutex_);
    return static_cast<size_t>(waiting_);
}

void RunHub::shutdown(std::chrono::seconds grace) {
    {
        std::lock_guard lock(watch_mutex_);
        stopping_ = true;
    }
    watch_wake_.notify_all();
    if (auto* signals = app_.storage().signals()) signals->raise(store::Change::cancel_requested);  // the watcher sees stopping_
    if (cancel_watch_.joinable()) cancel_watch_.join();
    slots_.notify_all();
    auto deadline = std::chrono::steady_clock::now() + grace;
    while (executing() > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    {
        std::lock_guard lock(mutex_);
        for (auto& [id, channel] : runs_)
            if (channel->busy()) channel->cancel.cancel();  // with stopping_ set, the runner leaves them interrupted
    }
    workers_->shutdown();                 // the runs still queued start, see the shutdown and leave themselves interrupted
    if (publisher_) publisher_->flush();  // the last events reach the other hosts before this one goes
}

}  // namespace agenthost::server
