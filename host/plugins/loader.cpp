#include "plugins/loader.hpp"
#include "plugins/plugin_fault.hpp"
#include "plugins/status_words.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

namespace agenthost::plugins {

std::optional<Error> check_before_opening(const Manifest& m) {
    const std::string where = m.file.string();
    if (m.abi_major != AH_ABI_MAJOR)
        return plugin_error(PluginFault::abi_mismatch, where + ": plugin '" + m.name + "' is built for ABI " +
                                                           std::to_string(m.abi_major) + "." + std::to_string(m.abi_minor) +
                                                           " but this host speaks ABI " + AH_ABI_VERSION_STRING + " (major " +
                                                           std::to_string(AH_ABI_MAJOR) + "); rebuild the plugin against SDK " +
                                                           std::to_string(AH_ABI_MAJOR) + ".x");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(m.library, ec))
        return plugin_error(PluginFault::library_missing, where + ": field 'library' names " + m.library.string() +
                                                              ", which does not exist; build or install the plugin");
    return std::nullopt;
}

Result<LoadedLibrary> load_library(const Manifest& m) {
    if (auto refused = check_before_opening(m)) return *refused;
    const std::string where = m.file.string();

    LoadedLibrary loaded;
    try {
        // RTLD_NODELETE keeps the code mapped forever: a plugin's threads or atexit hooks can
        // never run into unmapped memory (ABI rule 6).
        auto mode = static_cast<boost::dll::load_mode::type>(
            static_cast<unsigned>(boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local) | RTLD_NODELETE);
        loaded.library.load(boost::dll::fs::path(m.library.string()), mode);
    } catch (const std::exception& e) {
        return plugin_error(PluginFault::not_shared_object,
                            m.library.string() + " cannot be loaded as a shared object: " + e.what());
    }
    if (!loaded.library.has(AH_PLUGIN_ENTRY_SYMBOL))
        return plugin_error(PluginFault::entry_missing,
                            m.library.string() + " does not export " AH_PLUGIN_ENTRY_SYMBOL
                                                 "; define it with AH_PLUGIN_ENTRY (extern \"C\", default visibility)");

    auto& init = loaded.library.get<ah_status(const ah_plugin**)>(AH_PLUGIN_ENTRY_SYMBOL);
    const ah_plugin* raw = nullptr;
    ah_status status = init(&raw);
    if (status != AH_OK || !raw)
        return plugin_error(PluginFault::init_failed, m.library.string() + ": " AH_PLUGIN_ENTRY_SYMBOL " returned " +
                                                          status_words(status) + (raw ? "" : " and no descriptor"));
    if (raw->struct_size < offsetof(ah_plugin, create))
        return plugin_error(PluginFault::init_failed, m.library.string() + ": descriptor struct_size " +
                                                          std::to_string(raw->struct_size) + " is too small to be an ah_plugin");

    std::memset(&loaded.descriptor, 0, sizeof loaded.descriptor);
    std::memcpy(&loaded.descriptor, raw, std::min(raw->struct_size, sizeof loaded.descriptor));
    const ah_plugin& d = loaded.descriptor;
    if (d.abi_major != AH_ABI_MAJOR)
        return plugin_error(PluginFault::abi_mismatch, m.library.string() + " reports ABI major " + std::to_string(d.abi_major) +
                                                           " (its manifest says " + std::to_string(m.abi_major) +
                                                           "); this host speaks " + AH_ABI_VERSION_STRING);
    if (!d.name || m.name != d.name)
        return plugin_error(PluginFault::name_mismatch, m.library.string() + " calls itself '" +
                                                            std::string(d.name ? d.name : "") + "' but " + where + " says '" +
                                                            m.name + "'; make them equal");
    int expected_kind = m.kind == PluginKind::tool ? AH_PLUGIN_KIND_TOOL : AH_PLUGIN_KIND_PROVIDER;
    if (d.kind != expected_kind)
        return plugin_error(PluginFault::kind_mismatch,
                            m.library.string() + " is a " +
                                (d.kind == AH_PLUGIN_KIND_TOOL       ? std::string("tool")
                                 : d.kind == AH_PLUGIN_KIND_PROVIDER ? std::string("provider")
                                                                     : "plugin of unknown kind " + std::to_string(d.kind)) +
                                " plugin but " + where + " says kind = \"" + std::string(name(m.kind)) +
                                "\"; make the manifest's kind match the descriptor's");
    const char* missing = !d.create                                               ? "create"
                          : !d.destroy                                            ? "destroy"
                          : expected_kind == AH_PLUGIN_KIND_TOOL && !d.list_tools ? "list_tools"
                          : expected_kind == AH_PLUGIN_KIND_TOOL && !d.call_tool  ? "call_tool"
                          : expected_kind == AH_PLUGIN_KIND_PROVIDER && !d.chat   ? "chat"
                                                                                  : nullptr;
    if (missing)
        return plugin_error(PluginFault::missing_slot, m.library.string() + ": descriptor slot '" + missing +
                                                           "' is NULL but required for a " + std::string(name(m.kind)) +
                                                           " plugin");
    return loaded;
}

std::optional<std::string> abi_disagreement(const Manifest& m, uint32_t built_major, uint32_t built_minor) {
    if (built_major == static_cast<uint32_t>(m.abi_major) && built_minor == static_cast<uint32_t>(m.abi_minor))
        return std::nullopt;
    const std::string built = std::to_string(built_major) + "." + std::to_string(built_minor);
    return "plugin.toml says abi = \"" + std::to_string(m.abi_major) + "." + std::to_string(m.abi_minor) +
           "\" but the library was built against agenthost.h " + built + "; set abi = \"" + built + "\" in plugin.toml";
}

}  // namespace agenthost::plugins
