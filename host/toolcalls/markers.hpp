// The markers that open and close the regions of a reply, as tables: literal tags ("<tool_call>",
// "```", "<think>" …) and special tokens by normalised name ("tool_calls_begin", "python_tag" …),
// each with what it opens (reasoning, a call region of a given kind, a fence, a harmony header) and
// what closes it. Adding a format's markers is adding rows; regions.cpp parses what they enclose.
#pragma once

#include "toolcalls/formats.hpp"

#include <array>
#include <string_view>
#include <vector>

namespace agenthost::toolcalls::markers {

using formats::Region;

enum class Action {
    reasoning_open,   // a reasoning block starts; closes at `close`
    reasoning_close,  // a close tag in content: reasoning forced open from the start of the reply
    region_open,      // a call region starts
    fence_open,
    harmony_header,  // <|channel|> or <|start|>
    drop,            // an end-of-turn or framing token with no text
};

struct Marker {
    std::string_view text;  // a literal marker, or the normalised name of a special token
    Action action;
    Region region = Region::hermes;
    std::vector<std::string_view> close = {};  // literal closes, or special-token names (for tokens)
    bool close_is_token = false;
};

// Literal markers recognised in content.
const std::vector<Marker>& literal_markers();
// Special tokens recognised in content, by normalised name.
const std::vector<Marker>& token_markers();
// The token marker called `name` (the first one when there is none).
const Marker& marker_for_token(std::string_view name);
// An end-of-turn or framing token that carries no text ("eot_id", "im_end" …).
bool is_dropped_token(std::string_view name);

// Which bytes begin a marker, for the fast path of text that cannot be one.
using FirstBytes = std::array<bool, 256>;
const FirstBytes& content_first_bytes();
// Bytes that are content as they stand when nothing is pending: no marker, special token or JSON
// candidate begins with them.
const FirstBytes& plain_content_bytes();

// Kimi-K2-Thinking writes its calls inside reasoning, and llama.cpp extracts them there; for every
// other format a call in reasoning is thought, not action.
inline constexpr std::string_view kCallTokenInReasoning = "tool_calls_section_begin";

}  // namespace agenthost::toolcalls::markers
