// The folders plugin's path resolver on arbitrary subpaths, over a real tree with a symbolic link
// that leads out and one that stays in: whatever it accepts exists and lies inside the folder.
#include "folder_paths.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>

namespace fs = std::filesystem;

namespace {

fs::path make_tree() {
    fs::path top = fs::temp_directory_path() / ("agenthost-fuzz-folders-" + std::to_string(::getpid()));
    fs::create_directories(top / "root" / "sub" / "deeper");
    fs::create_directories(top / "outside");
    std::ofstream(top / "root" / "sub" / "file.txt") << "inside";
    std::ofstream(top / "outside" / "secret.txt") << "outside";
    std::error_code ec;
    fs::create_directory_symlink(top / "outside", top / "root" / "escape", ec);
    fs::create_directory_symlink(top / "root" / "sub", top / "root" / "alias", ec);
    fs::create_symlink("../../outside/secret.txt", top / "root" / "sub" / "sneaky", ec);
    return fs::canonical(top / "root");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const fs::path root = make_tree();
    std::string sub(reinterpret_cast<const char*>(data), size);
    auto resolved = folders::resolve_inside(root, sub);
    if (resolved.path) {
        std::error_code ec;
        if (!folders::inside(root, *resolved.path) || !fs::exists(*resolved.path, ec)) std::abort();  // escaped the folder
        if (fs::canonical(*resolved.path, ec) != *resolved.path) std::abort();
    } else if (resolved.message.empty()) {
        std::abort();
    }
    return 0;
}
