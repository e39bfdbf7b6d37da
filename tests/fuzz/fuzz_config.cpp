// agenthost.toml parsing on arbitrary text: a Config or an Error naming the problem, never a crash.
#include "config/config.hpp"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto parsed = agenthost::config::parse(text, "fuzz.toml", "/nonexistent-fuzz-base");
    if (!parsed && parsed.error().message.empty()) std::abort();  // an error must say what is wrong
    return 0;
}
