// Why a plugin could not load or serve, as Error::code words: the vocabulary of plugins/ and
// isolation/. plugin_error() makes one and is() reads it back, so no caller compares code strings.
// The words are stable: `agenthost plugins` and the logs show them.
#pragma once

#include "common/choices.hpp"
#include "common/result.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace agenthost::plugins {

enum class PluginFault {
    abi_mismatch,
    config_invalid,
    create_failed,
    duplicate_plugin,
    entry_missing,
    init_failed,
    kind_mismatch,
    library_missing,
    list_tools_failed,
    manifest_invalid,
    missing_slot,
    model_list_failed,
    name_mismatch,
    not_found,
    not_shared_object,
    output_too_large,
    permissions_exceeded,
    permissions_invalid,
    plugin_failure,
    provider_unavailable,
    sandbox_failed,
    sandbox_unavailable,
    unknown_tool,
    unsupported
};  // meanings in the table below

// Each fault's Error::code word (its name as written above) and what it means.
inline constexpr Choice<PluginFault> kPluginFaults[] = {
    {PluginFault::abi_mismatch, "abi_mismatch", "the library was built for another major ABI version"},
    {PluginFault::config_invalid, "config_invalid", "agenthost.toml's settings for the plugin are wrong"},
    {PluginFault::create_failed, "create_failed", "the plugin's create() refused to start"},
    {PluginFault::duplicate_plugin, "duplicate_plugin", "two manifests name the same plugin"},
    {PluginFault::entry_missing, "entry_missing", "the library has no agenthost_plugin_entry symbol"},
    {PluginFault::init_failed, "init_failed", "the plugin's init failed"},
    {PluginFault::kind_mismatch, "kind_mismatch", "the library is another kind of plugin than its manifest says"},
    {PluginFault::library_missing, "library_missing", "the manifest's library file does not exist"},
    {PluginFault::list_tools_failed, "list_tools_failed", "the plugin could not list its tools"},
    {PluginFault::manifest_invalid, "manifest_invalid", "plugin.toml is wrong"},
    {PluginFault::missing_slot, "missing_slot", "the descriptor lacks a function its kind requires"},
    {PluginFault::model_list_failed, "model_list_failed", "the provider could not list its models"},
    {PluginFault::name_mismatch, "name_mismatch", "the descriptor's name differs from the manifest's"},
    {PluginFault::not_found, "not_found", "no plugin serves the resource asked for"},
    {PluginFault::not_shared_object, "not_shared_object", "the file is not a shared library"},
    {PluginFault::output_too_large, "output_too_large", "a result passed its size limit"},
    {PluginFault::permissions_exceeded, "permissions_exceeded", "the plugin asks for more than the operator allows"},
    {PluginFault::permissions_invalid, "permissions_invalid", "the plugin's permissions cannot be read"},
    {PluginFault::plugin_failure, "plugin_failure", "the plugin failed while serving a call"},
    {PluginFault::provider_unavailable, "provider_unavailable", "the provider is not loaded or not ready"},
    {PluginFault::sandbox_failed, "sandbox_failed", "the plugin's sandbox could not be set up"},
    {PluginFault::sandbox_unavailable, "sandbox_unavailable", "this machine cannot sandbox plugins"},
    {PluginFault::unknown_tool, "unknown_tool", "no loaded plugin offers the tool"},
    {PluginFault::unsupported, "unsupported", "the plugin does not offer this operation"},
};

inline std::string_view plugin_code(PluginFault fault) { return choice_name<PluginFault>(kPluginFaults, fault); }

inline Error plugin_error(PluginFault fault, std::string message) {
    return Error{std::string(plugin_code(fault)), std::move(message)};
}

inline bool is(const Error& e, PluginFault fault) { return e.code == plugin_code(fault); }

}  // namespace agenthost::plugins
