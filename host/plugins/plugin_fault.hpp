// Why a plugin could not load or serve, as Error::code words: the vocabulary of plugins/ and
// isolation/. plugin_error() makes one and is() reads it back, so no caller compares code strings.
// The words are stable: `agenthost plugins` and the logs show them.
#pragma once

#include "common/result.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace agenthost::plugins {

enum class PluginFault {
    abi_mismatch,          // the library was built for another major ABI version
    config_invalid,        // agenthost.toml's settings for the plugin are wrong
    create_failed,         // the plugin's create() refused to start
    duplicate_plugin,      // two manifests name the same plugin
    entry_missing,         // the library has no agenthost_plugin_entry symbol
    init_failed,           // the plugin's init failed
    kind_mismatch,         // the library is another kind of plugin than its manifest says
    library_missing,       // the manifest's library file does not exist
    list_tools_failed,     // the plugin could not list its tools
    manifest_invalid,      // plugin.toml is wrong
    missing_slot,          // the descriptor lacks a function its kind requires
    model_list_failed,     // the provider could not list its models
    name_mismatch,         // the descriptor's name differs from the manifest's
    not_found,             // no plugin serves the resource asked for
    not_shared_object,     // the file is not a shared library
    output_too_large,      // a result passed its size limit
    permissions_exceeded,  // the plugin asks for more than the operator allows
    permissions_invalid,   // the plugin's permissions cannot be read
    plugin_failure,        // the plugin failed while serving a call
    provider_unavailable,  // the provider is not loaded or not ready
    sandbox_failed,        // the plugin's sandbox could not be set up
    sandbox_unavailable,   // this machine cannot sandbox plugins
    unknown_tool,          // no loaded plugin offers the tool
    unsupported,           // the plugin does not offer this operation
};

// The fault's Error::code: its name as written above ("abi_mismatch", "config_invalid" …).
std::string_view plugin_code(PluginFault fault);

inline Error plugin_error(PluginFault fault, std::string message) {
    return Error{std::string(plugin_code(fault)), std::move(message)};
}

inline bool is(const Error& e, PluginFault fault) { return e.code == plugin_code(fault); }

}  // namespace agenthost::plugins
