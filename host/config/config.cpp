#include "config/config.hpp"

#include "common/install_layout.hpp"
#include "common/spelling.hpp"
#include "config/paths.hpp"
#include "config/toml_json.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace agenthost::config {
namespace {

using nlohmann::json;

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

constexpr std::initializer_list<const char*> kTopLevelKeys{"data_dir",
                                                           "plugin_dirs",
                                                           "default_plugin_dirs",
                                                           "enabled_plugins",
                                                           "disabled_plugins",
                                                           "third_party_isolation",
                                                           "log_level",
                                                           "secrets_file",
                                                           "provider",
                                                           "providers",
                                                           "plugins",
                                                           "tools",
                                                           "limits",
                                                           "agent",
                                                           "store",
                                                           "server",
                                                           "mcp"};

}  // namespace

std::string top_level_hint(std::string_view key) {
    bool top = std::any_of(kTopLevelKeys.begin(), kTopLevelKeys.end(), [&](const char* k) { return key == k; });
    return top ? "; '" + std::string(key) + "' is a top-level key: move it above the first [table]" : "";
}

namespace {

// Reads one file's settings, collecting every error with its position.
class Reader {
public:
    Reader(std::string name, fs::path base_dir) : name_(std::move(name)), base_dir_(std::move(base_dir)) {}

    std::vector<Error> errors;
    void add(Error e) { errors.push_back(std::move(e)); }

    // What a value is, for "expected an integer, got string \"20\"".
    static std::string shown(const toml::node& n) {
        if (auto v = n.value<std::string>(); v && n.is_string()) return "string \"" + v->substr(0, 60) + "\"";
        if (n.is_integer()) return "integer " + std::to_string(n.as_integer()->get());
        if (n.is_floating_point()) return "number " + std::to_string(n.as_floating_point()->get());
        if (n.is_boolean()) return n.as_boolean()->get() ? "true" : "false";
        if (n.is_array()) return "an array";
        if (n.is_table()) return "a table";
        return "a date or time";
    }

    std::string where(const toml::node& node) const {
        const auto& src = node.source();
        return src.begin.line ? name_ + ":" + std::to_string(src.begin.line) : name_;
    }

    void fail(const toml::node& node, const std::string& key, const std::string& what) {
        add(Error{"config_invalid", where(node) + ": key '" + key + "': " + what});
    }

    // Rejects keys not in `known`, naming the ones that are.
    void only_known(const toml::table& table, const std::string& prefix, std::initializer_list<const char*> known) {
        for (const auto& [key, node] : table) {
            std::string k(key.str());
            if (std::none_of(known.begin(), known.end(), [&](const char* n) { return k == n; })) {
                std::vector<std::string> names(known.begin(), known.end());
                add(Error{"config_unknown_key",
                          where(node) + ": unknown key '" + prefix + k + "'" + spelling::did_you_mean(k, names) +
                              " (known here: " + spelling::join_names(names) + "); fix the spelling or remove it" +
                              (prefix.empty() ? "" : top_level_hint(k))});
            }
        }
    }

    void get(const toml::table& t, const std::string& prefix, const char* key, std::string& out) {
        const toml::node* n = t.get(key);
        if (!n) return;
        if (auto v = n->value<std::string>(); v && n->is_string())
            out = *v;
        else
            fail(*n, prefix + key, "expected a string, got " + shown(*n));
    }
    void get(const toml::table& t, const std::string& prefix, const char* key, bool& out) {
        const toml::node* n = t.get(key);
        if (!n) return;
        if (n->is_boolean())
            out = n->as_boolean()->get();
        else
            fail(*n, prefix + key, "expected true or false, got " + shown(*n));
    }
    void get(const toml::table& t, const std::string& prefix, const char* key, std::optional<bool>& out) {
        bool v = false;
        if (!t.get(key)) return;
        get(t, prefix, key, v);
        out = v;
    }
    void get(const toml::table& t, const std::string& prefix, const char* key, int& out, int min, int max) {
        const toml::node* n = t.get(key);
        if (!n) return;
        if (!n->is_integer()) return fail(*n, prefix + key, "expected an integer, got " + shown(*n));
        int64_t v = n->as_integer()->get();
        if (v < min || v > max)
            return fail(*n, prefix + key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
        out = static_cast<int>(v);
    }
    void get(const toml::table& t, const std::string& prefix, const char* key, std::vector<std::string>& out) {
        const toml::node* n = t.get(key);
        if (!n) return;
        const toml::array* a = n->as_array();
        if (!a) return fail(*n, prefix + key, "expected an array of strings");
        out.clear();
        for (const auto& item : *a) {
            if (!item.is_string()) return fail(item, prefix + key, "expected an array of strings");
            out.push_back(item.as_string()->get());
        }
    }
    fs::path path(const std::string& value) const { return resolve_path(base_dir_, value); }

private:
    std::string name_;
    fs::path base_dir_;
};

using Preset = ProviderPreset;

constexpr Preset kPresets[] = {
    {"openai", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY"},
    {"deepseek", "openai", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"},
    {"anthropic", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY"},
    {"ollama", "ollama", "http://127.0.0.1:11434", ""},
    {"ollama-openai", "openai", "http://127.0.0.1:11434/v1", ""},
    {"vllm", "openai", "http://127.0.0.1:8000/v1", "VLLM_API_KEY"},
    {"llamacpp", "openai", "http://127.0.0.1:8080/v1", ""},
    {"lmstudio", "openai", "http://127.0.0.1:1234/v1", ""},
};

// [provider] or [providers.NAME]: a preset first, then the explicit keys over it.
void read_provider(Reader& r, const toml::table& t, const std::string& prefix, ProviderSettings& p) {
    r.only_known(t, prefix,
                 {"use", "preset", "model", "base_url", "api_key_env", "timeout_ms", "connect_timeout_ms", "concurrency",
                  "retry_attempts", "retry_base_ms", "retry_cap_ms"});
    r.get(t, prefix, "preset", p.preset);
    if (!p.preset.empty()) {
        const Preset* preset = nullptr;
        for (const auto& candidate : kPresets)
            if (p.preset == candidate.name) preset = &candidate;
        if (preset) {
            p.use = preset->use;
            p.base_url = preset->base_url;
            p.api_key_env = preset->api_key_env;
        } else {
            std::string names;
            for (const auto& candidate : kPresets) names += (names.empty() ? "" : ", ") + std::string(candidate.name);
            r.fail(*t.get("preset"), prefix + "preset", "unknown preset '" + p.preset + "' (known: " + names + ")");
        }
    }
    r.get(t, prefix, "use", p.use);
    r.get(t, prefix, "model", p.model);
    r.get(t, prefix, "base_url", p.base_url);
    r.get(t, prefix, "api_key_env", p.api_key_env);
    r.get(t, prefix, "timeout_ms", p.timeout_ms, 0, 86400000);
    r.get(t, prefix, "connect_timeout_ms", p.connect_timeout_ms, 0, 600000);
    r.get(t, prefix, "concurrency", p.concurrency, 1, 1024);
    r.get(t, prefix, "retry_attempts", p.retry_attempts, 1, 100);
    r.get(t, prefix, "retry_base_ms", p.retry_base_ms, 0, 600000);
    r.get(t, prefix, "retry_cap_ms", p.retry_cap_ms, 0, 3600000);
    if (p.use.empty()) r.fail(t, prefix + "use", "must name a provider plugin, e.g. \"openai\"");
    if (!p.api_key_env.empty()) p.api_key = env(p.api_key_env.c_str());
}

}  // namespace

std::optional<std::string> missing_api_key(const ProviderSettings& p) {
    if (p.api_key_env.empty() || !p.api_key.empty() || p.base_url.rfind("https://", 0) != 0) return std::nullopt;
    return p.api_key_env + " is not set: export it (or put it in the service's environment file) with the key for " + p.base_url;
}

const ProviderSettings* Config::provider_named(std::string_view name) const {
    if (name.empty() || name == provider.name) return &provider;
    auto it = providers.find(std::string(name));
    return it == providers.end() ? nullptr : &it->second;
}

const std::vector<ProviderPreset>& provider_presets() {
    static const std::vector<ProviderPreset> presets(std::begin(kPresets), std::end(kPresets));
    return presets;
}

fs::path resolve_path(const fs::path& base_dir, const std::string& value) {
    fs::path p(value);
    if (!value.empty() && value[0] == '~') p = fs::path(env("HOME")) / value.substr(value.size() > 1 ? 2 : 1);
    return (p.is_relative() ? base_dir / p : p).lexically_normal();
}

std::string Config::place(const std::string& key) const {
    if (auto it = key_places.find(key); it != key_places.end()) return it->second;
    return source.empty() ? std::string("the built-in defaults") : source.string();
}

bool Config::plugin_enabled(const std::string& name) const {
    if (std::find(disabled_plugins.begin(), disabled_plugins.end(), name) != disabled_plugins.end()) return false;
    return enabled_plugins.empty() || std::find(enabled_plugins.begin(), enabled_plugins.end(), name) != enabled_plugins.end();
}

fs::path default_data_dir() {
    std::string xdg = env("XDG_DATA_HOME");
    if (!xdg.empty()) return fs::path(xdg) / "agenthost";
    std::string home = env("HOME");
    return fs::path(home.empty() ? "." : home) / ".local" / "share" / "agenthost";
}

std::vector<fs::path> default_plugin_dirs(const fs::path& data_dir) {
    std::vector<fs::path> dirs;
    dirs.push_back(layout::install_layout().plugin_dir);  // the bundled plugins, beside the executable
    dirs.push_back(data_dir / "plugins");                 // the user's own, with the data they go with
    return dirs;
}

Config defaults() {
    Config c;
    c.provider.name = c.provider.use;
    c.data_dir = default_data_dir();
    c.plugin_dirs = default_plugin_dirs(c.data_dir);
    c.server.web_dir = layout::install_layout().web_dir;
    return c;
}

Result<std::optional<fs::path>> locate(const std::optional<std::string>& cli_path) {
    auto must_exist = [](const fs::path& p, const std::string& origin) -> Result<std::optional<fs::path>> {
        std::error_code ec;
        if (!fs::is_regular_file(p, ec))
            return Error{"config_missing", "config file " + p.string() + " (from " + origin +
                                               ") does not exist or is not a file; create it or fix the path"};
        return std::optional<fs::path>(p);
    };
    if (cli_path) return must_exist(*cli_path, "--config");
    if (std::string e = env("AGENTHOST_CONFIG"); !e.empty()) return must_exist(e, "$AGENTHOST_CONFIG");
    for (const fs::path& candidate : search_path()) {
        std::error_code ec;
        if (fs::is_regular_file(candidate, ec)) return std::optional<fs::path>(candidate);
    }
    return std::optional<fs::path>();
}

std::vector<fs::path> search_path() {
    std::vector<fs::path> out{"agenthost.toml"};
    if (std::string xdg = env("XDG_CONFIG_HOME"); !xdg.empty())
        out.push_back(fs::path(xdg) / "agenthost" / "agenthost.toml");
    else if (std::string home = env("HOME"); !home.empty())
        out.push_back(fs::path(home) / ".config" / "agenthost" / "agenthost.toml");
    out.push_back("/etc/agenthost/agenthost.toml");
    return out;
}

std::vector<std::string> settings_missing(std::string_view old_text, std::string_view new_text) {
    // Each setting by its path, two levels deep (a table there is one setting: a plugin's, a tool's),
    // with its value as TOML text: a key the new file sets differently is missing too.
    auto settings = [](std::string_view text) {
        std::vector<std::pair<std::string, std::string>> out;
        auto as_text = [](const toml::node& node) {
            std::ostringstream s;
            node.visit([&](const auto& v) { s << toml::toml_formatter(v); });
            return s.str();
        };
        toml::table root;
        try {
            root = toml::parse(text);
        } catch (const toml::parse_error&) {
            return out;
        }
        for (const auto& [key, value] : root) {
            const toml::table* table = value.as_table();
            if (!table) {
                out.emplace_back(std::string(key.str()), as_text(value));
                continue;
            }
            for (const auto& [sub, inner] : *table)
                out.emplace_back(inner.is_table() ? "[" + std::string(key.str()) + "." + std::string(sub.str()) + "]"
                                                  : std::string(key.str()) + "." + std::string(sub.str()),
                                 as_text(inner));
        }
        return out;
    };
    auto before = settings(old_text), after = settings(new_text);
    std::vector<std::string> missing;
    for (const auto& s : before)
        if (std::find(after.begin(), after.end(), s) == after.end()) missing.push_back(s.first);
    return missing;
}

Result<Config> load_file(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return Error{"config_unreadable", "cannot read config file " + file.string() + ": check its permissions"};
    std::stringstream text;
    text << in.rdbuf();
    fs::path base = file.has_parent_path() ? file.parent_path() : fs::path(".");
    return parse(text.str(), file.string(), fs::absolute(base));
}

Result<Config> parse(std::string_view text, const std::string& name, const fs::path& base_dir) {
    toml::table root;
    try {
        root = toml::parse(text, name);
    } catch (const toml::parse_error& e) {
        return Error{"config_syntax", name + ":" + std::to_string(e.source().begin.line) + ":" +
                                          std::to_string(e.source().begin.column) + ": " + std::string(e.description()) +
                                          "; fix the TOML syntax"};
    }

    Config c = defaults();
    c.source = name;
    c.base_dir = base_dir;
    Reader r(name, base_dir);
    auto note_place = [&](const std::string& key, const toml::node& node) { c.key_places[key] = r.where(node); };
    for (const char* key : {"enabled_plugins", "disabled_plugins", "third_party_isolation"})
        if (const toml::node* n = root.get(key)) note_place(key, *n);
    r.only_known(root, "", kTopLevelKeys);

    std::string data_dir;
    r.get(root, "", "data_dir", data_dir);
    if (!data_dir.empty()) c.data_dir = r.path(data_dir);

    std::vector<std::string> dirs;
    r.get(root, "", "plugin_dirs", dirs);
    r.get(root, "", "default_plugin_dirs", c.use_default_plugin_dirs);
    c.plugin_dirs.clear();
    for (const auto& d : dirs) c.plugin_dirs.push_back(r.path(d));
    if (c.use_default_plugin_dirs)
        for (const auto& d : default_plugin_dirs(c.data_dir)) c.plugin_dirs.push_back(d);

    r.get(root, "", "enabled_plugins", c.enabled_plugins);
    r.get(root, "", "disabled_plugins", c.disabled_plugins);
    r.get(root, "", "third_party_isolation", c.third_party_isolation);  // checked with the plugins (plugin_setup)
    r.get(root, "", "log_level", c.log_level);
    std::string secrets_file;
    r.get(root, "", "secrets_file", secrets_file);
    if (!secrets_file.empty()) c.secrets_file = r.path(secrets_file);
    if (const toml::node* n = root.get("log_level")) {
        static const std::set<std::string> levels{"trace", "debug", "info", "warn", "error", "off"};
        if (!levels.count(c.log_level)) r.fail(*n, "log_level", "use one of trace, debug, info, warn, error, off");
    }

    auto table_at = [&](const toml::table& parent, const std::string& prefix, const char* key) -> const toml::table* {
        const toml::node* n = parent.get(key);
        if (!n) return nullptr;
        if (!n->is_table()) {
            r.fail(*n, prefix + key, "expected a table ([" + prefix + key + "])");
            return nullptr;
        }
        return n->as_table();
    };

    // Where a provider's plugin is named: `use`, else the preset that implies it.
    auto note_use = [&](const std::string& prefix, const toml::table& t) {
        if (const toml::node* n = t.get("use"))
            note_place(prefix + "use", *n);
        else if (const toml::node* p = t.get("preset"))
            note_place(prefix + "use", *p);
        else
            note_place(prefix + "use", t);
    };
    if (const toml::table* p = table_at(root, "", "provider")) {
        read_provider(r, *p, "provider.", c.provider);
        note_use("provider.", *p);
    }
    c.provider.name = c.provider.use;
    if (const toml::table* named = table_at(root, "", "providers")) {
        for (const auto& [key, node] : *named) {
            std::string name(key.str());
            if (!node.is_table()) {
                r.fail(node, "providers." + name, "expected a table ([providers." + name + "]) with use, model, …");
                continue;
            }
            ProviderSettings& settings = c.providers[name];
            read_provider(r, *node.as_table(), "providers." + name + ".", settings);
            note_use("providers." + name + ".", *node.as_table());
            settings.name = name;
            if (name == c.provider.name)
                r.fail(node, "providers." + name, "clashes with the default provider's name; choose another name");
        }
    }

    if (const toml::table* plugins = table_at(root, "", "plugins")) {
        for (const auto& [key, node] : *plugins) {
            std::string plugin(key.str());
            if (!node.is_table()) {
                r.fail(node, "plugins." + plugin, "expected a table ([plugins." + plugin + "]) of that plugin's settings");
                continue;
            }
            c.plugin_tables[plugin] = toml_to_json(node).dump();
            note_place("plugins." + plugin, node);
            for (const auto& [k, v] : *node.as_table()) note_place("plugins." + plugin + "." + std::string(k.str()), v);
        }
    }

    if (const toml::table* tools = table_at(root, "", "tools")) {
        for (const auto& [key, node] : *tools) {
            std::string tool(key.str()), prefix = "tools." + tool + ".";
            if (!node.is_table()) {
                r.fail(node, "tools." + tool, "expected a table ([tools." + tool + "])");
                continue;
            }
            const toml::table& t = *node.as_table();
            note_place("tools." + tool, node);
            r.only_known(t, prefix, {"enabled", "read_only", "destructive", "idempotent", "open_world", "needs_approval"});
            ToolPolicy& policy = c.tools[tool];
            r.get(t, prefix, "enabled", policy.enabled);
            r.get(t, prefix, "read_only", policy.read_only);
            r.get(t, prefix, "destructive", policy.destructive);
            r.get(t, prefix, "idempotent", policy.idempotent);
            r.get(t, prefix, "open_world", policy.open_world);
            r.get(t, prefix, "needs_approval", policy.needs_approval);
        }
    }

    if (const toml::table* l = table_at(root, "", "limits")) {
        r.only_known(*l, "limits.",
                     {"explore_iterations", "plan_iterations", "execute_iterations", "token_budget", "tool_call_budget"});
        r.get(*l, "limits.", "explore_iterations", c.limits.explore_iterations, 1, 1000000);
        r.get(*l, "limits.", "plan_iterations", c.limits.plan_iterations, 1, 1000000);
        r.get(*l, "limits.", "execute_iterations", c.limits.execute_iterations, 1, 1000000);
        r.get(*l, "limits.", "token_budget", c.limits.token_budget, 0, 2000000000);
        r.get(*l, "limits.", "tool_call_budget", c.limits.tool_call_budget, 0, 1000000);
    }

    if (const toml::table* sv = table_at(root, "", "server")) {
        r.only_known(
            *sv, "server.",
            {"listen", "token_env", "auth", "allowed_hosts", "allowed_origins", "max_body_bytes", "max_messages",
             "max_concurrent_runs", "max_waiting_runs", "max_connections", "max_connections_per_address",
             "shutdown_grace_seconds", "kept_event_runs", "run_events_mb", "kept_events_mb", "web_dir", "max_memory_mb"});
        r.get(*sv, "server.", "listen", c.server.listen);
        c.server.token_env_set = sv->get("token_env") != nullptr;
        r.get(*sv, "server.", "token_env", c.server.token_env);
        if (const toml::node* n = sv->get("token_env"); n && c.server.token_env.empty())
            r.fail(*n, "server.token_env",
                   "name the environment variable holding the token (e.g. \"AGENTHOST_TOKEN\"), or remove the key");
        r.get(*sv, "server.", "auth", c.server.auth);
        if (const toml::node* n = sv->get("auth"); n && c.server.auth != "token" && c.server.auth != "none")
            r.fail(*n, "server.auth", "use \"token\" (the default) or \"none\" (loopback only)");
        r.get(*sv, "server.", "allowed_hosts", c.server.allowed_hosts);
        r.get(*sv, "server.", "allowed_origins", c.server.allowed_origins);
        r.get(*sv, "server.", "max_body_bytes", c.server.max_body_bytes, 1024, 1 << 30);
        r.get(*sv, "server.", "max_messages", c.server.max_messages, 1, 100000);
        r.get(*sv, "server.", "max_concurrent_runs", c.server.max_concurrent_runs, 1, 10000);
        r.get(*sv, "server.", "max_waiting_runs", c.server.max_waiting_runs, 0, 100000);
        r.get(*sv, "server.", "max_connections", c.server.max_connections, 16, 100000);
        r.get(*sv, "server.", "max_connections_per_address", c.server.max_connections_per_address, 1, 1000000);
        r.get(*sv, "server.", "shutdown_grace_seconds", c.server.shutdown_grace_seconds, 0, 3600);
        r.get(*sv, "server.", "kept_event_runs", c.server.kept_event_runs, 1, 1000000);
        r.get(*sv, "server.", "run_events_mb", c.server.run_events_mb, 1, 65536);
        r.get(*sv, "server.", "kept_events_mb", c.server.kept_events_mb, 1, 1048576);
        r.get(*sv, "server.", "max_memory_mb", c.server.max_memory_mb, 0, 1 << 24);
        std::string web_dir;
        r.get(*sv, "server.", "web_dir", web_dir);
        if (!web_dir.empty()) c.server.web_dir = r.path(web_dir);
        if (!c.server.token_env.empty()) c.server.token = env(c.server.token_env.c_str());
    }

    if (const toml::table* m = table_at(root, "", "mcp")) {
        r.only_known(*m, "mcp.", {"allow_destructive", "allowed_origins"});
        r.get(*m, "mcp.", "allow_destructive", c.mcp.allow_destructive);
        r.get(*m, "mcp.", "allowed_origins", c.mcp.allowed_origins);
    }

    if (const toml::table* st = table_at(root, "", "store")) {
        r.only_known(*st, "store.", {"backend", "url_env", "durability", "lease_seconds", "keep_runs", "keep_days", "takeover"});
        r.get(*st, "store.", "backend", c.store.backend);
        if (const toml::node* n = st->get("backend"); n && c.store.backend != "sqlite" && c.store.backend != "postgresql")
            r.fail(*n, "store.backend",
                   "use \"sqlite\" (the embedded file, one host) or \"postgresql\" (a database several hosts share)");
        r.get(*st, "store.", "url_env", c.store.url_env);
        if (c.store.backend == "postgresql") {
            c.store.url = env(c.store.url_env.c_str());
            if (c.store.url.empty())
                r.fail(*st->get("backend"), "store.backend",
                       "the PostgreSQL backend reads its connection URL from $" + c.store.url_env +
                           ", which is not set; set it (e.g. postgresql://agenthost@db.example/agenthost) or name another "
                           "variable in store.url_env");
        }
        r.get(*st, "store.", "durability", c.store.durability);
        if (const toml::node* n = st->get("durability"); n && c.store.durability != "full" && c.store.durability != "process")
            r.fail(*n, "store.durability", "use \"full\" (survives a power cut) or \"process\" (survives a killed process)");
        r.get(*st, "store.", "lease_seconds", c.store.lease_seconds, 2, 86400);
        r.get(*st, "store.", "keep_runs", c.store.keep_runs, 1, 1000000);
        r.get(*st, "store.", "keep_days", c.store.keep_days, 1, 100000);
        r.get(*st, "store.", "takeover", c.store.takeover);
    }

    if (const toml::table* a = table_at(root, "", "agent")) {
        r.only_known(
            *a, "agent.",
            {"default_mode", "system_prompt", "prune_every", "keep_messages", "pinned_exchanges", "tool_result_max_chars",
             "first_max_tokens", "max_tokens", "loop_guard_repeats", "max_reply_bytes", "on_demand_tools"});
        r.get(*a, "agent.", "default_mode", c.agent.default_mode);
        if (const toml::node* n = a->get("default_mode");
            n && c.agent.default_mode != "explore" && c.agent.default_mode != "plan" && c.agent.default_mode != "execute")
            r.fail(*n, "agent.default_mode", "use one of explore, plan, execute");
        r.get(*a, "agent.", "system_prompt", c.agent.system_prompt);
        r.get(*a, "agent.", "prune_every", c.agent.prune_every, 1, 1000000);
        r.get(*a, "agent.", "keep_messages", c.agent.keep_messages, 1, 1000000);
        r.get(*a, "agent.", "pinned_exchanges", c.agent.pinned_exchanges, 0, 1000);
        r.get(*a, "agent.", "tool_result_max_chars", c.agent.tool_result_max_chars, 200, 100000000);
        r.get(*a, "agent.", "first_max_tokens", c.agent.first_max_tokens, 16, 10000000);
        r.get(*a, "agent.", "max_tokens", c.agent.max_tokens, 16, 10000000);
        r.get(*a, "agent.", "loop_guard_repeats", c.agent.loop_guard_repeats, 2, 1000);
        r.get(*a, "agent.", "on_demand_tools", c.agent.on_demand_tools, 0, 10000);
        r.get(*a, "agent.", "max_reply_bytes", c.agent.max_reply_bytes, 1024, 1000000000);
    }

    if (!r.errors.empty()) {  // every problem at once, in line order
        Error all = r.errors.front();
        for (size_t i = 1; i < r.errors.size(); ++i) all.message += "\n" + r.errors[i].message;
        return all;
    }
    return c;
}

}  // namespace agenthost::config
