// plugin.toml parsing on arbitrary text: a Manifest or an Error naming the file, never a crash.
#include "plugins/manifest.hpp"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto parsed = agenthost::plugins::parse_manifest(text, "/nonexistent-fuzz/plugin.toml");
    if (!parsed && parsed.error().message.find("plugin.toml") == std::string::npos) std::abort();  // errors name the file
    return 0;
}
