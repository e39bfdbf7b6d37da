#include "common/host_module.hpp"

#include "common/install_layout.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace agenthost::modules {
namespace {

const char* const kFix = "reinstall agenthost (its modules are installed with the program)";

// Why the shared object at `path` cannot be mapped whole, or "" when it can: dlopen maps a file
// shorter than its loadable segments and the process dies of SIGBUS on first touch (a truncated
// copy, a full disk during an upgrade), so the sizes are checked first.
std::string unmappable(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::strerror(errno);
    struct stat st {};
    Elf64_Ehdr header{};
    std::string why;
    if (::fstat(fd, &st) != 0) {
        why = std::strerror(errno);
    } else if (::pread(fd, &header, sizeof header, 0) != static_cast<ssize_t>(sizeof header) ||
               std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
               header.e_phentsize != sizeof(Elf64_Phdr)) {
        why = "not a 64-bit shared object";
    } else {
        for (unsigned i = 0; i < header.e_phnum && why.empty(); ++i) {
            Elf64_Phdr segment{};
            const auto at = static_cast<off_t>(header.e_phoff + i * sizeof segment);
            if (::pread(fd, &segment, sizeof segment, at) != static_cast<ssize_t>(sizeof segment))
                why = "its program headers are cut off";
            else if (segment.p_type == PT_LOAD && segment.p_offset + segment.p_filesz > static_cast<uint64_t>(st.st_size))
                why = "the file is cut off (" + std::to_string(st.st_size) + " bytes, its contents need " +
                      std::to_string(segment.p_offset + segment.p_filesz) + ")";
        }
    }
    ::close(fd);
    return why;
}

std::string module_path(std::string_view name) {
    return (layout::install_layout().module_dir / (std::string(name) + ".so")).string();
}

}  // namespace

bool built(std::string_view name) {
    // AGENTHOST_BUILT_MODULES: the modules this build has, ","-separated (host/CMakeLists.txt).
    std::string_view list = AGENTHOST_BUILT_MODULES;
    for (size_t at = 0; at <= list.size();) {
        size_t end = std::min(list.find(',', at), list.size());
        if (list.substr(at, end - at) == name) return true;
        at = end + 1;
    }
    return false;
}

Status check(std::string_view name) {
    if (!built(name)) {
        for (const auto& m : kModules)
            if (m.name == name)
                return Error{"module_not_built", "this agenthost was built without " + std::string(m.gives) + " (" +
                                                     std::string(m.option) +
                                                     "=OFF); use a build that has it, such as the Debian package"};
        return Error{"module_not_built", "this agenthost has no module named " + std::string(name)};
    }
    const std::string path = module_path(name);
    if (std::string why = unmappable(path); !why.empty())
        return Error{"module_missing",
                     "agenthost's " + std::string(name) + " module " + path + " cannot be used: " + why + "; " + kFix};
    return Ok{};
}

Result<const ModuleHeader*> load(std::string_view name, size_t table_size) {
    if (auto usable = check(name); !usable) return usable.error();
    const std::string path = module_path(name);
    // Never closed: what the module made may live until exit. dlopen counts repeated opens.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        std::string why = dlerror();
        if (why.rfind(path + ": ", 0) == 0) why.erase(0, path.size() + 2);  // dlerror names the file too
        return Error{"module_missing",
                     "agenthost's " + std::string(name) + " module " + path + " cannot be loaded: " + why + "; " + kFix};
    }
    std::string symbol = "agenthost_module_" + std::string(name);
    for (char& c : symbol)
        if (c == '-') c = '_';
    using Entry = const ModuleHeader* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, symbol.c_str()));
    const ModuleHeader* header = entry ? entry() : nullptr;
    if (!header) return Error{"module_invalid", path + " does not define " + symbol + "; " + kFix};
    if (std::string_view(header->version) != AGENTHOST_VERSION || header->table_size != table_size)
        return Error{"module_invalid", path + " comes from another build (agenthost " + header->version + ", this is " +
                                           AGENTHOST_VERSION + "); " + kFix};
    return header;
}

}  // namespace agenthost::modules
