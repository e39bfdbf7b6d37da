#include "isolation/sandbox.hpp"

#include "plugins/plugin_fault.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#ifdef AGENTHOST_WITH_SECCOMP  // libseccomp: off in a build configured with AGENTHOST_WITH_SANDBOX=OFF
#include <seccomp.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>

namespace agenthost::isolation {
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Why a build configured without libseccomp refuses the sandbox.
constexpr const char* kNoSeccompInBuild = "seccomp filters, which this agenthost was built without (AGENTHOST_WITH_SANDBOX=OFF)";

// Landlock's kernel interface (linux/landlock.h). Debian 12's headers predate network rules and
// scoping, so the stable values are spelt out here.
constexpr long kLandlockCreateRuleset = 444;
constexpr long kLandlockAddRule = 445;
constexpr long kLandlockRestrictSelf = 446;
constexpr uint32_t kCreateRulesetVersion = 1U << 0;
constexpr int kRulePathBeneath = 1;
constexpr int kRuleNetPort = 2;

struct RulesetAttr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;  // ABI 4
    uint64_t scoped;              // ABI 6
};
struct __attribute__((packed)) PathBeneathAttr {
    uint64_t allowed_access;
    int32_t parent_fd;
};
struct NetPortAttr {
    uint64_t allowed_access;
    uint64_t port;
};

namespace fs_right {
constexpr uint64_t execute = 1ULL << 0, write_file = 1ULL << 1, read_file = 1ULL << 2, read_dir = 1ULL << 3,
                   remove_dir = 1ULL << 4, remove_file = 1ULL << 5, make_char = 1ULL << 6, make_dir = 1ULL << 7,
                   make_reg = 1ULL << 8, make_sock = 1ULL << 9, make_fifo = 1ULL << 10, make_block = 1ULL << 11,
                   make_sym = 1ULL << 12, refer = 1ULL << 13 /* ABI 2 */, truncate = 1ULL << 14 /* ABI 3 */,
                   ioctl_dev = 1ULL << 15 /* ABI 5 */;
}
constexpr uint64_t kNetBindTcp = 1ULL << 0, kNetConnectTcp = 1ULL << 1;       // ABI 4
constexpr uint64_t kScopeAbstractUnix = 1ULL << 0, kScopeSignal = 1ULL << 1;  // ABI 6

// Every file system right the kernel of this ABI knows, so none is left unrestricted.
uint64_t handled_fs_rights(int abi) {
    uint64_t rights = (fs_right::make_sym << 1) - 1;  // ABI 1: execute … make_sym
    if (abi >= 2) rights |= fs_right::refer;
    if (abi >= 3) rights |= fs_right::truncate;
    if (abi >= 5) rights |= fs_right::ioctl_dev;
    return rights;
}

constexpr uint64_t kReadRights = fs_right::read_file | fs_right::read_dir;
constexpr uint64_t kWriteRights = kReadRights | fs_right::write_file | fs_right::remove_dir | fs_right::remove_file |
                                  fs_right::make_dir | fs_right::make_reg | fs_right::make_sock | fs_right::make_fifo |
                                  fs_right::make_sym | fs_right::refer | fs_right::truncate;
// Rights that mean something on a file, not a folder.
constexpr uint64_t kFileRights =
    fs_right::execute | fs_right::write_file | fs_right::read_file | fs_right::truncate | fs_right::ioctl_dev;

int landlock_abi() {
    long abi = syscall(kLandlockCreateRuleset, nullptr, 0, kCreateRulesetVersion);
    return abi < 0 ? 0 : static_cast<int>(abi);
}

// What every process needs to run: the C and C++ runtimes, time zones, the random device.
const std::vector<std::string>& baseline_read() {
    static const std::vector<std::string> paths{"/usr",
                                                "/lib",
                                                "/lib64",
                                                "/lib32",
                                                "/bin",
                                                "/sbin",
                                                "/etc/ld.so.cache",
                                                "/etc/localtime",
                                                "/dev/urandom",
                                                "/dev/random",
                                                "/dev/zero",
                                                "/proc/self",
                                                "/sys/devices/system/cpu"};
    return paths;
}
// What name resolution and TLS read, for a plugin that may use the network itself.
const std::vector<std::string>& network_read() {
    static const std::vector<std::string> paths{"/etc/resolv.conf", "/etc/hosts",          "/etc/nsswitch.conf",
                                                "/etc/gai.conf",    "/etc/host.conf",      "/etc/services",
                                                "/etc/ssl",         "/etc/ca-certificates"};
    return paths;
}

#ifdef AGENTHOST_WITH_SECCOMP

// The system calls no plugin needs: debugging other processes, mounting, kernel modules and
// keyrings, clocks, namespaces, io_uring (its operations would pass the socket rules below),
// inotify (it watches folders outside the grant), and changing a file's mode, owner, times or
// extended attributes (Landlock does not cover metadata). Names this libseccomp does not know are
// skipped.
const std::vector<const char*>& refused_calls() {
    static const std::vector<const char*> names {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
        // LeakSanitizer stops the process's own threads with ptrace at exit; Landlock still
        // refuses ptrace of anything outside the sandbox in those builds.
        "ptrace",
#endif
            "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root", "chroot", "swapon", "swapoff", "reboot",
            "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "bpf", "perf_event_open", "unshare",
            "setns", "keyctl", "add_key", "request_key", "userfaultfd", "acct", "settimeofday", "clock_settime", "clock_adjtime",
            "adjtimex", "iopl", "ioperm", "syslog", "open_by_handle_at", "name_to_handle_at", "quotactl", "mount_setattr",
            "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "sethostname", "setdomainname", "vhangup",
            "pidfd_getfd", "uselib", "tkill", "lookup_dcookie", "nfsservctl", "kcmp", "io_uring_setup", "io_uring_enter",
            "io_uring_register", "inotify_init", "inotify_init1", "fanotify_init", "chmod", "fchmod", "fchmodat", "fchmodat2",
            "chown", "fchown", "lchown", "fchownat", "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr",
            "fremovexattr", "setxattrat", "removexattrat", "utime", "utimes", "futimesat"
    };
    return names;
}

// Socket families a plugin may open: Internet ones (as its network grant allows) and netlink
// route (name resolution asks it which address families exist). Everything else — Unix sockets
// (a local service's socket is a door the file rules do not see), packet, vsock … — is refused;
// socketpair() stays, for a plugin's own pipes.
bool allowed_family(int family) { return family == AF_INET || family == AF_INET6 || family == AF_NETLINK; }

// (CLONE_NEWTIME exists only for clone3 and unshare, both refused.)
constexpr uint64_t kNamespaceFlags[] = {CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
                                        CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET};

struct SeccompFilter {
    scmp_filter_ctx ctx = nullptr;
    ~SeccompFilter() {
        if (ctx) seccomp_release(ctx);
    }
};

// Adds refusals to a seccomp filter, keeping the first failure (a name this libseccomp does not
// know is skipped: the kernel has no such call either, or a number below covers it).
class FilterBuilder {
public:
    explicit FilterBuilder(scmp_filter_ctx ctx) : ctx_(ctx) {}
    void refuse(const char* name, uint32_t action, std::initializer_list<scmp_arg_cmp> args = {}) {
        int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR || rc_ != 0) return;
        rc_ = seccomp_rule_add_array(ctx_, action, nr, static_cast<unsigned>(args.size()), args.begin());
    }
    // By number, for calls newer than this libseccomp's table; one it knows already is no failure.
    void refuse_number(int nr, uint32_t action) {
        if (int added = seccomp_rule_add_array(ctx_, action, nr, 0, nullptr); added != 0 && added != -EEXIST && rc_ == 0)
            rc_ = added;
    }
    int rc() const { return rc_; }

private:
    scmp_filter_ctx ctx_;
    int rc_ = 0;
};

const uint32_t kEperm = SCMP_ACT_ERRNO(EPERM), kEacces = SCMP_ACT_ERRNO(EACCES);

// The calls no plugin needs, by name and (newer than libseccomp's table) by number; and no
// keystrokes pushed into the operator's shell.
void refuse_unneeded_calls(FilterBuilder& b) {
    const uint32_t eperm = kEperm;
    for (const char* name : refused_calls()) b.refuse(name, eperm);
#if defined(__x86_64__)
    // Newer than this libseccomp's table (which would skip them by name): fchmodat2, statmount,
    // listmount, lsm_set_self_attr, setxattrat, removexattrat, open_tree_attr, file_setattr.
    for (int nr : {452, 457, 458, 460, 463, 466, 467, 469}) b.refuse_number(nr, eperm);
#endif
    b.refuse("utimensat", eperm, {SCMP_A1_64(SCMP_CMP_NE, 0)});  // by path; futimens on an open file stays

    // Terminals: no keystrokes pushed into the operator's shell through an inherited terminal.
    for (unsigned long request : {TIOCSTI, TIOCLINUX}) b.refuse("ioctl", eperm, {SCMP_A1_64(SCMP_CMP_EQ, request)});
}

void refuse_processes(FilterBuilder& b, const SandboxRules& rules) {
    const uint32_t eperm = kEperm, eacces = kEacces;
    // Processes: no namespaces through clone (clone3 cannot be inspected: glibc falls back to
    // clone); without processes = true, no process at all, only threads (and no exec).
    b.refuse("clone3", SCMP_ACT_ERRNO(ENOSYS));
    for (uint64_t flag : kNamespaceFlags) b.refuse("clone", eperm, {SCMP_A0_64(SCMP_CMP_MASKED_EQ, flag, flag)});
    if (!rules.processes) {
        for (const char* name : {"execve", "execveat"}) b.refuse(name, eacces);
        for (const char* name : {"fork", "vfork"}) b.refuse(name, eperm);
            // Only threads: a clone without CLONE_THREAD is a process, even one sharing the address
            // space (it could setsid and outlive the plugin). LeakSanitizer's tracer is such a clone.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
        b.refuse("clone", eperm, {SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD | CLONE_VM, 0)});
#else
        b.refuse("clone", eperm, {SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)});
#endif
    }
}

void refuse_sockets(FilterBuilder& b, const SandboxRules& rules) {
    const uint32_t eacces = kEacces;
    // Sockets: only the allowed families; Internet sockets as far as the network grant goes, never
    // raw; no listening and no TCP Fast Open (which connects without Landlock's check) unless the
    // grant is "any".
    for (int family = 0; family < AF_MAX; ++family)
        if (!allowed_family(family)) b.refuse("socket", eacces, {SCMP_A0_32(SCMP_CMP_EQ, static_cast<uint32_t>(family))});
    b.refuse("socket", eacces, {SCMP_A0_32(SCMP_CMP_GE, AF_MAX)});
    const bool network = rules.any_network || !rules.tcp_ports.empty();
    if (!network) b.refuse("socket", eacces, {SCMP_A0_32(SCMP_CMP_EQ, AF_NETLINK)});
    b.refuse("socket", eacces, {SCMP_A0_32(SCMP_CMP_EQ, AF_NETLINK), SCMP_A2_32(SCMP_CMP_NE, 0 /* NETLINK_ROUTE */)});
    // A pair for the plugin's own use, as a stream only: a datagram pair can send to (and connect
    // to) a named Unix socket outside the grant.
    for (int type : {SOCK_DGRAM, SOCK_SEQPACKET})
        b.refuse("socketpair", eacces, {SCMP_A1_32(SCMP_CMP_MASKED_EQ, 0xf, static_cast<uint32_t>(type))});
    for (int family : {AF_INET, AF_INET6}) {
        const auto f = static_cast<uint32_t>(family);
        if (!network) {
            b.refuse("socket", eacces, {SCMP_A0_32(SCMP_CMP_EQ, f)});
            continue;
        }
        b.refuse("socket", eacces, {SCMP_A0_32(SCMP_CMP_EQ, f), SCMP_A1_32(SCMP_CMP_MASKED_EQ, 0xf, SOCK_RAW)});
        if (!rules.any_network) {
            // Plain TCP and UDP only: Landlock's port rules see TCP sockets alone (an MPTCP socket,
            // protocol 262, would connect anywhere); ICMP and the rest are refused too.
            b.refuse("socket", eacces, {SCMP_A0_32(SCMP_CMP_EQ, f), SCMP_A2_32(SCMP_CMP_GT, IPPROTO_UDP)});
            for (uint32_t protocol = 1; protocol < IPPROTO_UDP; ++protocol)
                if (protocol != IPPROTO_TCP)
                    b.refuse("socket", eacces, {SCMP_A0_32(SCMP_CMP_EQ, f), SCMP_A2_32(SCMP_CMP_EQ, protocol)});
        }
        if (!rules.any_network && !rules.datagrams)
            b.refuse("socket", eacces, {SCMP_A0_32(SCMP_CMP_EQ, f), SCMP_A1_32(SCMP_CMP_MASKED_EQ, 0xf, SOCK_DGRAM)});
    }
    if (!rules.any_network) {
        b.refuse("listen", eacces);
        b.refuse("sendto", eacces, {SCMP_A3_64(SCMP_CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN)});
        b.refuse("sendmsg", eacces, {SCMP_A2_64(SCMP_CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN)});
        b.refuse("sendmmsg", eacces, {SCMP_A3_64(SCMP_CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN)});
        b.refuse("setsockopt", eacces, {SCMP_A1_32(SCMP_CMP_EQ, IPPROTO_TCP), SCMP_A2_32(SCMP_CMP_EQ, TCP_FASTOPEN_CONNECT)});
    }
}

void refuse_signals_and_limits(FilterBuilder& b) {
    const uint32_t eperm = kEperm;
    // Signals: not to the host (this process's parent), its process group, or every process. With
    // Landlock ABI 6 the kernel scopes signals as well; this covers older kernels.
    const auto host = static_cast<uint32_t>(getppid());
    const auto group = static_cast<uint32_t>(-getpgrp());
    for (uint32_t target : {host, group, 0U, static_cast<uint32_t>(-1)}) {
        b.refuse("kill", eperm, {SCMP_A0_32(SCMP_CMP_EQ, target)});
        b.refuse("rt_sigqueueinfo", eperm, {SCMP_A0_32(SCMP_CMP_EQ, target)});
    }
    for (const char* name : {"tgkill", "rt_tgsigqueueinfo", "pidfd_open"}) b.refuse(name, eperm, {SCMP_A0_32(SCMP_CMP_EQ, host)});
    // Limits, priorities and placement: of this process only (pid 0), never the host's (a plugin
    // could set the host's file size limit to 0 and kill it).
    for (const char* name : {"prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr",
                             "migrate_pages", "move_pages"})
        b.refuse(name, eperm, {SCMP_A0_32(SCMP_CMP_NE, 0)});
    b.refuse("setpriority", eperm, {SCMP_A0_32(SCMP_CMP_NE, PRIO_PROCESS)});
    b.refuse("setpriority", eperm, {SCMP_A1_32(SCMP_CMP_NE, 0)});
    b.refuse("ioprio_set", eperm, {SCMP_A0_32(SCMP_CMP_NE, 1 /* IOPRIO_WHO_PROCESS */)});
    b.refuse("ioprio_set", eperm, {SCMP_A1_32(SCMP_CMP_NE, 0)});
}

Status build_and_load_seccomp(const SandboxRules& rules) {
    SeccompFilter filter;
    filter.ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!filter.ctx) return plugins::plugin_error(plugins::PluginFault::sandbox_failed, "seccomp_init failed");
    // A 32-bit system call (int 0x80) would bypass every rule: it ends the process, not a thread.
    seccomp_attr_set(filter.ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    FilterBuilder b(filter.ctx);
    refuse_unneeded_calls(b);
    refuse_processes(b, rules);
    refuse_sockets(b, rules);
    refuse_signals_and_limits(b);
    if (b.rc() != 0)
        return plugins::plugin_error(plugins::PluginFault::sandbox_failed,
                                     std::string("seccomp rule: ") + std::strerror(-b.rc()));
    if (int load = seccomp_load(filter.ctx); load != 0)
        return plugins::plugin_error(plugins::PluginFault::sandbox_failed, std::string("seccomp_load: ") + std::strerror(-load));
    return Ok{};
}

#else

// A build without libseccomp has no filter to load; kernel_support() says so first, so this is
// reached only if a caller skipped that check.
Status build_and_load_seccomp(const SandboxRules&) {
    return plugins::plugin_error(plugins::PluginFault::sandbox_unavailable,
                                 std::string("system call rules need ") + kNoSeccompInBuild);
}

#endif

// Capabilities a root host would pass on: none survive, now or across exec.
void drop_capabilities() {
    for (int cap = 0; cap <= 63; ++cap)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL) break;
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    syscall(SYS_capset, &header, data);
}

struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

// How a rule's path is opened. A granted path was made canonical by the host when it loaded the
// plugin, so a link anywhere in it now means the plugin (or its previous process) put one there,
// e.g. its granted {data}/cache swapped for a link to "/": such a path gets no rule at all. The
// system's own paths (/lib → /usr/lib) are followed.
enum class Links { follow, refuse };

int open_for_rule(const std::string& path, Links links) {
    if (links == Links::follow) return ::open(path.c_str(), O_PATH | O_CLOEXEC);
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS;
    return static_cast<int>(syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how));
}

Status add_path_rule(int ruleset, const std::string& path, uint64_t rights, uint64_t handled, Links links) {
    Fd target{open_for_rule(path, links)};
    if (target.fd < 0) return Ok{};  // nothing there (or a planted link): nothing to allow
    struct stat st {};
    if (fstat(target.fd, &st) != 0) return Ok{};
    uint64_t allowed = rights & handled;
    if (!S_ISDIR(st.st_mode)) allowed &= kFileRights;
    if (allowed == 0) return Ok{};
    PathBeneathAttr attr{allowed, target.fd};
    if (syscall(kLandlockAddRule, ruleset, kRulePathBeneath, &attr, 0) != 0)
        return plugins::plugin_error(plugins::PluginFault::sandbox_failed,
                                     "landlock rule for " + path + ": " + std::strerror(errno));
    return Ok{};
}

// A granted folder that does not exist yet is made, one component at a time, stopping at a link
// (mkdir through a planted link would create folders elsewhere).
void make_folder_without_links(const fs::path& folder) {
    fs::path at;
    for (const auto& part : folder) {
        at /= part;
        struct stat st {};
        if (::lstat(at.c_str(), &st) == 0) {
            if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) return;
            continue;
        }
        if (::mkdir(at.c_str(), 0700) != 0) return;
    }
}

Status apply_landlock(const SandboxRules& rules, int abi) {
    const uint64_t handled_fs = handled_fs_rights(abi);
    RulesetAttr attr{handled_fs, 0, 0};
    size_t size = sizeof attr.handled_access_fs;
    if (abi >= 4) {
        attr.handled_access_net = rules.any_network ? 0 : (kNetBindTcp | kNetConnectTcp);
        size = offsetof(RulesetAttr, scoped);
    }
    if (abi >= 6) {
        attr.scoped = kScopeAbstractUnix | kScopeSignal;
        size = sizeof attr;
    }
    Fd ruleset{static_cast<int>(syscall(kLandlockCreateRuleset, &attr, size, 0))};
    if (ruleset.fd < 0)
        return plugins::plugin_error(plugins::PluginFault::sandbox_failed,
                                     std::string("landlock_create_ruleset: ") + std::strerror(errno));

    const uint64_t exec = rules.processes ? fs_right::execute : 0;
    std::vector<std::string> readable = baseline_read();
    if (rules.any_network || !rules.tcp_ports.empty())
        readable.insert(readable.end(), network_read().begin(), network_read().end());
    for (const auto& path : readable)
        if (auto s = add_path_rule(ruleset.fd, path, kReadRights | exec, handled_fs, Links::follow); !s) return s;
    if (auto s = add_path_rule(ruleset.fd, "/dev/null", fs_right::read_file | fs_right::write_file, handled_fs, Links::follow);
        !s)
        return s;
    for (const auto& path : rules.read)
        if (auto s = add_path_rule(ruleset.fd, path, kReadRights | exec, handled_fs, Links::refuse); !s) return s;
    for (const auto& path : rules.write) {
        make_folder_without_links(path);  // the plugin's folder to be
        if (auto s = add_path_rule(ruleset.fd, path, kWriteRights | exec, handled_fs, Links::refuse); !s) return s;
    }
    if (abi >= 4 && !rules.any_network)
        for (int port : rules.tcp_ports) {
            NetPortAttr net{kNetConnectTcp, static_cast<uint64_t>(port)};
            if (syscall(kLandlockAddRule, ruleset.fd, kRuleNetPort, &net, 0) != 0)
                return plugins::plugin_error(plugins::PluginFault::sandbox_failed,
                                             "landlock port rule " + std::to_string(port) + ": " + std::strerror(errno));
        }
    if (syscall(kLandlockRestrictSelf, ruleset.fd, 0) != 0)
        return plugins::plugin_error(plugins::PluginFault::sandbox_failed,
                                     std::string("landlock_restrict_self: ") + std::strerror(errno));
    return Ok{};
}

}  // namespace

KernelSupport kernel_support() {
    KernelSupport s;
    s.landlock_abi = landlock_abi();
#ifdef AGENTHOST_WITH_SECCOMP
    s.seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 && seccomp_api_get() >= 1;
#else
    s.seccomp = false;
    s.seccomp_built = false;
#endif
    return s;
}

std::string describe(const KernelSupport& s) {
    if (!s.seccomp_built)
        return std::string("isolation = \"sandbox\" is refused: it needs ") + kNoSeccompInBuild +
               "; use a build that has them, such as the Debian package";
    if (s.landlock_abi == 0 || !s.seccomp)
        return std::string("isolation = \"sandbox\" is refused here: the kernel lacks ") +
               (s.landlock_abi == 0 ? "Landlock (Linux 5.13+, enabled with lsm=…,landlock)" : "") +
               (s.landlock_abi == 0 && !s.seccomp ? " and " : "") + (s.seccomp ? "" : "seccomp filters");
    std::string line = "isolation = \"sandbox\" enforces files (Landlock ABI " + std::to_string(s.landlock_abi) + ")";
    line += s.landlock_abi >= 4 ? ", TCP ports" : ", no TCP port rules (needs Landlock ABI 4, Linux 6.7: only all or no network)";
    line += s.landlock_abi >= 6 ? ", signals" : ", signals through seccomp only";
    return line + " and system calls (seccomp); docs/plugin-abi.md, Permissions, says what it does not cover";
}

SandboxRules sandbox_rules(const plugins::Grant& grant, const fs::path& plugin_folder) {
    SandboxRules rules;
    rules.read.push_back(plugin_folder.string());
    for (const auto& p : grant.read) rules.read.push_back(p.string());
    for (const auto& p : grant.write) rules.write.push_back(p.string());
    rules.processes = grant.processes;
    rules.environment = grant.environment;
    for (const auto& d : grant.network) {
        if (d.port == 0) {  // any port: TCP port rules cannot narrow it down
            rules.any_network = true;
            continue;
        }
        if (std::find(rules.tcp_ports.begin(), rules.tcp_ports.end(), d.port) == rules.tcp_ports.end())
            rules.tcp_ports.push_back(d.port);
        unsigned char address[16];
        bool literal = inet_pton(AF_INET, d.host.c_str(), address) == 1 || inet_pton(AF_INET6, d.host.c_str(), address) == 1;
        if (!literal && d.host != "loopback" && !plugins::is_loopback_host(d.host)) rules.datagrams = true;  // to resolve it
    }
    if (rules.any_network) rules.tcp_ports.clear();
    return rules;
}

std::string to_json(const SandboxRules& r) {
    return json{
        {"read", r.read},           {"write", r.write},         {"any_network", r.any_network}, {"tcp_ports", r.tcp_ports},
        {"datagrams", r.datagrams}, {"processes", r.processes}, {"environment", r.environment}}
        .dump();
}

Result<SandboxRules> sandbox_rules_from_json(const std::string& text) {
    json j = json::parse(text, nullptr, false);
    if (!j.is_object())
        return plugins::plugin_error(plugins::PluginFault::sandbox_failed, "the sandbox rules are not a JSON object");
    try {
        SandboxRules r;
        r.read = j.at("read").get<std::vector<std::string>>();
        r.write = j.at("write").get<std::vector<std::string>>();
        r.any_network = j.at("any_network").get<bool>();
        r.tcp_ports = j.at("tcp_ports").get<std::vector<int>>();
        r.datagrams = j.at("datagrams").get<bool>();
        r.processes = j.at("processes").get<bool>();
        r.environment = j.at("environment").get<std::vector<std::string>>();
        return r;
    } catch (const json::exception& e) {
        return plugins::plugin_error(plugins::PluginFault::sandbox_failed,
                                     std::string("the sandbox rules are malformed: ") + e.what());
    }
}

std::vector<std::string> sandbox_environment(const SandboxRules& rules, char** environ_vars) {
    static const std::vector<std::string> always{"PATH",   "HOME",         "LANG",          "LANGUAGE",     "TZ",
                                                 "TMPDIR", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"};
    std::vector<std::string> out;
    for (char** e = environ_vars; e && *e; ++e) {
        std::string_view entry(*e);
        std::string name(entry.substr(0, entry.find('=')));
        bool keep = name.rfind("LC_", 0) == 0 || std::find(always.begin(), always.end(), name) != always.end() ||
                    std::find(rules.environment.begin(), rules.environment.end(), name) != rules.environment.end();
        if (keep) out.emplace_back(entry);
    }
    return out;
}

std::vector<std::string> unenforceable(const SandboxRules& rules, const KernelSupport& s) {
    std::vector<std::string> out;
    if (s.landlock_abi == 0) out.push_back("file system rules need Landlock (Linux 5.13+, enabled with lsm=…,landlock)");
    if (!s.seccomp)
        out.push_back(std::string("system call rules need ") + (s.seccomp_built ? "seccomp filters" : kNoSeccompInBuild));
    if (s.landlock_abi > 0 && s.landlock_abi < 4 && !rules.any_network && !rules.tcp_ports.empty())
        out.push_back("TCP port rules need Landlock ABI 4 (Linux 6.7); this kernel has ABI " + std::to_string(s.landlock_abi));
    return out;
}

Status enter_sandbox(const SandboxRules& rules) {
    KernelSupport support = kernel_support();
    if (auto missing = unenforceable(rules, support); !missing.empty())
        return plugins::plugin_error(plugins::PluginFault::sandbox_unavailable, missing.front());
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return plugins::plugin_error(plugins::PluginFault::sandbox_failed, std::string("no_new_privs: ") + std::strerror(errno));
    if (auto s = apply_landlock(rules, support.landlock_abi); !s) return s;
    drop_capabilities();
    return build_and_load_seccomp(rules);
}

}  // namespace agenthost::isolation
