// One created instance of a plugin, as typed C++ calls over its descriptor's slots. Every call
// takes the instance's call lock (unless the plugin says it is thread-safe), is named by the crash
// note while it runs in this process, and reads at most a named number of bytes back: a plugin
// that writes more fails that call, never the host.
#pragma once

#include <agenthost/agenthost.h>

#include "common/result.hpp"
#include "isolation/isolated_plugin.hpp"
#include "plugins/plugin_types.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace agenthost::plugins {

class HostServices;

// The most a plugin may write back through one call of each slot.
namespace caps {
inline constexpr size_t tool_result = size_t{64} << 20;
inline constexpr size_t context = size_t{64} << 10;
inline constexpr size_t resource_list = size_t{4} << 20;
inline constexpr size_t resource = size_t{16} << 20;
inline constexpr size_t health = size_t{1} << 20;
inline constexpr size_t model_list = size_t{4} << 20;
inline constexpr size_t create_error = size_t{4} << 10;
}  // namespace caps

// The slots of ABI 1.5 that MCP clients reach: prompts, resource templates, completion.
enum class McpSlot { list_prompts, get_prompt, list_resource_templates, complete };

// The tools a tool plugin listed: those the host took and those it refused, with why.
struct ListedTools {
    ah_status status = AH_OK;  // what list_tools returned
    std::vector<ToolInfo> tools;
    std::vector<RefusedTool> refused;
};

class PluginInstance {
public:
    // Creates an instance through `descriptor.create` with `handle` (owned by the host services;
    // its isolation pointer set for an isolated plugin). `descriptor` must outlive the instance;
    // for an isolated plugin the slots its process lacks are cleared from it.
    // Warnings the plugin logged during create are moved into `warnings`. Error create_failed
    // carries the plugin's own message.
    static Result<std::unique_ptr<PluginInstance>> create(ah_plugin& descriptor, HostServices& services, ah_host* handle,
                                                          std::vector<std::string>& warnings);
    // Only create() can make the key: an instance exists only once its plugin's create() succeeded.
    class Key {
        friend class PluginInstance;
        Key() = default;
    };
    PluginInstance(Key, const ah_plugin& descriptor, ah_host* handle, ah_instance* instance);
    ~PluginInstance();  // destroys the instance; its handle refuses every later host service call
    PluginInstance(const PluginInstance&) = delete;
    PluginInstance& operator=(const PluginInstance&) = delete;

    const std::string& plugin() const;  // the plugin's name
    bool isolated() const;              // it runs in its own process
    ah_host* handle() const { return handle_; }

    // Tool plugins: the tools listed now, each checked (name, schema, a name twice); each refusal
    // is logged here.
    ListedTools list_tools();
    // The bytes the tool wrote, unread. Errors: plugin_failure (a negative status; an isolated
    // plugin's own words about its crash or timeout follow), output_too_large.
    Result<std::string> call_tool(const CallInput& call);
    // The plugin's system-prompt text; nullopt when it has no context slot or the slot failed.
    std::optional<std::string> context(const CallInput& call);
    // Its resources (a JSON array); nullopt when it has no slot or answered badly.
    std::optional<nlohmann::json> list_resources(const CallInput& call);
    // One resource's contents (a JSON object). Errors: not_found (not this plugin's), plugin_failure.
    Result<nlohmann::json> read_resource(const std::string& uri, const CallInput& call);
    // A 1.5 slot's answer: a JSON array from the list slots, an object from the others. Errors:
    // not_found (no such slot, or a prompt or template that is not the plugin's), plugin_failure.
    Result<nlohmann::json> mcp_slot(McpSlot slot, const CallInput& call);
    // Its own checks for doctor; empty without a health slot; a failed or malformed answer becomes
    // one failed check saying so.
    std::vector<HealthCheck> health();

    // Provider plugins: one chat exchange; the events go to `events`.
    ah_status chat(const CallInput& call, const ah_event_sink& events);
    // The models it serves (a JSON array). Errors: unsupported (no slot), model_list_failed.
    Result<nlohmann::json> list_models(const CallInput& call);

    // How an isolated plugin's process fares; nullopt in process.
    std::optional<isolation::ProcessHealth> process_health() const;
    // The ABI version its library reports: its descriptor's in process, its process's report
    // when isolated (nullopt if that process did not say).
    std::optional<isolation::BuiltAbi> built_abi() const;

private:
    std::unique_lock<std::mutex> lock();
    // Runs a slot that writes into a bounded text under the lock and the crash note.
    template <typename Slot>
    ah_status call_slot(const std::string& what, Slot&& slot);

    const ah_plugin& descriptor_;
    ah_host* handle_;
    ah_instance* instance_;
    std::mutex mutex_;  // serialises calls unless the plugin is thread-safe
};

}  // namespace agenthost::plugins
