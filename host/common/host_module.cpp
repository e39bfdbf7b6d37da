#include "common/host_module.hpp"

#include "common/install_layout.hpp"

#include <dlfcn.h>

namespace agenthost::modules {

Result<const ModuleHeader*> load(std::string_view name, size_t table_size) {
    const auto path = layout::install_layout().module_dir / (std::string(name) + ".so");
    const std::string fix = "; reinstall agenthost (its modules are installed with the program)";
    // Never closed: what the module made may live until exit. dlopen counts repeated opens.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* why = dlerror();
        return Error{"module_missing", "agenthost's " + std::string(name) + " module could not be loaded from " + path.string() +
                                           ": " + (why ? why : "unknown error") + fix};
    }
    std::string symbol = "agenthost_module_" + std::string(name);
    for (char& c : symbol)
        if (c == '-') c = '_';
    using Entry = const ModuleHeader* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(handle, symbol.c_str()));
    const ModuleHeader* header = entry ? entry() : nullptr;
    if (!header) return Error{"module_invalid", path.string() + " does not define " + symbol + fix};
    if (std::string_view(header->version) != AGENTHOST_VERSION || header->table_size != table_size)
        return Error{"module_invalid", path.string() + " comes from another build (agenthost " + header->version + ", this is " +
                                           AGENTHOST_VERSION + ")" + fix};
    return header;
}

}  // namespace agenthost::modules
