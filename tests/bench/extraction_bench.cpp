// Benchmark: tool-call extraction from a long model reply (prose with Markdown, code and one Hermes
// call at the end), whole and streamed in small deltas, against its physical limit measured in the
// same run: memchr over the same bytes for '<' (the scan every text format needs at least).
// Prints MB/s and the ratio to the limit.   agenthost_extraction_bench [--mb N] [--delta BYTES]
#include "toolcalls/extractor.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

using Clock = std::chrono::steady_clock;
using agenthost::toolcalls::ToolCallStream;

namespace {

std::string reply_of(size_t bytes) {
    const std::string paragraph =
        "The download finished at 42 MB/s; the folder **movies** now holds 3 files. Next, compare the sizes "
        "with `ls -l` and check the hashes:\n\n```sh\nsha256sum *.mkv | sort\n```\n\n| file | size |\n|---|---|\n"
        "| a.mkv | 1.2 GiB |\n\nIf a < b and c > d, say so in plain words. ";
    std::string text;
    text.reserve(bytes + 200);
    while (text.size() < bytes) text += paragraph;
    text += "<tool_call>\n{\"name\": \"list_folder\", \"arguments\": {\"name\": \"movies\"}}\n</tool_call>";
    return text;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

}  // namespace

int main(int argc, char** argv) {
    size_t mb = 10, delta = 64;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string flag = argv[i];
        if (flag == "--mb")
            mb = std::stoul(argv[i + 1]);
        else if (flag == "--delta")
            delta = std::stoul(argv[i + 1]);
    }
    const std::string text = reply_of(mb << 20);
    const double megabytes = static_cast<double>(text.size()) / (1 << 20);

    // The limit: find every '<' with memchr, as a vectorised scan for format openers would.
    auto start = Clock::now();
    size_t openers = 0;
    for (const char* at = text.data(); (at = static_cast<const char*>(std::memchr(at, '<', text.data() + text.size() - at)));
         ++at)
        ++openers;
    const double limit = megabytes / seconds_since(start);

    start = Clock::now();
    auto whole = agenthost::toolcalls::extract_tool_calls(text);
    const double whole_rate = megabytes / seconds_since(start);

    start = Clock::now();
    ToolCallStream stream;
    for (size_t at = 0; at < text.size(); at += delta) stream.feed(std::string_view(text).substr(at, delta));
    auto streamed = stream.finish();
    const double stream_rate = megabytes / seconds_since(start);

    if (whole.calls.size() != 1 || streamed.calls.size() != 1) {
        std::fprintf(stderr, "agenthost_extraction_bench: expected one call, found %zu whole and %zu streamed\n",
                     whole.calls.size(), streamed.calls.size());
        return 1;
    }
    std::printf("reply: %.1f MB, %zu '<' in it, one Hermes call at the end\n", megabytes, openers);
    std::printf("extraction, whole reply:       %9.1f MB/s (%.0fx below the limit)\n", whole_rate, limit / whole_rate);
    std::printf("extraction, %4zu-byte deltas:  %9.1f MB/s (%.0fx below the limit)\n", delta, stream_rate, limit / stream_rate);
    std::printf("limit: memchr for '<' over the same bytes %9.1f MB/s\n", limit);
    return 0;
}
