// The host services table (ah_host_api) and the per-plugin handle (ah_host) it is called with.
#pragma once

#include <agenthost/agenthost.h>

#include "common/cancel.hpp"

#include "memory/memory_backend.hpp"
#include "plugins/call_channels.hpp"
#include "plugins/http_client.hpp"
#include "plugins/log_budget.hpp"
#include "plugins/run_kv.hpp"
#include "store/plugin_kv.hpp"

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace agenthost::isolation {
struct Settings;
}

namespace agenthost::plugins {

class HostServices;
struct Grant;

}  // namespace agenthost::plugins

// What one plugin is to the host: its name, its own config table, its data directory.
struct ah_host {
    std::string plugin;
    std::string config_json;
    std::filesystem::path data_dir;
    agenthost::plugins::HostServices* services;
    // Set for a plugin that runs in its own process ([plugins.NAME] isolation = "process").
    const agenthost::isolation::Settings* isolation = nullptr;
    // What it may touch, when it declares permissions or the operator granted some: the host's HTTP
    // service refuses destinations outside it.
    const agenthost::plugins::Grant* grant = nullptr;
    // When its key-value writes are stored. A provider's (the scripted provider's progress, a
    // vendor's conversation ids) are written in the transaction of the store's next write, usually
    // the step that used its reply, never in a commit of their own: the run asks again from the
    // state the store still has, and the provider answers a request asked again as before. A tool plugin's may
    // record what it did outside (a download it started), which no redo can restore: those are on
    // disk before kv_set returns.
    agenthost::store::Flush kv_flush = agenthost::store::Flush::now;
    // Warnings the plugin logs from inside create() (e.g. "server not available"), shown by
    // `agenthost plugins`. Only the creating thread writes them, so no lock is needed.
    std::thread::id creating_thread{};
    std::vector<std::string> create_warnings{};
    // How many more lines it may log now (plugins/log_budget.hpp).
    agenthost::plugins::LogBudget log_budget{};
    // The connections its HTTP requests keep open between them; closed with the instance.
    agenthost::plugins::KeptConnections connections;
    // Set once the plugin's instance is destroyed (or its create() failed): from then on every
    // host service called with this handle is refused, and the first refusal is logged.
    std::atomic<bool> destroyed{false};
    std::atomic<bool> refusal_logged{false};
};

namespace agenthost::plugins {

// Whether a plugin's log line is written (its budget allows it); a note of the lines dropped
// before it is written first. Every path a plugin's lines take to the log asks here.
bool admit_log_line(LogBudget& budget, const std::string& plugin);
// Says the lines a plugin's budget dropped and has not said yet (when it stops logging for good).
void say_dropped_log_lines(LogBudget& budget, const std::string& plugin);

class HostServices {
public:
    HostServices(store::PluginKv& kv, memory::MemoryBackend& memory);
    ~HostServices();
    HostServices(const HostServices&) = delete;
    HostServices& operator=(const HostServices&) = delete;

    // The table every plugin is handed; it lives as long as the process.
    const ah_host_api* api() const;

    // A new handle for one plugin instance. Handles live past their plugin's destroy() and past
    // the services themselves (kept for the rest of the process), so a plugin thread that
    // outlives destroy() is refused instead of touching freed memory, even while the host exits.
    ah_host* new_handle(std::string plugin, std::string config_json, std::filesystem::path data_dir);
    store::PluginKv& kv() { return kv_; }
    // What each run's provider wrote, read back without the store (plugins/run_kv.hpp).
    RunKvCopies& run_kv() { return run_kv_; }
    memory::MemoryBackend& memory() { return memory_; }

    // Why the last kv_get / kv_set a plugin asked for failed ("" when none has): a plugin only sees
    // AH_ERR_IO, so the host says the store's own words beside the plugin's error.
    void note_store_failure(const std::string& why);
    std::string last_store_failure();

    // Who hears ah_host_api.tools_changed (the registry, while it exists); empty to stop.
    void set_tools_changed_handler(std::function<void(const std::string& plugin)> handler);
    ah_status tools_changed(const std::string& plugin);

    // The callers of running tool calls (progress, sample, elicit reach them).
    CallChannels& call_channels() { return call_channels_; }
    // Who hears ah_host_api.resource_updated: every listener added, until removed.
    int add_resource_listener(std::function<void(const std::string& uri)> listener);
    void remove_resource_listener(int id);
    void resource_updated(const std::string& uri);

private:
    store::PluginKv& kv_;
    memory::MemoryBackend& memory_;
    RunKvCopies run_kv_;
    std::mutex handles_mutex_;
    std::vector<std::unique_ptr<ah_host>> handles_;
    std::mutex handler_mutex_;
    std::function<void(const std::string&)> tools_changed_handler_;
    CallChannels call_channels_;
    std::mutex resource_listeners_mutex_;
    int next_resource_listener_ = 0;
    std::map<int, std::function<void(const std::string&)>> resource_listeners_;
    std::mutex store_failure_mutex_;
    std::string last_store_failure_;
};

}  // namespace agenthost::plugins
