// Where plugins are found: each plugin directory is either one plugin's own folder (it holds a
// plugin.toml) or a folder of plugin folders. Nothing is opened or read here but the listing.
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

namespace agenthost::plugins {

struct FoundPlugin {
    std::filesystem::path manifest;  // <folder>/plugin.toml
    // Set when the folder holds a shared library but no manifest: a plugin someone forgot to
    // describe, reported rather than skipped.
    std::optional<std::filesystem::path> library_without_manifest;
};

// Every plugin folder under `dirs`, in order: the directories as given (each once, however it is
// spelled; absent ones skipped), the folders of each sorted by name.
std::vector<FoundPlugin> discover(const std::vector<std::filesystem::path>& dirs);

}  // namespace agenthost::plugins
