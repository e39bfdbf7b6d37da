// agenthost.toml → typed settings. Every error names the file, the line, the key and the fix.
#pragma once

#include "common/choices.hpp"
#include "common/result.hpp"
#include "config/secrets_file.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace agenthost::config {

namespace fs = std::filesystem;

// The enumerated settings, each with its table of words (common/choices.hpp).
enum class StoreBackend { sqlite, postgresql };
inline constexpr Choice<StoreBackend> kStoreBackends[] = {
    {StoreBackend::sqlite, "sqlite", "the embedded file, one host"},
    {StoreBackend::postgresql, "postgresql", "a database several hosts share"},
};
enum class Durability { full, process };
inline constexpr Choice<Durability> kDurabilities[] = {
    {Durability::full, "full", "survives a power cut"},
    {Durability::process, "process", "survives a killed process"},
};
enum class ServerAuth { token, none };
inline constexpr Choice<ServerAuth> kServerAuths[] = {
    {ServerAuth::token, "token", "the default"},
    {ServerAuth::none, "none", "loopback only"},
};
// Whether a plugin may have the host's model answer it (MCP sampling) in a call made by the agent
// or the CLI: ask the person each time, allow, or deny ([sampling] policy).
enum class SamplingPolicy { ask, allow, deny };
inline constexpr Choice<SamplingPolicy> kSamplingPolicies[] = {
    {SamplingPolicy::ask, "ask", "the default: the person is asked each time"},
    {SamplingPolicy::allow, "allow", "answered without asking"},
    {SamplingPolicy::deny, "deny", "never answered"},
};
// How much the host logs (to stderr): log_level, overridden by --log-level.
enum class LogLevel { trace, debug, info, warn, error, off };
inline constexpr Choice<LogLevel> kLogLevels[] = {
    {LogLevel::trace, "trace", ""},          {LogLevel::debug, "debug", ""}, {LogLevel::info, "info", ""},
    {LogLevel::warn, "warn", "the default"}, {LogLevel::error, "error", ""}, {LogLevel::off, "off", ""},
};
// Each setting's word, as agenthost.toml spells it (reports, doctor).
inline const char* name_of(LogLevel v) { return choice_name<LogLevel>(kLogLevels, v); }
inline const char* name_of(Isolation v) { return choice_name<Isolation>(kIsolations, v); }
inline const char* name_of(StoreBackend v) { return choice_name<StoreBackend>(kStoreBackends, v); }
inline const char* name_of(Durability v) { return choice_name<Durability>(kDurabilities, v); }
inline const char* name_of(ServerAuth v) { return choice_name<ServerAuth>(kServerAuths, v); }
inline const char* name_of(SamplingPolicy v) { return choice_name<SamplingPolicy>(kSamplingPolicies, v); }

// A known server: `preset = "NAME"` fills use, base_url and api_key_env.
struct ProviderPreset {
    const char* name;
    const char* use;
    const char* base_url;
    const char* api_key_env;
};
const std::vector<ProviderPreset>& provider_presets();

// One provider: [provider] (the default) or [providers.NAME]. A preset fills use, base_url and
// api_key_env for a known server; keys given explicitly win.
struct ProviderSettings {
    std::string name;              // the instance name: the plugin's name for [provider], else NAME
    std::string use = "scripted";  // name of the provider plugin
    std::string preset;            // openai, deepseek, anthropic, ollama, … (config.cpp kPresets; provider_presets())
    std::string model;
    std::string base_url;
    std::string api_key_env;  // name of the environment variable holding the key
    std::string api_key;      // resolved from api_key_env at load; never logged
    int timeout_ms = 0;       // whole request; 0: the plugin's default
    int connect_timeout_ms = 0;
    int concurrency = 1;       // requests served at once (1: serialised, as local models need)
    int retry_attempts = 4;    // tries per request for transient and rate_limit errors
    int retry_base_ms = 500;   // first backoff; doubles per attempt, with jitter …
    int retry_cap_ms = 30000;  // … up to this
    // Providers ([provider] or [providers.NAME] names) a model call goes on with, in order, when
    // this one still fails after its retries with transient, timeout, rate_limit,
    // model_unavailable or provider_unavailable (llm/fallback_chain.hpp), or with a stop reason
    // named in fallback_on (e.g. "auth"). A provider that failed is tried again by a later step
    // once fallback_cooldown_s have passed.
    std::vector<std::string> fallback;
    std::vector<std::string> fallback_on;
    int fallback_cooldown_s = 60;
};

// Why `p` cannot be asked at all: its key's variable is unset while its server is a remote one
// (https: a hosted API; a local server over http may need no key). Doctor and every model call
// read it here, so a turn says what doctor says instead of sending a request without its key.
std::optional<std::string> missing_api_key(const ProviderSettings& p);

// Per-tool policy overrides ([tools.NAME]); unset fields keep the plugin's hint.
struct ToolPolicy {
    std::optional<bool> enabled;
    std::optional<bool> read_only;
    std::optional<bool> destructive;
    std::optional<bool> idempotent;
    std::optional<bool> open_world;
    std::optional<bool> needs_approval;
};

struct Limits {
    int explore_iterations = 200;
    int plan_iterations = 200;
    int execute_iterations = 500;
    int token_budget = 0;      // input + output tokens a turn may use; 0: no budget
    int tool_call_budget = 0;  // tool calls a turn may make; 0: no budget
};

// How the agent loop treats its context and the model ([agent]).
struct AgentSettings {
    Mode default_mode = Mode::execute;
    std::string system_prompt =
        "You are agenthost, an assistant that works with the tools offered to you. Call a tool when it helps; "
        "answer in plain text when you are done.";
    int prune_every = 10;               // every Nth iteration the working messages are pruned …
    int keep_messages = 6;              // … to the last N (pinned messages are never dropped)
    int pinned_exchanges = 3;           // earlier prompt/answer pairs of the conversation kept in context
    int tool_result_max_chars = 16000;  // longer results are cut for the model (kept whole in the store)
    int first_max_tokens = 2000;        // output budget of a turn's first model call …
    int max_tokens = 1500;              // … and of every later one
    int max_reply_bytes = 32 << 20;     // one model reply streaming more is stopped (output_limit)
    int loop_guard_repeats = 3;         // identical call + result this many times in a row: the model is stopped
    // A plugin with at least this many tools is offered on demand: listed in the system prompt, its
    // tools offered once the model loads them (load_tools) or calls one. 0: every tool always offered.
    int on_demand_tools = 2;
};

// The database ([store]).
struct StoreSettings {
    // sqlite: the embedded file in data_dir (one host). postgresql: a database several hosts share.
    StoreBackend backend = StoreBackend::sqlite;
    std::string url_env = "AGENTHOST_DATABASE_URL";  // postgresql: the variable holding the connection URL
    std::string url;                                 // resolved at load from url_env; never logged or shown
    Durability durability = Durability::full;        // full: a step survives a power cut; process: survives a killed process
    int lease_seconds = 30;                          // a running run not renewed for this long is interrupted
    int keep_runs = 50;                              // compact keeps checkpoints of the newest N runs per conversation …
    int keep_days = 30;                              // … and of runs younger than D days; messages are always kept
    // serve resumes runs other processes left interrupted (a host that died or was stopped). Unset:
    // on for postgresql (hosts stand in for each other), off for sqlite (one host: resume by hand).
    std::optional<bool> takeover;
    bool takes_over() const { return takeover.value_or(backend == StoreBackend::postgresql); }
};

// agenthost serve ([server]).
struct ServerSettings {
    std::string listen = "127.0.0.1:8642";
    // Name of the variable holding the bearer token. When the file sets it, the variable must be
    // set and non-empty (serve refuses to start otherwise); by default, an unset AGENTHOST_TOKEN
    // makes serve generate a token and keep it in data_dir/server-token (0600).
    std::string token_env = "AGENTHOST_TOKEN";
    bool token_env_set = false;                // token_env was written in the config file
    std::string token;                         // resolved at load when token_env is set; never logged
    ServerAuth auth = ServerAuth::token;       // none: loopback only, with a warning
    std::vector<std::string> allowed_hosts;    // Host names accepted besides loopback names, IP literals, the listen host
    std::vector<std::string> allowed_origins;  // Origins accepted on state-changing requests besides the server's own
    int max_body_bytes = 4 << 20;              // also for chunked bodies; bigger ones get 413 unread
    int max_messages = 500;                    // messages in one /v1/chat/completions request
    int max_concurrent_runs = 64;              // runs executing at once (more wait for a worker)
    int max_waiting_runs = 64;                 // runs waiting for a worker; beyond: 429 with Retry-After
    int max_connections = 1024;                // connections served at once (one thread each); more wait
    // Connections open from one address (waiting for their head, queued and served): at the cap its
    // oldest idle connection is closed, or a new one refused 503 too_many_connections.
    int max_connections_per_address = 256;
    int shutdown_grace_seconds = 10;  // on SIGTERM, how long running steps get to reach a checkpoint
    int kept_event_runs = 1000;       // finished runs whose events stay available for reconnects
    int run_events_mb = 16;           // one run's kept events; beyond, the oldest are dropped (a reconnect gets a "gap")
    int kept_events_mb = 256;         // every run's kept events together; beyond, the oldest finished runs are forgotten
    // The server's memory budget: a request that would take the process past it is answered 503
    // with Retry-After (server/memory_budget.hpp). 0: a quarter of the machine's memory.
    int max_memory_mb = 0;
    std::filesystem::path web_dir;  // the web panel's files; default: the build's, else the installed ones
    // A folder of [plugins.folders] folders where files attached in the web panel are saved; "" takes none.
    std::string attachment_folder;
    int max_attachment_mb = 10;  // the largest attachment
    // Whether POST /api/conversations/ID/title asks the conversation's model for a title (one short
    // request after the first answer; worth it where the model is cheap, a local one); off, a new
    // conversation keeps its first prompt's first words.
    bool model_titles = false;
};

// The MCP server ([mcp]).
struct McpSettings {
    bool allow_destructive = false;            // destructive / needs_approval tools for MCP clients
    std::vector<std::string> allowed_origins;  // Origin values accepted on /mcp besides loopback ones
};

// The host's model answering plugins' sampling requests ([sampling]). A call made by an MCP client
// asks that client instead: these settings are for the agent's calls and `agenthost tool`.
struct SamplingSettings {
    SamplingPolicy policy = SamplingPolicy::ask;
    std::string provider;   // a provider instance; empty: the run's (outside a run, the default provider)
    int max_tokens = 1000;  // a request asking more is answered with at most this many
};

struct Config {
    fs::path source;    // the file read; empty when built-in defaults
    fs::path base_dir;  // relative paths in the file resolve against this (its folder)
    // "file:line" of keys checked once plugins are known: "plugins.NAME", "plugins.NAME.KEY",
    // "tools.NAME", "enabled_plugins", "disabled_plugins", "provider.use", "providers.NAME.use".
    std::map<std::string, std::string> key_places;
    fs::path data_dir;
    std::vector<fs::path> plugin_dirs;         // scan order: configured, then defaults
    bool use_default_plugin_dirs = true;       // default_plugin_dirs = false scans only plugin_dirs
    std::vector<std::string> enabled_plugins;  // empty: all found plugins
    std::vector<std::string> disabled_plugins;
    // isolation of plugins found outside the bundled folder that their [plugins.NAME] table does not set
    Isolation third_party_isolation = Isolation::in_process;
    ProviderSettings provider;                          // the default provider
    std::map<std::string, ProviderSettings> providers;  // [providers.NAME], chosen per conversation
    std::map<std::string, std::string> plugin_tables;   // plugin name → its table as JSON text
    std::map<std::string, ToolPolicy> tools;
    Limits limits;
    AgentSettings agent;
    StoreSettings store;
    ServerSettings server;
    McpSettings mcp;
    SamplingSettings sampling;
    LogLevel log_level = LogLevel::warn;
    // `secrets_file`: KEY=VALUE lines read into the environment at start (config/secrets_file.hpp);
    // `secrets` is what main's loading of it did (empty until then, and without the key).
    fs::path secrets_file;
    std::optional<SecretsLoad> secrets;

    bool plugin_enabled(const std::string& name) const;
    // Where `key` was written ("file:line"), else the file, else "the built-in defaults".
    std::string place(const std::string& key) const;
    // The provider settings of an instance name ("" or the default's name: [provider]).
    const ProviderSettings* provider_named(std::string_view name) const;
};

// Where the configuration comes from, first found wins: --config, $AGENTHOST_CONFIG,
// ./agenthost.toml, $XDG_CONFIG_HOME/agenthost/agenthost.toml (~/.config when unset),
// /etc/agenthost/agenthost.toml. Returns nullopt when none applies (built-in defaults); an error
// when a file named by --config or $AGENTHOST_CONFIG is missing.
Result<std::optional<fs::path>> locate(const std::optional<std::string>& cli_path);
// The files locate() looks at after --config and $AGENTHOST_CONFIG, in order (for messages).
std::vector<fs::path> search_path();

// Reads and validates a configuration file.
Result<Config> load_file(const fs::path& file);
// What `old_text` sets that `new_text` does not, as a person would copy it back: "[plugins.folders]"
// for a table of a table, "server.listen" or "enabled_plugins" for a key. Empty when either is not TOML.
std::vector<std::string> settings_missing(std::string_view old_text, std::string_view new_text);
// Parses TOML text; `name` is used in error messages and relative paths resolve against base_dir.
Result<Config> parse(std::string_view text, const std::string& name, const fs::path& base_dir);
// The configuration used when no file exists.
Config defaults();

// "; 'KEY' is a top-level key: move it above the first [table]" when `key` is one, else "" (a
// top-level key written below a table lands in that table).
std::string top_level_hint(std::string_view key);

// Default directories, in scan order, that follow the configured plugin_dirs: the bundled plugins
// beside the executable, then `data_dir`/plugins (the user's or the service's own).
std::vector<fs::path> default_plugin_dirs(const fs::path& data_dir);
fs::path default_data_dir();

}  // namespace agenthost::config
