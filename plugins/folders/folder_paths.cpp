#include "folder_paths.hpp"

namespace folders {

namespace fs = std::filesystem;

std::string hostile(const std::string& sub) {
    if (sub.find('\0') != std::string::npos) return "it contains a NUL byte";
    if (sub.size() > kMaxSubpath) return "it is longer than " + std::to_string(kMaxSubpath) + " bytes";
    if (!sub.empty() && (sub[0] == '/' || sub[0] == '\\')) return "it is absolute; give a path inside the folder";
    if (sub.size() > 1 && sub[1] == ':') return "it looks like a drive path";
    std::string part;
    for (size_t i = 0; i <= sub.size(); ++i) {
        if (i == sub.size() || sub[i] == '/' || sub[i] == '\\') {
            if (part == "..") return "it climbs out with '..'";
            if (part.size() > kMaxComponent) return "a name in it is longer than " + std::to_string(kMaxComponent) + " bytes";
            if (part == "~") return "it names a home directory";
            part.clear();
        } else {
            part += sub[i];
        }
    }
    return "";
}

bool inside(const fs::path& root, const fs::path& p) {
    auto r = root.lexically_normal().string(), c = p.lexically_normal().string();
    return c == r || (c.size() > r.size() && c.compare(0, r.size(), r) == 0 && (r.back() == '/' || c[r.size()] == '/'));
}

Resolved resolve_inside(const fs::path& base, const std::string& sub) {
    if (std::string why = hostile(sub); !why.empty()) return {std::nullopt, "forbidden", "the subpath is refused: " + why};
    fs::path candidate = sub.empty() ? base : base / sub;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(candidate, ec)))
        return {std::nullopt, "not_found", "'" + sub + "' does not exist in the folder"};
    fs::path real = fs::canonical(candidate, ec);
    if (ec) return {std::nullopt, "not_found", "'" + sub + "' cannot be resolved (a broken link?)"};
    if (!inside(base, real))
        return {std::nullopt, "forbidden", "'" + sub + "' leads outside the folder (through a symbolic link)"};
    return {real, "", ""};
}

}  // namespace folders
