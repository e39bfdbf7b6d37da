#include "server/memory_budget.hpp"

#include <algorithm>
#include <cstdio>
#include <thread>
#include <utility>
#include <malloc.h>
#include <unistd.h>

namespace agenthost::server {

void tune_allocator_for_serving() {
    // A fixed threshold also turns off glibc's raising of it: large blocks always go back at free.
    mallopt(M_MMAP_THRESHOLD, 256 << 10);
    // The heap's top is given back once 1 MiB of it is free (not the 2 x threshold glibc would pick).
    mallopt(M_TRIM_THRESHOLD, 1 << 20);
    // One arena per core (glibc's default is eight): a burst's threads spread their small blocks
    // over fewer arenas, so fewer partly used pages stay behind (measured: idle after a wave of 24
    // chats 22-25 MiB with the default, 20 MiB with two on two cores; docs/performance.md). One
    // arena saved another 1 MiB but cost 12-15 % of the chats per second under load: not kept.
    mallopt(M_ARENA_MAX, static_cast<int>(std::max(2u, std::thread::hardware_concurrency())));
}

void release_free_memory() { malloc_trim(0); }

uint64_t resident_bytes() {
    std::FILE* statm = std::fopen("/proc/self/statm", "r");
    if (!statm) return 0;
    unsigned long size = 0, resident = 0;
    int read = std::fscanf(statm, "%lu %lu", &size, &resident);
    std::fclose(statm);
    return read == 2 ? static_cast<uint64_t>(resident) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

MemoryBudget::MemoryBudget(int max_mb) {
    if (max_mb > 0) {
        budget_ = static_cast<uint64_t>(max_mb) << 20;
    } else {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        budget_ = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 4 : uint64_t{4} << 30;
    }
}

MemoryBudget::Reservation::Reservation(Reservation&& other) noexcept
    : budget_(std::exchange(other.budget_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

MemoryBudget::Reservation& MemoryBudget::Reservation::operator=(Reservation&& other) noexcept {
    if (this != &other) {
        if (budget_) budget_->reserved_ -= bytes_;
        budget_ = std::exchange(other.budget_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
}

MemoryBudget::Reservation::~Reservation() {
    if (budget_) budget_->reserved_ -= bytes_;
}

bool MemoryBudget::take(uint64_t bytes) {
    const uint64_t resident = resident_bytes();
    uint64_t reserved = reserved_.load();
    do {
        if (resident + reserved + bytes > budget_) return false;
    } while (!reserved_.compare_exchange_weak(reserved, reserved + bytes));
    return true;
}

std::optional<MemoryBudget::Reservation> MemoryBudget::admit(size_t body_bytes) {
    if (body_bytes <= kAlwaysAdmitted) return Reservation{};
    const uint64_t cost = static_cast<uint64_t>(body_bytes) * kCostPerBodyByte;
    if (!take(cost)) return std::nullopt;
    return Reservation(this, cost);
}

bool MemoryBudget::grow(Reservation& reservation, size_t body_bytes) {
    const uint64_t cost = body_bytes <= kAlwaysAdmitted ? 0 : static_cast<uint64_t>(body_bytes) * kCostPerBodyByte;
    if (cost <= reservation.bytes_) return true;
    if (!take(cost - reservation.bytes_)) return false;
    if (!reservation.budget_) reservation.budget_ = this;
    reservation.bytes_ = cost;
    return true;
}

std::string MemoryBudget::refusal(size_t body_bytes) const {
    return "the server is using " + std::to_string(resident_bytes() >> 20) + " MB of its " + std::to_string(budget_ >> 20) +
           " MB budget ([server] max_memory_mb), requests being served have " + std::to_string(reserved_.load() >> 20) +
           " MB of it, and this request (" + std::to_string(body_bytes >> 10) +
           " KiB) would take it past; try again after Retry-After";
}

}  // namespace agenthost::server
