// The cancellation token: fired by the host (a user's cancel, a deadline, a shutdown), read by
// the loop, the LLM queue and plugins (through ah_host_api.cancelled). agenthost.h declares
// `ah_cancel` opaque; this is its definition, shared by every layer that cancels or is cancelled.
#pragma once

#include <atomic>

struct ah_cancel {
    std::atomic<bool> fired{false};
    void cancel() { fired.store(true); }
    bool cancelled() const { return fired.load(); }
};
