// The providers' SSE and NDJSON decoders on arbitrary bytes: the same events whatever the split,
// and every event's text valid UTF-8 (bad bytes replaced), so JSON handling never sees raw garbage.
#include "wire.hpp"

#include <cstdint>
#include <cstdlib>
#include <vector>

using namespace agenthost::providers;

namespace {

bool valid_utf8(const std::string& s) {
    try {
        (void)nlohmann::json(s).dump();
        return true;
    } catch (const nlohmann::json::exception&) {
        return false;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    size_t step = 1 + data[0] % 13;
    std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);

    std::vector<std::string> whole, pieces;
    SseDecoder a, b;
    a.feed(bytes, [&](std::string_view name, std::string_view d) {
        whole.push_back(std::string(name) + "\n" + std::string(d));
        return true;
    });
    for (size_t at = 0; at < bytes.size(); at += step)
        b.feed(bytes.substr(at, step), [&](std::string_view name, std::string_view d) {
            pieces.push_back(std::string(name) + "\n" + std::string(d));
            return true;
        });
    if (whole != pieces) std::abort();
    for (const auto& e : whole)
        if (!valid_utf8(e.substr(e.find('\n') + 1))) std::abort();

    std::vector<std::string> lines_whole, lines_pieces;
    NdjsonDecoder c, d;
    c.feed(bytes, [&](std::string_view line) {
        lines_whole.emplace_back(line);
        return true;
    });
    for (size_t at = 0; at < bytes.size(); at += step)
        d.feed(bytes.substr(at, step), [&](std::string_view line) {
            lines_pieces.emplace_back(line);
            return true;
        });
    if (lines_whole != lines_pieces) std::abort();
    for (const auto& l : lines_whole)
        if (!valid_utf8(l)) std::abort();
    return 0;
}
