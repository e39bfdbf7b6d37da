// Finds plugins (manifests in the plugin directories), loads them, creates their instances and
// keeps the registry of tools and providers. A broken plugin is listed with its cause; the rest load.
#pragma once

#include <agenthost/agenthost.h>

#include "common/result.hpp"
#include "config/config.hpp"
#include "isolation/isolated_plugin.hpp"
#include "plugins/host_services.hpp"

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace agenthost::plugins {

// A tool a plugin listed that the host did not take (bad name or schema, a name twice).
struct RefusedTool {
    std::string name;
    std::string reason;  // names the keyword or rule at fault
};

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
    // Tools the plugin listed but the host refused (bad name or schema, a name twice), with why.
    std::vector<RefusedTool> refused_tools;
    std::string isolation = "in-process";  // or "process"
    std::string settings_schema_json;      // the manifest's declared settings (JSON Schema); empty: none
    std::string effective_config_json;     // what the plugin received: its defaults with the operator's table over them
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
// One thing a plugin checked for doctor: a server it logs in to, a folder it writes …
struct HealthCheck {
    std::string name;
    bool ok = false;
    std::string detail;  // what was found, or what to fix
};

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

    const std::vector<PluginInfo>& plugins() const { return infos_; }  // as found at start-up
    // How an isolated plugin's process fares now; nullopt for in-process or unloaded plugins.
    std::optional<isolation::ProcessHealth> process_health(std::string_view plugin) const;
    // The plugin's status now: its start-up status, or "disabled" once its process failed too often.
    // A disabled plugin announces it, and its tools leave the snapshot tools() returns.
    std::string status_now(const PluginInfo& plugin) const;
    bool disabled(std::string_view plugin) const;
    // Why a tool a plugin listed at start-up is gone now (its plugin is disabled), in words; nullopt
    // when no plugin ever listed it.
    std::optional<std::string> why_tool_gone(std::string_view tool) const;
    // The enabled tools, as a snapshot: a plugin may change its list while the host runs
    // (ah_host_api.tools_changed), so a caller keeps the snapshot it read for as long as it uses it.
    std::shared_ptr<const std::vector<ToolInfo>> tools() const;
    std::shared_ptr<const ToolInfo> find_tool(std::string_view name) const;
    // `listener` is called (on the registry's own thread) after a plugin's tool list changed; it
    // must not add or remove listeners. Returns an id for remove_tools_listener(), after which the
    // listener is never called again.
    int add_tools_listener(std::function<void()> listener);
    void remove_tools_listener(int id);

    // Runs a plugin's tool and returns the bytes it wrote, unread: tools::Invoker (its only
    // caller) reads them. Errors: unknown_tool, plugin_failure (a negative status, the plugin gone),
    // output_too_large (more than 64 MiB).
    Result<std::string> call_tool(const CallInput& call);

    // The system-prompt text contributed by every tool plugin's context hook.
    std::string context(const CallInput& call);

    // Every plugin's resources as a JSON array ([{"uri", "name", …, "plugin"}]).
    std::string resources(const CallInput& call);
    // One resource's contents ({"contents": [...]}, JSON text); error not_found when no plugin serves it.
    Result<std::string> read_resource(const std::string& uri, const CallInput& call);
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
    struct Loaded;
    struct ProviderInstance;
    void load_one(const std::filesystem::path& manifest_file);
    void create_named_providers();
    // The instance that serves `provider`, or an error naming why there is none.
    Result<std::pair<Loaded*, ProviderInstance*>> provider(std::string_view name);
    void fail(PluginInfo info, Error error);
    Loaded* find_loaded(std::string_view name) const;
    // Reads a tool plugin's list (under its call lock); bad definitions become warnings.
    ah_status list_plugin_tools(Loaded& plugin, std::vector<ToolInfo>& tools, std::vector<RefusedTool>& refused);
    // agenthost.toml's [tools.NAME] overrides; false when the tool is disabled there.
    bool apply_policy(ToolInfo& tool) const;
    // A plugin said its tools changed: it is listed again on the refresher thread, never inside
    // the plugin's own call.
    void tools_changed(const std::string& plugin);
    void refresh_loop();
    bool refresh_tools(const std::string& plugin);  // true when the list changed

    const config::Config& config_;
    HostServices& services_;
    std::vector<PluginInfo> infos_;
    mutable std::mutex tools_mutex_;
    std::shared_ptr<const std::vector<ToolInfo>> tools_ = std::make_shared<const std::vector<ToolInfo>>();
    std::mutex listeners_mutex_;
    std::map<int, std::function<void()>> listeners_;
    int next_listener_ = 0;
    std::mutex refresh_mutex_;
    std::condition_variable refresh_wake_;
    std::set<std::string> refresh_pending_;
    bool stopping_ = false;
    bool loaded_all_ = false;  // refreshes wait for load_all(): loaded_ does not change after it
    std::thread refresher_;    // started by the first tools_changed
    std::vector<std::unique_ptr<Loaded>> loaded_;
    std::vector<std::unique_ptr<ProviderInstance>> named_providers_;  // destroyed before loaded_
};

}  // namespace agenthost::plugins
