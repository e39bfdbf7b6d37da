// The kernel's side of a plugin's permissions ([plugins.NAME] isolation = "sandbox"). The runner
// applies the rules to its own process before it opens the plugin's library, so no plugin code runs
// unconfined: Landlock allows only the granted folders and TCP ports (and, from Landlock ABI 6, no
// signals or abstract sockets outside the sandbox), a seccomp filter refuses the system calls no
// plugin needs (ptrace, mount, module loading, raw sockets, signals to the host …) and starting
// programs unless granted, capabilities are dropped, and no_new_privs keeps all of it for every
// program the plugin may start.
#pragma once

#include "common/result.hpp"
#include "plugins/permissions.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace agenthost::isolation {

// What this kernel can enforce.
struct KernelSupport {
    int landlock_abi = 0;       // 0: no Landlock
    bool seccomp = false;       // seccomp filters (SECCOMP_MODE_FILTER), in the kernel and in this build
    bool seccomp_built = true;  // false: built without libseccomp (AGENTHOST_WITH_SANDBOX=OFF)
};

KernelSupport kernel_support();
// One line for doctor: what "sandbox" enforces here, or why it is refused.
std::string describe(const KernelSupport& support);

// The rules one sandboxed plugin process gets: its grant, its own library's folder, and what every
// process needs (applied by enter_sandbox: system libraries, /dev/null, name resolution files when
// it may use the network; docs/plugin-abi.md lists them).
struct SandboxRules {
    std::vector<std::string> read;         // folders or files, absolute
    std::vector<std::string> write;        // folders or files, absolute; created when missing
    bool any_network = false;              // no network rule at all
    std::vector<int> tcp_ports;            // TCP connect allowed to these ports (no bind, no other ports)
    bool datagrams = false;                // UDP sockets (name resolution), when a destination names a host
    bool processes = false;                // fork + exec allowed, programs on the readable paths
    std::vector<std::string> environment;  // variables passed on besides the locale, PATH, HOME, TZ
};

// The environment a sandboxed plugin starts with: of `environ`, only the variables every program
// reads (PATH, HOME, the locale, TZ, TMPDIR, the sanitizers' options) and those granted.
std::vector<std::string> sandbox_environment(const SandboxRules& rules, char** environ_vars);

SandboxRules sandbox_rules(const plugins::Grant& grant, const std::filesystem::path& plugin_folder);
std::string to_json(const SandboxRules& rules);
Result<SandboxRules> sandbox_rules_from_json(const std::string& text);

// What this kernel cannot enforce of `rules`, one phrase each; empty: everything.
std::vector<std::string> unenforceable(const SandboxRules& rules, const KernelSupport& support);

// Confines the calling process for good. Call it while the process has one thread (the Landlock
// domain is the calling thread's, inherited by threads and processes it starts later). Error
// sandbox_failed names the step and the kernel's reason.
Status enter_sandbox(const SandboxRules& rules);

}  // namespace agenthost::isolation
