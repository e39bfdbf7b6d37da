#include "store/run_owner.hpp"

#include "store/store_error.hpp"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace agenthost::store {
namespace {

std::string host_name() {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0) return "unknown-host";
    return name;
}

// Field 22 of /proc/PID/stat: when the process started (clock ticks since boot). With the pid it
// names one process for good, even after the pid is reused.
// A process that has exited but is not yet reaped (a zombie) counts as gone: empty.
std::string start_time(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t close = stat.rfind(')');
    if (close == std::string::npos) return "";
    std::istringstream fields(stat.substr(close + 2));
    std::string field;
    for (int i = 3; i <= 22 && fields >> field; ++i) {
        if (i == 3 && (field == "Z" || field == "X")) return "";
    }
    return field;
}

}  // namespace

std::string this_process_owner() { return host_name() + ":" + std::to_string(::getpid()) + ":" + start_time(::getpid()); }

OwnerState owner_state(const std::string& owner) {
    size_t a = owner.rfind(':');
    size_t b = a == std::string::npos || a == 0 ? std::string::npos : owner.rfind(':', a - 1);
    if (b == std::string::npos || owner.substr(0, b) != host_name()) return OwnerState::unknown;
    pid_t pid = static_cast<pid_t>(std::atol(owner.substr(b + 1, a - b - 1).c_str()));
    std::string started = start_time(pid);
    return started.empty() || started != owner.substr(a + 1) ? OwnerState::gone : OwnerState::alive;
}

Status may_write(int64_t run, bool found, std::string_view holder, std::string_view status, std::string_view self) {
    const std::string which = "run " + std::to_string(run);
    if (!found) return store_error(StoreFault::not_found, which + " does not exist");
    if (!holder.empty() && holder != self)
        return store_error(StoreFault::lease_lost, which + " was taken over by " + std::string(holder) +
                                                       " after this process's lease lapsed; this process stops working on it");
    if (status == run_status_name(RunStatus::running)) return Ok{};
    if (status == run_status_name(RunStatus::interrupted))
        return store_error(StoreFault::lease_lost,
                           which +
                               " was marked interrupted after this process's lease lapsed (no step could be saved "
                               "for that long); this process stops working on it, and it can be resumed");
    return store_error(StoreFault::lease_lost,
                       which + " is " + std::string(status) +
                           " (another process ended it after this process's lease lapsed); this process stops "
                           "working on it");
}

Abandonment abandonment(const std::string& holder, bool lease_expired, const std::string& self) {
    if (holder == self) return lease_expired ? Abandonment::own_lease_lapsed : Abandonment::none;
    switch (owner_state(holder)) {
        case OwnerState::gone: return Abandonment::holder_gone;
        case OwnerState::unknown: return lease_expired ? Abandonment::lease_lapsed : Abandonment::none;
        case OwnerState::alive: return Abandonment::none;
    }
    return Abandonment::none;
}

const char* abandonment_text(Abandonment why) {
    switch (why) {
        case Abandonment::own_lease_lapsed:
            return "this process could not record the run's steps or end (the store refused writes or was out of reach) "
                   "and its lease lapsed";
        case Abandonment::holder_gone: return "the process running it stopped (killed or crashed)";
        case Abandonment::lease_lapsed:
            return "its host stopped renewing its lease (stopped, paused, cut off from the store, or gone)";
        case Abandonment::none: break;
    }
    return "";
}

Error idempotency_key_used(int64_t run) {
    return store_error(StoreFault::idempotency_key_used,
                       (run ? "run " + std::to_string(run) : std::string("a run")) +
                           " was already started with this Idempotency-Key; a key starts one run");
}

Error conversation_busy(std::string_view conversation, int64_t run) {
    return Error{"conversation_busy",
                 "conversation " + std::string(conversation) + " already has " +
                     (run ? "run " + std::to_string(run) : std::string("a run")) +
                     " running (in this or another agenthost process); wait for it to finish, cancel it, or use "
                     "another conversation"};
}

Error approval_pending(std::string_view conversation, int64_t run) {
    return store_error(StoreFault::approval_pending, "conversation " + std::string(conversation) + " has run " +
                                                         std::to_string(run) +
                                                         " waiting for approval of a call; approve or reject it first");
}

std::string claimable_sql() {
    std::string reasons;
    for (const StopInfo& row : all_stop_reasons())
        if (row.resumable) reasons += std::string(reasons.empty() ? "'" : ", '") + row.name + "'";
    auto word = [](RunStatus s) { return std::string(run_status_name(s)); };
    return "(status IN ('" + word(RunStatus::paused) + "', '" + word(RunStatus::interrupted) + "') OR (status = '" +
           word(RunStatus::failed) + "' AND stop_reason IN (" + reasons + ")))";
}

double now_seconds() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

}  // namespace agenthost::store
