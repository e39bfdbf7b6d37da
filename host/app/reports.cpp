#include "app/reports.hpp"

#include <nlohmann/json.hpp>

namespace agenthost::app {

using nlohmann::json;

std::string plugins_report(HostApp& app) {
    json out{{"abi", AH_ABI_VERSION_STRING}, {"plugins", json::array()}, {"plugin_dirs", json::array()}};
    for (const auto& p : app.registry().plugins()) {
        json j{{"name", p.name},
               {"kind", name(p.kind)},
               {"version", p.version},
               {"abi", p.abi},
               {"description", p.description},
               {"file", p.library.string()},
               {"manifest", p.manifest.string()},
               {"status", name(app.registry().status_now(p))},
               {"tools", app.registry().tools_now(p.name)},
               {"error", nullptr},
               {"warnings", p.warnings}};
        if (p.error) j["error"] = {{"code", p.error->code}, {"message", p.error->message}};
        j["isolation"] = plugins::name(p.isolation);
        j["permissions"] = p.permissions.empty() ? json(nullptr) : json(p.permissions);  // null: none declared or granted
        // The settings its [plugins.NAME] table takes: type, default, description of each.
        j["settings"] = p.settings_schema_json.empty() ? json(nullptr) : json::parse(p.settings_schema_json)["properties"];
        if (auto health = app.registry().process_health(p.name))
            j["process"] = {{"restarts", health->restarts},
                            {"recent_failures", health->recent_failures},
                            {"disabled", health->disabled},
                            {"last_failure", health->last_failure.empty() ? json(nullptr) : json(health->last_failure)}};
        j["refused_tools"] = json::array();
        for (const auto& r : p.refused_tools) j["refused_tools"].push_back({{"name", r.name}, {"reason", r.reason}});
        out["plugins"].push_back(std::move(j));
    }
    for (const auto& d : app.config().plugin_dirs) out["plugin_dirs"].push_back(d.string());
    return out.dump(2, ' ', false, json::error_handler_t::replace);
}

namespace {

// A setting's declared default in plugin `plugin`'s manifest (null when it declares none).
json declared_default(HostApp& app, const std::string& plugin, const std::string& key) {
    for (const auto& info : app.registry().plugins()) {
        if (info.name != plugin || info.settings_schema_json.empty()) continue;
        json schema = json::parse(info.settings_schema_json, nullptr, false);
        if (schema.is_object() && schema.contains("properties") && schema["properties"].contains(key))
            return schema["properties"][key].value("default", json(nullptr));
    }
    return nullptr;
}

}  // namespace

int effective_timeout_ms(HostApp& app, const config::ProviderSettings& provider) {
    if (provider.timeout_ms > 0) return provider.timeout_ms;
    json declared = declared_default(app, provider.use, "timeout_ms");
    return declared.is_number_integer() ? declared.get<int>() : 0;
}

namespace {

// The values in effect: a timeout left at 0 is the provider plugin's declared default.
json provider_json(HostApp& app, const config::ProviderSettings& p) {
    auto effective = [&](int value, const char* key) { return value > 0 ? json(value) : declared_default(app, p.use, key); };
    return {{"name", p.name},
            {"use", p.use},
            {"preset", p.preset},
            {"model", p.model},
            {"base_url", p.base_url},
            {"api_key_env", p.api_key_env},
            {"api_key", p.api_key_env.empty() ? "not needed"
                        : p.api_key.empty()   ? "NOT SET"
                                              : "set"},
            {"timeout_ms", effective(p.timeout_ms, "timeout_ms")},
            {"connect_timeout_ms", effective(p.connect_timeout_ms, "connect_timeout_ms")},
            {"concurrency", p.concurrency},
            {"retry_attempts", p.retry_attempts},
            {"retry_base_ms", p.retry_base_ms},
            {"retry_cap_ms", p.retry_cap_ms},
            {"fallback", p.fallback},
            {"fallback_on", p.fallback_on},
            {"fallback_cooldown_s", p.fallback_cooldown_s}};
}

json optional_bool(const std::optional<bool>& v) { return v ? json(*v) : json(nullptr); }

// A plugin's settings with its secrets replaced by "set" / "not set" (the *_env names stay).
json masked(json table) {
    if (!table.is_object()) return table;
    for (auto& item : table.items()) {  // not a structured binding: clang 14 cannot capture one in the lambda
        const std::string& key = item.key();
        json& value = item.value();
        // "password", "api_key", "token", "secret", or a name ending in one ("webui_password");
        // never "password_env" (a variable's name) or "max_tokens_field".
        auto ends_with = [&](std::string_view tail) {
            return key.size() >= tail.size() && key.compare(key.size() - tail.size(), tail.size(), tail) == 0 &&
                   (key.size() == tail.size() || key[key.size() - tail.size() - 1] == '_');
        };
        bool secret = ends_with("password") || ends_with("api_key") || ends_with("token") || ends_with("secret");
        if (secret)
            value = value.is_string() && value.get<std::string>().empty() ? "not set" : "set";
        else if (value.is_object())
            value = masked(value);
    }
    return table;
}

// [server] as in effect: the token never shown, only whether it is set.
json server_json(const config::ServerSettings& s) {
    return {{"listen", s.listen},
            {"auth", config::name_of(s.auth)},
            {"token_env", s.token_env},
            {"token", s.auth == config::ServerAuth::none ? "not used"
                      : !s.token.empty()                 ? "set"
                                                         : "generated on first start (data_dir/server-token)"},
            {"allowed_hosts", s.allowed_hosts},
            {"allowed_origins", s.allowed_origins},
            {"max_body_bytes", s.max_body_bytes},
            {"max_messages", s.max_messages},
            {"max_concurrent_runs", s.max_concurrent_runs},
            {"max_waiting_runs", s.max_waiting_runs},
            {"max_connections", s.max_connections},
            {"max_connections_per_address", s.max_connections_per_address},
            {"max_memory_mb", s.max_memory_mb == 0 ? json("0 (a quarter of the machine's memory)") : json(s.max_memory_mb)},
            {"shutdown_grace_seconds", s.shutdown_grace_seconds},
            {"kept_event_runs", s.kept_event_runs},
            {"run_events_mb", s.run_events_mb},
            {"kept_events_mb", s.kept_events_mb},
            {"web_dir", s.web_dir.string()},
            {"attachment_folder", s.attachment_folder},
            {"max_attachment_mb", s.max_attachment_mb},
            {"model_titles", s.model_titles}};
}

}  // namespace

std::string config_report(HostApp& app, const std::vector<std::filesystem::path>& searched) {
    const config::Config& c = app.config();
    json out;
    out["file"] = c.source.empty() ? json(nullptr) : json(std::filesystem::absolute(c.source).string());
    if (c.source.empty()) {
        out["searched"] = json::array({"--config FILE", "$AGENTHOST_CONFIG"});
        for (const auto& p : searched) out["searched"].push_back(p.string());
        out["note"] = "no config file found: built-in defaults (the scripted provider, every plugin found)";
    }
    out["data_dir"] = c.data_dir.string();
    out["plugin_dirs"] = json::array();
    for (const auto& d : c.plugin_dirs) out["plugin_dirs"].push_back(d.string());
    out["default_plugin_dirs"] = c.use_default_plugin_dirs;
    out["enabled_plugins"] = c.enabled_plugins;
    out["disabled_plugins"] = c.disabled_plugins;
    out["log_level"] = config::name_of(c.log_level);
    out["provider"] = provider_json(app, c.provider);
    out["providers"] = json::object();
    for (const auto& [name, p] : c.providers) out["providers"][name] = provider_json(app, p);
    out["plugins"] = json::object();
    for (const auto& p : app.registry().plugins()) {
        json j{{"status", name(p.status)}};
        if (!p.effective_config_json.empty())
            j["settings"] = masked(json::parse(p.effective_config_json, nullptr, false));
        else if (auto it = c.plugin_tables.find(p.name); it != c.plugin_tables.end())
            j["settings"] = masked(json::parse(it->second, nullptr, false));  // as written: the plugin did not load
        out["plugins"][p.name] = std::move(j);
    }
    out["problems"] = {{"errors", app.config_problems().errors}, {"warnings", app.config_problems().warnings}};
    out["tools"] = json::object();
    for (const auto& [name, t] : c.tools)
        out["tools"][name] = {{"enabled", optional_bool(t.enabled)},         {"read_only", optional_bool(t.read_only)},
                              {"destructive", optional_bool(t.destructive)}, {"idempotent", optional_bool(t.idempotent)},
                              {"open_world", optional_bool(t.open_world)},   {"needs_approval", optional_bool(t.needs_approval)}};
    out["limits"] = {{"explore_iterations", c.limits.explore_iterations},
                     {"plan_iterations", c.limits.plan_iterations},
                     {"execute_iterations", c.limits.execute_iterations},
                     {"token_budget", c.limits.token_budget},
                     {"tool_call_budget", c.limits.tool_call_budget}};
    const auto& a = c.agent;
    out["agent"] = {{"default_mode", mode_name(a.default_mode)},
                    {"prune_every", a.prune_every},
                    {"keep_messages", a.keep_messages},
                    {"pinned_exchanges", a.pinned_exchanges},
                    {"tool_result_max_chars", a.tool_result_max_chars},
                    {"first_max_tokens", a.first_max_tokens},
                    {"max_tokens", a.max_tokens},
                    {"max_reply_bytes", a.max_reply_bytes},
                    {"loop_guard_repeats", a.loop_guard_repeats},
                    {"on_demand_tools", a.on_demand_tools},
                    {"system_prompt", a.system_prompt}};
    out["store"] = {{"backend", config::name_of(c.store.backend)},
                    {"url_env", c.store.url_env},
                    {"durability", config::name_of(c.store.durability)},
                    {"lease_seconds", c.store.lease_seconds},
                    {"keep_runs", c.store.keep_runs},
                    {"keep_days", c.store.keep_days},
                    {"takeover", c.store.takes_over()}};
    out["server"] = server_json(c.server);
    out["mcp"] = {{"allow_destructive", c.mcp.allow_destructive}, {"allowed_origins", c.mcp.allowed_origins}};
    out["sampling"] = {
        {"policy", config::name_of(c.sampling.policy)}, {"provider", c.sampling.provider}, {"max_tokens", c.sampling.max_tokens}};
    return out.dump(2, ' ', false, json::error_handler_t::replace);
}

std::string run_report(const store::RunRecord& r) {
    return json{{"id", r.id},
                {"conversation", r.conversation},
                {"turn", r.turn},
                {"after_turn", r.after_turn},
                {"status", run_status_name(r.status)},
                {"mode", mode_name(r.mode)},
                {"provider", r.provider},
                {"model", r.model},
                {"origin", run_origin_name(r.origin)},
                {"recoveries", r.recoveries},
                {"resumable", store::resumable(r)},
                {"prompt", r.prompt},
                {"stop_reason", r.stop_reason ? stop_reason_name(*r.stop_reason) : ""},
                {"error_code", r.error_code},
                {"error", r.error},
                {"answer", r.answer},
                {"iterations", r.counters.iterations},
                {"tool_calls", r.counters.tool_calls},
                {"messages", r.messages},
                {"input_tokens", r.counters.input_tokens},
                {"output_tokens", r.counters.output_tokens},
                {"started_at", r.started_at},
                {"ended_at", r.ended_at == 0 ? json(nullptr) : json(r.ended_at)}}
        .dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace agenthost::app
