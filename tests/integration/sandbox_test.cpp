// isolation = "sandbox": a plugin that tries every way out of its grant — files, sockets, programs,
// the host's process and environment, the host's HTTP service — is refused by the kernel (or the
// host), each as a clear tool error, and the host goes on; the same plugin reaches exactly what it
// is granted; a plugin asking for more than the operator allows is not loaded.
#include "isolation/sandbox.hpp"
#include "support/loopback_server.hpp"
#include "support/test_support.hpp"
#include "test_paths.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// A plugin folder under `root` holding the escape fixture's library (a link) and a manifest with
// `extra` (its [permissions], [settings] …) appended.
void escape_plugin(const std::filesystem::path& root, const std::string& extra) {
    auto dir = root / "escape";
    std::filesystem::create_directories(dir);
    std::filesystem::create_symlink(std::filesystem::path(AGENTHOST_FIXTURE_PLUGIN_DIR) / "escape" / "escape.so",
                                    dir / "escape.so");
    test::write_file(dir / "plugin.toml",
                     "name = \"escape\"\nkind = \"tool\"\nlibrary = \"escape.so\"\nabi = \"1.0\"\n"
                     "version = \"1.0.0\"\n" +
                         extra);
}

std::unique_ptr<app::HostApp> start_escape(const test::TempDir& dir, json table) {
    auto cfg = test::config(dir.path / "data", false);
    cfg.plugin_dirs = {dir.path / "plugins"};
    cfg.enabled_plugins = {"escape"};
    table["isolation"] = "sandbox";
    cfg.plugin_tables["escape"] = table.dump();
    return test::start(cfg);
}

struct Outcome {
    bool error;
    std::string text;
};
Outcome call(app::HostApp& app, const std::string& tool, const json& args = json::object()) {
    json r = test::call_tool(app, tool, args);
    return {r.value("is_error", false), r["content"].is_string() ? r["content"].get<std::string>() : r["content"].dump()};
}

// A Unix socket listening at `path` (a local service a plugin might reach for).
struct UnixListener {
    explicit UnixListener(const std::filesystem::path& at) : path(at.string()) {
        fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
        REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
        REQUIRE(::listen(fd, 4) == 0);
    }
    ~UnixListener() { ::close(fd); }
    UnixListener(const UnixListener&) = delete;
    UnixListener& operator=(const UnixListener&) = delete;
    std::string path;
    int fd = -1;
};

using test::kernel_can_sandbox;

}  // namespace

TEST_CASE("sandbox: a plugin granted nothing is refused every way out, each a clear tool error, and the host goes on",
          "[integration][sandbox]") {
    if (!kernel_can_sandbox()) return;
    test::TempDir dir;
    test::write_file(dir.path / "outside" / "secret.txt", "top secret");
    ::setenv("AGENTHOST_TEST_SECRET", "s3cret", 1);
    test::LoopbackServer site;
    site.http.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content("hello", "text/plain"); });
    int port = site.start();
    escape_plugin(dir.path / "plugins", "");
    auto app = start_escape(dir, json::object());
    REQUIRE(app->registry().find_tool("escape_read") != nullptr);

    const std::string denied = "Permission denied", forbidden = "Operation not permitted";
    auto read = call(*app, "escape_read", {{"path", (dir.path / "outside" / "secret.txt").string()}});
    CHECK(read.error);
    CHECK_THAT(read.text, Contains("open " + (dir.path / "outside" / "secret.txt").string() + ": " + denied));
    CHECK_THAT(call(*app, "escape_read", {{"path", "/etc/passwd"}}).text, Contains(denied));
    auto write = call(*app, "escape_write", {{"path", (dir.path / "outside" / "planted.txt").string()}});
    CHECK(write.error);
    CHECK_THAT(write.text, Contains(denied));
    CHECK_FALSE(std::filesystem::exists(dir.path / "outside" / "planted.txt"));
    CHECK_THAT(call(*app, "escape_connect", {{"port", port}}).text, Contains("socket: " + denied));
    CHECK_THAT(call(*app, "escape_udp", {{"port", port}}).text, Contains("socket: " + denied));
    // No process at all without processes = true: the program never starts.
    CHECK_THAT(call(*app, "escape_exec", {{"program", "/bin/true"}}).text, Contains("fork: " + forbidden));
    CHECK_THAT(call(*app, "escape_ptrace").text, Contains("ptrace: " + forbidden));
    CHECK_THAT(call(*app, "escape_signal").text, Contains("kill: " + forbidden));
    CHECK_THAT(call(*app, "escape_unshare").text, Contains("unshare: " + forbidden));
    CHECK(call(*app, "escape_env", {{"name", "AGENTHOST_TEST_SECRET"}}).text == "(unset)");
    CHECK(call(*app, "escape_env", {{"name", "PATH"}}).text != "(unset)");
    auto http = call(*app, "escape_http", {{"url", site.url() + "/"}});
    CHECK(http.error);
    CHECK_THAT(http.text, Contains("the host refused"));

    // The tricks an outside tester found, each refused.
    UnixListener service(dir.path / "service.sock");
    int inherited = ::open((dir.path / "outside" / "secret.txt").c_str(), O_RDONLY);  // no O_CLOEXEC: passed on by spawn
    auto trick = [&](const std::string& name, json args = json::object()) {
        args["name"] = name;
        return call(*app, "escape_trick", args).text;
    };
    CHECK_THAT(call(*app, "escape_fast_open", {{"port", port}}).text, Contains("socket: " + denied));
    CHECK_THAT(call(*app, "escape_listen").text, Contains("socket: " + denied));
    CHECK_THAT(call(*app, "escape_unix", {{"path", service.path}}).text, Contains("socket: " + denied));
    CHECK_THAT(trick("uring"), Contains("io_uring_setup: " + forbidden));
    CHECK_THAT(trick("clone_userns"), Contains("clone: " + forbidden));
    CHECK_THAT(trick("fork"), Contains("fork: " + forbidden));
    auto mode = std::filesystem::status(dir.path / "outside" / "secret.txt").permissions();
    CHECK_THAT(trick("chmod", {{"path", (dir.path / "outside" / "secret.txt").string()}}), Contains("chmod: " + forbidden));
    CHECK(std::filesystem::status(dir.path / "outside" / "secret.txt").permissions() == mode);
    CHECK_THAT(trick("prlimit_host"), Contains("prlimit: " + forbidden));
    CHECK_THAT(trick("tiocsti"), Contains("ioctl TIOCSTI: " + forbidden));
    CHECK_THAT(trick("inotify"), Contains("inotify_init1: " + forbidden));
    CHECK_THAT(trick("fd", {{"fd", inherited}}), Contains("fstat: Bad file descriptor"));
    // … and the second round's.
    CHECK_THAT(trick("dgram_pair"), Contains("socketpair(SOCK_DGRAM): " + denied));
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    // (Sanitizer builds allow it: LeakSanitizer's tracer is such a clone; Landlock still confines it.)
    CHECK_THAT(trick("clone_vm"), Contains("clone(CLONE_VM): " + forbidden));
#endif
    CHECK_THAT(trick("setxattrat", {{"path", (dir.path / "outside" / "secret.txt").string()}}),
               Contains("setxattrat: " + forbidden));
    ::close(inherited);

    // Unharmed: the plugin's process never failed, and it still answers.
    auto health = app->registry().process_health("escape");
    REQUIRE(health);
    CHECK(health->restarts == 0);
    CHECK(health->last_failure.empty());
    CHECK_THAT(call(*app, "escape_read", {{"path", "/usr/share/zoneinfo/UTC"}}).text, Contains("TZif"));
    const auto& info = app->registry().plugins().front();
    CHECK(plugins::name(info.isolation) == std::string("sandbox"));
    CHECK(info.permissions ==
          std::vector<std::string>{"read: none", "write: none", "network: none", "environment: none", "processes: no"});

    // A frame that is not the host's protocol: the process is stopped at once, the call fails
    // naming why, the next call works (it once deadlocked the host).
    auto started = std::chrono::steady_clock::now();
    auto bad = call(*app, "escape_trick", {{"name", "bad_frame"}});
    CHECK(bad.error);
    CHECK_THAT(bad.text, Contains("malformed frame"));
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
    CHECK_THAT(call(*app, "escape_read", {{"path", "/usr/share/zoneinfo/UTC"}}).text, Contains("TZif"));

    // A 32-bit system call would pass every rule: it ends the process (the call fails, the next works)
    // — by the filter's SIGSYS, or by SIGSEGV on kernels without 32-bit emulation (ia32_emulation off).
    auto int80 = call(*app, "escape_trick", {{"name", "int80"}});
    CHECK(int80.error);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    CHECK_THAT(int80.text, Contains("signal 31") || Contains("signal 11"));
#else
    // (A sanitizer's own SIGSEGV handler reports the fault and aborts: signal 6.)
    CHECK_THAT(int80.text, Contains("signal 31") || Contains("signal 11") || Contains("signal 6"));
#endif
    CHECK_THAT(call(*app, "escape_read", {{"path", "/usr/share/zoneinfo/UTC"}}).text, Contains("TZif"));
}

TEST_CASE("sandbox: the same plugin with grants reaches exactly what it was granted", "[integration][sandbox]") {
    if (!kernel_can_sandbox()) return;
    test::TempDir dir;
    test::write_file(dir.path / "readable" / "secret.txt", "top secret");
    test::write_file(dir.path / "elsewhere" / "other.txt", "not granted");
    ::setenv("AGENTHOST_TEST_SECRET", "s3cret", 1);
    test::LoopbackServer granted_site, other_site;
    other_site.http.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content("other", "text/plain"); });
    int other = other_site.start();
    granted_site.http.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content("granted", "text/plain"); });
    granted_site.http.Get("/away", [other](const httplib::Request&, httplib::Response& res) {
        res.set_redirect("http://127.0.0.1:" + std::to_string(other) + "/");
    });
    int port = granted_site.start();
    escape_plugin(dir.path / "plugins",
                  "[settings.readable]\ntype = \"string\"\nformat = \"path\"\ndefault = \"\"\n"
                  "[permissions]\nread = [\"{setting:readable}\"]\nwrite = [\"{data}\", \"" +
                      (dir.path / "writable").string() + "\"]\nnetwork = [\"127.0.0.1:" + std::to_string(port) +
                      "\"]\nenvironment = [\"AGENTHOST_TEST_SECRET\"]\nprocesses = true\n");
    auto app = start_escape(dir, {{"readable", (dir.path / "readable").string()}});
    REQUIRE(app->registry().find_tool("escape_read") != nullptr);

    CHECK(call(*app, "escape_read", {{"path", (dir.path / "readable" / "secret.txt").string()}}).text == "top secret");
    CHECK_THAT(call(*app, "escape_read", {{"path", (dir.path / "elsewhere" / "other.txt").string()}}).text,
               Contains("Permission denied"));
    CHECK_THAT(call(*app, "escape_write", {{"path", (dir.path / "readable" / "new.txt").string()}}).text,
               Contains("Permission denied"));
    auto written = call(*app, "escape_write", {{"path", (dir.path / "writable" / "new.txt").string()}, {"text", "mine"}});
    CHECK_FALSE(written.error);
    CHECK(test::read_file(dir.path / "writable" / "new.txt") == "mine");
    auto data_file = dir.path / "data" / "plugins" / "escape" / "state.txt";
    CHECK_FALSE(call(*app, "escape_write", {{"path", data_file.string()}}).error);
    CHECK(std::filesystem::exists(data_file));

    CHECK(call(*app, "escape_connect", {{"port", port}}).text == "connected");
    CHECK_THAT(call(*app, "escape_connect", {{"port", other}}).text, Contains("connect: Permission denied"));
    CHECK_THAT(call(*app, "escape_udp", {{"port", port}}).text,
               Contains("socket: Permission denied"));  // an address, no name to resolve
    CHECK(call(*app, "escape_exec", {{"program", "/bin/true"}}).text == "exit 0");
    CHECK(call(*app, "escape_trick", {{"name", "fork"}}).text == "forked");
    CHECK_THAT(call(*app, "escape_trick", {{"name", "clone_userns"}}).text, Contains("Operation not permitted"));
    CHECK_THAT(call(*app, "escape_fast_open", {{"port", other}}).text, Contains("sendto: Permission denied"));
    CHECK_THAT(call(*app, "escape_listen").text, Contains("listen: Permission denied"));
    CHECK_THAT(call(*app, "escape_trick", {{"name", "mptcp"}}).text, Contains("socket(MPTCP): Permission denied"));
    CHECK(call(*app, "escape_env", {{"name", "AGENTHOST_TEST_SECRET"}}).text == "s3cret");
    // Never granted, whatever else is: the host's process.
    CHECK_THAT(call(*app, "escape_ptrace").text, Contains("Operation not permitted"));
    CHECK_THAT(call(*app, "escape_signal").text, Contains("Operation not permitted"));

    // Through the host's HTTP service: the granted address, not another, not by a redirect.
    CHECK(call(*app, "escape_http", {{"url", granted_site.url() + "/"}}).text == "HTTP 200 granted");
    CHECK(call(*app, "escape_http", {{"url", other_site.url() + "/"}}).error);
    auto redirected = call(*app, "escape_http", {{"url", granted_site.url() + "/away"}});
    CHECK(redirected.error);
    CHECK_THAT(redirected.text, Contains("the host refused"));
}

TEST_CASE("sandbox: a link planted in place of a granted folder is not followed, in this process, the next or the next host",
          "[integration][sandbox]") {
    if (!kernel_can_sandbox()) return;
    test::TempDir dir;
    escape_plugin(dir.path / "plugins", "[permissions]\nread = [\"{data}/cache\"]\nwrite = [\"{data}\"]\n");
    const auto data = dir.path / "data" / "plugins" / "escape";
    std::filesystem::create_directories(data / "cache");
    const std::string expected = "read: " + std::filesystem::canonical(data / "cache").string();
    {
        auto app = start_escape(dir, json::object());
        CHECK(app->registry().plugins().front().permissions.front() == expected);
        CHECK(call(*app, "escape_trick", {{"name", "plant_link"}, {"path", (data / "cache").string()}, {"target", "/"}}).text ==
              "planted");
        CHECK_THAT(call(*app, "escape_read", {{"path", "/etc/passwd"}}).text, Contains("Permission denied"));
        CHECK(call(*app, "escape_trick", {{"name", "crash"}}).error);  // the next call starts a new process
        CHECK_THAT(call(*app, "escape_read", {{"path", "/etc/passwd"}}).text, Contains("Permission denied"));
        CHECK_THAT(call(*app, "escape_read", {{"path", (data / "cache" / "etc" / "passwd").string()}}).text,
                   Contains("Permission denied"));
    }
    auto again = start_escape(dir, json::object());  // a new host resolves the grant again
    CHECK(again->registry().plugins().front().permissions.front() == expected);
    CHECK_THAT(call(*again, "escape_read", {{"path", "/etc/passwd"}}).text, Contains("Permission denied"));
}

TEST_CASE("sandbox: a plugin asking for more than the operator granted is not loaded, the difference named",
          "[integration][sandbox]") {
    test::TempDir dir;
    escape_plugin(dir.path / "plugins", "[permissions]\nread = [\"/srv\"]\nwrite = [\"/srv/media\"]\nnetwork = [\"any\"]\n");
    auto cfg = test::config(dir.path / "data", false);
    cfg.plugin_dirs = {dir.path / "plugins"};
    cfg.enabled_plugins = {"escape"};
    cfg.plugin_tables["escape"] =
        json{{"permissions", {{"read", {"/srv"}}, {"write", {"/srv/downloads"}}, {"network", {"loopback"}}}}}.dump();
    auto app = test::start(cfg);
    CHECK(app->registry().find_tool("escape_read") == nullptr);
    const auto& info = app->registry().plugins().front();
    REQUIRE(info.error);
    CHECK(info.error->code == "permissions_exceeded");
    CHECK_THAT(info.error->message, Contains("plugin 'escape' asks for more than") &&
                                        Contains("write /srv/media (granted: /srv/downloads)") &&
                                        Contains("connect to any (granted: loopback)"));

    // Within the grant it loads, in-process, with the host's HTTP check on its declared network.
    cfg.plugin_tables["escape"] = json{{"permissions", {{"write", {"/srv"}}, {"network", {"any"}}}}}.dump();
    auto loaded = test::start(cfg);
    CHECK(loaded->registry().find_tool("escape_read") != nullptr);
    CHECK(loaded->registry().plugins().front().isolation == plugins::Isolation::in_process);
}

TEST_CASE("sandbox: third_party_isolation sandboxes plugins found outside the bundled folder", "[integration][sandbox]") {
    if (!kernel_can_sandbox()) return;
    test::TempDir dir;
    escape_plugin(dir.path / "plugins", "");
    auto cfg = test::config(dir.path / "data", false);
    cfg.plugin_dirs = {dir.path / "plugins", AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS};
    cfg.enabled_plugins = {"escape", "folders"};
    cfg.third_party_isolation = Isolation::sandbox;
    auto app = test::start(cfg);
    for (const auto& p : app->registry().plugins()) {
        INFO(p.name);
        CHECK(p.isolation == (p.name == "escape" ? plugins::Isolation::sandbox : plugins::Isolation::in_process));
    }
    CHECK_THAT(call(*app, "escape_read", {{"path", "/etc/passwd"}}).text, Contains("Permission denied"));

    // Its own table still decides; a word the host does not know is named with its place.
    cfg.plugin_tables["escape"] = R"({"isolation": "process"})";
    CHECK(test::start(cfg)->registry().plugins().front().isolation == plugins::Isolation::process);
    cfg.plugin_tables["escape"] = R"({"isolation": "sandboxed"})";
    auto wrong = test::start(cfg);
    const auto& escape = wrong->registry().plugins().front();
    REQUIRE(escape.error);
    CHECK_THAT(
        escape.error->message,
        Contains("[plugins.escape] isolation = \"sandboxed\" is unknown (did you mean 'sandbox'?)") && Contains("\"sandbox\""));
}
