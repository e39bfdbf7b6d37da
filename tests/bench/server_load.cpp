// Load benchmark: N concurrent streaming chats (default 50 and 200) against `agenthost serve` with a
// scripted provider answering each call after 20 ms. Each chat is one agent turn: a tool call, its
// result, the answer. Prints throughput, p50/p99 host-added latency (a chat's time minus the 40 ms the
// two scripted replies take), the server's peak RSS, and checks every run completed with its full
// transcript.
// With --postgres URL: the hosts share that PostgreSQL database ([store] backend = "postgresql"),
// --hosts N serve processes take the chats in turn, and the same run measures the limit beside the
// figure: single-row INSERT commits per second on that server from as many connections.
// With --history N, each request carries N earlier messages of about 420 bytes, as an OpenAI client
// sends the conversation so far.
//   agenthost_server_load [--chats N] [--history N] [--dir SCRATCH_DIR] [--postgres URL [--hosts N]]
#include "support/free_port.hpp"

#include <httplib.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <thread>

extern char** environ;

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kScriptedSeconds = 0.040;  // two replies of 20 ms each

long peak_rss_kib(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
    return -1;
}

// CPU seconds (user + system) a process has used so far.
double cpu_seconds(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t end = stat.rfind(')');  // the command name may hold spaces; the fields follow it
    if (end == std::string::npos) return 0;
    std::istringstream fields(stat.substr(end + 2));
    std::string skip;
    for (int i = 3; i < 14; ++i) fields >> skip;  // state … cmajflt
    double user = 0, system = 0;
    fields >> user >> system;
    return (user + system) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

struct Options {
    std::vector<int> sizes{50, 200};
    fs::path dir = fs::temp_directory_path() / ("agenthost-load-" + std::to_string(::getpid()));
    std::string postgres;  // a connection URL: the hosts share this database
    int hosts = 1;
    int history = 0;  // earlier messages each request carries, as OpenAI clients send a conversation
};

void write_config(const fs::path& dir, const Options& o) {
    std::ofstream(dir / "cassette.json") << json{
        {"rules",
         {{{"match", "load"},
           {"replies",
            {{{"delay_ms", 20}, {"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", "ping"}}}}}}},
             {{"delay_ms", 20},
              {"text", "pong"}}}}}}}}.dump();
    std::ofstream config(dir / "agenthost.toml");
    config << "data_dir = \"" << (dir / "data").string() << "\"\ndefault_plugin_dirs = false\n"
           << "plugin_dirs = [\"" << AGENTHOST_BUILD_PLUGIN_DIR << "\", \"" << AGENTHOST_EXAMPLE_PLUGIN_DIR
           << "\"]\nenabled_plugins = [\"scripted\", \"example_c\"]\n"
           << "[provider]\nuse = \"scripted\"\nconcurrency = 512\n"
           << "[plugins.scripted]\ncassette = \"" << (dir / "cassette.json").string() << "\"\n"
           << "[server]\nauth = \"none\"\nmax_concurrent_runs = 256\nmax_waiting_runs = 256\n";
    if (!o.postgres.empty()) config << "[store]\nbackend = \"postgresql\"\nurl_env = \"AGENTHOST_LOAD_DATABASE_URL\"\n";
}

struct Server {
    pid_t pid = -1;
    int port = test::free_port();

    explicit Server(const fs::path& dir) {
        std::string config = (dir / "agenthost.toml").string(), listen = "127.0.0.1:" + std::to_string(port);
        std::vector<std::string> args{AGENTHOST_CLI, "--config", config, "serve", "--listen", listen};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) std::exit(2);
        httplib::Client c("127.0.0.1", port);
        for (int i = 0; i < 400; ++i) {
            if (auto r = c.Get("/health"); r && r->status == 200) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(25));
        }
        std::fprintf(stderr, "agenthost_server_load: the server did not start\n");
        std::exit(2);
    }
    ~Server() {
        ::kill(pid, SIGTERM);
        ::waitpid(pid, nullptr, 0);
    }
};

// Transactions the database has committed so far (read-only ones included), from its statistics.
// A session reports its own when idle for a while or when it ends: read them after the hosts stop.
double committed_transactions(const std::string& url) {
    PGconn* db = PQconnectdb(url.c_str());
    PQclear(PQexec(db, "SELECT pg_stat_force_next_flush()"));
    PGresult* r = PQexec(db, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()");
    double n = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? std::atof(PQgetvalue(r, 0, 0)) : 0;
    PQclear(r);
    PQfinish(db);
    return n;
}

// The limit beside the hosts' figure: single-row INSERT commits per second from `connections`
// clients at once (each commit waits for its WAL flush, as a step's does).
double raw_commits_per_second(const std::string& url, int connections, double seconds) {
    PGconn* setup = PQconnectdb(url.c_str());
    if (PQstatus(setup) != CONNECTION_OK) {
        std::fprintf(stderr, "agenthost_server_load: %s", PQerrorMessage(setup));
        std::exit(2);
    }
    PQclear(PQexec(setup, "CREATE TABLE IF NOT EXISTS load_raw_commits (id BIGSERIAL PRIMARY KEY, body TEXT NOT NULL)"));
    PQfinish(setup);
    std::atomic<long> commits{0};
    auto until = Clock::now() + std::chrono::duration<double>(seconds);
    std::vector<std::thread> clients;
    for (int i = 0; i < connections; ++i)
        clients.emplace_back([&] {
            PGconn* db = PQconnectdb(url.c_str());
            const std::string body(300, 'x');  // about a step's message row
            const char* values[] = {body.c_str()};
            while (PQstatus(db) == CONNECTION_OK && Clock::now() < until) {
                PQclear(
                    PQexecParams(db, "INSERT INTO load_raw_commits (body) VALUES ($1)", 1, nullptr, values, nullptr, nullptr, 0));
                ++commits;
            }
            PQfinish(db);
        });
    for (auto& t : clients) t.join();
    return static_cast<double>(commits.load()) / seconds;
}

// The SQLite writer's figures from a host's /metrics: writes committed and the commits they took.
std::pair<double, double> store_writes(int port) {
    httplib::Client c("127.0.0.1", port);
    auto r = c.Get("/metrics");
    double writes = 0, commits = 0;
    if (r && r->status == 200) {
        auto value = [&](const std::string& name) {
            size_t at = r->body.find("\n" + name + " ");
            return at == std::string::npos ? 0.0 : std::atof(r->body.c_str() + at + name.size() + 2);
        };
        writes = value("agenthost_store_writes_total");
        commits = value("agenthost_store_commits_total");
    }
    return {writes, commits};
}

// The limit beside the SQLite figure: single-row commits per second of bare SQLite on the same disk
// (WAL, synchronous=FULL, as the host's store), one after another.
double raw_sqlite_commits_per_second(const fs::path& dir, double seconds) {
    sqlite3* db = nullptr;
    if (sqlite3_open((dir / "raw.db").c_str(), &db) != SQLITE_OK) return 0;
    sqlite3_exec(db,
                 "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                 "CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT)",
                 nullptr, nullptr, nullptr);
    sqlite3_stmt* insert = nullptr;
    sqlite3_prepare_v2(db, "INSERT INTO rows (body) VALUES (?1)", -1, &insert, nullptr);
    const std::string body(300, 'x');  // about a step's message row
    long commits = 0;
    const auto start = Clock::now();
    const auto until = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    while (Clock::now() < until) {
        sqlite3_bind_text(insert, 1, body.data(), static_cast<int>(body.size()), SQLITE_STATIC);
        sqlite3_step(insert);
        sqlite3_reset(insert);
        ++commits;
    }
    double rate = static_cast<double>(commits) / std::chrono::duration<double>(Clock::now() - start).count();
    sqlite3_finalize(insert);
    sqlite3_close(db);
    return rate;
}

void run(const Options& o, int chats) {
    const fs::path& dir = o.dir;
    fs::remove_all(dir);
    fs::create_directories(dir);
    write_config(dir, o);
    if (!o.postgres.empty()) ::setenv("AGENTHOST_LOAD_DATABASE_URL", o.postgres.c_str(), 1);
    std::vector<std::unique_ptr<Server>> servers;
    for (int h = 0; h < o.hosts; ++h) servers.push_back(std::make_unique<Server>(dir));
    double transactions_before = o.postgres.empty() ? 0 : committed_transactions(o.postgres);
    // Conversations unique to this run: a shared database keeps earlier runs' conversations.
    std::string prefix = "load-" + std::to_string(::getpid()) + "-" + std::to_string(o.hosts) + "-" + std::to_string(chats) + "-";
    std::vector<double> seconds(static_cast<size_t>(chats), 0);
    double cpu_before = 0;
    for (const auto& server : servers) cpu_before += cpu_seconds(server->pid);
    const double client_cpu_before = cpu_seconds(::getpid());
    std::atomic<int> failures{0};
    auto started = Clock::now();
    std::vector<std::thread> clients;
    for (int i = 0; i < chats; ++i) {
        clients.emplace_back([&, i] {
            httplib::Client c("127.0.0.1", servers[static_cast<size_t>(i % o.hosts)]->port);
            c.set_read_timeout(120, 0);
            httplib::Request req;
            req.method = "POST";
            req.path = "/v1/chat/completions";
            req.set_header("Content-Type", "application/json");
            json messages = json::array();
            for (int m = 0; m < o.history; ++m)
                messages.push_back({{"role", m % 2 == 0 ? "user" : "assistant"},
                                    {"content", "earlier message " + std::to_string(m) + ": " + std::string(400, 'x')}});
            messages.push_back({{"role", "user"}, {"content", "load test"}});
            req.body = json{
                {"model", "agenthost"},
                {"stream", true},
                {"conversation", prefix + std::to_string(i)},
                {"messages",
                 messages}}.dump();
            std::string streamed;
            req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
                streamed.append(data, len);
                return true;
            };
            auto t0 = Clock::now();
            auto res = c.send(req);
            seconds[static_cast<size_t>(i)] = std::chrono::duration<double>(Clock::now() - t0).count();
            if (!res || res->status != 200 || streamed.find("pong") == std::string::npos ||
                streamed.find("data: [DONE]") == std::string::npos) {
                if (failures++ == 0)
                    std::fprintf(stderr, "first failure: HTTP %d %s\n", res ? res->status : 0,
                                 (res ? res->body + streamed : streamed).substr(0, 600).c_str());
            }
        });
    }
    for (auto& t : clients) t.join();
    double wall = std::chrono::duration<double>(Clock::now() - started).count();
    double cpu = -cpu_before;
    for (const auto& server : servers) cpu += cpu_seconds(server->pid);
    const double client_cpu = cpu_seconds(::getpid()) - client_cpu_before;
    long rss = 0;
    for (const auto& server : servers) rss = std::max(rss, peak_rss_kib(server->pid));
    auto [writes, commits] = o.postgres.empty() ? store_writes(servers.back()->port) : std::pair<double, double>{};
    // The chats' own transactions, before the reads below that check them add theirs: the hosts
    // stop (their sessions end, which reports their statistics), and one starts again to answer.
    double transactions = 0;
    if (!o.postgres.empty()) {
        servers.clear();
        transactions = committed_transactions(o.postgres) - transactions_before;
        servers.push_back(std::make_unique<Server>(dir));
    }

    // Every run completed, with its whole transcript: prompt, tool call, tool result, answer.
    int incomplete = 0;
    httplib::Client c("127.0.0.1", servers.back()->port);  // any host sees every run
    for (int i = 0; i < chats; ++i) {
        auto r = c.Get("/api/conversations/" + prefix + std::to_string(i));
        json body = r && r->status == 200 ? json::parse(r->body) : json();
        if (!body.is_object() || body["runs"].size() != 1 || body["runs"][0]["status"] != "completed" ||
            body["messages"].size() != 4)
            ++incomplete;
    }

    std::vector<double> added;
    for (double s : seconds) added.push_back(std::max(0.0, s - kScriptedSeconds) * 1000);
    std::sort(added.begin(), added.end());
    auto pct = [&](double p) { return added[std::min(added.size() - 1, static_cast<size_t>(p * added.size()))]; };
    std::printf(
        "%6d chats  %d host(s)  %7.2f s  %8.1f chats/s  host-added latency p50 %8.1f ms  p99 %8.1f ms  "
        "peak RSS %6.1f MiB (largest host)  failed %d  incomplete transcripts %d\n",
        chats, o.hosts, wall, chats / wall, pct(0.50), pct(0.99), rss / 1024.0, failures.load(), incomplete);
    std::printf(
        "        host CPU: %.2f ms per chat (%.0f%% of one core over the run; this machine has %ld, shared with "
        "the clients)\n",
        1000 * cpu / chats, 100 * cpu / wall, ::sysconf(_SC_NPROCESSORS_ONLN));
    // The clients run on the same cores: what they use is a ceiling no host can pass here.
    const double cores = static_cast<double>(::sysconf(_SC_NPROCESSORS_ONLN));
    std::printf(
        "        limit, same run: the clients used %.2f ms CPU per chat -> with a host costing nothing, these cores "
        "finish at most %.0f chats/s; host and clients together: %.0f chats/s at full use of %.0f cores\n",
        1000 * client_cpu / chats, cores * chats / client_cpu, cores * chats / (client_cpu + cpu), cores);
    servers.clear();
    if (o.postgres.empty() && commits > 0) {
        double raw = raw_sqlite_commits_per_second(dir, 1.0);
        std::printf(
            "        SQLite: %.1f writes per chat in %.1f commits per chat (%.1f writes per commit: group commit)\n"
            "        limit, same disk, same run: %.0f bare single-row commits/s (WAL, synchronous=FULL) -> at the "
            "chats' commits per chat, %.0f chats/s; the chats ran at %.0f%% of it\n",
            writes / chats, commits / chats, writes / commits, raw, raw / (commits / chats),
            100.0 * (chats / wall) / (raw / (commits / chats)));
    }
    if (!o.postgres.empty()) {
        int connections = std::min(chats, 64);
        double raw = raw_commits_per_second(o.postgres, connections, 2.0);
        std::printf(
            "        PostgreSQL: %.1f transactions per chat (reads included) = %.0f transactions/s\n"
            "        limit, same server, same run: %.0f single-row commits/s from %d connections -> the chats' "
            "transactions ran at %.0f%% of it\n",
            transactions / chats, transactions / wall, raw, connections, 100.0 * transactions / wall / raw);
    }
    fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string flag = argv[i];
        if (flag == "--chats")
            o.sizes = {std::max(1, std::atoi(argv[i + 1]))};
        else if (flag == "--dir")
            o.dir = argv[i + 1];
        else if (flag == "--postgres")
            o.postgres = argv[i + 1];
        else if (flag == "--hosts")
            o.hosts = std::max(1, std::atoi(argv[i + 1]));
        else if (flag == "--history")
            o.history = std::max(0, std::atoi(argv[i + 1]));
    }
    std::printf(
        "server load: concurrent streaming /v1/chat/completions, scripted provider 20 ms per reply, one tool call "
        "per chat, every step durable, store %s\n",
        o.postgres.empty() ? "sqlite" : "postgresql");
    for (int n : o.sizes) run(o, n);
    return 0;
}
