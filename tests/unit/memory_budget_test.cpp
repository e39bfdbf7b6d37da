// The server's memory budget: requests admitted together count against it before their memory
// shows in the resident size.
#include "server/memory_budget.hpp"

#include <catch2/catch.hpp>

using agenthost::server::MemoryBudget;
using agenthost::server::resident_bytes;

TEST_CASE("memory budget: admitted requests hold their share until they end, so two cannot pass it together",
          "[unit][server][memory]") {
    // 40 MiB above what the process holds now: room for one 3 MiB body (24 MiB at 8x), not two.
    MemoryBudget budget(static_cast<int>(resident_bytes() >> 20) + 40);
    constexpr size_t kBody = 3 << 20;
    auto first = budget.admit(kBody);
    REQUIRE(first);
    CHECK(first->bytes() == kBody * MemoryBudget::kCostPerBodyByte);
    CHECK_FALSE(budget.admit(kBody));  // measured against the same resident size, it would have passed
    CHECK_THAT(budget.refusal(kBody), Catch::Contains("max_memory_mb") && Catch::Contains("requests being served have 24 MB"));
    CHECK(budget.admit(MemoryBudget::kAlwaysAdmitted));  // a small request always may
    {
        MemoryBudget::Reservation moved = std::move(*first);
        CHECK(budget.reserved_bytes() == kBody * MemoryBudget::kCostPerBodyByte);
    }  // the request ended
    CHECK(budget.reserved_bytes() == 0);
    auto second = budget.admit(kBody);
    REQUIRE(second);
    // A chunked body grows its share as it comes, and is stopped where the budget ends.
    MemoryBudget::Reservation chunked;
    CHECK(budget.grow(chunked, 512 << 10));
    CHECK(chunked.bytes() == (512u << 10) * MemoryBudget::kCostPerBodyByte);
    CHECK_FALSE(budget.grow(chunked, 3 << 20));
    CHECK(chunked.bytes() == (512u << 10) * MemoryBudget::kCostPerBodyByte);  // unchanged when refused
}
