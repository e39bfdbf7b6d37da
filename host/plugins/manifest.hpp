// plugin.toml: what the host knows about a plugin before it opens the library.
#pragma once

#include "common/result.hpp"
#include "plugins/permissions.hpp"
#include "plugins/plugin_types.hpp"

#include <filesystem>
#include <string>

namespace agenthost::plugins {

namespace fs = std::filesystem;

struct Manifest {
    fs::path file;     // the plugin.toml read
    std::string name;  // ^[a-z][a-z0-9_]{0,63}$
    PluginKind kind = PluginKind::tool;
    fs::path library;  // absolute path of the shared object
    int abi_major = 0;
    int abi_minor = 0;
    std::string version;
    std::string description;
    std::string default_config_json = "{}";  // [default_config], with each declared setting's default
    // [settings]: the plugin's table declared key by key, as a JSON Schema of an object (see
    // docs/plugin-abi.md, "Declaring settings"); empty when the manifest declares none, in which
    // case the host cannot check the operator's [plugins.NAME] table.
    std::string settings_schema_json;
    // [permissions]: what the plugin may touch (docs/plugin-abi.md, "Permissions"); none when the
    // manifest declares none, which a sandbox treats as "nothing beyond running".
    std::optional<Permissions> permissions;
};

// Reads and validates one manifest. Errors (code "manifest_invalid") name file, line and field.
Result<Manifest> read_manifest(const fs::path& file);
// The manifest's text as read_manifest reads it (its error when the file cannot be read).
Result<std::string> read_manifest_text(const fs::path& file);
// The same from text already read (`file` names it in errors and anchors the library path).
Result<Manifest> parse_manifest(std::string_view text, const fs::path& file);

}  // namespace agenthost::plugins
