// Opens one plugin library with Boost.DLL and reads its descriptor, checking everything that can be
// checked before any plugin code runs (ABI major from the manifest) and right after (descriptor).
#pragma once

#include <agenthost/agenthost.h>

#include "common/result.hpp"
#include "plugins/manifest.hpp"

#include <boost/dll/shared_library.hpp>

#include <optional>
#include <string>

namespace agenthost::plugins {

struct LoadedLibrary {
    boost::dll::shared_library library;  // opened with RTLD_NODELETE: never unmapped, even on close
    ah_plugin descriptor;                // copied per ABI rule 1 (unknown trailing fields dropped)
};

// What can be checked of a plugin without opening its library (the manifest's ABI major, the
// library file there): the error, or nullopt. load_library() begins with it; a provider plugin
// nothing uses is checked with it alone. Error codes: abi_mismatch, library_missing.
std::optional<Error> check_before_opening(const Manifest& manifest);

// Error codes: abi_mismatch, library_missing, not_shared_object, entry_missing, init_failed,
// name_mismatch, kind_mismatch, missing_slot.
Result<LoadedLibrary> load_library(const Manifest& manifest);

// When the manifest's `abi` is not the version the library's descriptor reports (same major, another
// minor): the words of a warning that names both and the fix. The descriptor is what runs.
// In process the library's descriptor gives the version; isolated, the plugin's process reports it.
std::optional<std::string> abi_disagreement(const Manifest& manifest, uint32_t built_major, uint32_t built_minor);

}  // namespace agenthost::plugins
