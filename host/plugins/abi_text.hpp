// Reading the ABI's strings: an ah_str from the other side of the boundary is a pointer and a
// length, never trusted to be NUL-terminated, and a null pointer is the empty string whatever its
// length says.
#pragma once

#include <agenthost/agenthost.h>

#include "common/utf8.hpp"

#include <string>
#include <string_view>

namespace agenthost::plugins {

inline std::string_view view(ah_str s) { return s.data ? std::string_view(s.data, s.len) : std::string_view(); }

// A plugin's text for the host's log: control characters written as \xNN, so a plugin can
// neither drive the operator's terminal nor forge log lines. That is C0 (ESC, BEL, newlines), DEL,
// the C1 controls encoded in UTF-8 (U+0080–U+009F: U+009B is CSI to some terminals) and every
// byte that is not part of valid UTF-8 (a raw 0x9B is CSI to an 8-bit terminal).
inline std::string printable(std::string_view text) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    auto escape = [&](unsigned char c) {
        out += "\\x";
        out += digits[c >> 4];
        out += digits[c & 0xf];
    };
    for (size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        const size_t length = json_io::utf8_sequence(text, i);
        if (length == 0) {  // not UTF-8
            escape(c);
            ++i;
        } else if (c < 0x20 || c == 0x7f || (c == 0xc2 && static_cast<unsigned char>(text[i + 1]) <= 0x9f)) {  // C0, DEL, C1
            for (size_t k = 0; k < length; ++k) escape(static_cast<unsigned char>(text[i + k]));
            i += length;
        } else {
            out.append(text.substr(i, length));
            i += length;
        }
    }
    return out;
}

}  // namespace agenthost::plugins
