// Parsers for the bodies of the call formats the extractor finds (internal to host/toolcalls). The
// extractor cuts the reply into regions; each function here turns one region's text into calls.
#pragma once

#include "toolcalls/extractor.hpp"

#include <nlohmann/json.hpp>

#include <map>

namespace agenthost::toolcalls {

struct ToolSet::Impl {
    bool any = true;
    std::map<std::string, nlohmann::json, std::less<>> schemas;  // name → parameters schema
};

namespace formats {

using nlohmann::json;

// What one region yielded.
struct Parsed {
    std::vector<ExtractedCall> calls;
    std::string leftover;        // text of the region that is not a call; it goes back to the content
    bool replaces_text = false;  // the leftover replaces the region's text even when no call was found
    std::vector<std::string> problems;
    bool incomplete = false;
    bool prose = false;  // the region's marker was mentioned in prose: no call, nothing cut off
};

enum class Region {
    hermes,          // <tool_call>…</tool_call>: JSON, Qwen3-Coder XML or GLM key/value pairs
    function_tag,    // <function=NAME>…</function> (the text after "<function")
    python_tag,      // <|python_tag|>: JSON objects separated by ';', or NAME.call(k=v)
    mistral,         // [TOOL_CALLS]: a JSON array, or NAME[ARGS]{…} per call
    special_tokens,  // DeepSeek / Kimi <|tool_call_begin|>NAME<|tool_sep|>{…}<|tool_call_end|>
    call_list,       // <TOOLCALL>, <tool_calls>, <|START_ACTION|>, <|python_start|> …: JSON or pythonic list
    pythonic_lines,  // <function_calls>f(a=1)\ng(b=2)</function_calls>
    invoke_xml,      // <minimax:tool_call><invoke name="…"><parameter name="…">…
    dsml,            // DeepSeek V3.2/V4 <｜DSML｜function_calls> / <｜DSML｜tool_calls> with DSML invokes
    functionary,     // Functionary v3.2: the text after one ">>>": NAME\n{json}, python\nCODE or all\nTEXT
    gemma_call,      // FunctionGemma / Gemma 4: call:NAME{key:<escape>value<escape>,n:1}
};

// `terminated` says whether the region's closing marker was seen (else the reply ended inside it).
Parsed parse_region(Region kind, std::string_view body, bool terminated, const ToolSet& tools);
// A harmony message addressed to a tool (`to=functions.NAME`).
Parsed parse_harmony_call(std::string_view recipient, std::string_view body, const ToolSet& tools);
// A fenced block: ```LANG\nBODY```.
Parsed parse_fence(std::string_view lang, std::string_view body, bool terminated, const ToolSet& tools);
// A bare JSON object/array or pythonic list found in prose; only a clear call shape counts, and
// nothing is reported when it is not one (prose may show JSON).
Parsed parse_bare(std::string_view text, const ToolSet& tools);

// Functionary v3.2's first recipient, written without ">>>" at the start of the reply: when `text`
// is NAME\n{json} for an offered tool, the call; "all\n…" gives its text as leftover.
Parsed parse_functionary_first(std::string_view text, const ToolSet& tools);
// Whether `first_line` (the text between ">>>" and its newline) names a Functionary recipient:
// "all", "python" or an offered tool. Anything else means the ">>>" was prose (a REPL prompt, a
// shift operator) and is read as text.
bool is_functionary_recipient(std::string_view first_line, const ToolSet& tools);

// Rewrites DeepSeek/Kimi special-token spellings to one form: "tool▁sep", "tool sep" → "tool_sep".
std::string normalize_token_name(std::string_view inner);

// Reads a special token (<|name|> or <｜name｜>) at the start of `text`: `partial` while text could
// still grow into one, `yes` with the normalised name and the token's byte length.
struct TokenScan {
    enum Kind { no, partial, yes } kind;
    std::string name = {};
    size_t length = 0;
};
TokenScan scan_special_token(std::string_view text);

}  // namespace formats
}  // namespace agenthost::toolcalls
