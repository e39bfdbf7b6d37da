#include "plugins/plugin_setup.hpp"

#include "common/install_layout.hpp"
#include "isolation/sandbox.hpp"
#include "plugins/plugin_fault.hpp"
#include "plugins/plugin_types.hpp"
#include "plugins/settings_check.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

namespace agenthost::plugins {
using nlohmann::json;

namespace {

// "a; b; c": several problems in one message.
std::string joined(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
    return out;
}

// The [plugins.NAME] keys that tune an isolated plugin's process, one row each: read, and checked
// for type and range, here alone.
struct ProcessKey {
    std::string_view key;
    int isolation::Settings::*field;
    std::string_view meaning;  // what the number is, for the error that names a wrong one
};
constexpr ProcessKey kProcessKeys[] = {
    {"isolation_memory_mb", &isolation::Settings::memory_mb, "megabytes of address space for the process (0: no limit)"},
    {"isolation_cpu_seconds", &isolation::Settings::cpu_seconds, "seconds of CPU time for the process (0: no limit)"},
    {"isolation_timeout_ms", &isolation::Settings::call_timeout_ms, "milliseconds a call may run"},
    {"isolation_max_crashes", &isolation::Settings::max_crashes, "crashes within the window before the plugin is disabled"},
    {"isolation_crash_window_seconds", &isolation::Settings::crash_window_seconds, "seconds the crashes are counted over"},
};

// The process settings `table` asks for over the defaults, or every key that is not a whole
// number from 0 up, each on its own line naming the file, the line and the fix.
Result<isolation::Settings> process_settings(const config::Config& config, const Manifest& m, const json& table) {
    isolation::Settings s;
    std::vector<std::string> problems;
    for (const ProcessKey& k : kProcessKeys) {
        auto it = table.find(k.key);
        if (it == table.end()) continue;
        if (it->is_number_integer() && it->get<int64_t>() >= 0 && it->get<int64_t>() <= std::numeric_limits<int>::max()) {
            s.*k.field = static_cast<int>(it->get<int64_t>());
            continue;
        }
        problems.push_back(config.place("plugins." + m.name + "." + std::string(k.key)) + ": [plugins." + m.name + "] " +
                           std::string(k.key) + " = " + it->dump() + " is not a whole number from 0 to " +
                           std::to_string(std::numeric_limits<int>::max()) + "; it is the " + std::string(k.meaning));
    }
    if (!problems.empty()) {
        std::string message;
        for (const auto& p : problems) message += (message.empty() ? "" : "\n") + p;
        return plugin_error(PluginFault::config_invalid, message);
    }
    return s;
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
    if (!table.contains("isolation")) return third_party(m) ? config.third_party_isolation : Isolation::in_process;
    if (!table["isolation"].is_string())
        return plugin_error(PluginFault::config_invalid, config.place("plugins." + m.name + ".isolation") + ": [plugins." +
                                                             m.name + "] isolation = " + table["isolation"].dump() +
                                                             " is not text: " + choices_text<Isolation>(kIsolations));
    const std::string mode = table["isolation"].get<std::string>();
    if (auto isolation = parse_isolation(mode)) return *isolation;
    return plugin_error(PluginFault::config_invalid, config.place("plugins." + m.name + ".isolation") + ": [plugins." + m.name +
                                                         "] isolation = " + unknown_choice<Isolation>(kIsolations, mode));
}

// The grant: the operator's `permissions` when written (after checking that the manifest asks for
// no more), else what the manifest declares.
Result<std::optional<Grant>> grant_of(const config::Config& config, const Manifest& m, const json& table,
                                      const PermissionContext& context) {
    std::optional<Grant> ceiling;
    const std::string place = config.place("plugins." + m.name + ".permissions");
    if (table.contains("permissions")) {
        auto operator_permissions = parse_permissions(table["permissions"].dump(), place + ": [plugins." + m.name + "]");
        if (!operator_permissions) return plugin_error(PluginFault::config_invalid, operator_permissions.error().message);
        auto resolved = resolve(*operator_permissions, context);
        if (!resolved)
            return plugin_error(PluginFault::config_invalid, place + ": [plugins." + m.name + "] " + resolved.error().message);
        ceiling = std::move(*resolved);
    }
    if (!m.permissions) return ceiling;
    auto asked = resolve(*m.permissions, context);
    if (!asked) return plugin_error(PluginFault::permissions_invalid, m.file.string() + ": " + asked.error().message);
    if (!ceiling) return std::optional<Grant>(std::move(*asked));
    auto beyond = exceeding(*asked, *ceiling);
    if (!beyond.empty()) {
        return plugin_error(PluginFault::permissions_exceeded,
                            "plugin '" + m.name + "' asks for more than " + place + " [plugins." + m.name +
                                "] permissions grants: " + joined(beyond) + ". Grant it there, or leave the plugin disabled");
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

const std::vector<std::string>& host_plugin_keys() {
    static const std::vector<std::string> keys = [] {
        std::vector<std::string> all{"isolation", "permissions"};
        for (const ProcessKey& k : kProcessKeys) all.emplace_back(k.key);
        return all;
    }();
    return keys;
}

Result<PluginSetup> plugin_setup(const config::Config& config, const Manifest& m, const config::ProviderSettings* provider) {
    // The host's keys are read here and taken out; the plugin never sees them.
    json own = json::object();
    if (auto it = config.plugin_tables.find(m.name); it != config.plugin_tables.end()) own = json::parse(it->second);
    const json table = own;
    for (const auto& key : host_plugin_keys()) own.erase(key);
    std::vector<std::string> problems = check_plugin_table(config, m, own);
    if (provider)
        for (auto& p : check_provider_table(config, m, *provider)) problems.push_back(std::move(p));
    if (!problems.empty()) {
        std::string message;
        for (const auto& p : problems) message += (message.empty() ? "" : "\n") + p;
        return plugin_error(PluginFault::config_invalid, message);
    }

    PluginSetup setup;
    json cfg = json::parse(m.default_config_json);
    if (!cfg.is_object()) cfg = json::object();
    cfg.merge_patch(own);
    resolve_default_paths(config, m, own, cfg);
    if (provider) with_provider_settings(cfg, *provider);
    setup.config_json = cfg.dump();

    auto isolation = isolation_of(config, m, table);
    if (!isolation) return isolation.error();
    setup.isolation = *isolation;
    auto grant = grant_of(config, m, table, {config.data_dir / "plugins" / m.name, setup.config_json});
    if (!grant) return grant.error();
    setup.grant = std::move(*grant);

    if (setup.isolation != Isolation::in_process) {
        auto settings = process_settings(config, m, table);
        if (!settings) return settings.error();
        isolation::Settings& s = *settings;
        s.runner = isolation::default_runner();
        s.manifest = m.file;
        if (setup.isolation == Isolation::sandbox) {
            if (!setup.grant) setup.grant = Grant{};  // declared nothing, granted nothing: only what running needs
            std::error_code ec;                       // the library's real folder: a linked plugin is read where it lies
            auto rules = isolation::sandbox_rules(*setup.grant, std::filesystem::weakly_canonical(m.library, ec).parent_path());
            if (auto missing = isolation::unenforceable(rules, isolation::kernel_support()); !missing.empty()) {
                return plugin_error(PluginFault::sandbox_unavailable,
                                    config.place("plugins." + m.name + ".isolation") + ": plugin '" + m.name +
                                        "' cannot be sandboxed here: " + joined(missing) +
                                        ". Use isolation = \"process\" (no confinement), or a kernel and a "
                                        "build that have them");
            }
            s.sandbox = std::move(rules);
        }
        setup.process = s;
    }
    return setup;
}

}  // namespace agenthost::plugins
