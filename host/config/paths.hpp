// How a path written in agenthost.toml is read: "~/" is the home folder, a relative path is
// relative to the config file's folder. The one rule for the host's keys (data_dir, plugin_dirs)
// and for plugin settings declared `format = "path"`.
#pragma once

#include <filesystem>
#include <string>

namespace agenthost::config {

// `value` resolved against `base_dir` (the config file's folder; empty: left relative), normalised.
std::filesystem::path resolve_path(const std::filesystem::path& base_dir, const std::string& value);

}  // namespace agenthost::config
