#include "plugins/settings_check.hpp"

#include "plugins/plugin_setup.hpp"

#include "common/schema_validator.hpp"
#include "common/spelling.hpp"
#include "config/paths.hpp"
#include "plugins/plugin_types.hpp"

#include <algorithm>
#include <optional>

namespace agenthost::plugins {

using nlohmann::json;

namespace {

// "[plugins.torrent] reslts" at its line.
std::string where(const config::Config& config, const std::string& plugin, const std::string& key) {
    std::string place = config.place("plugins." + plugin + (key.empty() ? "" : "." + key));
    return place + ": [plugins." + plugin + "]" + (key.empty() ? "" : " " + key);
}

bool contains(const std::vector<std::string>& list, const std::string& name) {
    return std::find(list.begin(), list.end(), name) != list.end();
}

// A path setting made absolute against the config file's folder: a string, or each string of an
// array or table. `keep_empty`: an empty string stays empty (a default meaning "none").
void resolve_path_setting(const config::Config& config, json& value, bool keep_empty) {
    auto resolve = [&](json& item) {
        if (item.is_string() && !(keep_empty && item.get_ref<const std::string&>().empty()))
            item = config::resolve_path(config.base_dir, item.get<std::string>()).string();
    };
    if (value.is_array() || value.is_object())
        for (auto& item : value) resolve(item);
    else
        resolve(value);
}

}  // namespace

void resolve_default_paths(const config::Config& config, const Manifest& m, const json& own, json& settings) {
    // Most manifests declare no path: their schema is not parsed for nothing.
    if (m.settings_schema_json.find("\"path\"") == std::string::npos || !settings.is_object()) return;
    const json schema = json::parse(m.settings_schema_json, nullptr, false);
    if (!schema.is_object() || !schema.contains("properties") || !schema["properties"].is_object()) return;
    for (const auto& [key, spec] : schema["properties"].items())
        if (spec.is_object() && spec.value("format", "") == "path" && !own.contains(key) && settings.contains(key))
            resolve_path_setting(config, settings[key], true);
}

std::vector<std::string> check_plugin_table(const config::Config& config, const Manifest& m, json& table) {
    std::vector<std::string> problems;
    // Most plugins have no table in agenthost.toml: nothing to check, and no schema to parse.
    if (m.settings_schema_json.empty() || !table.is_object() || table.empty()) return problems;
    const json schema = json::parse(m.settings_schema_json);
    const json& properties = schema["properties"];
    std::vector<std::string> declared;
    for (const auto& [key, spec] : properties.items()) declared.push_back(key);
    std::vector<std::string> known = declared;
    for (const auto& key : host_plugin_keys()) known.push_back(key);

    for (auto& [key, value] : table.items()) {
        if (!properties.contains(key)) {
            problems.push_back(where(config, m.name, key) + ": '" + m.name + "' has no setting '" + key + "'" +
                               spelling::did_you_mean(key, known) + "; its settings are " + spelling::join_names(declared) +
                               " (agenthost plugins --json describes each)" + config::top_level_hint(key));
            continue;
        }
        const json& spec = properties[key];
        for (std::string problem : schema::validate_against_schema(value, spec)) {
            const std::string root = "the arguments: ";  // the validator's name for the value itself
            if (problem.rfind(root, 0) == 0) problem.erase(0, root.size());
            problems.push_back(where(config, m.name, key) + ": " + problem + "; fix the value" +
                               (spec.contains("description") ? " (" + spec["description"].get<std::string>() + ")" : ""));
        }
        if (spec.value("format", "") == "path") resolve_path_setting(config, value, false);
    }
    return problems;
}

std::vector<std::string> check_provider_table(const config::Config& config, const Manifest& m,
                                              const config::ProviderSettings& provider) {
    std::vector<std::string> problems;
    if (m.settings_schema_json.empty()) return problems;
    const json schema = json::parse(m.settings_schema_json);
    const json& properties = schema["properties"];
    const std::string table = &provider == &config.provider ? "provider" : "providers." + provider.name;
    json given = json::object();  // api_key is left out: its words would quote a secret
    if (!provider.model.empty()) given["model"] = provider.model;
    if (!provider.base_url.empty()) given["base_url"] = provider.base_url;
    if (provider.timeout_ms > 0) given["timeout_ms"] = provider.timeout_ms;
    if (provider.connect_timeout_ms > 0) given["connect_timeout_ms"] = provider.connect_timeout_ms;
    for (const auto& [key, value] : given.items()) {
        if (!properties.contains(key)) continue;
        const json& spec = properties[key];
        std::string path = table;
        path += "." + key;
        for (std::string problem : schema::validate_against_schema(value, spec)) {
            const std::string root = "the arguments: ";  // the validator's name for the value itself
            if (problem.rfind(root, 0) == 0) problem.erase(0, root.size());
            std::string said = config.place(path);
            said += ": [" + table + "] ";
            said += key;
            said += " " + problem;
            said += " (plugin '" + m.name + "' declares it in its plugin.toml";
            if (spec.contains("description")) said += ": " + spec["description"].get<std::string>();
            said += "); fix the value";
            problems.push_back(std::move(said));
        }
    }
    return problems;
}

namespace {

// [sampling] provider names an instance: the default provider's name or a [providers.NAME].
std::optional<std::string> sampling_provider_problem(const config::Config& config) {
    const std::string& wanted = config.sampling.provider;
    if (wanted.empty() || wanted == config.provider.name || config.providers.count(wanted)) return std::nullopt;
    std::vector<std::string> instances{config.provider.name};
    for (const auto& [name, p] : config.providers) instances.push_back(name);
    return config.place("sampling.provider") + ": sampling.provider = \"" + wanted + "\" names no provider instance" +
           spelling::did_you_mean(wanted, instances) + "; instances: " + spelling::join_names(instances) +
           " ([provider], or a [providers." + wanted + "] table to add)";
}

}  // namespace

NameProblems check_names(const config::Config& config, const std::vector<PluginInfo>& plugins,
                         const std::vector<std::string>& tools) {
    NameProblems out;
    // A configured plugin folder that is not there, or holds no plugin, loses its plugins silently otherwise.
    const auto defaults = config::default_plugin_dirs(config.data_dir);
    std::vector<std::filesystem::path> folders;  // each plugin's folder, resolved once
    for (const auto& p : plugins) {
        std::error_code ec;
        folders.push_back(std::filesystem::weakly_canonical(p.manifest.parent_path(), ec));
    }
    for (const auto& dir : config.plugin_dirs) {
        if (std::find(defaults.begin(), defaults.end(), dir) != defaults.end()) continue;
        std::error_code ec;
        const std::string where = config.place("plugin_dirs") + ": plugin_dirs names " + dir.string();
        if (!std::filesystem::is_directory(dir, ec)) {
            out.warnings.push_back(where +
                                   ", which is not a folder; fix the path (relative paths start at the config file's folder)");
            continue;
        }
        const auto root = std::filesystem::weakly_canonical(dir, ec);
        bool found = std::any_of(folders.begin(), folders.end(), [&](const std::filesystem::path& folder) {
            return folder == root || folder.parent_path() == root;
        });
        if (!found)
            out.warnings.push_back(where + ", but no plugin is in it: a plugin is a folder with a plugin.toml, found as " +
                                   "DIR/NAME/plugin.toml or DIR/plugin.toml");
    }
    std::vector<std::string> names, providers;
    bool some_not_loaded = false;
    for (const auto& p : plugins) {
        if (p.name.empty()) continue;
        names.push_back(p.name);
        if (p.kind == PluginKind::provider) providers.push_back(p.name);
        if (p.status != PluginStatus::loaded && p.status != PluginStatus::unused) some_not_loaded = true;  // a tool may be in it
    }
    auto unknown_plugin = [&](const std::string& place, const std::string& what, const std::string& name) {
        out.errors.push_back(place + ": " + what + " names '" + name + "', but no plugin of that name was found" +
                             spelling::did_you_mean(name, names) + "; plugins found: " + spelling::join_names(names) +
                             " (agenthost plugins lists them with their folders)");
    };

    for (const auto& [plugin, table] : config.plugin_tables)
        if (!contains(names, plugin)) unknown_plugin(config.place("plugins." + plugin), "[plugins." + plugin + "]", plugin);
    for (const auto& [list, entries] :
         {std::pair{"enabled_plugins", &config.enabled_plugins}, std::pair{"disabled_plugins", &config.disabled_plugins}})
        for (const auto& name : *entries)
            if (!contains(names, name)) unknown_plugin(config.place(list), list, name);

    auto check_use = [&](const std::string& key, const config::ProviderSettings& p) {
        // The built-in default (scripted, with no [provider] written) is not the operator's mistake:
        // a host that serves only tools (mcp) needs no provider.
        if (contains(providers, p.use) || !config.key_places.count(key)) return;
        std::string what = key + " = \"" + p.use + "\"";
        if (contains(names, p.use))
            out.errors.push_back(config.place(key) + ": " + what +
                                 " names a tool plugin, not a provider; providers found: " + spelling::join_names(providers));
        else
            out.errors.push_back(config.place(key) + ": " + what + " names no provider plugin" +
                                 spelling::did_you_mean(p.use, providers) +
                                 "; providers found: " + spelling::join_names(providers));
    };
    check_use("provider.use", config.provider);
    for (const auto& [name, p] : config.providers) check_use("providers." + name + ".use", p);

    if (auto wrong = sampling_provider_problem(config)) out.errors.push_back(*wrong);

    for (const auto& [tool, policy] : config.tools) {
        if (contains(tools, tool)) continue;
        std::string message = config.place("tools." + tool);
        message.append(": [tools.").append(tool).append("] names no tool offered by the loaded plugins");
        message += spelling::did_you_mean(tool, tools);
        if (some_not_loaded)
            out.warnings.push_back(message + "; it may belong to a plugin that is disabled or failed to load");
        else
            out.errors.push_back(message +
                                 "; its settings would be lost: fix the name or remove the table (agenthost tools lists them)");
    }
    return out;
}

}  // namespace agenthost::plugins
