// agenthost.toml → typed settings. Every error names the file, the line, the key and the fix.
#pragma once

#include "common/result.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace agenthost::config {

namespace fs = std::filesystem;

struct ProviderSettings {
    std::string use = "scripted";  // name of the provider plugin
    std::string model;
    std::string base_url;
    std::string api_key_env;       // name of the environment variable holding the key
    std::string api_key;           // resolved from api_key_env at load; never logged
};

// Per-tool policy overrides ([tools.NAME]); unset fields keep the plugin's hint.
struct ToolPolicy {
    std::optional<bool> enabled;
    std::optional<bool> read_only;
    std::optional<bool> destructive;
    std::optional<bool> idempotent;
    std::optional<bool> open_world;
    std::optional<bool> needs_approval;
};

struct Limits {
    int explore_iterations = 200;
    int plan_iterations = 200;
    int execute_iterations = 500;
};

struct Config {
    fs::path source;                         // the file read; empty when built-in defaults
    fs::path data_dir;
    std::vector<fs::path> plugin_dirs;       // scan order: configured, then defaults
    bool use_default_plugin_dirs = true;     // default_plugin_dirs = false scans only plugin_dirs
    std::vector<std::string> enabled_plugins;   // empty: all found plugins
    std::vector<std::string> disabled_plugins;
    ProviderSettings provider;
    std::map<std::string, std::string> plugin_tables;  // plugin name → its table as JSON text
    std::map<std::string, ToolPolicy> tools;
    Limits limits;
    std::string log_level = "warn";

    bool plugin_enabled(const std::string& name) const;
};

// Where the configuration comes from: --config, then $AGENTHOST_CONFIG, then ./agenthost.toml.
// Returns nullopt when none applies (built-in defaults); an error when a named file is missing.
Result<std::optional<fs::path>> locate(const std::optional<std::string>& cli_path);

// Reads and validates a configuration file.
Result<Config> load_file(const fs::path& file);
// Parses TOML text; `name` is used in error messages and relative paths resolve against base_dir.
Result<Config> parse(std::string_view text, const std::string& name, const fs::path& base_dir);
// The configuration used when no file exists.
Config defaults();

// Default directories, in scan order, that follow the configured plugin_dirs.
std::vector<fs::path> default_plugin_dirs();
fs::path default_data_dir();

}  // namespace agenthost::config
