// Finds plugins (manifests in the plugin directories), loads them, creates their instances and
// keeps the registry of tools and providers. A broken plugin is listed with its cause; the rest load.
#pragma once

#include <agenthost/agenthost.h>

#include "common/result.hpp"
#include "config/config.hpp"
#include "plugins/host_services.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace agenthost::plugins {

struct PluginInfo {
    std::string name;
    std::string kind;         // "tool" | "provider" (empty when the manifest could not be read)
    std::string version;
    std::string abi;          // "MAJOR.MINOR" from the manifest
    std::string description;
    std::filesystem::path manifest;
    std::filesystem::path library;
    std::string status;       // "loaded" | "failed" | "disabled"
    std::optional<Error> error;
    std::vector<std::string> warnings;
    std::vector<std::string> tools;
};

struct ToolInfo {
    std::string name;
    std::string description;
    std::string input_schema_json;
    std::string plugin;
    uint32_t hints = 0;           // after agenthost.toml's [tools.NAME] overrides
    bool needs_approval = false;  // configured, else true for destructive tools
};

// One call into a plugin; turned into an ah_call for the duration of the call.
struct CallInput {
    std::string call_id;
    std::string tool_name;
    std::string arguments_json = "{}";
    std::string conversation_id;
    std::string request_context_json = "{}";
    const ah_cancel* cancel = nullptr;
};

class Registry {
public:
    Registry(const config::Config& config, HostServices& services);
    ~Registry();
    Registry(const Registry&) = delete;
    Registry& operator=(const Registry&) = delete;

    // Scans every plugin directory and loads what it finds. Never fails as a whole.
    void load_all();

    const std::vector<PluginInfo>& plugins() const { return infos_; }
    const std::vector<ToolInfo>& tools() const { return tools_; }
    const ToolInfo* find_tool(std::string_view name) const;

    // Runs a tool. Always returns a tool result JSON object: a plugin failure (negative status,
    // invalid output) becomes an error result with error_code "plugin_failure".
    std::string call_tool(const CallInput& call);

    // The system-prompt text contributed by every tool plugin's context hook.
    std::string context(const CallInput& call);

    // Every plugin's resources as a JSON array ([{"uri", "name", …, "plugin"}]).
    std::string resources(const CallInput& call);
    // One resource's contents ({"contents": [...]}, JSON text); error not_found when no plugin serves it.
    Result<std::string> read_resource(const std::string& uri, const CallInput& call);

    // Runs a chat exchange on a provider instance: a [providers.NAME] entry, else the provider
    // plugin of that name (which carries the [provider] settings when it is the default).
    Result<ah_status> chat(std::string_view provider, const CallInput& call, const ah_event_sink& events);
    // The models a provider instance serves ([{"id", …}] as JSON text); an error when it cannot say.
    Result<std::string> models(std::string_view provider, const CallInput& call);
    // Every provider instance name: the plugin instances, then the named ones.
    std::vector<std::string> provider_names() const;

private:
    struct Loaded;
    struct ProviderInstance;
    void load_one(const std::filesystem::path& manifest_file);
    void create_named_providers();
    // The instance that serves `provider`, or an error naming why there is none.
    Result<std::pair<Loaded*, ProviderInstance*>> provider(std::string_view name);
    void fail(PluginInfo info, Error error);
    // A plugin's config: its manifest defaults with its [plugins.NAME] table over them.
    std::string plugin_config(const std::string& plugin, const std::string& defaults_json) const;
    Loaded* find_loaded(std::string_view name) const;

    const config::Config& config_;
    HostServices& services_;
    std::vector<PluginInfo> infos_;
    std::vector<ToolInfo> tools_;
    std::vector<std::unique_ptr<Loaded>> loaded_;
    std::vector<std::unique_ptr<ProviderInstance>> named_providers_;  // destroyed before loaded_
};

}  // namespace agenthost::plugins
