// UTF-8 sequences, read one at a time (defined in bounded_json.cpp, which validates and repairs
// whole texts with it). A light header: no JSON.
#pragma once

#include <cstddef>
#include <string_view>

namespace agenthost::json_io {

// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are not one
// (Unicode Table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF).
size_t utf8_sequence(std::string_view s, size_t i);

}  // namespace agenthost::json_io
