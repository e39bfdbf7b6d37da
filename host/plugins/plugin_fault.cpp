#include "plugins/plugin_fault.hpp"

#include <utility>

namespace agenthost::plugins {

namespace {

constexpr std::pair<PluginFault, std::string_view> kCodes[] = {
    {PluginFault::abi_mismatch, "abi_mismatch"},
    {PluginFault::config_invalid, "config_invalid"},
    {PluginFault::create_failed, "create_failed"},
    {PluginFault::duplicate_plugin, "duplicate_plugin"},
    {PluginFault::entry_missing, "entry_missing"},
    {PluginFault::init_failed, "init_failed"},
    {PluginFault::kind_mismatch, "kind_mismatch"},
    {PluginFault::library_missing, "library_missing"},
    {PluginFault::list_tools_failed, "list_tools_failed"},
    {PluginFault::manifest_invalid, "manifest_invalid"},
    {PluginFault::missing_slot, "missing_slot"},
    {PluginFault::model_list_failed, "model_list_failed"},
    {PluginFault::name_mismatch, "name_mismatch"},
    {PluginFault::not_found, "not_found"},
    {PluginFault::not_shared_object, "not_shared_object"},
    {PluginFault::output_too_large, "output_too_large"},
    {PluginFault::permissions_exceeded, "permissions_exceeded"},
    {PluginFault::permissions_invalid, "permissions_invalid"},
    {PluginFault::plugin_failure, "plugin_failure"},
    {PluginFault::provider_unavailable, "provider_unavailable"},
    {PluginFault::sandbox_failed, "sandbox_failed"},
    {PluginFault::sandbox_unavailable, "sandbox_unavailable"},
    {PluginFault::unknown_tool, "unknown_tool"},
    {PluginFault::unsupported, "unsupported"},
};

}  // namespace

std::string_view plugin_code(PluginFault fault) {
    for (const auto& [f, code] : kCodes)
        if (f == fault) return code;
    return "plugin_failure";
}

}  // namespace agenthost::plugins
