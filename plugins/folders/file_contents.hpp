// What read_file and save_file do with a file's bytes: base64 in (the tool ABI carries JSON, so a
// file travels as base64), text out (a model reads UTF-8, cut on a character's edge), and a free
// name next to a taken one ("notes (2).txt").
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace folders {

// The bytes `text` encodes (standard alphabet, padding optional, blanks ignored), or nullopt when
// it is not base64 or would decode to more than `max_bytes`.
std::optional<std::string> base64_bytes(std::string_view text, size_t max_bytes);

// How many of `bytes`' first bytes are whole UTF-8 characters (at most `limit`), or nullopt when
// they are not UTF-8 text (an invalid sequence, or a NUL byte: a binary file).
std::optional<size_t> utf8_prefix(std::string_view bytes, size_t limit);

// `wanted`, or when something is there "stem (2).ext", "stem (3).ext" … up to (100); nullopt when
// all are taken.
std::optional<std::filesystem::path> free_name(const std::filesystem::path& wanted);

}  // namespace folders
