#include "plugins/discovery.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace agenthost::plugins {
namespace fs = std::filesystem;

namespace {

std::optional<fs::path> first_library(const fs::path& folder) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(folder, ec))
        if (entry.path().extension() == ".so") return entry.path();
    return std::nullopt;
}

}  // namespace

std::vector<FoundPlugin> discover(const std::vector<fs::path>& dirs) {
    std::vector<FoundPlugin> found;
    std::vector<fs::path> seen;
    for (const fs::path& dir : dirs) {
        std::error_code ec;
        fs::path canonical = fs::weakly_canonical(dir, ec);
        if (std::find(seen.begin(), seen.end(), canonical) != seen.end()) continue;
        seen.push_back(canonical);
        if (!fs::is_directory(dir, ec)) {
            spdlog::debug("plugin directory skipped (absent): dir={}", dir.string());
            continue;
        }
        if (fs::is_regular_file(dir / "plugin.toml", ec)) {  // the entry is one plugin's own folder
            found.push_back({dir / "plugin.toml", std::nullopt});
            continue;
        }
        std::vector<fs::path> folders;
        for (const auto& entry : fs::directory_iterator(dir, ec))
            if (entry.is_directory(ec)) folders.push_back(entry.path());
        std::sort(folders.begin(), folders.end());
        for (const fs::path& folder : folders) {
            if (fs::is_regular_file(folder / "plugin.toml", ec))
                found.push_back({folder / "plugin.toml", std::nullopt});
            else if (auto library = first_library(folder))
                found.push_back({folder / "plugin.toml", std::move(library)});
        }
    }
    return found;
}

}  // namespace agenthost::plugins
