// The server's memory: a budget new work is admitted against, and an allocator that gives memory
// back after a burst.
//
// glibc raises its mmap threshold each time a large block is freed (up to 32 MiB), so after a wave
// of large prompts their buffers came from the heap arenas, and the arenas kept the pages: three
// waves of 24 chats with 3 MiB messages left an idle server at 1.06 GB. With the threshold fixed,
// every block of 256 KiB or more is mapped and unmapped on its own, and what is left in the arenas
// is trimmed when the last run ends (docs/performance.md has the figures).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace agenthost::server {

// Fixes the allocator's thresholds (mallopt) for a long-running server. Once, before serving.
void tune_allocator_for_serving();
// Gives the free pages of every arena back to the system (malloc_trim), as when no run executes.
void release_free_memory();

class MemoryBudget {
public:
    // `max_mb`: [server] max_memory_mb; 0: a quarter of the machine's memory.
    explicit MemoryBudget(int max_mb);

    // What a request body of `body_bytes` costs the process while it is served: its text, parsed
    // and handed through the turn, as a multiple of its size (measured: 2.5-2.8x for concurrent
    // completions, docs/performance.md, but 8.2x for one /api/chat body: the largest is kept).
    static constexpr size_t kCostPerBodyByte = 8;
    // A body this small is always admitted and reserves nothing.
    static constexpr size_t kAlwaysAdmitted = 64 << 10;

    // A request's share of the budget, held while it is served. Requests admitted together all
    // count before their memory shows in the resident size, so between them they cannot pass the
    // budget (each was once measured against the same resident size: 100 concurrent 3.9 MiB
    // bodies took a 100 MiB budget to 250 MiB). Released when destroyed.
    class Reservation {
    public:
        Reservation() = default;
        Reservation(Reservation&& other) noexcept;
        Reservation& operator=(Reservation&& other) noexcept;
        ~Reservation();
        uint64_t bytes() const { return bytes_; }

    private:
        friend class MemoryBudget;
        Reservation(MemoryBudget* budget, uint64_t bytes) : budget_(budget), bytes_(bytes) {}
        MemoryBudget* budget_ = nullptr;
        uint64_t bytes_ = 0;
    };

    // Admits a request with a body of `body_bytes` when the process's resident memory, what the
    // requests being served have reserved, and what this one will take stay within the budget;
    // nullopt when they would not.
    std::optional<Reservation> admit(size_t body_bytes);
    // A chunked body that grew to `body_bytes`: its reservation grows with it, or false.
    bool grow(Reservation& reservation, size_t body_bytes);
    // The refusal's words, naming the budget and the setting.
    std::string refusal(size_t body_bytes) const;
    uint64_t budget_bytes() const { return budget_; }
    uint64_t reserved_bytes() const { return reserved_.load(); }

private:
    // Adds `bytes` to the reservations if the budget has room for them now.
    bool take(uint64_t bytes);

    uint64_t budget_;
    std::atomic<uint64_t> reserved_{0};
};

// The process's resident memory now, in bytes (/proc/self/statm).
uint64_t resident_bytes();

}  // namespace agenthost::server
