#include "plugins/registry.hpp"
#include "plugins/crash_note.hpp"
#include "plugins/settings_check.hpp"
#include "plugins/status_words.hpp"
#include "plugins/tool_check.hpp"

#include "common/bounded_json.hpp"
#include "common/schema_validator.hpp"
#include "isolation/isolated_plugin.hpp"
#include "plugins/loader.hpp"
#include "plugins/manifest.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

namespace agenthost::plugins {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

ah_str as_str(const std::string& s) { return ah_str{s.data(), s.size()}; }

// A receiver-owned writer appending to a std::string, with an upper bound so a runaway plugin
// cannot exhaust memory.
struct StringSink {
    explicit StringSink(size_t limit = 64 << 20) : limit(limit) {}
    std::string text;
    size_t limit;
    bool overflowed = false;  // the plugin tried to write more than `limit`
    ah_writer writer{sizeof(ah_writer), this, [](void* ctx, const char* data, size_t len) -> ah_status {
                         auto* self = static_cast<StringSink*>(ctx);
                         if (!data && len) return AH_ERR_INVALID_ARGUMENT;
                         if (self->text.size() + len > self->limit) {
                             self->overflowed = true;
                             return AH_ERR_NO_MEMORY;
                         }
                         try {
                             self->text.append(data, len);
                         } catch (...) {
                             return AH_ERR_NO_MEMORY;
                         }
                         return AH_OK;
                     }};
};

ah_call to_call(const CallInput& in) {
    ah_call c{};
    c.struct_size = sizeof c;
    c.call_id = as_str(in.call_id);
    c.tool_name = as_str(in.tool_name);
    c.arguments_json = as_str(in.arguments_json);
    c.conversation_id = as_str(in.conversation_id);
    c.request_context_json = as_str(in.request_context_json);
    c.cancel = in.cancel;
    return c;
}

// Destroys an instance (when there is one); its handle refuses every later host service call.
void destroy_instance(const ah_plugin& descriptor, ah_instance*& instance, ah_host* host) {
    if (instance) descriptor.destroy(instance);
    instance = nullptr;
    host->destroyed = true;
}

// Plugin lists and documents: repaired and bounded, never thrown on.
Result<json> read_plugin_json(std::string_view text, size_t max_bytes) {
    return json_io::parse(text, {max_bytes, 64}, json_io::Utf8::repair);
}

}  // namespace

struct Registry::Loaded {
    std::string name;
    std::string kind;
    LoadedLibrary lib;
    std::string table_config_json;  // manifest defaults + [plugins.NAME], before provider settings
    ah_host* host = nullptr;  // owned by the host services
    ah_instance* instance = nullptr;
    std::optional<isolation::Settings> isolation;  // set when the plugin runs in its own process
    std::mutex mutex;  // serialises calls unless the plugin is thread-safe

    std::unique_lock<std::mutex> lock() {
        if (lib.descriptor.flags & AH_PLUGIN_THREAD_SAFE) return {};
        return std::unique_lock(mutex);
    }
};

// A second instance of a provider plugin, with the settings of one [providers.NAME] entry.
struct Registry::ProviderInstance {
    std::string name;
    Loaded* plugin;
    ah_host* host = nullptr;  // owned by the host services
    ah_instance* instance = nullptr;
    std::mutex mutex;

    std::unique_lock<std::mutex> lock() {
        if (plugin->lib.descriptor.flags & AH_PLUGIN_THREAD_SAFE) return {};
        return std::unique_lock(mutex);
    }
};

namespace {

// A provider's own settings, laid over its plugin's config (the key only from the environment).
void apply_provider_settings(json& cfg, const config::ProviderSettings& p) {
    if (!p.model.empty()) cfg["model"] = p.model;
    if (!p.base_url.empty()) cfg["base_url"] = p.base_url;
    if (!p.api_key.empty()) cfg["api_key"] = p.api_key;
    if (p.timeout_ms > 0) cfg["timeout_ms"] = p.timeout_ms;
    if (p.connect_timeout_ms > 0) cfg["connect_timeout_ms"] = p.connect_timeout_ms;
}

// One call into a plugin's slot: under its call lock, and named by the crash note while it runs
// in this process (an isolated plugin's crash is its own process's). `slot` makes the call.
template <typename Plugin, typename Slot>
ah_status call_slot(Plugin& plugin, const std::string& what, Slot&& slot) {
    auto lock = plugin.lock();
    std::optional<CrashNote> note;
    if (!plugin.isolation) note.emplace(plugin.name, what);
    return slot();
}

}  // namespace

Registry::Registry(const config::Config& config, HostServices& services) : config_(config), services_(services) {
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
    // Instances go in reverse creation order; the libraries stay mapped (RTLD_NODELETE).
    for (auto it = named_providers_.rbegin(); it != named_providers_.rend(); ++it)
        destroy_instance((*it)->plugin->lib.descriptor, (*it)->instance, (*it)->host);
    for (auto it = loaded_.rbegin(); it != loaded_.rend(); ++it)
        if ((*it)->host) destroy_instance((*it)->lib.descriptor, (*it)->instance, (*it)->host);
}

void Registry::fail(PluginInfo info, Error error) {
    // A configuration problem is reported with the others, once, by whoever started the host.
    spdlog::log(error.code == "config_invalid" ? spdlog::level::debug : spdlog::level::warn, "plugin not loaded: plugin={} cause={} {}",
                info.name, error.code, error.message);
    info.status = "failed";
    info.error = std::move(error);
    infos_.push_back(std::move(info));
}

void Registry::load_all() {
    std::vector<fs::path> seen;
    for (const fs::path& dir : config_.plugin_dirs) {
        std::error_code ec;
        fs::path canonical = fs::weakly_canonical(dir, ec);
        if (std::find(seen.begin(), seen.end(), canonical) != seen.end()) continue;
        seen.push_back(canonical);
        if (!fs::is_directory(dir, ec)) {
            spdlog::debug("plugin directory skipped (absent): dir={}", dir.string());
            continue;
        }
        if (fs::is_regular_file(dir / "plugin.toml", ec)) {  // the entry is one plugin's own folder
            load_one(dir / "plugin.toml");
            continue;
        }
        std::vector<fs::path> folders;
        for (const auto& entry : fs::directory_iterator(dir, ec))
            if (entry.is_directory(ec)) folders.push_back(entry.path());
        std::sort(folders.begin(), folders.end());
        for (const fs::path& folder : folders) {
            if (fs::is_regular_file(folder / "plugin.toml", ec)) {
                load_one(folder / "plugin.toml");
                continue;
            }
            // A folder holding a library but no manifest is a plugin someone forgot to describe.
            for (const auto& entry : fs::directory_iterator(folder, ec)) {
                if (entry.path().extension() == ".so") {
                    PluginInfo info;
                    info.name = folder.filename().string();
                    info.library = entry.path();
                    info.manifest = folder / "plugin.toml";
                    fail(std::move(info), Error{"manifest_missing", (folder / "plugin.toml").string() +
                                                                        " is missing next to " + entry.path().string() +
                                                                        "; add a manifest (see docs/plugin-abi.md)"});
                    break;
                }
            }
        }
    }
    create_named_providers();
    std::lock_guard lock(refresh_mutex_);
    loaded_all_ = true;  // the plugin list is fixed from here: changed tool lists may be read now
    refresh_wake_.notify_all();
}

void Registry::load_one(const fs::path& manifest_file) {
    PluginInfo info;
    info.manifest = manifest_file;
    info.name = manifest_file.parent_path().filename().string();

    auto manifest = read_manifest(manifest_file);
    if (!manifest) return fail(std::move(info), manifest.error());
    const Manifest& m = *manifest;
    info.name = m.name;
    info.kind = m.kind;
    info.version = m.version;
    info.abi = std::to_string(m.abi_major) + "." + std::to_string(m.abi_minor);
    info.description = m.description;
    info.library = m.library;
    info.settings_schema_json = m.settings_schema_json;

    auto first = std::find_if(infos_.begin(), infos_.end(),
                              [&](const PluginInfo& p) { return p.name == m.name && p.status != "failed"; });
    if (first != infos_.end())
        return fail(std::move(info), Error{"duplicate_plugin", manifest_file.string() + ": a plugin named '" + m.name +
                                                                   "' was already found at " + first->manifest.string() +
                                                                   "; remove one or rename it"});
    if (!config_.plugin_enabled(m.name)) {
        info.status = "disabled";
        infos_.push_back(std::move(info));
        return;
    }

    // The operator's table: host settings (isolation …) are read by the host and taken out; the rest
    // is checked against the plugin's declared settings and laid over the manifest's defaults.
    json own = json::object();
    if (auto it = config_.plugin_tables.find(m.name); it != config_.plugin_tables.end()) own = json::parse(it->second);
    json table = own;
    for (const auto& key : host_plugin_keys()) own.erase(key);
    if (auto problems = check_plugin_table(config_, m, own); !problems.empty()) {
        std::string message;
        for (const auto& p : problems) message += (message.empty() ? "" : "\n") + p;
        return fail(std::move(info), Error{"config_invalid", message});
    }
    std::optional<isolation::Settings> isolated;
    std::string mode = table.value("isolation", "in-process");
    if (mode != "in-process" && mode != "process")
        return fail(std::move(info), Error{"config_invalid", config_.place("plugins." + m.name + ".isolation") + ": [plugins." + m.name + "] isolation = \"" + mode +
                                                                 "\" is unknown: use \"in-process\" (the default) or \"process\""});
    if (mode == "process") {
        isolation::Settings s;
        s.runner = isolation::default_runner();
        s.manifest = m.file;
        s.memory_mb = table.value("isolation_memory_mb", 0);
        s.cpu_seconds = table.value("isolation_cpu_seconds", 0);
        s.call_timeout_ms = table.value("isolation_timeout_ms", s.call_timeout_ms);
        s.max_crashes = table.value("isolation_max_crashes", s.max_crashes);
        s.crash_window_seconds = table.value("isolation_crash_window_seconds", s.crash_window_seconds);
        isolated = s;
    }
    table = json::parse(m.default_config_json);
    if (!table.is_object()) table = json::object();
    table.merge_patch(own);

    Result<LoadedLibrary> lib = isolated ? Result<LoadedLibrary>(LoadedLibrary{{}, isolation::isolated_descriptor(m)}) : load_library(m);
    if (!lib) return fail(std::move(info), lib.error());

    auto loaded = std::make_unique<Loaded>();
    loaded->isolation = isolated;
    info.isolation = isolated ? "process" : "in-process";
    loaded->name = m.name;
    loaded->kind = m.kind;
    loaded->lib = std::move(*lib);
    loaded->table_config_json = table.dump();
    json cfg = table;
    // The default provider's plugin also receives the [provider] settings.
    if (m.kind == "provider" && m.name == config_.provider.use) apply_provider_settings(cfg, config_.provider);
    info.effective_config_json = cfg.dump();  // what the plugin receives (config shows it, secrets masked)
    loaded->host = services_.new_handle(m.name, cfg.dump(), config_.data_dir / "plugins" / m.name);
    if (loaded->isolation) loaded->host->isolation = &*loaded->isolation;
    const ah_plugin& d = loaded->lib.descriptor;

    StringSink create_error(4096);
    ah_instance* instance = nullptr;
    loaded->host->creating_thread = std::this_thread::get_id();
    ah_status status;
    {
        std::optional<CrashNote> note;
        if (!loaded->isolation) note.emplace(m.name, "create");
        status = d.create(services_.api(), loaded->host, &instance, &create_error.writer);
    }
    loaded->host->creating_thread = {};
    for (auto& w : loaded->host->create_warnings) info.warnings.push_back(std::move(w));
    loaded->host->create_warnings.clear();
    if (status != AH_OK || !instance) {
        loaded->host->destroyed = true;
        std::string why = create_error.text.empty() ? "no message" : create_error.text;
        return fail(std::move(info), Error{"create_failed", "plugin '" + m.name + "' failed to start (" +
                                                                status_words(status) + "): " + why});
    }
    loaded->instance = instance;
    if (loaded->isolation) isolation::keep_present_slots(loaded->lib.descriptor, instance);

    std::vector<ToolInfo> tools;
    if (m.kind == "tool") {
        status = list_plugin_tools(*loaded, tools, info.refused_tools);
        for (const RefusedTool& r : info.refused_tools)
            spdlog::warn("plugin tool refused: plugin={} tool={} {}", m.name, r.name, r.reason);
        if (status != AH_OK && tools.empty() && info.refused_tools.empty()) {
            destroy_instance(d, loaded->instance, loaded->host);
            return fail(std::move(info), Error{"list_tools_failed", "plugin '" + m.name +
                                                                        "' could not list its tools: " +
                                                                        status_words(status)});
        }
        // A name another plugin already provides costs this plugin that tool, not its others.
        auto current = this->tools();
        std::vector<ToolInfo> kept;
        for (ToolInfo& tool : tools) {
            auto clash = std::find_if(current->begin(), current->end(), [&](const ToolInfo& t) { return t.name == tool.name; });
            if (clash == current->end()) {
                kept.push_back(std::move(tool));
                continue;
            }
            RefusedTool refused{tool.name, "plugin '" + clash->plugin + "' (loaded first) already provides a tool of this name; "
                                           "disable one of the two plugins (disabled_plugins) or rename the tool"};
            spdlog::warn("plugin tool refused: plugin={} tool={} {}", m.name, refused.name, refused.reason);
            info.refused_tools.push_back(std::move(refused));
        }
        tools = std::move(kept);
    }

    auto next = std::make_shared<std::vector<ToolInfo>>(*this->tools());
    for (ToolInfo& tool : tools) {
        info.tools.push_back(tool.name);
        if (apply_policy(tool)) next->push_back(std::move(tool));
    }
    {
        std::lock_guard lock(tools_mutex_);
        tools_ = std::move(next);
    }
    info.status = "loaded";
    spdlog::info("plugin loaded: plugin={} kind={} version={} tools={}", m.name, m.kind, m.version, info.tools.size());
    infos_.push_back(std::move(info));
    loaded_.push_back(std::move(loaded));
}

Registry::Loaded* Registry::find_loaded(std::string_view name) const {
    for (const auto& l : loaded_)
        if (l->name == name) return l.get();
    return nullptr;
}

std::shared_ptr<const std::vector<ToolInfo>> Registry::tools() const {
    std::lock_guard lock(tools_mutex_);
    return tools_;
}

std::shared_ptr<const ToolInfo> Registry::find_tool(std::string_view name) const {
    auto all = tools();
    for (const ToolInfo& t : *all)
        if (t.name == name) return std::shared_ptr<const ToolInfo>(all, &t);  // keeps the snapshot alive
    return nullptr;
}

ah_status Registry::list_plugin_tools(Loaded& plugin, std::vector<ToolInfo>& tools, std::vector<RefusedTool>& refused) {
    struct Collect {
        const std::string* plugin;
        std::vector<ToolInfo>* tools;
        std::vector<RefusedTool>* refused;
    } collect{&plugin.name, &tools, &refused};
    ah_tool_sink sink{sizeof(ah_tool_sink), &collect, [](void* ctx, const ah_tool_def* raw) -> ah_status {
                          auto* c = static_cast<Collect*>(ctx);
                          if (!raw) return AH_ERR_INVALID_ARGUMENT;
                          try {
                              std::vector<std::string> before;
                              for (const ToolInfo& t : *c->tools) before.push_back(t.name);
                              CheckedTool checked = check_tool(*raw, before);
                              if (!checked.refusal.empty()) {
                                  c->refused->push_back({checked.name, std::move(checked.refusal)});
                                  return AH_ERR_INVALID_ARGUMENT;
                              }
                              c->tools->push_back(ToolInfo{std::move(checked.name), std::move(checked.description),
                                                           std::move(checked.input_schema_json), *c->plugin, checked.hints, false});
                              return AH_OK;
                          } catch (...) {
                              return AH_ERR_INTERNAL;
                          }
                      }};
    auto lock = plugin.lock();
    std::optional<CrashNote> note;
    if (!plugin.isolation) note.emplace(plugin.name, "list_tools");
    return plugin.lib.descriptor.list_tools(plugin.instance, &sink);
}

bool Registry::apply_policy(ToolInfo& tool) const {
    auto policy = config_.tools.find(tool.name);
    auto apply = [&](const std::optional<bool>& value, uint32_t flag) {
        if (value) tool.hints = *value ? (tool.hints | flag) : (tool.hints & ~flag);
    };
    bool enabled = true;
    std::optional<bool> needs_approval;
    if (policy != config_.tools.end()) {
        apply(policy->second.read_only, AH_TOOL_READ_ONLY);
        apply(policy->second.destructive, AH_TOOL_DESTRUCTIVE);
        apply(policy->second.idempotent, AH_TOOL_IDEMPOTENT);
        apply(policy->second.open_world, AH_TOOL_OPEN_WORLD);
        enabled = policy->second.enabled.value_or(true);
        needs_approval = policy->second.needs_approval;
    }
    tool.needs_approval = needs_approval.value_or((tool.hints & AH_TOOL_DESTRUCTIVE) != 0);
    return enabled;
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
        bool changed = refresh_tools(plugin);
        if (changed) {
            // Called under the lock, so a listener removed by remove_tools_listener() is never
            // running any more when that returns.
            std::lock_guard guard(listeners_mutex_);
            for (const auto& [id, listener] : listeners_) listener();
        }
        lock.lock();
    }
}

bool Registry::refresh_tools(const std::string& name) {
    Loaded* plugin = find_loaded(name);
    if (!plugin || plugin->kind != "tool" || !plugin->instance) return false;
    std::vector<ToolInfo> listed;
    std::vector<RefusedTool> refused;
    // A plugin whose process failed too often offers nothing: its tools could only fail.
    ah_status status = disabled(name) ? AH_OK : list_plugin_tools(*plugin, listed, refused);
    for (const RefusedTool& r : refused) spdlog::warn("plugin tool refused: plugin={} tool={} {}", name, r.name, r.reason);
    if (status != AH_OK && listed.empty() && refused.empty()) {
        spdlog::warn("plugin tools not refreshed: plugin={} status={} (its previous tools stay)", name, status);
        return false;
    }
    std::lock_guard lock(tools_mutex_);
    auto next = std::make_shared<std::vector<ToolInfo>>();
    for (const ToolInfo& t : *tools_)
        if (t.plugin != name) next->push_back(t);
    const size_t others = next->size();
    for (ToolInfo& tool : listed) {
        auto clash = std::find_if(next->begin(), next->begin() + static_cast<std::ptrdiff_t>(others),
                                  [&](const ToolInfo& t) { return t.name == tool.name; });
        if (clash != next->begin() + static_cast<std::ptrdiff_t>(others)) {
            spdlog::warn("plugin tool skipped: plugin={} tool={} (already provided by plugin {})", name, tool.name, clash->plugin);
            continue;
        }
        if (apply_policy(tool)) next->push_back(std::move(tool));
    }
    auto same = [](const ToolInfo& a, const ToolInfo& b) {
        return a.name == b.name && a.description == b.description && a.input_schema_json == b.input_schema_json && a.hints == b.hints;
    };
    std::vector<ToolInfo> before, after(next->begin() + static_cast<std::ptrdiff_t>(others), next->end());
    for (const ToolInfo& t : *tools_)
        if (t.plugin == name) before.push_back(t);
    if (std::equal(before.begin(), before.end(), after.begin(), after.end(), same)) return false;
    spdlog::info("plugin tools changed: plugin={} tools={} (were {})", name, after.size(), before.size());
    tools_ = std::move(next);
    return true;
}

int Registry::add_tools_listener(std::function<void()> listener) {
    std::lock_guard lock(listeners_mutex_);
    listeners_[++next_listener_] = std::move(listener);
    return next_listener_;
}

void Registry::remove_tools_listener(int id) {
    std::lock_guard lock(listeners_mutex_);
    listeners_.erase(id);
}

Result<std::string> Registry::call_tool(const CallInput& input) {
    auto tool = find_tool(input.tool_name);
    if (!tool) {
        if (auto gone = why_tool_gone(input.tool_name)) return Error{"plugin_failure", *gone};
        return Error{"unknown_tool", "there is no tool named '" + input.tool_name + "'"};
    }
    Loaded* plugin = find_loaded(tool->plugin);
    if (!plugin) return Error{"plugin_failure", "the plugin of tool '" + input.tool_name + "' is not loaded"};

    StringSink result;
    ah_call call = to_call(input);
    ah_status status = call_slot(*plugin, input.tool_name,
                                 [&] { return plugin->lib.descriptor.call_tool(plugin->instance, &call, &result.writer); });
    if (result.overflowed) {
        spdlog::error("tool result too large: tool={} plugin={} limit_bytes={}", input.tool_name, plugin->name, result.limit);
        return Error{"output_too_large", "the plugin '" + plugin->name + "' answered '" + input.tool_name + "' with more than " +
                                             std::to_string(result.limit >> 20) + " MiB; the result was dropped"};
    }
    if (status != AH_OK) {
        spdlog::error("tool call failed: tool={} plugin={} status={}", input.tool_name, plugin->name, status);
        // An isolated plugin's process names its own failure (a crash, a timeout) in what it wrote.
        std::string detail = result.text.empty() ? "" : ": " + json_io::repair_utf8(result.text.substr(0, 1000));
        return Error{"plugin_failure", "the plugin '" + plugin->name + "' failed while running '" + input.tool_name + "' (" +
                                           status_words(status) + ")" + detail};
    }
    return std::move(result.text);
}

std::optional<isolation::ProcessHealth> Registry::process_health(std::string_view plugin) const {
    Loaded* loaded = find_loaded(plugin);
    if (!loaded || !loaded->isolation || !loaded->instance) return std::nullopt;
    return isolation::process_health(loaded->instance);
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
               std::to_string(health->disabled_after) + " failures (last: " + health->last_failure + "); fix the plugin and restart agenthost";
    }
    return std::nullopt;
}

std::string Registry::status_now(const PluginInfo& plugin) const { return disabled(plugin.name) ? "disabled" : plugin.status; }

std::string Registry::context(const CallInput& input) {
    std::string text;
    for (const auto& plugin : loaded_) {
        if (plugin->kind != "tool" || !plugin->lib.descriptor.context) continue;
        StringSink out(64 << 10);
        ah_call call = to_call(input);
        ah_status status =
            call_slot(*plugin, "context", [&] { return plugin->lib.descriptor.context(plugin->instance, &call, &out.writer); });
        if (status != AH_OK) {
            spdlog::warn("context hook failed: plugin={} status={}", plugin->name, status);
            continue;
        }
        if (!out.text.empty()) text += (text.empty() ? "" : "\n") + json_io::repair_utf8(out.text);
    }
    return text;
}

std::string Registry::resources(const CallInput& input) {
    json all = json::array();
    for (const auto& plugin : loaded_) {
        if (!plugin->lib.descriptor.list_resources) continue;
        StringSink out(4 << 20);
        ah_call call = to_call(input);
        ah_status status = call_slot(*plugin, "list_resources",
                                     [&] { return plugin->lib.descriptor.list_resources(plugin->instance, &call, &out.writer); });
        auto read = read_plugin_json(out.text, out.limit);
        if (status != AH_OK || !read || !read->is_array()) {
            spdlog::warn("resource listing failed: plugin={} status={}", plugin->name, status);
            continue;
        }
        for (auto& r : *read)
            if (r.is_object() && r.contains("uri") && r["uri"].is_string()) {
                r["plugin"] = plugin->name;
                all.push_back(std::move(r));
            }
    }
    return json_io::dump(all);
}

Result<std::string> Registry::read_resource(const std::string& uri, const CallInput& input) {
    CallInput request = input;
    request.arguments_json = json{{"uri", uri}}.dump();
    for (const auto& plugin : loaded_) {
        if (!plugin->lib.descriptor.read_resource) continue;
        StringSink out(16 << 20);
        ah_call call = to_call(request);
        ah_status status = call_slot(*plugin, "read_resource",
                                     [&] { return plugin->lib.descriptor.read_resource(plugin->instance, &call, &out.writer); });
        if (status == AH_ERR_NOT_FOUND) continue;
        auto contents = read_plugin_json(out.text, out.limit);
        if (status != AH_OK || !contents || !contents->is_object())
            return Error{"plugin_failure", "plugin '" + plugin->name + "' failed to read " + uri + " (" + status_words(status) + ")"};
        return json_io::dump(*contents);
    }
    return Error{"not_found", "no plugin serves the resource " + uri};
}

std::vector<HealthCheck> Registry::health(const std::string& name) {
    Loaded* plugin = find_loaded(name);
    if (!plugin || !plugin->lib.descriptor.health) return {};
    StringSink out(1 << 20);
    CallInput input;  // outlives the call: the ah_call borrows its strings
    ah_call call = to_call(input);
    ah_status status =
        call_slot(*plugin, "health", [&] { return plugin->lib.descriptor.health(plugin->instance, &call, &out.writer); });
    auto report = read_plugin_json(out.text, out.limit);
    if (status != AH_OK || !report || !report->is_object() || !report->contains("checks") || !(*report)["checks"].is_array())
        return {{"health check", false, "the plugin's health check failed (" + status_words(status) + (report ? "" : ", unreadable answer") + ")"}};
    std::vector<HealthCheck> checks;
    for (const auto& c : (*report)["checks"]) {
        if (!c.is_object()) continue;
        HealthCheck check;
        check.name = json_io::get_string(c, "name", "check");
        check.ok = json_io::get_bool(c, "ok", false);
        check.detail = json_io::get_string(c, "detail", "");
        checks.push_back(std::move(check));
    }
    return checks;
}

void Registry::create_named_providers() {
    for (const auto& [name, settings] : config_.providers) {
        Loaded* plugin = find_loaded(settings.use);
        if (!plugin || plugin->kind != "provider") {
            spdlog::warn("provider not available: provider={} plugin={} (no loaded provider plugin of that name)", name, settings.use);
            continue;
        }
        auto instance = std::make_unique<ProviderInstance>();
        instance->name = name;
        instance->plugin = plugin;
        json cfg = json::parse(plugin->table_config_json);
        apply_provider_settings(cfg, settings);
        instance->host = services_.new_handle(plugin->name, cfg.dump(), plugin->host->data_dir);
        instance->host->isolation = plugin->host->isolation;
        StringSink create_error(4096);
        ah_status status = plugin->lib.descriptor.create(services_.api(), instance->host, &instance->instance, &create_error.writer);
        if (status != AH_OK || !instance->instance) {
            instance->host->destroyed = true;
            spdlog::warn("provider not available: provider={} plugin={} status={} {}", name, settings.use, status, create_error.text);
            continue;
        }
        named_providers_.push_back(std::move(instance));
    }
}

Result<std::pair<Registry::Loaded*, Registry::ProviderInstance*>> Registry::provider(std::string_view name) {
    for (auto& p : named_providers_)
        if (p->name == name) return std::make_pair(p->plugin, p.get());
    Loaded* plugin = find_loaded(name);
    if (plugin && plugin->kind == "provider") return std::make_pair(plugin, static_cast<ProviderInstance*>(nullptr));
    std::string why;
    if (auto named = config_.providers.find(std::string(name)); named != config_.providers.end()) {
        why = "its plugin '" + named->second.use + "' did not load or failed to start (see agenthost plugins)";
    } else {
        // The fix depends on the cause: a name nothing answers to, or a plugin that did not start.
        auto info = std::find_if(infos_.begin(), infos_.end(), [&](const PluginInfo& p) { return p.name == name; });
        why = info == infos_.end() ? "no provider plugin or [providers." + std::string(name) +
                                         "] of that name was found (set [provider] use = \"…\" in agenthost.toml)"
              : info->error ? "its plugin did not start: " + info->error->message
                            : "its plugin is " + info->status + " (see enabled_plugins / disabled_plugins)";
    }
    return Error{"provider_unavailable", "provider '" + std::string(name) + "' is not available: " + why};
}

Result<ah_status> Registry::chat(std::string_view name, const CallInput& input, const ah_event_sink& events) {
    auto found = provider(name);
    if (!found) return found.error();
    auto [plugin, instance] = *found;
    ah_call call = to_call(input);
    auto lock = instance ? instance->lock() : plugin->lock();
    if (plugin->isolation) return plugin->lib.descriptor.chat(instance ? instance->instance : plugin->instance, &call, &events);
    // The events go back into host code (the extractor, the terminal, SSE clients): a crash there is
    // the host's, so the note is lifted while they run.
    ah_event_sink host_side{sizeof(ah_event_sink), const_cast<ah_event_sink*>(&events), [](void* ctx, int32_t type, ah_str payload) {
                                CrashNote::Lifted lifted;
                                auto* inner = static_cast<ah_event_sink*>(ctx);
                                return inner->emit(inner->ctx, type, payload);
                            }};
    CrashNote note(plugin->name, "chat");
    return plugin->lib.descriptor.chat(instance ? instance->instance : plugin->instance, &call, &host_side);
}

Result<std::string> Registry::models(std::string_view name, const CallInput& input) {
    auto found = provider(name);
    if (!found) return found.error();
    auto [plugin, instance] = *found;
    if (!plugin->lib.descriptor.list_models)
        return Error{"unsupported", "provider '" + std::string(name) + "' cannot list its models"};
    StringSink out(4 << 20);
    ah_call call = to_call(input);
    ah_status status;
    {
        auto lock = instance ? instance->lock() : plugin->lock();
        status = plugin->lib.descriptor.list_models(instance ? instance->instance : plugin->instance, &call, &out.writer);
    }
    auto list = read_plugin_json(out.text, out.limit);
    if (status != AH_OK || !list || !list->is_array()) {
        // The plugin's own words when it gave them ({"error": "…"}), else the status's.
        std::string why = list && list->is_object() ? json_io::get_string(*list, "error") : "";
        return Error{"model_list_failed", "provider '" + std::string(name) + "' could not list its models: " +
                                              (why.empty() ? status_words(status) + "; is the server at its base_url running?" : why)};
    }
    return json_io::dump(*list);
}

std::vector<std::string> Registry::provider_names() const {
    std::vector<std::string> names;
    for (const auto& p : loaded_)
        if (p->kind == "provider") names.push_back(p->name);
    for (const auto& p : named_providers_)
        if (std::find(names.begin(), names.end(), p->name) == names.end()) names.push_back(p->name);
    return names;
}

}  // namespace agenthost::plugins
