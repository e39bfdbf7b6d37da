#include "config/config.hpp"

#include "common/install_layout.hpp"
#include "common/spelling.hpp"
#include "common/stop_reason.hpp"
#include "config/paths.hpp"
#include "config/toml_json.hpp"

#include <algorithm>
#include <span>
#include <type_traits>
#include <variant>
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

// The keys above the first [table] that kTopLevelFields does not read: two read on their own, and
// the tables.
constexpr std::initializer_list<const char*> kTopLevelOthers{"data_dir", "plugin_dirs", "provider", "providers",
                                                             "plugins",  "tools",       "limits",   "agent",
                                                             "store",    "server",      "mcp",      "sampling"};

}  // namespace

namespace {

// Reads one file's settings, collecting every error with its position.
class Reader {
public:
    Reader(std::string name, fs::path base_dir) : name_(std::move(name)), base_dir_(std::move(base_dir)) {}

    // Every problem found, with the line it is on (0: none), reported at once in line order.
    struct Problem {
        uint32_t line;
        Error error;
    };
    std::vector<Problem> problems;
    void add(const toml::node& node, Error e) { problems.push_back({node.source().begin.line, std::move(e)}); }
    std::optional<Error> all_problems() {
        if (problems.empty()) return std::nullopt;
        std::stable_sort(problems.begin(), problems.end(), [](const Problem& a, const Problem& b) { return a.line < b.line; });
        Error all = problems.front().error;
        for (size_t i = 1; i < problems.size(); ++i) all.message += "\n" + problems[i].error.message;
        return all;
    }

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
        add(node, Error{"config_invalid", where(node) + ": key '" + key + "': " + what});
    }

    // Rejects keys not in `known`, naming the ones that are.
    void only_known(const toml::table& table, const std::string& prefix, const std::vector<std::string>& names) {
        for (const auto& [key, node] : table) {
            std::string k(key.str());
            if (std::find(names.begin(), names.end(), k) == names.end()) {
                std::string message = where(node) + ": unknown key '" + prefix;
                message += k + "'" + spelling::did_you_mean(k, names);
                message += " (known here: " + spelling::join_names(names) + "); fix the spelling or remove it";
                if (!prefix.empty()) message += top_level_hint(k);
                add(node, Error{"config_unknown_key", std::move(message)});
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
            return fail(*n, prefix + key,
                        "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", not " + std::to_string(v));
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
    template <class E>
    void get(const toml::table& t, const std::string& prefix, const char* key, E& out, std::span<const Choice<E>> choices) {
        const toml::node* n = t.get(key);
        if (!n) return;
        std::string word;
        get(t, prefix, key, word);
        if (!n->is_string()) return;  // said by get()
        if (auto value = choice_from(choices, word)) {
            out = *value;
            return;
        }
        fail(*n, prefix + key, unknown_choice(choices, word));
    }
    void get(const toml::table& t, const std::string& prefix, const char* key, fs::path& out) {
        std::string value;
        get(t, prefix, key, value);
        if (!value.empty()) out = path(value);
    }
    fs::path path(const std::string& value) const { return resolve_path(base_dir_, value); }

private:
    std::string name_;
    fs::path base_dir_;
};

// One setting of a section read as it is written: its key, the member it fills, and for a number
// its range. A section's table of fields is the one place its keys are named: unknown keys are
// refused against it, and each is read from it.
template <class S>
struct Field {
    const char* key;
    std::variant<int S::*, bool S::*, std::optional<bool> S::*, std::string S::*, std::vector<std::string> S::*, fs::path S::*,
                 Mode S::*, StoreBackend S::*, Durability S::*, ServerAuth S::*, LogLevel S::*, Isolation S::*,
                 SamplingPolicy S::*>
        member;
    int min = 0, max = 0;
};

template <class E>
constexpr std::span<const Choice<E>> choices_of();
template <>
constexpr std::span<const Choice<Mode>> choices_of<Mode>() {
    return kModes;
}
template <>
constexpr std::span<const Choice<StoreBackend>> choices_of<StoreBackend>() {
    return kStoreBackends;
}
template <>
constexpr std::span<const Choice<Durability>> choices_of<Durability>() {
    return kDurabilities;
}
template <>
constexpr std::span<const Choice<ServerAuth>> choices_of<ServerAuth>() {
    return kServerAuths;
}
template <>
constexpr std::span<const Choice<SamplingPolicy>> choices_of<SamplingPolicy>() {
    return kSamplingPolicies;
}
template <>
constexpr std::span<const Choice<LogLevel>> choices_of<LogLevel>() {
    return kLogLevels;
}
template <>
constexpr std::span<const Choice<Isolation>> choices_of<Isolation>() {
    return kIsolations;
}

// Reads the keys of `t` ([PREFIX…]) that `fields` name into `out`.
template <class S, size_t N>
void read_values(Reader& r, const toml::table& t, const std::string& prefix, const Field<S> (&fields)[N], S& out) {
    for (const auto& f : fields) {
        std::visit(
            [&](auto member) {
                using Value = std::remove_reference_t<decltype(out.*member)>;
                if constexpr (std::is_same_v<Value, int>)
                    r.get(t, prefix, f.key, out.*member, f.min, f.max);
                else if constexpr (std::is_enum_v<Value>)
                    r.get(t, prefix, f.key, out.*member, choices_of<Value>());
                else
                    r.get(t, prefix, f.key, out.*member);
            },
            f.member);
    }
}

// Reads `t` ([PREFIX…]) into `out` by its fields; keys outside them are refused.
template <class S, size_t N>
void read_fields(Reader& r, const toml::table& t, const std::string& prefix, const Field<S> (&fields)[N], S& out) {
    std::vector<std::string> names;
    for (const auto& f : fields) names.emplace_back(f.key);
    r.only_known(t, prefix, names);
    read_values(r, t, prefix, fields, out);
}

const Field<Config> kTopLevelFields[] = {
    {"default_plugin_dirs", &Config::use_default_plugin_dirs},
    {"enabled_plugins", &Config::enabled_plugins},
    {"disabled_plugins", &Config::disabled_plugins},
    {"third_party_isolation", &Config::third_party_isolation},
    {"log_level", &Config::log_level},
    {"secrets_file", &Config::secrets_file},
};

// Every key above the first [table].
std::vector<std::string> top_level_keys() {
    std::vector<std::string> keys(kTopLevelOthers.begin(), kTopLevelOthers.end());
    for (const auto& f : kTopLevelFields) keys.emplace_back(f.key);
    return keys;
}

const Field<ToolPolicy> kToolFields[] = {
    {"enabled", &ToolPolicy::enabled},         {"read_only", &ToolPolicy::read_only},
    {"destructive", &ToolPolicy::destructive}, {"idempotent", &ToolPolicy::idempotent},
    {"open_world", &ToolPolicy::open_world},   {"needs_approval", &ToolPolicy::needs_approval},
};

const Field<Limits> kLimitsFields[] = {
    {"explore_iterations", &Limits::explore_iterations, 1, 1000000}, {"plan_iterations", &Limits::plan_iterations, 1, 1000000},
    {"execute_iterations", &Limits::execute_iterations, 1, 1000000}, {"token_budget", &Limits::token_budget, 0, 2000000000},
    {"tool_call_budget", &Limits::tool_call_budget, 0, 1000000},
};

const Field<AgentSettings> kAgentFields[] = {
    {"default_mode", &AgentSettings::default_mode},
    {"system_prompt", &AgentSettings::system_prompt},
    {"prune_every", &AgentSettings::prune_every, 1, 1000000},
    {"keep_messages", &AgentSettings::keep_messages, 1, 1000000},
    {"pinned_exchanges", &AgentSettings::pinned_exchanges, 0, 1000},
    {"tool_result_max_chars", &AgentSettings::tool_result_max_chars, 200, 100000000},
    {"first_max_tokens", &AgentSettings::first_max_tokens, 16, 10000000},
    {"max_tokens", &AgentSettings::max_tokens, 16, 10000000},
    {"loop_guard_repeats", &AgentSettings::loop_guard_repeats, 2, 1000},
    {"max_reply_bytes", &AgentSettings::max_reply_bytes, 1024, 1000000000},
    {"on_demand_tools", &AgentSettings::on_demand_tools, 0, 10000},
};

const Field<StoreSettings> kStoreFields[] = {
    {"backend", &StoreSettings::backend},
    {"url_env", &StoreSettings::url_env},
    {"durability", &StoreSettings::durability},
    {"lease_seconds", &StoreSettings::lease_seconds, 2, 86400},
    {"keep_runs", &StoreSettings::keep_runs, 1, 1000000},
    {"keep_days", &StoreSettings::keep_days, 1, 100000},
    {"takeover", &StoreSettings::takeover},
};

const Field<ServerSettings> kServerFields[] = {
    {"listen", &ServerSettings::listen},
    {"token_env", &ServerSettings::token_env},
    {"auth", &ServerSettings::auth},
    {"allowed_hosts", &ServerSettings::allowed_hosts},
    {"allowed_origins", &ServerSettings::allowed_origins},
    {"max_body_bytes", &ServerSettings::max_body_bytes, 1024, 1 << 30},
    {"max_messages", &ServerSettings::max_messages, 1, 100000},
    {"max_concurrent_runs", &ServerSettings::max_concurrent_runs, 1, 10000},
    {"max_waiting_runs", &ServerSettings::max_waiting_runs, 0, 100000},
    {"max_connections", &ServerSettings::max_connections, 16, 100000},
    {"max_connections_per_address", &ServerSettings::max_connections_per_address, 1, 1000000},
    {"shutdown_grace_seconds", &ServerSettings::shutdown_grace_seconds, 0, 3600},
    {"kept_event_runs", &ServerSettings::kept_event_runs, 1, 1000000},
    {"run_events_mb", &ServerSettings::run_events_mb, 1, 65536},
    {"kept_events_mb", &ServerSettings::kept_events_mb, 1, 1048576},
    {"web_dir", &ServerSettings::web_dir},
    {"max_memory_mb", &ServerSettings::max_memory_mb, 0, 1 << 24},
    {"attachment_folder", &ServerSettings::attachment_folder},
    {"max_attachment_mb", &ServerSettings::max_attachment_mb, 1, 1024},
    {"model_titles", &ServerSettings::model_titles},
};

const Field<McpSettings> kMcpFields[] = {
    {"allow_destructive", &McpSettings::allow_destructive},
    {"allowed_origins", &McpSettings::allowed_origins},
};

const Field<SamplingSettings> kSamplingFields[] = {
    {"policy", &SamplingSettings::policy},
    {"provider", &SamplingSettings::provider},
    {"max_tokens", &SamplingSettings::max_tokens, 16, 1000000},
};

const Field<ProviderSettings> kProviderFields[] = {
    {"use", &ProviderSettings::use},
    {"preset", &ProviderSettings::preset},
    {"model", &ProviderSettings::model},
    {"base_url", &ProviderSettings::base_url},
    {"api_key_env", &ProviderSettings::api_key_env},
    {"timeout_ms", &ProviderSettings::timeout_ms, 0, 86400000},
    {"connect_timeout_ms", &ProviderSettings::connect_timeout_ms, 0, 600000},
    {"concurrency", &ProviderSettings::concurrency, 1, 1024},
    {"retry_attempts", &ProviderSettings::retry_attempts, 1, 100},
    {"retry_base_ms", &ProviderSettings::retry_base_ms, 0, 600000},
    {"retry_cap_ms", &ProviderSettings::retry_cap_ms, 0, 3600000},
    {"fallback", &ProviderSettings::fallback},
    {"fallback_on", &ProviderSettings::fallback_on},
    {"fallback_cooldown_s", &ProviderSettings::fallback_cooldown_s, 0, 86400},
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
    {"openrouter", "openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"},
    {"groq", "openai", "https://api.groq.com/openai/v1", "GROQ_API_KEY"},
    {"together", "openai", "https://api.together.xyz/v1", "TOGETHER_API_KEY"},
    {"mistral", "openai", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"},
    {"fireworks", "openai", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"},
    {"openai-responses", "openai_responses", "https://api.openai.com/v1", "OPENAI_API_KEY"},
    {"gemini", "gemini", "https://generativelanguage.googleapis.com/v1beta", "GEMINI_API_KEY"},
    // Signed with the standard AWS credentials, or AWS_BEARER_TOKEN_BEDROCK: the plugin finds them.
    {"bedrock", "bedrock", "https://bedrock-runtime.us-east-1.amazonaws.com", ""},
    // Each Azure resource has its own address: base_url must be written next to the preset.
    {"azure", "openai", "", "AZURE_OPENAI_API_KEY"},
};

// [provider] or [providers.NAME]: a preset fills use, base_url and api_key_env, and the keys
// written explicitly win over it.
void read_provider(Reader& r, const toml::table& t, const std::string& prefix, ProviderSettings& p) {
    read_fields(r, t, prefix, kProviderFields, p);
    if (!p.preset.empty()) {
        const Preset* preset = nullptr;
        for (const auto& candidate : kPresets)
            if (p.preset == candidate.name) preset = &candidate;
        if (preset) {
            if (!t.get("use")) p.use = preset->use;
            if (!t.get("base_url")) p.base_url = preset->base_url;
            if (!t.get("api_key_env")) p.api_key_env = preset->api_key_env;
            if (p.base_url.empty())
                r.fail(*t.get("preset"), prefix + "base_url",
                       "preset '" + p.preset +
                           "' needs its resource's address next to it: base_url = "
                           "\"https://YOUR-RESOURCE.openai.azure.com/openai/v1\" (or .../openai/deployments/NAME)");
        } else {
            std::string names;
            for (const auto& candidate : kPresets) names += (names.empty() ? "" : ", ") + std::string(candidate.name);
            r.fail(*t.get("preset"), prefix + "preset", "unknown preset '" + p.preset + "' (known: " + names + ")");
        }
    }
    if (p.use.empty()) r.fail(t, prefix + "use", "must name a provider plugin, e.g. \"openai\"");
    if (!p.api_key_env.empty()) p.api_key = env(p.api_key_env.c_str());
}

}  // namespace

std::string top_level_hint(std::string_view key) {
    const auto keys = top_level_keys();
    bool top = std::find(keys.begin(), keys.end(), key) != keys.end();
    return top ? "; '" + std::string(key) + "' is a top-level key: move it above the first [table]" : "";
}

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

namespace {

// The table at parent[key], or null when absent; a key that is not a table is an error.
const toml::table* table_at(Reader& r, const toml::table& parent, const std::string& prefix, const char* key) {
    const toml::node* n = parent.get(key);
    if (!n) return nullptr;
    if (!n->is_table()) {
        r.fail(*n, prefix + key, "expected a table ([" + prefix + key + "])");
        return nullptr;
    }
    return n->as_table();
}

void note_place(Reader& r, Config& c, const std::string& key, const toml::node& node) { c.key_places[key] = r.where(node); }

// Where a provider's plugin is named: `use`, else the preset that implies it, else its table.
void note_use(Reader& r, Config& c, const std::string& prefix, const toml::table& t) {
    const toml::node* named = t.get("use") ? t.get("use") : t.get("preset");
    note_place(r, c, prefix + "use", named ? *named : t);
    for (const auto& [key, value] : t)  // each key's line, for a plugin's check of what the table gives it
        if (key.str() != "use") note_place(r, c, prefix + std::string(key.str()), value);
}

void read_top_level(Reader& r, const toml::table& root, Config& c) {
    for (const char* key : {"enabled_plugins", "disabled_plugins", "third_party_isolation"})
        if (const toml::node* n = root.get(key)) note_place(r, c, key, *n);
    r.only_known(root, "", top_level_keys());
    std::string data_dir;
    r.get(root, "", "data_dir", data_dir);
    if (!data_dir.empty()) c.data_dir = r.path(data_dir);
    std::vector<std::string> dirs;
    r.get(root, "", "plugin_dirs", dirs);
    read_values(r, root, "", kTopLevelFields, c);
    c.plugin_dirs.clear();
    for (const auto& d : dirs) c.plugin_dirs.push_back(r.path(d));
    if (c.use_default_plugin_dirs)
        for (const auto& d : default_plugin_dirs(c.data_dir)) c.plugin_dirs.push_back(d);
}

// Each provider's fallback chain names configured providers other than itself, and its
// fallback_on names stop reasons a model call can end with.
void check_fallbacks(Reader& r, const toml::table& root, const Config& c) {
    // The words for a name that is not a configured provider, and for a reason no call fails with.
    auto not_configured = [&c](const std::string& next) {
        std::string words = "names '";
        words += next;
        words += "', which is not a configured provider (configured: ";
        words += c.provider.name;
        for (const auto& [name, other] : c.providers) words += ", " + name;
        return words + ")";
    };
    auto not_a_failure = [](const std::string& reason) {
        std::string words = "'";
        words += reason;
        words += "' is not a way a model call fails (";
        return words + model_call_stop_reason_names() + ")";
    };
    auto check = [&](const ProviderSettings& p, const std::string& prefix, const toml::table* t) {
        if (!t) return;
        for (const std::string& next : p.fallback) {
            if (next == p.name)
                r.fail(*t->get("fallback"), prefix + "fallback", "names this provider itself; name another one");
            else if (!c.provider_named(next))
                r.fail(*t->get("fallback"), prefix + "fallback", not_configured(next));
        }
        for (const std::string& reason : p.fallback_on)
            if (!model_call_stop_reason(reason)) r.fail(*t->get("fallback_on"), prefix + "fallback_on", not_a_failure(reason));
    };
    const toml::table* defaults = root["provider"].as_table();
    check(c.provider, "provider.", defaults);
    const toml::table* named = root["providers"].as_table();
    for (const auto& [name, p] : c.providers) check(p, "providers." + name + ".", named ? (*named)[name].as_table() : nullptr);
}

void read_named_providers(Reader& r, const toml::table& named, Config& c);

void read_providers(Reader& r, const toml::table& root, Config& c) {
    if (const toml::table* p = table_at(r, root, "", "provider")) {
        read_provider(r, *p, "provider.", c.provider);
        note_use(r, c, "provider.", *p);
    }
    c.provider.name = c.provider.use;
    if (const toml::table* named = table_at(r, root, "", "providers")) read_named_providers(r, *named, c);
    check_fallbacks(r, root, c);
}

void read_named_providers(Reader& r, const toml::table& named, Config& c) {
    for (const auto& [key, node] : named) {
        std::string name(key.str());
        if (!node.is_table()) {
            r.fail(node, "providers." + name, "expected a table ([providers." + name + "]) with use, model, …");
            continue;
        }
        ProviderSettings& settings = c.providers[name];
        read_provider(r, *node.as_table(), "providers." + name + ".", settings);
        note_use(r, c, "providers." + name + ".", *node.as_table());
        settings.name = name;
        if (name == c.provider.name)
            r.fail(node, "providers." + name, "clashes with the default provider's name; choose another name");
    }
}

// [plugins.NAME] (kept whole, checked once the plugins are known) and [tools.NAME].
void read_plugins_and_tools(Reader& r, const toml::table& root, Config& c) {
    if (const toml::table* plugins = table_at(r, root, "", "plugins")) {
        for (const auto& [key, node] : *plugins) {
            std::string plugin(key.str());
            if (!node.is_table()) {
                r.fail(node, "plugins." + plugin, "expected a table ([plugins." + plugin + "]) of that plugin's settings");
                continue;
            }
            c.plugin_tables[plugin] = toml_to_json(node).dump();
            note_place(r, c, "plugins." + plugin, node);
            for (const auto& [k, v] : *node.as_table()) note_place(r, c, "plugins." + plugin + "." + std::string(k.str()), v);
        }
    }
    if (const toml::table* tools = table_at(r, root, "", "tools")) {
        for (const auto& [key, node] : *tools) {
            std::string tool(key.str());
            if (!node.is_table()) {
                r.fail(node, "tools." + tool, "expected a table ([tools." + tool + "])");
                continue;
            }
            note_place(r, c, "tools." + tool, node);
            read_fields(r, *node.as_table(), "tools." + tool + ".", kToolFields, c.tools[tool]);
        }
    }
}

void read_server(Reader& r, const toml::table& sv, ServerSettings& s) {
    read_fields(r, sv, "server.", kServerFields, s);
    s.token_env_set = sv.get("token_env") != nullptr;
    if (const toml::node* n = sv.get("token_env"); n && s.token_env.empty())
        r.fail(*n, "server.token_env",
               "name the environment variable holding the token (e.g. \"AGENTHOST_TOKEN\"), or remove the key");
    if (!s.token_env.empty()) s.token = env(s.token_env.c_str());
}

void read_store(Reader& r, const toml::table& st, StoreSettings& s) {
    read_fields(r, st, "store.", kStoreFields, s);
    if (s.backend != StoreBackend::postgresql) return;
    s.url = env(s.url_env.c_str());
    if (s.url.empty())
        r.fail(*st.get("backend"), "store.backend",
               "the PostgreSQL backend reads its connection URL from $" + s.url_env +
                   ", which is not set; set it (e.g. postgresql://agenthost@db.example/agenthost) or name another "
                   "variable in store.url_env");
}

}  // namespace

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
    read_top_level(r, root, c);
    read_providers(r, root, c);
    read_plugins_and_tools(r, root, c);
    if (const toml::table* t = table_at(r, root, "", "limits")) read_fields(r, *t, "limits.", kLimitsFields, c.limits);
    if (const toml::table* t = table_at(r, root, "", "server")) read_server(r, *t, c.server);
    if (const toml::table* t = table_at(r, root, "", "mcp")) read_fields(r, *t, "mcp.", kMcpFields, c.mcp);
    if (const toml::table* t = table_at(r, root, "", "sampling")) read_fields(r, *t, "sampling.", kSamplingFields, c.sampling);
    if (const toml::table* t = table_at(r, root, "", "store")) read_store(r, *t, c.store);
    if (const toml::table* t = table_at(r, root, "", "agent")) read_fields(r, *t, "agent.", kAgentFields, c.agent);
    if (auto all = r.all_problems()) return *all;  // every problem at once, in line order
    return c;
}

}  // namespace agenthost::config
