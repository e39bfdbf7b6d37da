#include "plugins/plugin_setup.hpp"

#include "common/install_layout.hpp"
#include "isolation/sandbox.hpp"
#include "plugins/plugin_types.hpp"
#include "plugins/settings_check.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace agenthost::plugins {
using nlohmann::json;

namespace {

// "a; b; c": several problems in one message.
std::string joined(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
    return out;
}

// A plugin found outside the bundled plugin folder.
bool third_party(const Manifest& m) {
    std::error_code ec;
    const auto bundled = std::filesystem::weakly_canonical(layout::install_layout().plugin_dir, ec);
    const auto file = std::filesystem::weakly_canonical(m.file, ec);
    auto [b, f] = std::mismatch(bundled.begin(), bundled.end(), file.begin(), file.end());
    return bundled.empty() || b != bundled.end();
}

// The plugin's isolation: its own table's word, else third_party_isolation for a third-party
// plugin, else in-process.
Result<Isolation> isolation_of(const config::Config& config, const Manifest& m, const json& table) {
    if (!table.contains("isolation") || !table["isolation"].is_string())
        return third_party(m) ? config.third_party_isolation : Isolation::in_process;
    const std::string mode = table["isolation"].get<std::string>();
    if (auto isolation = parse_isolation(mode)) return *isolation;
    return Error{"config_invalid", config.place("plugins." + m.name + ".isolation") + ": [plugins." + m.name +
                                       "] isolation = " + unknown_choice<Isolation>(kIsolations, mode)};
}

// The grant: the operator's `permissions` when written (after checking that the manifest asks for
// no more), else what the manifest declares.
Result<std::optional<Grant>> grant_of(const config::Config& config, const Manifest& m, const json& table,
                                      const PermissionContext& context) {
    std::optional<Grant> ceiling;
    const std::string place = config.place("plugins." + m.name + ".permissions");
    if (table.contains("permissions")) {
        auto operator_permissions = parse_permissions(table["permissions"].dump(), place + ": [plugins." + m.name + "]");
        if (!operator_permissions) return Error{"config_invalid", operator_permissions.error().message};
        auto resolved = resolve(*operator_permissions, context);
        if (!resolved) return Error{"config_invalid", place + ": [plugins." + m.name + "] " + resolved.error().message};
        ceiling = std::move(*resolved);
    }
    if (!m.permissions) return ceiling;
    auto asked = resolve(*m.permissions, context);
    if (!asked) return Error{"permissions_invalid", m.file.string() + ": " + asked.error().message};
    if (!ceiling) return std::optional<Grant>(std::move(*asked));
    auto beyond = exceeding(*asked, *ceiling);
    if (!beyond.empty()) {
        return Error{"permissions_exceeded", "plugin '" + m.name + "' asks for more than " + place + " [plugins." + m.name +
                                                 "] permissions grants: " + joined(beyond) +
                                                 ". Grant it there, or leave the plugin disabled"};
    }
    return ceiling;  // the operator's word: it may grant more than the plugin declares (a local file …)
}

// A provider table's settings over the plugin's own.
void with_provider_settings(json& cfg, const config::ProviderSettings& p) {
    if (!p.model.empty()) cfg["model"] = p.model;
    if (!p.base_url.empty()) cfg["base_url"] = p.base_url;
    if (!p.api_key.empty()) cfg["api_key"] = p.api_key;  // only ever from the environment
    if (p.timeout_ms > 0) cfg["timeout_ms"] = p.timeout_ms;
    if (p.connect_timeout_ms > 0) cfg["connect_timeout_ms"] = p.connect_timeout_ms;
}

}  // namespace

Result<PluginSetup> plugin_setup(const config::Config& config, const Manifest& m, const config::ProviderSettings* provider) {
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
    json cfg = json::parse(m.default_config_json);
    if (!cfg.is_object()) cfg = json::object();
    cfg.merge_patch(own);
    if (provider) with_provider_settings(cfg, *provider);
    setup.config_json = cfg.dump();

    auto isolation = isolation_of(config, m, table);
    if (!isolation) return isolation.error();
    setup.isolation = *isolation;
    auto grant = grant_of(config, m, table, {config.data_dir / "plugins" / m.name, setup.config_json});
    if (!grant) return grant.error();
    setup.grant = std::move(*grant);

    if (setup.isolation != Isolation::in_process) {
        isolation::Settings s;
        s.runner = isolation::default_runner();
        s.manifest = m.file;
        s.memory_mb = table.value("isolation_memory_mb", 0);
        s.cpu_seconds = table.value("isolation_cpu_seconds", 0);
        s.call_timeout_ms = table.value("isolation_timeout_ms", s.call_timeout_ms);
        s.max_crashes = table.value("isolation_max_crashes", s.max_crashes);
        s.crash_window_seconds = table.value("isolation_crash_window_seconds", s.crash_window_seconds);
        if (setup.isolation == Isolation::sandbox) {
            if (!setup.grant) setup.grant = Grant{};  // declared nothing, granted nothing: only what running needs
            std::error_code ec;                       // the library's real folder: a linked plugin is read where it lies
            auto rules = isolation::sandbox_rules(*setup.grant, std::filesystem::weakly_canonical(m.library, ec).parent_path());
            if (auto missing = isolation::unenforceable(rules, isolation::kernel_support()); !missing.empty()) {
                return Error{"sandbox_unavailable", config.place("plugins." + m.name + ".isolation") + ": plugin '" + m.name +
                                                        "' cannot be sandboxed here: " + joined(missing) +
                                                        ". Use isolation = \"process\" (no confinement), or a kernel and a "
                                                        "build that have them"};
            }
            s.sandbox = std::move(rules);
        }
        setup.process = s;
    }
    return setup;
}

}  // namespace agenthost::plugins
