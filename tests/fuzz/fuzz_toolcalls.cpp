// The tool-call extractor on arbitrary model output: never crashes, and feeding the text in pieces
// (split where the input's first byte says) gives exactly what extracting the whole text gives.
#include "toolcalls/extractor.hpp"

#include <cstdint>
#include <cstdlib>

using namespace agenthost::toolcalls;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    static const ToolSet tools = [] {
        ToolSet t;
        t.add("get_weather", R"({"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}}})");
        t.add("search", R"({"type":"object","properties":{"query":{"type":"string"}}})");
        return t;
    }();
    size_t step = 1 + data[0] % 17;
    std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    Extraction whole = extract_tool_calls(text, tools);
    ToolCallStream stream(tools);
    for (size_t at = 0; at < text.size(); at += step) stream.feed(text.substr(at, step));
    Extraction pieces = stream.finish();
    bool same = whole.calls.size() == pieces.calls.size() && whole.content == pieces.content &&
                whole.reasoning == pieces.reasoning && whole.incomplete == pieces.incomplete;
    for (size_t i = 0; same && i < whole.calls.size(); ++i)
        same = whole.calls[i].name == pieces.calls[i].name && whole.calls[i].arguments_json == pieces.calls[i].arguments_json;
    if (!same) std::abort();  // streamed and whole disagree
    return 0;
}
