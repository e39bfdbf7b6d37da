// Process isolation for plugins ([plugins.NAME] isolation = "process"). The plugin's .so is loaded
// by agenthost-plugin-runner in a child process; the host talks to it over a socket pair with
// length-prefixed JSON frames and forwards host services (log, key-value, memory, events, HTTP,
// cancellation) back into the real host. To the registry an isolated plugin is an ordinary
// ah_plugin descriptor whose slots are trampolines into an PluginProcess, so nothing else in the
// host changes and the plugin needs no rebuild.
//
// A child that crashes, aborts, exits or overruns its call timeout fails the call in flight with a
// message naming the signal or exit code (PLUGIN_FAILURE); the next call starts a new child (after
// a backoff), and after max_crashes within crash_window_seconds the plugin is disabled.
#pragma once

#include "isolation/sandbox.hpp"

#include <agenthost/agenthost.h>

#include <filesystem>
#include <optional>
#include <string>

namespace agenthost::plugins {
struct Manifest;
}

namespace agenthost::isolation {

struct Settings {
    std::filesystem::path runner;    // the agenthost-plugin-runner executable
    std::filesystem::path manifest;  // the plugin's plugin.toml
    int memory_mb = 0;               // RLIMIT_AS of the child; 0: none
    int cpu_seconds = 0;             // RLIMIT_CPU of the child; 0: none
    int call_timeout_ms = 120000;    // a call running longer stops the child
    int max_crashes = 3;             // within crash_window_seconds, then the plugin is disabled
    int crash_window_seconds = 60;
    std::optional<SandboxRules> sandbox;  // set for isolation = "sandbox": the kernel confines the child
};

// The descriptor standing in for an isolated plugin. create() reads the Settings through
// ah_host::isolation; slots the real plugin lacks answer AH_ERR_UNSUPPORTED until
// keep_present_slots() clears them after create.
ah_plugin isolated_descriptor(const plugins::Manifest& manifest);
void keep_present_slots(ah_plugin& descriptor, ah_instance* instance);

// The ABI version a plugin's library was built against, as its descriptor reports it.
struct BuiltAbi {
    uint32_t major = 0;
    uint32_t minor = 0;
};

// How an isolated plugin's process fares, for `agenthost plugins` and the server's /api/plugins.
struct ProcessHealth {
    int restarts = 0;          // new processes started after a failure, since the host started
    int recent_failures = 0;   // failures within crash_window_seconds
    bool disabled = false;     // max_crashes reached: calls fail without a restart, for good
    int disabled_after = 0;    // the failures within the window that disabled it
    std::string last_failure;  // why the last process ended, empty when none has failed
};
// `instance` must come from isolated_descriptor's create().
ProcessHealth process_health(ah_instance* instance);
// The ABI version the plugin's library reports in its process (the manifest's claim may differ).
std::optional<BuiltAbi> built_abi(ah_instance* instance);

// The runner next to the agenthost executable, else the build's, else on PATH.
std::filesystem::path default_runner();

}  // namespace agenthost::isolation
