#include "store/run_owner.hpp"

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

const char* message_kind_name(MessageKind kind) {
    switch (kind) {
        case MessageKind::prompt: return "prompt";
        case MessageKind::answer: return "answer";
        default: return "step";
    }
}

MessageKind message_kind_from(const std::string& name) {
    if (name == "prompt") return MessageKind::prompt;
    if (name == "answer") return MessageKind::answer;
    return MessageKind::step;
}

std::string this_process_owner() { return host_name() + ":" + std::to_string(::getpid()) + ":" + start_time(::getpid()); }

OwnerState owner_state(const std::string& owner) {
    size_t a = owner.rfind(':');
    size_t b = a == std::string::npos || a == 0 ? std::string::npos : owner.rfind(':', a - 1);
    if (b == std::string::npos || owner.substr(0, b) != host_name()) return OwnerState::unknown;
    pid_t pid = static_cast<pid_t>(std::atol(owner.substr(b + 1, a - b - 1).c_str()));
    std::string started = start_time(pid);
    return started.empty() || started != owner.substr(a + 1) ? OwnerState::gone : OwnerState::alive;
}

Error idempotency_key_used(int64_t run) {
    return Error{"idempotency_key_used", (run ? "run " + std::to_string(run) : std::string("a run")) +
                                             " was already started with this Idempotency-Key; a key starts one run"};
}

Error conversation_busy(std::string_view conversation, int64_t run) {
    return Error{"conversation_busy",
                 "conversation " + std::string(conversation) + " already has " +
                     (run ? "run " + std::to_string(run) : std::string("a run")) +
                     " running (in this or another agenthost process); wait for it to finish, cancel it, or use "
                     "another conversation"};
}

std::string resumable_stop_reasons_sql() {
    std::string list;
    for (const StopInfo& row : all_stop_reasons())
        if (row.resumable) list += std::string(list.empty() ? "'" : ", '") + row.name + "'";
    return list;
}

double now_seconds() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

}  // namespace agenthost::store
