// The plugins of one host: finds them (discovery.hpp), loads each (manifest, library, setup,
// instance), and keeps what they offer — the tool table, the provider pool, resources, context
// and health. A broken plugin is listed with its cause; the rest load.
#pragma once

#include <agenthost/agenthost.h>

#include "common/result.hpp"
#include "config/config.hpp"
#include "isolation/isolated_plugin.hpp"
#include "plugins/host_services.hpp"
#include "plugins/plugin_instance.hpp"
#include "plugins/plugin_types.hpp"
#include "plugins/provider_pool.hpp"
#include "plugins/tool_table.hpp"

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace agenthost::plugins {

struct PluginSetup;   // plugins/plugin_setup.hpp
class ManifestCache;  // plugins/manifest_cache.hpp

class Registry {
public:
    Registry(const config::Config& config, HostServices& services);
    HostServices& services() { return services_; }
    // [tools.NAME] of agenthost.toml: what apply_tool_policy() reads.
    const std::map<std::string, config::ToolPolicy>& tool_policies() const { return config_.tools; }
    ~Registry();
    Registry(const Registry&) = delete;
    Registry& operator=(const Registry&) = delete;

    // Scans every plugin directory and loads what it finds. Never fails as a whole.
    void load_all();

    const std::vector<PluginInfo>& plugins() const { return infos_; }  // as found at start-up
    // How an isolated plugin's process fares now; nullopt for in-process or unloaded plugins.
    std::optional<isolation::ProcessHealth> process_health(std::string_view plugin) const;
    // The plugin's status now: its start-up status, or disabled once its process failed too often.
    // A disabled plugin announces it, and its tools leave the snapshot tools() returns.
    PluginStatus status_now(const PluginInfo& plugin) const;
    bool disabled(std::string_view plugin) const;
    // Why a tool a plugin listed at start-up is gone now (its plugin is disabled), in words; nullopt
    // when no plugin ever listed it.
    std::optional<std::string> why_tool_gone(std::string_view tool) const;
    // For a tool no plugin offers: the tool plugins that failed to load (one may have offered it),
    // as words to add to "there is no tool named …"; empty when every tool plugin loaded.
    std::string unloaded_tool_plugins_hint() const;

    // The enabled tools, as a snapshot (see ToolTable).
    std::shared_ptr<const std::vector<ToolInfo>> tools() const { return tools_.snapshot(); }
    std::shared_ptr<const ToolInfo> find_tool(std::string_view name) const { return tools_.find(name); }
    // The names of the tools a plugin offers now: its list as refreshed since start-up (a bridged
    // server that came up late), without tools [tools.NAME] hides or a disabled plugin's.
    std::vector<std::string> tools_now(std::string_view plugin) const;
    // `listener` is called (on the registry's own thread) after a plugin's tool list changed; it
    // must not add or remove listeners. Returns an id for remove_tools_listener(), after which the
    // listener is never called again.
    int add_tools_listener(std::function<void()> listener) { return tools_.add_listener(std::move(listener)); }
    void remove_tools_listener(int id) { tools_.remove_listener(id); }

    // Runs a plugin's tool and returns the bytes it wrote, unread: tools::Invoker (its only
    // caller) reads them. Errors: unknown_tool, plugin_failure (a negative status, the plugin gone),
    // output_too_large (more than caps::tool_result).
    Result<std::string> call_tool(const CallInput& call);

    // The system-prompt text contributed by every tool plugin's context hook.
    std::string context(const CallInput& call);

    // Every plugin's resources as a JSON array ([{"uri", "name", …, "plugin"}]).
    std::string resources(const CallInput& call);
    // One resource's contents ({"contents": [...]}, JSON text); error not_found when no plugin serves it.
    Result<std::string> read_resource(const std::string& uri, const CallInput& call);
    // ABI 1.5, for MCP clients. A list slot (prompts, resource templates): every plugin's entries,
    // each tagged "plugin", a name listed again by a later plugin skipped with a warning. Another
    // slot (get_prompt, complete): the first plugin's answer that is not not_found.
    nlohmann::json list_from_plugins(McpSlot slot, const CallInput& call);
    Result<nlohmann::json> ask_plugins(McpSlot slot, const CallInput& call);
    // A loaded plugin's own checks (its health slot, ABI 1.4), for doctor. Empty when it has no
    // slot; a slot that fails or answers malformed JSON becomes one failed check saying so.
    std::vector<HealthCheck> health(const std::string& plugin);

    // Runs a chat exchange on a provider instance: a [providers.NAME] entry, else the provider
    // plugin of that name (which carries the [provider] settings when it is the default).
    Result<ah_status> chat(std::string_view provider, const CallInput& call, const ah_event_sink& events);
    // The models a provider instance serves ([{"id", …}] as JSON text); an error when it cannot say.
    Result<std::string> models(std::string_view provider, const CallInput& call);
    // Every provider instance name: the plugin instances, then the named ones.
    std::vector<std::string> provider_names() const;

private:
    // A plugin that loaded (registry.cpp): kept out of this header, which most of the host
    // includes, so Boost.DLL's headers stay in the plugins layer.
    struct LoadedPlugin;
    void load_one(const std::filesystem::path& manifest_file, ManifestCache& manifests);
    // A new instance of a loaded plugin, made with `setup` (kept in the plugin's setups).
    Result<std::unique_ptr<PluginInstance>> start_instance(LoadedPlugin& plugin, const PluginSetup& setup,
                                                           std::vector<std::string>& warnings);
    void create_named_providers();
    // The instance that serves `provider`, or an error naming why there is none.
    Result<PluginInstance*> provider(std::string_view name);
    void fail(PluginInfo info, Error error);
    LoadedPlugin* find_loaded(std::string_view name) const;
    // The plugin's own instance, or null (a provider plugin not yet asked for by name): read under
    // providers_mutex_, as provider() may be making it on another thread.
    PluginInstance* instance_of(const LoadedPlugin& plugin) const;
    // A plugin said its tools changed: it is listed again on the refresher thread, never inside
    // the plugin's own call.
    void tools_changed(const std::string& plugin);
    void refresh_loop();
    bool refresh_tools(const std::string& plugin);  // true when the list changed

    const config::Config& config_;
    HostServices& services_;
    std::vector<PluginInfo> infos_;
    ToolTable tools_;
    std::mutex refresh_mutex_;
    std::condition_variable refresh_wake_;
    std::set<std::string> refresh_pending_;
    bool stopping_ = false;
    bool loaded_all_ = false;  // refreshes wait for load_all(): loaded_ does not change after it
    std::thread refresher_;    // started by the first tools_changed
    std::vector<std::unique_ptr<LoadedPlugin>> loaded_;
    mutable std::mutex providers_mutex_;  // providers_, and a provider plugin's instance made on first use
    ProviderPool providers_;              // its named instances are destroyed before loaded_
};

}  // namespace agenthost::plugins
