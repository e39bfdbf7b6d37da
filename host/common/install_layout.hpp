// Where agenthost's own files are, found from the running executable: the install tree and the
// build tree share one layout (bin/, LIBDIR/agenthost/plugins/, DATADIR/agenthost/web/), so an
// installed copy moved anywhere (a .deb, `cmake --install --prefix P`, an unpacked archive) finds
// its plugins, modules, web panel and plugin runner beside it, and no build path is baked into a binary.
#pragma once

#include <filesystem>

namespace agenthost::layout {

struct InstallLayout {
    std::filesystem::path prefix;      // the folder above bin/ (the build tree, /usr, /opt/agenthost …)
    std::filesystem::path plugin_dir;  // prefix/LIBDIR/agenthost/plugins: the bundled plugins
    std::filesystem::path web_dir;     // prefix/DATADIR/agenthost/web: the web panel
    std::filesystem::path module_dir;  // prefix/LIBDIR/agenthost/modules: parts loaded when used (common/host_module)
    std::filesystem::path runner;      // the isolated-plugin runner: beside the executable, else prefix/bin
};

// The layout of the running program (/proc/self/exe, symlinks resolved). Test programs one folder
// below the build tree (build/tests/…) get the build tree's layout.
const InstallLayout& install_layout();

// The same for an executable at `exe` (for tests).
InstallLayout layout_for(const std::filesystem::path& exe);

}  // namespace agenthost::layout
