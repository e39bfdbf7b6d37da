#include "plugins/plugin_setup.hpp"

#include "plugins/plugin_types.hpp"
#include "plugins/settings_check.hpp"

#include <nlohmann/json.hpp>

namespace agenthost::plugins {
using nlohmann::json;

Result<PluginSetup> plugin_setup(const config::Config& config, const Manifest& m) {
    // The host's keys are read here and taken out; the plugin never sees them.
    json own = json::object();
    if (auto it = config.plugin_tables.find(m.name); it != config.plugin_tables.end()) own = json::parse(it->second);
    const json table = own;
    for (const auto& key : host_plugin_keys()) own.erase(key);
    if (auto problems = check_plugin_table(config, m, own); !problems.empty()) {
        std::string message;
        for (const auto& p : problems) message += (message.empty() ? "" : "\n") + p;
        return Error{"config_invalid", message};
    }

    PluginSetup setup;
    std::string mode = table.value("isolation", std::string(name(Isolation::in_process)));
    auto isolation = parse_isolation(mode);
    if (!isolation)
        return Error{"config_invalid", config.place("plugins." + m.name + ".isolation") + ": [plugins." + m.name +
                                           "] isolation = \"" + mode +
                                           "\" is unknown: use \"in-process\" (the default) or \"process\""};
    if (*isolation == Isolation::process) {
        isolation::Settings s;
        s.runner = isolation::default_runner();
        s.manifest = m.file;
        s.memory_mb = table.value("isolation_memory_mb", 0);
        s.cpu_seconds = table.value("isolation_cpu_seconds", 0);
        s.call_timeout_ms = table.value("isolation_timeout_ms", s.call_timeout_ms);
        s.max_crashes = table.value("isolation_max_crashes", s.max_crashes);
        s.crash_window_seconds = table.value("isolation_crash_window_seconds", s.crash_window_seconds);
        setup.isolation = s;
    }
    json cfg = json::parse(m.default_config_json);
    if (!cfg.is_object()) cfg = json::object();
    cfg.merge_patch(own);
    setup.config_json = cfg.dump();
    return setup;
}

std::string with_provider_settings(const std::string& config_json, const config::ProviderSettings& p) {
    json cfg = json::parse(config_json);
    if (!p.model.empty()) cfg["model"] = p.model;
    if (!p.base_url.empty()) cfg["base_url"] = p.base_url;
    if (!p.api_key.empty()) cfg["api_key"] = p.api_key;  // only ever from the environment
    if (p.timeout_ms > 0) cfg["timeout_ms"] = p.timeout_ms;
    if (p.connect_timeout_ms > 0) cfg["connect_timeout_ms"] = p.connect_timeout_ms;
    return cfg.dump();
}

}  // namespace agenthost::plugins
