#include "common/install_layout.hpp"

// Relative install directories from GNUInstallDirs ("lib" or "lib/x86_64-linux-gnu", "share"): the
// same in every checkout, so this file's object is shared by ccache across build trees.
#ifndef AGENTHOST_REL_LIBDIR
#define AGENTHOST_REL_LIBDIR "lib"
#endif
#ifndef AGENTHOST_REL_DATADIR
#define AGENTHOST_REL_DATADIR "share"
#endif

namespace agenthost::layout {

namespace fs = std::filesystem;

InstallLayout layout_for(const fs::path& exe) {
    InstallLayout l;
    fs::path bin = exe.parent_path();
    l.prefix = bin.parent_path();
    l.plugin_dir = l.prefix / AGENTHOST_REL_LIBDIR / "agenthost" / "plugins";
    l.module_dir = l.prefix / AGENTHOST_REL_LIBDIR / "agenthost" / "modules";
    l.web_dir = l.prefix / AGENTHOST_REL_DATADIR / "agenthost" / "web";
    std::error_code ec;
    l.runner = bin / "agenthost-plugin-runner";
    if (!fs::exists(l.runner, ec)) l.runner = l.prefix / "bin" / "agenthost-plugin-runner";
    return l;
}

const InstallLayout& install_layout() {
    // Computed once; the executable does not move while it runs.
    static const InstallLayout layout = [] {
        std::error_code ec;
        fs::path exe = fs::read_symlink("/proc/self/exe", ec);
        return layout_for(ec ? fs::path("/usr/bin/agenthost") : exe);
    }();
    return layout;
}

}  // namespace agenthost::layout
