// Host modules: the parts of the host that link large libraries — libcurl (plugins' HTTP), libpq
// (the PostgreSQL store) and cpp-httplib with OpenSSL (`serve`) — are shared objects in
// LIBDIR/agenthost/modules/, loaded the first time a command needs them. A command that uses none
// of them (`run` with a local model, `--version`, the plugin runner) does not pay for mapping and
// relocating those libraries and their ~35 dependencies at every start.
//
// A module exports one C function, `agenthost_module_<name>` (dashes as underscores), returning a
// pointer to its table: a struct of function pointers that begins with ModuleHeader. It is built
// from this tree by the same compiler as the executable and installed beside it, so C++ types may
// cross; the header's version and size refuse a module from another build. A loaded module stays
// loaded until the process exits: objects it made may live that long.
#pragma once

#include "common/result.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace agenthost::modules {

struct ModuleHeader {
    const char* version;  // AGENTHOST_VERSION of the build the module comes from
    size_t table_size;    // sizeof the module's table in that build
};

// Every module: its name, what it gives, and the configure option that leaves it out of a build
// (cmake -DAGENTHOST_WITH_…=OFF: the minimal build has none of them).
struct ModuleInfo {
    std::string_view name;
    std::string_view gives;
    std::string_view option;
};
inline constexpr ModuleInfo kModules[] = {
    {"http-client", "plugins' HTTPS requests (libcurl)", "AGENTHOST_WITH_CURL"},
    {"postgres", "the PostgreSQL backend ([store] backend = \"postgresql\")", "AGENTHOST_WITH_POSTGRES"},
    {"http-server", "the HTTP server (agenthost serve)", "AGENTHOST_WITH_HTTP_SERVER"},
};

// Whether this build has the module (its option was on at configure time).
bool built(std::string_view name);

// Whether the module's file is there, readable and whole, without loading it; an error names the
// file, the cause and the fix (the module is part of the installation). A module this build left
// out is module_not_built, naming what is missing and the option.
Status check(std::string_view name);

// The module's table, as `agenthost_module_<name>` returned it; errors as check()'s.
Result<const ModuleHeader*> load(std::string_view name, size_t table_size);

// load() for a table type whose first member is `ModuleHeader header`.
template <typename Table>
Result<const Table*> load_table(std::string_view name) {
    auto header = load(name, sizeof(Table));
    if (!header) return header.error();
    return reinterpret_cast<const Table*>(*header);
}

}  // namespace agenthost::modules

// Defines a module's entry; `table` is a static Table whose first member is the header.
#define AGENTHOST_MODULE_ENTRY(symbol, table) \
    extern "C" __attribute__((visibility("default"))) const agenthost::modules::ModuleHeader* symbol() { return &(table).header; }
