#include "support/postgres_server.hpp"

#include "postgres/pg_connection.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <memory>
#include <pwd.h>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

namespace test {
namespace {

// As the postgres user when we are root (initdb and postgres refuse to run as root).
std::vector<std::string> as_server_user(std::vector<std::string> command) {
    if (::geteuid() != 0) return command;
    std::vector<std::string> wrapped{"setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"};
    wrapped.insert(wrapped.end(), command.begin(), command.end());
    return wrapped;
}

std::string shell_words(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "'" : " '") + w + "'";
    return out;
}

struct Server {
    Server() {
        std::string bin = postgres_bin_dir();
        if (bin.empty()) {
            problem = "PostgreSQL is not installed (scripts/install-deps installs the postgresql package)";
            return;
        }
        fs::path data = dir.path / "data";
        fs::create_directories(data);
        if (::geteuid() == 0) {
            passwd* pw = ::getpwnam("postgres");
            if (!pw) {
                problem = "running as root, and there is no postgres user to run the server as";
                return;
            }
            if (::chown(dir.path.c_str(), pw->pw_uid, pw->pw_gid) != 0 || ::chown(data.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
                problem = "could not hand " + data.string() + " to the postgres user";
                return;
            }
        }
        auto init = run_command(shell_words(
            as_server_user({bin + "/initdb", "-D", data.string(), "-A", "trust", "-U", "agenthost", "-E", "UTF8", "--no-sync"})));
        if (init.exit_code != 0) {
            problem = "initdb failed: " + init.err;
            return;
        }
        port = free_port();
        start();
    }

    void start() {
        fs::path data = dir.path / "data";
        process = std::make_unique<Process>(
            as_server_user({postgres_bin_dir() + "/postgres", "-D", data.string(), "-p", std::to_string(port), "-k",
                            data.string(), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200",
                            "-c", "logging_collector=on"}));  // its log: data/log/
        if (!process->wait_for_port(port)) problem = "postgres did not start listening on port " + std::to_string(port);
    }

    // A fast shutdown (SIGINT): sessions are cut, as when the database server goes down.
    void stop() {
        ::kill(process->pid, SIGINT);
        ::waitpid(process->pid, nullptr, 0);
        process->pid = -1;
    }

    TempDir dir;
    int port = 0;
    std::string problem;
    std::unique_ptr<Process> process;  // stopped (SIGTERM) before the folder is removed
    std::atomic<int> databases{0};
};

Server& server() {
    static Server shared;  // one per test program: initdb and start-up take a second or two
    return shared;
}

}  // namespace

std::string postgres_bin_dir() {
    for (int version = 20; version >= 12; --version) {
        std::string bin = "/usr/lib/postgresql/" + std::to_string(version) + "/bin";
        if (fs::exists(bin + "/postgres")) return bin;
    }
    return "";
}

std::string fresh_postgres_database() {
    Server& s = server();
    INFO(s.problem);
    REQUIRE(s.problem.empty());
    std::string base = "postgresql://agenthost@127.0.0.1:" + std::to_string(s.port) + "/";
    std::string name = "test_" + std::to_string(::getpid()) + "_" + std::to_string(++s.databases);
    // Listening comes before accepting sessions ("the database system is starting up"): retry.
    auto admin = agenthost::postgres::Connection::open(base + "postgres");
    for (int i = 0; i < 200 && !admin; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        admin = agenthost::postgres::Connection::open(base + "postgres");
    }
    INFO((admin ? "" : admin.error().message));
    REQUIRE(admin);
    auto made = (*admin)->exec("CREATE DATABASE " + name);
    INFO((made ? "" : made.error().message));
    REQUIRE(made);
    return base + name;
}

void stop_postgres() { server().stop(); }

void restart_postgres() {
    server().start();
    REQUIRE(server().problem.empty());
}

std::unique_ptr<agenthost::postgres::PgBackend> open_postgres_backend(std::string url, const std::string& owner,
                                                                      int lease_seconds) {
    if (url.empty()) url = fresh_postgres_database();
    auto opened = agenthost::postgres::open_backend(url, lease_seconds, owner);
    INFO((opened ? "" : opened.error().message));
    REQUIRE(opened);
    return std::move(*opened);
}

}  // namespace test
