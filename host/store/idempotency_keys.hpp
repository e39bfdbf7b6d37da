// Idempotency-Key bookkeeping for the requests that start runs (POST /v1/chat/completions and
// /api/chat): a repeated key names the run the first request started, so a client's retry gets that
// run instead of a second one. The server keeps them in memory for one host (server/idempotency.hpp);
// a store several hosts share keeps them in the database, so a retry that a load balancer sends to
// another host finds the key too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace agenthost::store {

class IdempotencyKeys {
public:
    static constexpr size_t kMaxKeyLength = 255;
    static constexpr double kTtlSeconds = 24 * 3600;  // a key outlives a client's retries, no more

    enum class Found {
        fresh,        // first use: go on, then started() or forget()
        run,          // the first request started `run`
        in_progress,  // the first request has not started its run yet
        mismatch,     // same key, different body
        unavailable,  // the keys could not be read: nothing may start (a retry later is safe)
    };
    struct Lookup {
        Found found;
        int64_t run = 0;
    };

    // A key as kept, scoped to its route: the same key on two routes names two requests.
    static std::string scoped(std::string_view route, std::string_view key) {
        return std::string(route) + "\n" + std::string(key);
    }

    // A digest of the request body: the same key with another body is refused.
    static uint64_t fingerprint(std::string_view body) {
        uint64_t h = 1469598103934665603ull;  // FNV-1a
        for (unsigned char c : body) h = (h ^ c) * 1099511628211ull;
        return h ^ body.size();
    }

    virtual ~IdempotencyKeys() = default;
    // Records the key (scoped to its route) as in progress when it is new; else says what it names,
    // or `unavailable` when it cannot tell (never `fresh` then: that would let a second run start).
    virtual Lookup begin(const std::string& route, const std::string& key, uint64_t print) = 0;
    // The first request started its run.
    virtual void started(const std::string& route, const std::string& key, int64_t run) = 0;
    // The first request started no run (refused, busy): a retry with the key may try again.
    virtual void forget(const std::string& route, const std::string& key) = 0;
};

}  // namespace agenthost::store
