// Plugin folders the tests build on disk from the fixture plugins.
#pragma once

#include "support/test_support.hpp"
#include "test_paths.h"

#include <filesystem>

namespace test {

// In `plugins_dir`/duplicate_tool: a manifest saying "provider" beside the duplicate_tool fixture's
// library, which is a tool plugin (a manifest whose kind is not its library's).
inline void provider_manifest_beside_tool_library(const std::filesystem::path& plugins_dir) {
    auto folder = plugins_dir / "duplicate_tool";
    std::filesystem::create_directories(folder);
    std::filesystem::copy_file(std::filesystem::path(AGENTHOST_FIXTURE_PLUGIN_DIR) / "duplicate_tool" / "duplicate_tool.so",
                               folder / "duplicate_tool.so");
    write_file(
        folder / "plugin.toml",
        "name = \"duplicate_tool\"\nkind = \"provider\"\nlibrary = \"duplicate_tool.so\"\nabi = \"1.0\"\nversion = \"1\"\n");
}

}  // namespace test
