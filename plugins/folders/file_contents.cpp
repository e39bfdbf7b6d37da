#include "file_contents.hpp"

#include <array>
#include <system_error>

namespace folders {

std::optional<std::string> base64_bytes(std::string_view text, size_t max_bytes) {
    static const std::array<int, 256> kValue = [] {
        std::array<int, 256> value{};
        value.fill(-1);
        const std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for (size_t i = 0; i < alphabet.size(); ++i) value[static_cast<unsigned char>(alphabet[i])] = static_cast<int>(i);
        return value;
    }();
    if (text.size() / 4 * 3 > max_bytes + 3) return std::nullopt;  // too large, before any work
    std::string out;
    out.reserve(text.size() / 4 * 3);
    unsigned bits = 0;
    int count = 0;
    bool padded = false;
    for (char c : text) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (c == '=') {
            padded = true;
            continue;
        }
        int v = kValue[static_cast<unsigned char>(c)];
        if (v < 0 || padded) return std::nullopt;  // nothing follows padding
        bits = (bits << 6) | static_cast<unsigned>(v);
        if (++count == 4) {
            out.push_back(static_cast<char>((bits >> 16) & 0xff));
            out.push_back(static_cast<char>((bits >> 8) & 0xff));
            out.push_back(static_cast<char>(bits & 0xff));
            bits = 0;
            count = 0;
        }
    }
    if (count == 1) return std::nullopt;  // six bits cannot end a byte
    if (count == 2) out.push_back(static_cast<char>((bits >> 4) & 0xff));
    if (count == 3) {
        out.push_back(static_cast<char>((bits >> 10) & 0xff));
        out.push_back(static_cast<char>((bits >> 2) & 0xff));
    }
    if (out.size() > max_bytes) return std::nullopt;
    return out;
}

std::optional<size_t> utf8_prefix(std::string_view bytes, size_t limit) {
    size_t at = 0;
    while (at < bytes.size()) {
        auto lead = static_cast<unsigned char>(bytes[at]);
        size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : (lead >> 3) == 0x1e ? 4 : 0;
        if (lead == 0 || length == 0) return std::nullopt;
        if (at + length > bytes.size()) return at;  // a character the read cut: the next read starts with it
        for (size_t i = 1; i < length; ++i)
            if ((static_cast<unsigned char>(bytes[at + i]) & 0xc0) != 0x80) return std::nullopt;
        if (at + length > limit) break;
        at += length;
    }
    return at;
}

std::optional<std::filesystem::path> free_name(const std::filesystem::path& wanted) {
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(wanted, ec))) return wanted;
    const std::string stem = wanted.stem().string(), ext = wanted.extension().string();
    for (int n = 2; n <= 100; ++n) {
        std::filesystem::path next = wanted.parent_path() / (stem + " (" + std::to_string(n) + ")" + ext);
        if (!std::filesystem::exists(std::filesystem::symlink_status(next, ec))) return next;
    }
    return std::nullopt;
}

}  // namespace folders
