#include "app/host_app.hpp"

#include "plugins/plugin_fault.hpp"
#include "plugins/settings_check.hpp"

#include <algorithm>
#include <cstdlib>

#include <spdlog/spdlog.h>

namespace agenthost::app {

HostApp::HostApp(config::Config config, std::unique_ptr<Storage> storage)
    : config_(std::move(config)),
      storage_(std::move(storage)),
      memory_cache_(storage_->memory()),
      agent_memory_(memory_cache_),
      services_(storage_->plugin_kv(), memory_cache_),
      registry_(config_, services_),
      catalogue_(registry_),
      invoker_(catalogue_, agent_memory_),
      queue_(registry_, config_),
      runner_({registry_, catalogue_, invoker_, queue_, agent_memory_, storage_->runs(), config_, &memory_cache_}) {}

Result<std::unique_ptr<HostApp>> HostApp::start(config::Config config) {
    auto storage = open_storage(config);
    if (!storage) return storage.error();
    auto app = std::make_unique<HostApp>(std::move(config), std::move(*storage));
    if (auto n = app->runs().recover_interrupted(); !n)
        spdlog::warn("runs left running by a process that stopped could not be marked interrupted: {}", n.error().message);
    else if (*n > 0)
        spdlog::warn("{} run(s) were left running by a process that stopped; marked interrupted (agenthost runs)", *n);
    app->registry_.load_all();
    for (const auto& p : app->registry_.plugins()) {
        if (!p.error || !plugins::is(*p.error, plugins::PluginFault::config_invalid)) continue;
        std::string_view message = p.error->message;
        while (!message.empty()) {  // one problem per line
            size_t end = message.find('\n');
            app->problems_.errors.emplace_back(message.substr(0, end));
            message = end == std::string_view::npos ? std::string_view() : message.substr(end + 1);
        }
    }
    // Every tool a plugin lists (also those [tools.NAME] enabled = false hides) and the built-ins.
    std::vector<std::string> tools;
    for (const auto& p : app->registry_.plugins()) tools.insert(tools.end(), p.tools.begin(), p.tools.end());
    for (const auto& b : tools::builtin_tools()) tools.push_back(b.name);  // [tools.NAME] enabled = false hides them too
    auto names = plugins::check_names(app->config_, app->registry_.plugins(), tools);
    app->problems_.errors.insert(app->problems_.errors.end(), names.errors.begin(), names.errors.end());
    // In the file's order: each message starts with "FILE:LINE: ".
    auto line_of = [](const std::string& message) {
        size_t colon = message.find(".toml:");
        return colon == std::string::npos ? 0L : std::strtol(message.c_str() + colon + 6, nullptr, 10);
    };
    std::stable_sort(app->problems_.errors.begin(), app->problems_.errors.end(),
                     [&](const std::string& a, const std::string& b) { return line_of(a) < line_of(b); });
    app->problems_.warnings = std::move(names.warnings);
    return app;
}

}  // namespace agenthost::app
