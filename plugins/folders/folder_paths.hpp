// Subpaths inside a folder: "..", absolute paths, drive paths, "~", NUL bytes and over-long names
// are refused; symbolic links are followed only while they stay inside the folder's real path.
// The property (fuzzed in tests/fuzz/fuzz_folder_paths.cpp): a resolved path is never outside.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace folders {

constexpr size_t kMaxSubpath = 4096;
constexpr size_t kMaxComponent = 255;

// Why a subpath may not be used, or "" when it may (before it is resolved on disk).
std::string hostile(const std::string& sub);

// Whether `p` is `root` or lies below it (both already normalised or canonical).
bool inside(const std::filesystem::path& root, const std::filesystem::path& p);

struct Resolved {
    std::optional<std::filesystem::path> path;  // the real path, inside `base`
    std::string code;                           // forbidden | not_found, when refused
    std::string message;
};

// `sub` inside `base` (a canonical directory), resolved on disk.
Resolved resolve_inside(const std::filesystem::path& base, const std::string& sub);

}  // namespace folders
