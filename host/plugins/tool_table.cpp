#include "plugins/tool_table.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace agenthost::plugins {

std::shared_ptr<const std::vector<ToolInfo>> ToolTable::snapshot() const {
    std::lock_guard lock(mutex_);
    return tools_;
}

std::shared_ptr<const ToolInfo> ToolTable::find(std::string_view name) const {
    auto all = snapshot();
    for (const ToolInfo& t : *all)
        if (t.name == name) return std::shared_ptr<const ToolInfo>(all, &t);
    return nullptr;
}

std::vector<std::string> ToolTable::add(std::vector<ToolInfo> listed, std::vector<RefusedTool>& refused) {
    std::lock_guard lock(mutex_);
    auto next = std::make_shared<std::vector<ToolInfo>>(*tools_);
    std::vector<std::string> owned;
    for (ToolInfo& tool : listed) {
        auto clash = std::find_if(tools_->begin(), tools_->end(), [&](const ToolInfo& t) { return t.name == tool.name; });
        if (clash != tools_->end()) {
            RefusedTool r{tool.name, "plugin '" + clash->plugin +
                                         "' (loaded first) already provides a tool of this name; "
                                         "disable one of the two plugins (disabled_plugins) or rename the tool"};
            spdlog::warn("plugin tool refused: plugin={} tool={} {}", tool.plugin, r.name, r.reason);
            refused.push_back(std::move(r));
            continue;
        }
        owned.push_back(tool.name);
        if (apply_policy(tool)) next->push_back(std::move(tool));
    }
    tools_ = std::move(next);
    return owned;
}

bool ToolTable::replace(const std::string& plugin, std::vector<ToolInfo> listed) {
    std::lock_guard lock(mutex_);
    auto next = std::make_shared<std::vector<ToolInfo>>();
    for (const ToolInfo& t : *tools_)
        if (t.plugin != plugin) next->push_back(t);
    const auto others = static_cast<std::ptrdiff_t>(next->size());
    for (ToolInfo& tool : listed) {
        auto clash = std::find_if(next->begin(), next->begin() + others, [&](const ToolInfo& t) { return t.name == tool.name; });
        if (clash != next->begin() + others) {
            spdlog::warn("plugin tool skipped: plugin={} tool={} (already provided by plugin {})", plugin, tool.name,
                         clash->plugin);
            continue;
        }
        if (apply_policy(tool)) next->push_back(std::move(tool));
    }
    auto same = [](const ToolInfo& a, const ToolInfo& b) {
        return a.name == b.name && a.description == b.description && a.input_schema_json == b.input_schema_json &&
               a.hints == b.hints && a.title == b.title && a.output_schema_json == b.output_schema_json;
    };
    std::vector<ToolInfo> before;
    for (const ToolInfo& t : *tools_)
        if (t.plugin == plugin) before.push_back(t);
    if (std::equal(before.begin(), before.end(), next->begin() + others, next->end(), same)) return false;
    spdlog::info("plugin tools changed: plugin={} tools={} (were {})", plugin, next->size() - static_cast<size_t>(others),
                 before.size());
    tools_ = std::move(next);
    return true;
}

ToolPolicyOutcome apply_tool_policy(const std::map<std::string, config::ToolPolicy>& policies, std::string_view name,
                                    uint32_t hints) {
    ToolPolicyOutcome out{hints, false, true};
    auto policy = policies.find(std::string(name));
    auto apply = [&](const std::optional<bool>& value, uint32_t flag) {
        if (value) out.hints = *value ? (out.hints | flag) : (out.hints & ~flag);
    };
    std::optional<bool> needs_approval;
    if (policy != policies.end()) {
        apply(policy->second.read_only, AH_TOOL_READ_ONLY);
        apply(policy->second.destructive, AH_TOOL_DESTRUCTIVE);
        apply(policy->second.idempotent, AH_TOOL_IDEMPOTENT);
        apply(policy->second.open_world, AH_TOOL_OPEN_WORLD);
        out.enabled = policy->second.enabled.value_or(true);
        needs_approval = policy->second.needs_approval;
    }
    out.needs_approval = needs_approval.value_or((out.hints & AH_TOOL_DESTRUCTIVE) != 0);
    return out;
}

bool ToolTable::apply_policy(ToolInfo& tool) const {
    auto outcome = apply_tool_policy(policies_, tool.name, tool.hints);
    tool.hints = outcome.hints;
    tool.needs_approval = outcome.needs_approval;
    return outcome.enabled;
}

int ToolTable::add_listener(std::function<void()> listener) {
    std::lock_guard lock(listeners_mutex_);
    listeners_[++next_listener_] = std::move(listener);
    return next_listener_;
}

void ToolTable::remove_listener(int id) {
    std::lock_guard lock(listeners_mutex_);
    listeners_.erase(id);
}

void ToolTable::notify_listeners() {
    // Called under the lock, so a listener removed by remove_listener() is never running any more
    // when that returns.
    std::lock_guard lock(listeners_mutex_);
    for (const auto& [id, listener] : listeners_) listener();
}

}  // namespace agenthost::plugins
