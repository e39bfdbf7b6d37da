// Reading the ABI's strings: an ah_str from the other side of the boundary is a pointer and a
// length, never trusted to be NUL-terminated, and a null pointer is the empty string whatever its
// length says.
#pragma once

#include <agenthost/agenthost.h>

#include <string>
#include <string_view>

namespace agenthost::plugins {

inline std::string_view view(ah_str s) { return s.data ? std::string_view(s.data, s.len) : std::string_view(); }

// A plugin's text for the host's log: control characters (ESC, BEL, newlines) written as \xNN, so
// a plugin can neither drive the operator's terminal nor forge log lines.
inline std::string printable(std::string_view text) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    for (unsigned char c : text) {
        if (c < 0x20 || c == 0x7f) {
            out += "\\x";
            out += digits[c >> 4];
            out += digits[c & 0xf];
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

}  // namespace agenthost::plugins
