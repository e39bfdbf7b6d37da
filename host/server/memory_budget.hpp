// The server's memory: a budget new work is admitted against, and an allocator that gives memory
// back after a burst.
//
// glibc raises its mmap threshold each time a large block is freed (up to 32 MiB), so after a wave
// of large prompts their buffers came from the heap arenas, and the arenas kept the pages: three
// waves of 24 chats with 3 MiB messages left an idle server at 1.06 GB. With the threshold fixed,
// every block of 256 KiB or more is mapped and unmapped on its own, and what is left in the arenas
// is trimmed when the last run ends (docs/performance.md has the figures).
#pragma once

#include <cstddef>
#include <cstdint>
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
    // Whether a request with a body of `body_bytes` may start now: the process's resident memory
    // plus what the request will take stays within the budget. Small requests always may.
    bool admits(size_t body_bytes) const;
    // The refusal's words, naming the budget and the setting.
    std::string refusal(size_t body_bytes) const;
    uint64_t budget_bytes() const { return budget_; }

private:
    uint64_t budget_;
};

// The process's resident memory now, in bytes (/proc/self/statm).
uint64_t resident_bytes();

}  // namespace agenthost::server
