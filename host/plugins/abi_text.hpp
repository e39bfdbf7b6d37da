// Reading the ABI's strings: an ah_str from the other side of the boundary is a pointer and a
// length, never trusted to be NUL-terminated, and a null pointer is the empty string whatever its
// length says.
#pragma once

#include <agenthost/agenthost.h>

#include <cstdint>
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
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7f) escape(c);
            else out += static_cast<char>(c);
            ++i;
            continue;
        }
        // A UTF-8 sequence: its length from the lead byte, each continuation 10xxxxxx, no overlong
        // form, no surrogate, nothing past U+10FFFF.
        const size_t length = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        uint32_t point = length == 2 ? c & 0x1f : length == 3 ? c & 0x0f : c & 0x07;
        bool valid = length > 0 && i + length <= text.size();
        for (size_t k = 1; valid && k < length; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            valid = (next & 0xc0) == 0x80;
            point = (point << 6) | (next & 0x3f);
        }
        valid = valid && !(length == 3 && point < 0x800) && !(length == 4 && (point < 0x10000 || point > 0x10ffff)) &&
                !(point >= 0xd800 && point <= 0xdfff);
        if (!valid) {
            escape(c);
            ++i;
        } else if (point <= 0x9f) {  // a C1 control
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
