// agenthost init: writes a commented agenthost.toml for the provider the user picks (asked on a
// terminal, or given as options), then checks that the provider answers and serves the model.
#include "cli/init.hpp"

#include "app/host_app.hpp"
#include "common/spelling.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <iostream>
#include <sstream>

namespace agenthost::cli {

namespace fs = std::filesystem;

namespace {

// Asks on the terminal, showing the default; an empty line keeps it.
std::string ask(const std::string& question, const std::string& fallback) {
    std::cerr << question << (fallback.empty() ? "" : " [" + fallback + "]") << ": " << std::flush;
    std::string line;
    if (!std::getline(std::cin, line)) return fallback;
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    return line.empty() ? fallback : line;
}

std::string toml_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

// The file's text: the chosen provider, and the settings people change first, commented.
std::string config_text(const std::string& preset, const std::string& model, const std::string& key_env,
                        const std::string& base_url, const std::string& data_dir) {
    std::string t =
        "# agenthost configuration, written by `agenthost init`. Every key: docs/configuration.md.\n"
        "# `agenthost doctor` checks it; `agenthost config` shows what is in effect.\n";
    if (!data_dir.empty()) t += "data_dir = " + toml_string(data_dir) + "\n";
    t += "# disabled_plugins = [\"torrent\"]       # plugins not to load (agenthost plugins lists them)\n\n[provider]\n";
    if (preset == "scripted") {
        t += "use = \"scripted\"                      # replays a cassette: no model, no network\n"
             "# To use a model: preset = \"openai\" (or anthropic, gemini, ollama, deepseek, openrouter, groq, vllm, …) and "
             "model = "
             "\"…\"\n\n"
             "[plugins.scripted]\n"
             "# cassette = \"cassette.json\"          # relative to this file; the format is in docs/configuration.md\n";
        return t;
    }
    t += "preset = " + toml_string(preset) + "\n";
    t += model.empty() ? "# model = \"…\"                         # the server's default model when unset\n"
                       : "model = " + toml_string(model) + "\n";
    if (!base_url.empty()) t += "base_url = " + toml_string(base_url) + "\n";
    if (!key_env.empty())
        t += "api_key_env = " + toml_string(key_env) + "      # the key is read from this variable, never written here\n";
    t += "# concurrency = 1                      # requests at once (local models: 1)\n"
         "\n[agent]\n# default_mode = \"execute\"             # explore | plan | execute\n"
         "\n[server]\n# listen = \"127.0.0.1:8642\"            # agenthost serve; a token is made on first start\n";
    return t;
}

}  // namespace

namespace {

// Where the other commands will look first: --config, $AGENTHOST_CONFIG, else the user's config dir.
fs::path init_target(const Context& ctx) {
    fs::path file = ctx.config_path ? fs::path(*ctx.config_path) : fs::path();
    if (const char* from_env = std::getenv("AGENTHOST_CONFIG"); file.empty() && from_env && *from_env) file = from_env;
    if (!file.empty()) return file;
    const char* xdg = std::getenv("XDG_CONFIG_HOME");
    const char* home = std::getenv("HOME");
    fs::path base = xdg && *xdg ? fs::path(xdg) : fs::path(home ? home : ".") / ".config";
    return base / "agenthost" / "agenthost.toml";
}

// What the new file says: from the options, else asked on a terminal.
struct InitAnswers {
    std::string preset, model, key_env, base_url, data_dir;
};

// The answers, or nothing after a usage error was printed.
std::optional<InitAnswers> gather_answers(const Invocation& in, const fs::path& file, bool interactive) {
    std::vector<std::string> presets{"scripted"};
    for (const auto& p : config::provider_presets()) presets.emplace_back(p.name);
    InitAnswers a{in.value("--preset"), in.value("--model"), in.value("--api-key-env"), in.value("--base-url"),
                  in.value("--data-dir")};
    if (a.preset.empty() && interactive) a.preset = ask("provider (" + spelling::join_names(presets) + ")", "ollama");
    if (a.preset.empty())
        return usage_error("init needs --preset (" + spelling::join_names(presets) + ") when not asked on a terminal"),
               std::nullopt;
    const config::ProviderPreset* known = nullptr;
    for (const auto& p : config::provider_presets())
        if (a.preset == p.name) known = &p;
    if (!known && a.preset != "scripted")
        return usage_error("--preset '" + a.preset + "' is unknown" + spelling::did_you_mean(a.preset, presets) +
                           "; known: " + spelling::join_names(presets)),
               std::nullopt;
    std::error_code ec;
    // A config replaced with --force keeps the data it pointed at (the service's /var/lib/agenthost):
    // a new file without data_dir would move every command to an empty data dir.
    if (a.data_dir.empty() && fs::exists(file, ec))
        if (auto old = config::load_file(file); old && old->data_dir != config::defaults().data_dir) {
            a.data_dir = old->data_dir.string();
            std::cout << "keeping data_dir = " << a.data_dir << " from the file replaced\n";
        }
    if (!known) return a;
    bool cloud = known->api_key_env && *known->api_key_env && std::string(known->base_url).rfind("https://", 0) == 0;
    if (a.model.empty() && interactive)
        a.model = ask(cloud ? "model (as the provider names it)" : "model (empty: the server's default)",
                      a.preset == "ollama" ? "qwen3:8b" : "");
    if (a.model.empty() && cloud)
        return usage_error("init needs --model for " + a.preset + " (the provider's name for the model)"), std::nullopt;
    if (a.key_env.empty()) a.key_env = known->api_key_env;
    if (interactive && *known->api_key_env) a.key_env = ask("environment variable holding the API key", a.key_env);
    if (a.base_url.empty() && interactive) {
        std::string given = ask("server address", known->base_url);
        if (given != known->base_url) a.base_url = given;
    }
    if (a.base_url.empty() && !*known->base_url)  // each Azure resource has its own address
        return usage_error("init needs --base-url for " + a.preset +
                           " (its resource's address, e.g. https://YOUR-RESOURCE.openai.azure.com/openai/v1)"),
               std::nullopt;
    if (a.key_env == known->api_key_env) a.key_env.clear();  // the preset's own: no need to write it
    return a;
}

// Writes `text` to `file`; a file replaced is kept beside it first (FILE.bak, else FILE.bak.N), and
// what the new one lacks of it is named, to be copied back by hand, never lost. False when either
// write failed (said).
bool write_config(const fs::path& file, const std::string& text) {
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    if (fs::exists(file, ec)) {
        fs::path backup = file.string() + ".bak";
        for (int n = 1; fs::exists(backup, ec); ++n) backup = file.string() + ".bak." + std::to_string(n);
        if (fs::copy_file(file, backup, fs::copy_options::none, ec); ec) {
            std::cerr << "agenthost: cannot keep the old file as " << backup.string() << " (" << ec.message()
                      << "); nothing was replaced: check the folder's permissions\n";
            return false;
        }
        std::ifstream old(file, std::ios::binary);
        std::stringstream old_text;
        old_text << old.rdbuf();
        auto missing = config::settings_missing(old_text.str(), text);
        std::cout << "kept the old file as " << backup.string()
                  << (missing.empty() ? "" : "; copy from it what the new one lacks: " + spelling::join_names(missing)) << "\n";
    }
    std::ofstream out(file, std::ios::trunc);
    out << text;
    if (!out) {
        std::cerr << "agenthost: cannot write " << file.string() << ": check the folder's permissions\n";
        return false;
    }
    std::cout << "wrote " << file.string() << "\n";
    return true;
}

// Which config comes before the new one where (./agenthost.toml here), and which one it now shadows
// (the packaged service's in /etc).
void note_precedence(const Context& ctx, const fs::path& file) {
    std::error_code ec;
    if (!ctx.config_path && fs::exists("agenthost.toml", ec) && !fs::equivalent("agenthost.toml", file, ec))
        std::cout << "note: ./agenthost.toml in this folder takes precedence over it while you work here\n";
    for (const auto& system : config::search_path())
        if (system.string().rfind("/etc/", 0) == 0 && fs::exists(system, ec) && !fs::equivalent(system, file, ec)) {
            std::cout << "note: for this user, " << file.string() << " now comes before " << system.string()
                      << " (the service's config and data are not used by bare commands; --config " << system.string()
                      << " names them)\n";
            return;
        }
}

// Reads the file back as every later command will and asks the provider; with no model named, the
// server's only one is written in (among several the user chooses).
int check_provider(const fs::path& file, InitAnswers a) {
    auto cfg = config::load_file(file);
    if (!cfg) {
        std::cerr << "agenthost: the written file does not load: " << cfg.error().message << "\n";
        return kExitUsage;
    }
    const std::string agenthost = agenthost_command(file);
    if (a.preset == "scripted") {
        std::cout << "next: set [plugins.scripted] cassette, or a model preset; then " << agenthost << " doctor and " << agenthost
                  << " chat\n";
        return kExitOk;
    }
    const config::ProviderSettings& p = cfg->provider;
    if (auto missing = config::missing_api_key(p)) {  // a cloud server needs its key
        std::cout << "not checked: " << *missing << "; then run " << agenthost << " doctor\n";
        return kExitTurnFailed;
    }
    auto app = HostApp::start(*cfg);
    if (!app) {
        std::cerr << "agenthost: " << app.error().message << "\n";
        return kExitUsage;
    }
    auto readiness = (*app)->queue().check(p.name);
    // No model named yet is init's to settle (below), not a reason to stop.
    if (!readiness.ready && !(readiness.problem == llm::NotReady::model_not_set && p.model.empty())) {
        std::cout << "the provider is not ready: " << readiness.message << "\nfix it (or start the server), then run "
                  << agenthost << " doctor\n";
        return kExitTurnFailed;
    }
    // A provider that lists no models (Bedrock without models_url, an Azure deployment) was only
    // checked for what it can say without a model call: its credentials and address.
    const bool listed = !readiness.models.empty();
    if (p.model.empty() && !listed) {
        std::cout << "this provider lists no models to choose from: run init again with --model NAME (docs/providers.md)\n";
        return kExitUsage;
    }
    if (p.model.empty()) {
        if (readiness.models.size() != 1) {
            std::cout << "the server serves "
                      << spelling::counted(static_cast<long long>(readiness.models.size()), "model", "models") << " ("
                      << spelling::join_names(readiness.models) << "): run init again with --model NAME\n";
            return kExitUsage;
        }
        a.model = readiness.models.front();
        std::ofstream out(file, std::ios::trunc);
        out << config_text(a.preset, a.model, a.key_env, a.base_url, a.data_dir);
        std::cout << "model: " << a.model << " (the one the server serves)\n";
    }
    const std::string model = a.model.empty() ? p.model : a.model;
    if (!listed)
        std::cout << "the provider is set up, but lists no models: " << model
                  << " is checked by its first call. next: " << agenthost << " chat\n";
    else
        std::cout << "the provider answers and serves " << model << ". next: " << agenthost << " chat\n";
    return kExitOk;
}

}  // namespace

int run_init(Context& ctx) {
    const Invocation& in = ctx.invocation;
    const bool interactive = isatty(STDIN_FILENO) && isatty(STDERR_FILENO);
    const fs::path file = init_target(ctx);
    std::error_code ec;
    if (fs::exists(file, ec) && !in.has("--force")) {
        std::cerr << "agenthost: " << file.string() << " exists; add --force to replace it (or --config FILE to write another)\n";
        return kExitUsage;
    }
    auto answers = gather_answers(in, file, interactive);
    if (!answers) return kExitUsage;
    if (!write_config(file, config_text(answers->preset, answers->model, answers->key_env, answers->base_url, answers->data_dir)))
        return kExitUsage;
    note_precedence(ctx, file);
    return check_provider(file, std::move(*answers));
}

}  // namespace agenthost::cli
