// The tools the plugins offer, as one table: each plugin's tools after agenthost.toml's
// [tools.NAME] overrides, one owner per name (the plugin loaded first), read as immutable
// snapshots while a plugin may change its list (ah_host_api.tools_changed).
#pragma once

#include "config/config.hpp"
#include "plugins/plugin_types.hpp"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace agenthost::plugins {

// What agenthost.toml's [tools.NAME] makes of a tool: its hints with the overrides applied, whether
// it needs a person's approval (as configured, else when destructive) and whether it is enabled.
// The one rule, for plugin tools (the table) and built-in ones (tools::Catalogue).
struct ToolPolicyOutcome {
    uint32_t hints = 0;
    bool needs_approval = false;
    bool enabled = true;
};
ToolPolicyOutcome apply_tool_policy(const std::map<std::string, config::ToolPolicy>& policies, std::string_view name,
                                    uint32_t hints);

class ToolTable {
public:
    explicit ToolTable(const std::map<std::string, config::ToolPolicy>& policies) : policies_(policies) {}
    ToolTable(const ToolTable&) = delete;
    ToolTable& operator=(const ToolTable&) = delete;

    // The enabled tools now; a caller keeps the snapshot it read for as long as it uses it.
    std::shared_ptr<const std::vector<ToolInfo>> snapshot() const;
    std::shared_ptr<const ToolInfo> find(std::string_view name) const;  // keeps its snapshot alive

    // A newly loaded plugin's tools join the table. A name another plugin already provides is
    // refused (appended to `refused`); one that [tools.NAME] disables is kept out of the snapshot.
    // Returns the names the plugin now owns, disabled ones included.
    std::vector<std::string> add(std::vector<ToolInfo> listed, std::vector<RefusedTool>& refused);
    // `plugin`'s tools now, replacing its earlier ones (a name another plugin owns is skipped).
    // True when anything the model would see changed.
    bool replace(const std::string& plugin, std::vector<ToolInfo> listed);

    // `listener` is called by notify_listeners(); it must not add or remove listeners. Returns an
    // id for remove_listener(), after which the listener is never called again.
    int add_listener(std::function<void()> listener);
    void remove_listener(int id);
    void notify_listeners();

private:
    // Applies [tools.NAME]; false when the tool is disabled there.
    bool apply_policy(ToolInfo& tool) const;

    const std::map<std::string, config::ToolPolicy>& policies_;
    mutable std::mutex mutex_;
    std::shared_ptr<const std::vector<ToolInfo>> tools_ = std::make_shared<const std::vector<ToolInfo>>();
    std::mutex listeners_mutex_;
    std::map<int, std::function<void()>> listeners_;
    int next_listener_ = 0;
};

}  // namespace agenthost::plugins
