// doctor: whether this host is ready, each part with its cause and fix.
#include "cli/command_handlers.hpp"

#include "app/reports.hpp"
#include "common/host_module.hpp"
#include "common/spelling.hpp"
#include "config/provider_tables.hpp"
#include "isolation/sandbox.hpp"

#include <iostream>

namespace agenthost::cli {

using nlohmann::json;

namespace {

// What doctor found, once; printed as text or as JSON (--json).
struct DoctorReport {
    struct Plugin {
        const plugins::PluginInfo* info;
        std::vector<plugins::HealthCheck> checks;
        bool counts = true;  // in use: a provider a [provider] names, a tool plugin the file configures
    };
    struct Provider {
        const config::ProviderSettings* settings = nullptr;
        bool is_default = false;
        bool ready = false;
        std::string code, message;
        size_t models = 0;
    };
    struct Module {
        std::string_view name;
        bool built = true;  // false: this build left it out (its AGENTHOST_WITH_… option was off)
        std::string error;  // empty: the file is there and whole (it is not loaded to tell)
    };
    std::vector<Plugin> plugins;
    std::vector<Provider> providers;
    std::vector<Module> modules;
    bool store_ready = true;
    std::optional<std::string> data_dir_problem;  // full, read-only or not writable (app::data_dir_problem)
    bool ready = true;
};

// Where runs are kept, in words: the backend, where (never the PostgreSQL URL: it may hold a
// password), and whether serve takes over runs other processes left.
std::string describe_store(const config::Config& cfg) {
    const auto& s = cfg.store;
    std::string where =
        s.backend == config::StoreBackend::postgresql ? "URL from $" + s.url_env : (cfg.data_dir / "agenthost.db").string();
    return std::string(config::name_of(s.backend)) + " (" + where + "), takeover " + (s.takes_over() ? "on" : "off");
}

// Whether a plugin's failed checks make the host not ready: providers that a [provider] or
// [providers.NAME] uses, tool plugins the file configures ([plugins.NAME] or enabled_plugins). A
// plugin nobody asked for (the scripted provider beside a real one, torrent search never set up)
// is shown, not counted.
bool in_use(const config::Config& cfg, const plugins::PluginInfo& p) {
    if (p.kind == plugins::PluginKind::provider) return config::table_uses_plugin(cfg, p.name);
    return cfg.plugin_tables.count(p.name) > 0 ||
           std::find(cfg.enabled_plugins.begin(), cfg.enabled_plugins.end(), p.name) != cfg.enabled_plugins.end();
}

DoctorReport examine(HostApp& app) {
    DoctorReport r;
    for (const auto& p : app.registry().plugins()) {
        DoctorReport::Plugin entry{&p, {}, in_use(app.config(), p)};
        if (p.status == plugins::PluginStatus::failed) r.ready = false;
        // The plugin's own checks (ABI 1.4 health slot): servers it logs in to, folders, files.
        if (p.status == plugins::PluginStatus::loaded) entry.checks = app.registry().health(p.name);
        for (const auto& c : entry.checks) r.ready = r.ready && (c.ok || !entry.counts);
        // A tool the host refused is the plugin's defect whoever uses it: always counted.
        if (!p.refused_tools.empty()) r.ready = false;
        r.plugins.push_back(std::move(entry));
    }
    if (!app.config_problems().errors.empty()) r.ready = false;
    for (const auto& m : modules::kModules) {  // a broken installation, whatever it is used for
        if (!modules::built(m.name)) {
            // Left out on purpose: not a fault of this installation (a config that needs it fails on its own).
            r.modules.push_back({m.name, false, ""});
            continue;
        }
        auto usable = modules::check(m.name);
        r.modules.push_back({m.name, true, usable ? "" : usable.error().message});
        if (!usable) r.ready = false;
    }
    r.store_ready = app.storage().ready();
    if (!r.store_ready) r.ready = false;
    r.data_dir_problem = app::data_dir_problem(app.config().data_dir);
    if (r.data_dir_problem) r.ready = false;
    const auto& cfg = app.config();
    std::vector<const config::ProviderSettings*> providers{&cfg.provider};
    for (const auto& [name, settings] : cfg.providers) providers.push_back(&settings);
    for (const auto* p : providers) {
        DoctorReport::Provider entry;
        entry.settings = p;
        entry.is_default = p == &cfg.provider;
        if (auto missing = config::missing_api_key(*p)) {
            // Asking the server without its key would only fail (after the retries) for the same reason.
            entry.code = "KEY_MISSING";
            entry.message = *missing;
        } else {
            auto readiness = app.queue().check(p->name);
            entry.ready = readiness.ready;
            entry.code = readiness.code();
            entry.message = readiness.message;
            if (!readiness.ready && !p->api_key_env.empty() && p->api_key.empty())
                entry.message += " (" + p->api_key_env + " is not set; set it if the server needs a key)";
            entry.models = readiness.models.size();
        }
        if (!entry.ready)
            r.ready = false;  // every configured provider is there to be used: the default, a --provider, a fallback
        r.providers.push_back(std::move(entry));
    }
    return r;
}

// What isolation = "sandbox" can enforce on this kernel, said once.
json sandbox_json() {
    auto support = isolation::kernel_support();
    return {{"landlock_abi", support.landlock_abi}, {"seccomp", support.seccomp}, {"summary", isolation::describe(support)}};
}

json doctor_json(HostApp& app, const DoctorReport& r) {
    const auto& cfg = app.config();
    json out{{"ready", r.ready},
             {"config", cfg.source.empty() ? json(nullptr) : json(cfg.source.string())},
             {"data_dir", cfg.data_dir.string()},
             {"data_dir_problem", r.data_dir_problem ? json(*r.data_dir_problem) : json(nullptr)},
             {"secrets_file", cfg.secrets_file.empty() ? json(nullptr) : json(cfg.secrets_file.string())},
             {"secrets",
              cfg.secrets ? json{{"from_file", cfg.secrets->set},
                                 {"kept_from_environment", cfg.secrets->kept},
                                 {"unreadable", cfg.secrets->unreadable.empty() ? json(nullptr) : json(cfg.secrets->unreadable)}}
                          : json(nullptr)},
             {"abi", AH_ABI_VERSION_STRING},
             {"sandbox", sandbox_json()},
             {"store",
              {{"backend", config::name_of(cfg.store.backend)},
               {"ready", r.store_ready},
               {"takeover", cfg.store.takes_over()},
               {"description", describe_store(cfg)}}},
             {"plugins", json::array()},
             {"modules", json::array()},
             {"problems", {{"errors", app.config_problems().errors}, {"warnings", app.config_problems().warnings}}},
             {"providers", json::array()}};
    for (const auto& p : r.plugins) {
        json checks = json::array();
        for (const auto& c : p.checks) checks.push_back({{"name", c.name}, {"ok", c.ok}, {"detail", c.detail}});
        json refused = json::array();
        for (const auto& t : p.info->refused_tools) refused.push_back({{"name", t.name}, {"reason", t.reason}});
        out["plugins"].push_back({{"name", p.info->name},
                                  {"in_use", p.counts},
                                  {"kind", name(p.info->kind)},
                                  {"status", name(p.info->status)},
                                  {"error", p.info->error ? json(p.info->error->message) : json(nullptr)},
                                  {"warnings", p.info->warnings},
                                  {"isolation", plugins::name(p.info->isolation)},
                                  {"permissions", p.info->permissions.empty() ? json(nullptr) : json(p.info->permissions)},
                                  {"refused_tools", refused},
                                  {"checks", checks}});
    }
    for (const auto& m : r.modules)
        out["modules"].push_back({{"name", m.name},
                                  {"built", m.built},
                                  {"ok", m.built && m.error.empty()},
                                  {"error", m.error.empty() ? json(nullptr) : json(m.error)}});
    for (const auto& p : r.providers)
        out["providers"].push_back({{"name", p.settings->name},
                                    {"default", p.is_default},
                                    {"plugin", p.settings->use},
                                    {"model", p.settings->model},
                                    {"ready", p.ready},
                                    {"code", p.code},
                                    {"message", p.message},
                                    {"models", p.models}});
    return out;
}

// What the secrets file gave: names only, never a value; nothing without `secrets_file`.
std::string secrets_line(const config::Config& cfg) {
    if (cfg.secrets_file.empty() || !cfg.secrets) return "";
    const auto& s = *cfg.secrets;
    if (!s.unreadable.empty()) return "secrets:   " + s.unreadable + "\n";
    std::string line = "secrets:   " + cfg.secrets_file.string();
    if (!s.set.empty()) line += ": " + spelling::join_names(s.set) + " from the file";
    if (!s.kept.empty())
        line += (s.set.empty() ? ": " : "; ") + spelling::join_names(s.kept) + " already in the environment (kept)";
    if (s.set.empty() && s.kept.empty()) line += ": no variables";
    return line + "\n";
}

// "http-client, postgres, http-server: ok", the ones this build left out, and each unusable one
// with its cause on its own line.
std::string modules_line(const DoctorReport& r) {
    std::string ok, absent, failed;
    for (const auto& m : r.modules) {
        if (!m.built)
            absent += (absent.empty() ? "" : ", ") + std::string(m.name);
        else if (m.error.empty())
            ok += (ok.empty() ? "" : ", ") + std::string(m.name);
        else
            failed += "\n  FAIL " + m.error;
    }
    std::string line = ok.empty() ? "" : ok + ": ok";
    if (!absent.empty()) line += (line.empty() ? "" : "; ") + absent + ": not in this build";
    return line + failed;
}

}  // namespace

int cmd_doctor(Context& ctx) {
    HostApp& app = *ctx.app;
    DoctorReport r = examine(app);
    if (ctx.invocation.has("--json")) {
        std::cout << dump(doctor_json(app, r)) << "\n";
        if (!app.config_problems().errors.empty()) return kExitUsage;
        return r.ready ? kExitOk : kExitTurnFailed;
    }
    const auto& cfg = app.config();
    std::cout << "config:    " << (cfg.source.empty() ? "(built-in defaults)" : cfg.source.string()) << "\n"
              << "data dir:  " << cfg.data_dir.string() << (r.data_dir_problem ? " — FAIL " + *r.data_dir_problem : "") << "\n"
              << secrets_line(cfg) << "abi:       " << AH_ABI_VERSION_STRING << "\n"
              << "sandbox:   " << isolation::describe(isolation::kernel_support()) << "\n"
              << "store:     " << describe_store(cfg) << (r.store_ready ? "" : " — cannot be read now") << "\n"
              << "modules:   " << modules_line(r) << "\n\nplugins:\n";
    for (const auto& p : r.plugins) {
        const auto& info = *p.info;
        std::printf("  %-16s %-8s %-8s %s\n", info.name.c_str(), std::string(name(info.kind)).c_str(),
                    std::string(name(info.status)).c_str(), info.error ? indented(info.error->message, "      ").c_str() : "");
        if (info.isolation != plugins::Isolation::in_process)
            std::printf("      isolation: %s\n", std::string(plugins::name(info.isolation)).c_str());
        for (const auto& line : info.permissions) std::printf("      %s\n", line.c_str());
        for (const auto& w : info.warnings) std::printf("      warning: %s\n", w.c_str());
        for (const auto& t : info.refused_tools)
            std::printf("      FAIL tool %s refused: %s\n", t.name.c_str(), t.reason.c_str());
        // One line per check: "ok   what: detail", "FAIL what: what to fix", or "note" for a plugin not in use.
        for (const auto& c : p.checks)
            std::cout << "      "
                      << (c.ok       ? "ok   "
                          : p.counts ? "FAIL "
                                     : "note ")
                      << c.name << (c.detail.empty() ? "" : ": " + c.detail)
                      << (c.ok || p.counts ? "" : " (not in use: not counted)") << "\n";
    }
    const auto& problems = app.config_problems();
    if (!problems.errors.empty() || !problems.warnings.empty()) std::cout << "\nconfiguration:\n";
    for (const auto& e : problems.errors) std::cout << "  error: " << e << "\n";
    for (const auto& w : problems.warnings) std::cout << "  warning: " << w << "\n";
    std::cout << "\nproviders:\n";
    for (const auto& p : r.providers) {
        const auto& s = *p.settings;
        std::string key = s.api_key_env.empty() ? "none" : s.api_key_env + (s.api_key.empty() ? " (NOT SET)" : " (set)");
        std::cout << "  " << s.name << (p.is_default ? " (default)" : "") << ": plugin " << s.use
                  << (s.preset.empty() ? "" : ", preset " + s.preset) << ", model "
                  << (!s.model.empty() ? s.model
                      : p.code == choice_name<llm::NotReady>(llm::kNotReadyCodes, llm::NotReady::model_not_set)
                          ? "(none set)"
                          : "(plugin default)")
                  << ", base_url " << (s.base_url.empty() ? "(plugin default)" : s.base_url) << ", key " << key
                  << ", concurrency " << s.concurrency << "\n";
        if (p.ready && p.models == 0)  // a provider that cannot list (an Azure deployment, Bedrock without models_url)
            std::cout << "    ready (it lists no models, so the model name is checked at the first call)\n";
        else if (p.ready)
            std::cout << "    ready (" << spelling::counted(static_cast<long long>(p.models), "model", "models") << ")\n";
        else
            std::cout << "    NOT READY " << p.code << ": " << p.message << "\n";
    }
    std::cout << "\n" << (r.ready ? "ready" : "NOT READY: see above") << "\n";
    if (!problems.errors.empty()) return kExitUsage;  // the file is wrong, as every command says
    return r.ready ? kExitOk : kExitTurnFailed;
}

}  // namespace agenthost::cli
