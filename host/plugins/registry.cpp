#include "plugins/registry.hpp"

#include "common/bounded_json.hpp"
#include "config/provider_tables.hpp"
#include "plugins/discovery.hpp"
#include "plugins/loader.hpp"
#include "plugins/manifest_cache.hpp"
#include "plugins/plugin_fault.hpp"
#include "plugins/plugin_setup.hpp"
#include "plugins/status_words.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>

namespace agenthost::plugins {
namespace fs = std::filesystem;
using nlohmann::json;

// A plugin that loaded: its library, a setup per instance and its own instance. A tool plugin has
// its own instance from the start; a provider plugin when [provider] names it, and a
// [providers.NAME] table gets an instance of its own. A provider plugin no table names is not
// loaded at all (PluginStatus::unused).
struct Registry::LoadedPlugin {
    std::string name;
    PluginKind kind;
    Manifest manifest;
    LoadedLibrary library;
    // Every instance's setup (its settings, grant and process settings), which its handle points
    // into: a deque, so adding one moves none. The first is the plugin's own.
    std::deque<PluginSetup> setups;
    std::unique_ptr<PluginInstance> instance;  // null for a provider plugin [provider] does not use
};

Registry::Registry(const config::Config& config, HostServices& services)
    : config_(config), services_(services), tools_(config.tools) {
    services_.set_tools_changed_handler([this](const std::string& plugin) { tools_changed(plugin); });
}

Registry::~Registry() {
    services_.set_tools_changed_handler(nullptr);
    {
        std::lock_guard lock(refresh_mutex_);
        stopping_ = true;
        refresh_wake_.notify_all();
    }
    if (refresher_.joinable()) refresher_.join();
    // Instances go in reverse creation order, the named providers first; the libraries stay
    // mapped (RTLD_NODELETE).
    providers_ = ProviderPool{};
    while (!loaded_.empty()) loaded_.pop_back();
}

void Registry::fail(PluginInfo info, Error error) {
    // A configuration problem is reported with the others, once, by whoever started the host.
    spdlog::log(is(error, PluginFault::config_invalid) ? spdlog::level::debug : spdlog::level::warn,
                "plugin not loaded: plugin={} cause={} {}", info.name, error.code, error.message);
    info.status = PluginStatus::failed;
    info.error = std::move(error);
    infos_.push_back(std::move(info));
}

void Registry::load_all() {
    const fs::path manifests_file = config_.data_dir.empty() ? fs::path() : config_.data_dir / "plugin-manifests";
    ManifestCache manifests(manifests_file);
    for (const FoundPlugin& found : discover(config_.plugin_dirs)) {
        if (!found.library_without_manifest) {
            load_one(found.manifest, manifests);
            continue;
        }
        PluginInfo info;
        info.name = found.manifest.parent_path().filename().string();
        info.library = *found.library_without_manifest;
        info.manifest = found.manifest;
        Error missing{"manifest_missing", found.manifest.string() + " is missing next to " + info.library.string() +
                                              "; add a manifest (see docs/plugin-abi.md)"};
        fail(std::move(info), std::move(missing));
    }
    manifests.save();
    spdlog::debug("plugin manifests: {} taken from {}", manifests.from_cache(), manifests_file.string());
    create_named_providers();
    std::lock_guard lock(refresh_mutex_);
    loaded_all_ = true;  // the plugin list is fixed from here: changed tool lists may be read now
    refresh_wake_.notify_all();
}

namespace {

// A manifest whose `abi` is not what the library reports loads (the library is what runs), with a
// warning naming both and the fix; `plugins` shows the library's version.
void note_abi_disagreement(const Manifest& m, uint32_t built_major, uint32_t built_minor, PluginInfo& info) {
    auto disagreement = abi_disagreement(m, built_major, built_minor);
    if (!disagreement) return;
    spdlog::warn("plugin abi: plugin={} {}", m.name, *disagreement);
    info.warnings.push_back(std::move(*disagreement));
    info.abi = std::to_string(built_major) + "." + std::to_string(built_minor);
}

// The error for a second plugin of an already found name, naming where the first one is.
std::optional<Error> found_before(const std::vector<PluginInfo>& infos, const Manifest& m) {
    auto first = std::find_if(infos.begin(), infos.end(),
                              [&](const PluginInfo& p) { return p.name == m.name && p.status != PluginStatus::failed; });
    if (first == infos.end()) return std::nullopt;
    return plugin_error(PluginFault::duplicate_plugin, m.file.string() + ": a plugin named '" + m.name +
                                                           "' was already found at " + first->manifest.string() +
                                                           "; remove one or rename it");
}

}  // namespace

void Registry::load_one(const fs::path& manifest_file, ManifestCache& manifests) {
    PluginInfo info;
    info.manifest = manifest_file;
    info.name = manifest_file.parent_path().filename().string();

    auto manifest = manifests.read(manifest_file);
    if (!manifest) return fail(std::move(info), manifest.error());
    const Manifest& m = *manifest;
    info.name = m.name;
    info.kind = m.kind;
    info.version = m.version;
    info.abi = std::to_string(m.abi_major) + "." + std::to_string(m.abi_minor);
    info.description = m.description;
    info.library = m.library;
    info.settings_schema_json = m.settings_schema_json;

    if (auto twice = found_before(infos_, m)) return fail(std::move(info), std::move(*twice));
    if (!config_.plugin_enabled(m.name)) {
        info.status = PluginStatus::disabled;
        infos_.push_back(std::move(info));
        return;
    }

    // The default provider's plugin is set up with the [provider] settings.
    const bool default_provider = m.kind == PluginKind::provider && m.name == config_.provider.use;
    auto setup = plugin_setup(config_, m, default_provider ? &config_.provider : nullptr);
    if (!setup) return fail(std::move(info), setup.error());
    info.isolation = setup->isolation;
    if (setup->grant) info.permissions = describe(*setup->grant);
    info.effective_config_json = setup->config_json;  // what the plugin receives (config shows it, secrets masked)
    // A provider plugin no table uses cannot be called in this process: its library stays unopened
    // (start-up time: Bedrock's libcrypto is a millisecond), checked as far as it can be without.
    if (m.kind == PluginKind::provider && !config::table_uses_plugin(config_, m.name)) {
        if (auto refused = check_before_opening(m)) return fail(std::move(info), std::move(*refused));
        info.status = PluginStatus::unused;
        return infos_.push_back(std::move(info));
    }
    Result<LoadedLibrary> library =
        setup->process ? Result<LoadedLibrary>(LoadedLibrary{{}, isolation::isolated_descriptor(m)}) : load_library(m);
    if (!library) return fail(std::move(info), library.error());
    if (!setup->process)  // in-process: the descriptor was read here, and it is what runs
        note_abi_disagreement(m, library->descriptor.abi_major, library->descriptor.abi_minor, info);

    auto loaded = std::make_unique<LoadedPlugin>();
    loaded->name = m.name;
    loaded->kind = m.kind;
    loaded->manifest = m;
    loaded->library = std::move(*library);
    const PluginSetup& own = loaded->setups.emplace_back(std::move(*setup));

    // A provider's instance is made for a provider table: the bare plugin, created without the
    // settings a table gives, may well refuse to start (a missing base_url) and is not needed.
    if (m.kind == PluginKind::tool || default_provider) {
        auto instance = start_instance(*loaded, own, info.warnings);
        if (!instance) return fail(std::move(info), instance.error());
        loaded->instance = std::move(*instance);
        if (auto built = loaded->instance->built_abi(); built && loaded->instance->isolated())
            note_abi_disagreement(m, built->major, built->minor, info);  // its process read the descriptor
    }

    if (m.kind == PluginKind::tool) {
        ListedTools listed = loaded->instance->list_tools();
        info.refused_tools = std::move(listed.refused);
        if (listed.status != AH_OK && listed.tools.empty() && info.refused_tools.empty())
            return fail(std::move(info),
                        plugin_error(PluginFault::list_tools_failed,
                                     "plugin '" + m.name + "' could not list its tools: " + status_words(listed.status)));
        // A name another plugin already provides costs this plugin that tool, not its others.
        info.tools = tools_.add(std::move(listed.tools), info.refused_tools);
    } else if (loaded->instance) {
        std::lock_guard lock(providers_mutex_);
        providers_.add_plugin(*loaded->instance);
    }
    info.status = PluginStatus::loaded;
    spdlog::info("plugin loaded: plugin={} kind={} version={} tools={}", m.name, name(m.kind), m.version, info.tools.size());
    infos_.push_back(std::move(info));
    loaded_.push_back(std::move(loaded));
}

Registry::LoadedPlugin* Registry::find_loaded(std::string_view name) const {
    for (const auto& l : loaded_)
        if (l->name == name) return l.get();
    return nullptr;
}

PluginInstance* Registry::instance_of(const LoadedPlugin& plugin) const {
    std::lock_guard lock(providers_mutex_);
    return plugin.instance.get();
}

Result<std::unique_ptr<PluginInstance>> Registry::start_instance(LoadedPlugin& plugin, const PluginSetup& setup,
                                                                 std::vector<std::string>& warnings) {
    ah_host* handle = services_.new_handle(plugin.name, setup.config_json, config_.data_dir / "plugins" / plugin.name);
    if (setup.process) handle->isolation = &*setup.process;
    if (setup.grant) handle->grant = &*setup.grant;
    handle->kv_flush = plugin.kind == PluginKind::provider ? store::Flush::with_next_write : store::Flush::now;
    return PluginInstance::create(plugin.library.descriptor, services_, handle, warnings);
}

// ---- tool lists that change while the host runs (ah_host_api.tools_changed) ----

void Registry::tools_changed(const std::string& plugin) {
    std::lock_guard lock(refresh_mutex_);
    if (stopping_) return;
    refresh_pending_.insert(plugin);
    if (!refresher_.joinable()) refresher_ = std::thread([this] { refresh_loop(); });
    refresh_wake_.notify_all();
}

void Registry::refresh_loop() {
    std::unique_lock lock(refresh_mutex_);
    for (;;) {
        refresh_wake_.wait(lock, [&] { return stopping_ || (loaded_all_ && !refresh_pending_.empty()); });
        if (stopping_) return;
        std::string plugin = *refresh_pending_.begin();
        refresh_pending_.erase(refresh_pending_.begin());
        lock.unlock();
        if (refresh_tools(plugin)) tools_.notify_listeners();
        lock.lock();
    }
}

std::vector<std::string> Registry::tools_now(std::string_view plugin) const {
    std::vector<std::string> names;
    for (const auto& t : *tools_.snapshot())
        if (t.plugin == plugin) names.push_back(t.name);
    return names;
}

bool Registry::refresh_tools(const std::string& name) {
    LoadedPlugin* plugin = find_loaded(name);
    if (!plugin || plugin->kind != PluginKind::tool) return false;
    // A plugin whose process failed too often offers nothing: its tools could only fail.
    ListedTools listed = disabled(name) ? ListedTools{} : plugin->instance->list_tools();
    if (listed.status != AH_OK && listed.tools.empty() && listed.refused.empty()) {
        spdlog::warn("plugin tools not refreshed: plugin={} status={} (its previous tools stay)", name, listed.status);
        return false;
    }
    return tools_.replace(name, std::move(listed.tools));
}

// ---- calls ----

Result<std::string> Registry::call_tool(const CallInput& input) {
    auto tool = find_tool(input.tool_name);
    if (!tool) {
        if (auto gone = why_tool_gone(input.tool_name)) return plugin_error(PluginFault::plugin_failure, *gone);
        return plugin_error(PluginFault::unknown_tool,
                            "there is no tool named '" + input.tool_name + "'." + unloaded_tool_plugins_hint());
    }
    LoadedPlugin* plugin = find_loaded(tool->plugin);
    if (!plugin || !plugin->instance)
        return plugin_error(PluginFault::plugin_failure, "the plugin of tool '" + input.tool_name + "' is not loaded");
    return plugin->instance->call_tool(input);
}

std::optional<isolation::ProcessHealth> Registry::process_health(std::string_view plugin) const {
    LoadedPlugin* loaded = find_loaded(plugin);
    PluginInstance* instance = loaded ? instance_of(*loaded) : nullptr;
    return instance ? instance->process_health() : std::nullopt;
}

bool Registry::disabled(std::string_view plugin) const {
    auto health = process_health(plugin);
    return health && health->disabled;
}

std::optional<std::string> Registry::why_tool_gone(std::string_view tool) const {
    for (const PluginInfo& p : infos_) {
        if (std::find(p.tools.begin(), p.tools.end(), tool) == p.tools.end()) continue;
        auto health = process_health(p.name);
        if (!health || !health->disabled) continue;
        return "the tool '" + std::string(tool) + "' is gone: its plugin '" + p.name + "' is disabled after " +
               std::to_string(health->disabled_after) + " failures (last: " + health->last_failure +
               "); fix the plugin and restart agenthost";
    }
    return std::nullopt;
}

std::string Registry::unloaded_tool_plugins_hint() const {
    std::string names;
    for (const PluginInfo& p : infos_)
        if (p.kind == PluginKind::tool && p.status == PluginStatus::failed) names += (names.empty() ? "'" : ", '") + p.name + "'";
    if (names.empty()) return "";
    return " The tool plugin(s) " + names + " failed to load and may have offered it; `agenthost plugins` says why.";
}

PluginStatus Registry::status_now(const PluginInfo& plugin) const {
    return disabled(plugin.name) ? PluginStatus::disabled : plugin.status;
}

std::string Registry::context(const CallInput& input) {
    std::string text;
    for (const auto& plugin : loaded_) {
        if (plugin->kind != PluginKind::tool) continue;
        auto part = plugin->instance->context(input);
        if (part && !part->empty()) text += (text.empty() ? "" : "\n") + *part;
    }
    return text;
}

std::string Registry::resources(const CallInput& input) {
    json all = json::array();
    for (const auto& plugin : loaded_) {
        PluginInstance* instance = instance_of(*plugin);
        if (!instance) continue;
        auto listed = instance->list_resources(input);
        if (!listed) continue;
        for (auto& r : *listed)
            if (r.is_object() && r.contains("uri") && r["uri"].is_string()) {
                r["plugin"] = plugin->name;
                all.push_back(std::move(r));
            }
    }
    return json_io::dump(all);
}

Result<std::string> Registry::read_resource(const std::string& uri, const CallInput& input) {
    for (const auto& plugin : loaded_) {
        PluginInstance* instance = instance_of(*plugin);
        if (!instance) continue;
        auto contents = instance->read_resource(uri, input);
        if (contents) return json_io::dump(*contents);
        if (!is(contents.error(), PluginFault::not_found)) return contents.error();
    }
    return plugin_error(PluginFault::not_found, "no plugin serves the resource " + uri);
}

json Registry::list_from_plugins(McpSlot slot, const CallInput& input) {
    // What names an entry: a prompt's name, a template's URI template.
    const char* key = slot == McpSlot::list_prompts ? "name" : "uriTemplate";
    json all = json::array();
    std::set<std::string> seen;
    for (const auto& plugin : loaded_) {
        PluginInstance* instance = instance_of(*plugin);
        if (!instance) continue;
        auto listed = instance->mcp_slot(slot, input);
        if (!listed) continue;
        for (auto& entry : *listed) {
            std::string id = json_io::get_string(entry, key);
            if (id.empty()) continue;
            if (!seen.insert(id).second) {
                spdlog::warn("plugin entry skipped: plugin={} {}={} another plugin offers it already", plugin->name, key, id);
                continue;
            }
            entry["plugin"] = plugin->name;
            all.push_back(std::move(entry));
        }
    }
    return all;
}

Result<json> Registry::ask_plugins(McpSlot slot, const CallInput& input) {
    for (const auto& plugin : loaded_) {
        PluginInstance* instance = instance_of(*plugin);
        if (!instance) continue;
        auto answer = instance->mcp_slot(slot, input);
        if (answer || !is(answer.error(), PluginFault::not_found)) return answer;
    }
    return plugin_error(PluginFault::not_found, "no plugin answers it");
}

std::vector<HealthCheck> Registry::health(const std::string& name) {
    LoadedPlugin* plugin = find_loaded(name);
    PluginInstance* instance = plugin ? instance_of(*plugin) : nullptr;
    return instance ? instance->health() : std::vector<HealthCheck>{};
}

// ---- providers ----

void Registry::create_named_providers() {
    for (const auto& [name, settings] : config_.providers) {
        LoadedPlugin* plugin = find_loaded(settings.use);
        if (!plugin || plugin->kind != PluginKind::provider) {
            spdlog::warn("provider not available: provider={} plugin={} (no loaded provider plugin of that name)", name,
                         settings.use);
            continue;
        }
        // The table's own setup: its settings, and the grant its {setting:KEY} placeholders resolve to.
        auto setup = plugin_setup(config_, plugin->manifest, &settings);
        if (!setup) {
            spdlog::warn("provider not available: provider={} plugin={} {}", name, settings.use, setup.error().message);
            continue;
        }
        // `plugins` shows where this table's instance may connect: the plugin's own line is
        // resolved without a table (and reads "network: none" for a provider only tables use).
        if (setup->grant)
            for (auto& info : infos_)
                if (info.name == settings.use)
                    info.permissions.push_back("network for [providers." + name + "]: " + describe_network(*setup->grant));
        std::vector<std::string> warnings;
        auto instance = start_instance(*plugin, plugin->setups.emplace_back(std::move(*setup)), warnings);
        if (!instance) {
            spdlog::warn("provider not available: provider={} plugin={} {}", name, settings.use, instance.error().message);
            continue;
        }
        for (const auto& w : warnings) spdlog::warn("provider warning: provider={} {}", name, w);
        std::lock_guard lock(providers_mutex_);
        providers_.add_named(name, std::move(*instance));
    }
}

std::vector<std::string> Registry::provider_names() const {
    std::lock_guard lock(providers_mutex_);
    std::vector<std::string> names;
    for (const auto& l : loaded_)  // a provider plugin answers to its name, started or not
        if (l->kind == PluginKind::provider) names.push_back(l->name);
    for (auto& name : providers_.names())
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
    return names;
}

Result<PluginInstance*> Registry::provider(std::string_view name) {
    std::lock_guard lock(providers_mutex_);
    if (PluginInstance* instance = providers_.find(name)) return instance;
    // A provider plugin asked for by its name: its own instance, from [plugins.NAME], made now.
    if (LoadedPlugin* plugin = find_loaded(name); plugin && plugin->kind == PluginKind::provider && !plugin->instance) {
        std::vector<std::string> warnings;
        auto instance = start_instance(*plugin, plugin->setups.front(), warnings);
        if (!instance)
            return plugin_error(
                PluginFault::provider_unavailable,
                "provider '" + std::string(name) + "' is not available: its plugin did not start: " + instance.error().message);
        for (const auto& w : warnings) spdlog::warn("provider warning: provider={} {}", name, w);
        plugin->instance = std::move(*instance);
        providers_.add_plugin(*plugin->instance);
        return plugin->instance.get();
    }
    std::string why;
    if (auto named = config_.providers.find(std::string(name)); named != config_.providers.end()) {
        why = "its plugin '" + named->second.use + "' did not load or failed to start (see agenthost plugins)";
    } else {
        // The fix depends on the cause: a name nothing answers to, or a plugin that did not start.
        auto info = std::find_if(infos_.begin(), infos_.end(), [&](const PluginInfo& p) { return p.name == name; });
        why = info == infos_.end() ? "no provider plugin or [providers." + std::string(name) +
                                         "] of that name was found (set [provider] use = \"…\" in agenthost.toml)"
              : info->error
                  ? "its plugin did not start: " + info->error->message
                  : "its plugin is " + std::string(plugins::name(info->status)) + " (see enabled_plugins / disabled_plugins)";
    }
    return plugin_error(PluginFault::provider_unavailable, "provider '" + std::string(name) + "' is not available: " + why);
}

Result<ah_status> Registry::chat(std::string_view name, const CallInput& input, const ah_event_sink& events) {
    auto instance = provider(name);
    if (!instance) return instance.error();
    return (*instance)->chat(input, events);
}

Result<std::string> Registry::models(std::string_view name, const CallInput& input) {
    auto instance = provider(name);
    if (!instance) return instance.error();
    auto list = (*instance)->list_models(input);
    if (!list) return Error{list.error().code, "provider '" + std::string(name) + "' " + list.error().message};
    return json_io::dump(*list);
}

}  // namespace agenthost::plugins
