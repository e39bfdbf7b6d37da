// Durable runs under real failures: `agenthost run` and `agenthost serve` killed with SIGKILL at random
// moments and resumed (a soak: AGENTHOST_SOAK_TRIALS, scripts/soak), two processes writing one
// database, and schema migrations.
#include "sqlite/database.hpp"
#include "sqlite/sqlite_run_journal.hpp"
#include "support/test_support.hpp"
#include "test_paths.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <fcntl.h>
#include <sqlite3.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>

extern char** environ;

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

constexpr int kSteps = 80;

// A scripted model that walks through kSteps tool calls, each step answered by the one before it:
// stateless "after" rules, so a resumed run asks again and continues exactly where it stopped.
json crash_cassette(const std::string& file) {
    json rules = json::array();
    auto call_for = [&](int i) {
        json args{{"path", file}, {"text", "step=" + std::to_string(i) + ";"}};
        if (i % 2) args["key"] = "k" + std::to_string(i);
        return json{{"tool_calls", {{{"name", i % 2 ? "put_line" : "append_line"}, {"arguments", args}}}}};
    };
    rules.push_back({{"after", "^crash test$"}, {"reply", call_for(0)}});
    for (int i = 0; i + 1 < kSteps; ++i)
        rules.push_back({{"after", "step=" + std::to_string(i) + ";"}, {"reply", call_for(i + 1)}});
    rules.push_back({{"after", "step=" + std::to_string(kSteps - 1) + ";"}, {"reply", {{"text", "all steps done"}}}});
    return {{"rules", rules}};
}

pid_t spawn(const std::vector<std::string>& args) {
    std::vector<char*> argv;
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&files, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, argv[0], &files, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    REQUIRE(rc == 0);
    return pid;
}

int wait_exit(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

struct Setup {
    test::TempDir dir;
    std::string config, lines;
    explicit Setup(const std::string& durability = "full") {
        lines = (dir.path / "effects.txt").string();
        test::write_file(dir.path / "cassette.json", crash_cassette(lines).dump());
        config = (dir.path / "agenthost.toml").string();
        test::write_file(config, "data_dir = \"" + (dir.path / "data").string() +
                                     "\"\ndefault_plugin_dirs = false\n"
                                     "enabled_plugins = [\"scripted\", \"agent_tools\"]\n"
                                     "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                                     "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_FIXTURE_PLUGIN_DIR
                                     "\"]\n"
                                     "[plugins.scripted]\ncassette = \"" +
                                     (dir.path / "cassette.json").string() +
                                     "\"\n"
                                     "[store]\ndurability = \"" +
                                     durability + "\"\n");
    }
    std::vector<std::string> cli(std::vector<std::string> args) const {
        args.insert(args.begin(), {test::cli(), "--config", config});
        return args;
    }
    json runs(const std::string& conversation) const {
        auto r = test::run_command("'" + std::string(test::cli()) + "' --config '" + config + "' runs --json --conversation " +
                                   conversation);
        REQUIRE(r.exit_code == 0);
        return json::parse(r.out);
    }
};

// What a SIGKILL interrupted, read from the database right after it.
enum class Window { before_run, before_first_checkpoint, tool_call_in_flight, between_steps, after_the_end };
constexpr const char* kWindowNames[] = {"before the run was stored", "run stored, before its first checkpoint",
                                        "a tool call in flight", "between steps", "after the run ended (nothing to interrupt)"};

Window window_of(const Setup& s, const std::string& conversation) {
    auto db = sqlite::Database::open(s.dir.path / "data" / "agenthost.db");
    if (!db) return Window::before_run;
    return (*db)->read([&](sqlite::Database& d) {
        auto run = d.prepare("SELECT id, status FROM runs WHERE conversation = ?1");
        run->bind(1, conversation);
        if (!run->step()) return Window::before_run;
        int64_t id = run->integer(0);
        if (run->text(1) == "completed") return Window::after_the_end;
        auto count = [&](const char* sql) {
            auto stmt = d.prepare(sql);
            stmt->bind(1, id);
            return stmt->step() ? stmt->integer(0) : 0;
        };
        if (count("SELECT COUNT(*) FROM tool_journal WHERE run = ?1 AND status = 'started'") > 0)
            return Window::tool_call_in_flight;
        if (count("SELECT COUNT(*) FROM runs WHERE id = ?1 AND checkpoint IS NOT NULL") == 0)
            return Window::before_first_checkpoint;
        return Window::between_steps;
    });
}

struct SoakFigures {
    int trials = 0, kills = 0, unknown_outcomes = 0, lost = 0, duplicated = 0, unresumable = 0, integrity_failures = 0;
    std::map<Window, int> windows;
    void print(const char* front) const {
        std::printf(
            "sigkill soak (%s): %d trials, %d kills; %d lost, %d duplicated, %d unresumable, %d integrity failures; "
            "%d non-idempotent calls reported outcome unknown\n",
            front, trials, kills, lost, duplicated, unresumable, integrity_failures, unknown_outcomes);
        for (const auto& [w, n] : windows) std::printf("  killed %s: %d\n", kWindowNames[static_cast<int>(w)], n);
    }
};

// Checks one finished trial: each step's effect exactly once, or — for a non-idempotent call
// interrupted while it ran — at most once and reported to the model as unknown; a transcript with
// no gap and no duplicate; an intact database.
void check_effects(const Setup& s, int64_t run_id, SoakFigures& figures) {
    std::map<int, int> seen;
    std::ifstream in(s.lines);
    for (std::string line; std::getline(in, line);) {
        size_t at = line.find("step=");
        REQUIRE(at != std::string::npos);
        ++seen[std::stoi(line.substr(at + 5))];
    }
    auto db = sqlite::Database::open(s.dir.path / "data" / "agenthost.db");
    REQUIRE(db);
    std::set<int> unknown;
    std::map<std::string, int> results_per_call;
    std::vector<std::string> called;
    int prompts = 0, answers = 0;
    (*db)->read([&](sqlite::Database& d) {
        auto stmt = d.prepare("SELECT kind, body, COALESCE(result, '') FROM messages WHERE run = ?1 ORDER BY id");
        REQUIRE(stmt);
        stmt->bind(1, run_id);
        while (stmt->step()) {
            json body = json::parse(stmt->text(1));
            prompts += stmt->text(0) == "prompt";
            answers += stmt->text(0) == "answer";
            if (body.value("role", "") == "assistant" && body.contains("tool_calls"))
                for (const auto& c : body["tool_calls"]) called.push_back(c["id"]);
            if (body.value("role", "") == "tool") {
                ++results_per_call[body["tool_call_id"]];
                json result = json::parse(stmt->text(2));
                if (result.value("error_code", "") == "outcome_unknown") {
                    std::string content = result["content"];
                    size_t at = content.find("step=");
                    unknown.insert(std::stoi(content.substr(at + 5)));
                }
            }
        }
        return 0;
    });
    CHECK(prompts == 1);
    CHECK(answers == 1);
    CHECK(called.size() == results_per_call.size());
    // Every call that started counts, whether it finished before a kill or its outcome is unknown.
    int64_t counted = (*db)->read([&](sqlite::Database& d) {
        auto stmt = d.prepare("SELECT tool_calls FROM runs WHERE id = ?1");
        stmt->bind(1, run_id);
        return stmt->step() ? stmt->integer(0) : -1;
    });
    CHECK(counted == static_cast<int64_t>(called.size()));
    for (const auto& id : called) {
        CHECK(results_per_call[id] == 1);
        figures.duplicated += results_per_call[id] > 1;
    }
    for (int i = 0; i < kSteps; ++i) {
        INFO("step " << i);
        if (unknown.count(i)) {
            CHECK(i % 2 == 0);  // only the non-idempotent tool is ever reported unknown
            CHECK(seen[i] <= 1);
            figures.duplicated += seen[i] > 1;
        } else {
            CHECK(seen[i] == 1);
            figures.lost += seen[i] == 0;
            figures.duplicated += seen[i] > 1;
        }
    }
    figures.unknown_outcomes += static_cast<int>(unknown.size());
    std::string integrity = (*db)->read([&](sqlite::Database& d) {
        auto stmt = d.prepare("PRAGMA integrity_check");
        return stmt && stmt->step() ? stmt->text(0) : std::string("no answer");
    });
    CHECK(integrity == "ok");
    figures.integrity_failures += integrity != "ok";
}

// Trials per front: AGENTHOST_SOAK_TRIALS (scripts/soak sets it), else a few for the suite.
int soak_trials(int fallback) {
    const char* v = std::getenv("AGENTHOST_SOAK_TRIALS");
    return v && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

// Kills at random moments; the first 3 processes of a trial are killed, the next one finishes.
constexpr int kKillsPerTrial = 3;

bool killed_by_sigkill(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

}  // namespace

TEST_CASE("durability: SIGKILL of run and resume at random moments, every effect happens once or is reported unknown",
          "[integration][durability]") {
    std::mt19937 random(20261130);  // seeded: a failure can be replayed
    SoakFigures figures;
    figures.trials = soak_trials(8);
    for (int trial = 0; trial < figures.trials; ++trial) {
        INFO("trial " << trial);
        Setup s;
        std::string conversation = "crash-" + std::to_string(trial);
        pid_t pid = spawn(s.cli({"run", "--conversation", conversation, "crash test"}));
        int64_t run_id = 0;
        for (int attempt = 0;; ++attempt) {
            REQUIRE(attempt < 12);  // bounded: every resume makes progress
            bool killed = false;
            if (attempt <
                kKillsPerTrial) {  // the first kill early (start-up, before the run or its first checkpoint), then anywhere
                std::this_thread::sleep_for(
                    std::chrono::milliseconds(std::uniform_int_distribution<int>(0, attempt == 0 ? 150 : 400)(random)));
                ::kill(pid, SIGKILL);
                killed = killed_by_sigkill(pid);
                if (killed) {
                    ++figures.kills;
                    ++figures.windows[window_of(s, conversation)];
                }
            } else {
                wait_exit(pid);
            }
            json runs = s.runs(conversation);
            if (runs.empty() && run_id == 0) {  // killed before the run was stored: nothing happened, start again
                pid = spawn(s.cli({"run", "--conversation", conversation, "crash test"}));
                continue;
            }
            REQUIRE(runs.size() == 1);  // a resume continues the same run
            run_id = runs[0]["id"];
            std::string status = runs[0]["status"];
            if (status == "completed") break;
            if (status != "interrupted") ++figures.unresumable;
            REQUIRE(status == "interrupted");  // the dead process's run, recognised as such at once
            CHECK(runs[0]["error_code"] == "INTERRUPTED");
            pid = spawn(s.cli({"resume", std::to_string(run_id)}));
        }
        check_effects(s, run_id, figures);
    }
    figures.print("CLI run/resume");
    CHECK(figures.lost + figures.duplicated + figures.unresumable + figures.integrity_failures == 0);
}

namespace {

// `agenthost serve` on a free loopback port, killed and started again over the same database.
struct Server {
    const Setup& setup;
    int port = 0;
    pid_t pid = -1;
    explicit Server(const Setup& s) : setup(s) {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
        port = ntohs(a.sin_port);
        ::close(fd);
    }
    ~Server() {
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            wait_exit(pid);
        }
    }
    void start() {
        pid = spawn(setup.cli({"serve", "--listen", "127.0.0.1:" + std::to_string(port)}));
        for (int i = 0; i < 400; ++i) {  // up to 20 s for start-up
            if (client().Get("/health")) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        FAIL("serve did not start");
    }
    httplib::Client client() const {
        httplib::Client c("127.0.0.1", port);
        c.set_connection_timeout(std::chrono::seconds(2));
        c.set_read_timeout(std::chrono::seconds(10));
        return c;
    }
    json post(const std::string& path, const json& body) const {
        auto r = client().Post(path, body.dump(), "application/json");
        REQUIRE(r);
        INFO(path << " → " << r->status << " " << r->body);
        REQUIRE(r->status / 100 == 2);
        return json::parse(r->body);
    }
    // Waits for the run to leave "running" and returns its status.
    std::string settle(int64_t run) const {
        for (int i = 0; i < 1200; ++i) {
            auto r = client().Get("/api/runs/" + std::to_string(run));
            if (r && r->status == 200) {
                std::string status = json::parse(r->body).value("status", "");
                if (status != "running") return status;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return "running";
    }
};

}  // namespace

TEST_CASE("durability: SIGKILL of serve during a keyed completion, the next serve finishes the run and the retry gets it",
          "[integration][durability]") {
    std::mt19937 random(20261201);
    SoakFigures figures;
    figures.trials = soak_trials(4);
    for (int trial = 0; trial < figures.trials; ++trial) {
        INFO("trial " << trial);
        Setup s;
        test::write_file(s.config, test::read_file(s.config) + "[server]\nauth = \"none\"\n");
        Server server(s);
        const std::string conversation = "serve-crash-" + std::to_string(trial);
        const std::string body = json{{"model", "agenthost"},
                                      {"conversation", conversation},
                                      {"messages", {{{"role", "user"}, {"content", "crash test"}}}}}
                                     .dump();
        // As the official clients send it: one key for the request and all its retries.
        auto send = [&] {
            auto c = server.client();
            c.set_read_timeout(std::chrono::seconds(60));
            return c.Post("/v1/chat/completions", {{"Idempotency-Key", "crash-" + std::to_string(trial)}}, body,
                          "application/json");
        };
        server.start();
        std::thread first([&] { send(); });  // its connection is cut by the first kill
        int64_t run_id = 0;
        for (int i = 0; i < 400 && run_id == 0; ++i) {
            auto r = server.client().Get("/api/conversations/" + conversation);
            if (r && r->status == 200)
                run_id = json::parse(r->body)["runs"][0].value("id", int64_t{0});
            else
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        REQUIRE(run_id > 0);
        for (int kill = 0; kill < kKillsPerTrial; ++kill) {  // right after the run is stored, then in the resumed runs
            std::this_thread::sleep_for(
                std::chrono::milliseconds(std::uniform_int_distribution<int>(0, kill == 0 ? 10 : 300)(random)));
            ::kill(server.pid, SIGKILL);
            if (killed_by_sigkill(server.pid)) {
                ++figures.kills;
                ++figures.windows[window_of(s, conversation)];
            }
            server.pid = -1;
            server.start();  // resumes the dead serve's run by itself: nobody posts /resume
        }
        first.join();
        // The client's retries: 409 while the run goes on, then the run's own answer, replayed.
        std::optional<json> answer;
        for (int i = 0; i < 600 && !answer; ++i) {
            auto r = send();
            REQUIRE(r);
            INFO(r->status << " " << r->body);
            if (r->status == 200) {
                CHECK(r->get_header_value("Idempotent-Replayed") == "true");
                answer = json::parse(r->body);
            } else {
                REQUIRE(r->status == 409);
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        }
        if (!answer) ++figures.unresumable;
        REQUIRE(answer);
        CHECK((*answer)["id"] == "chatcmpl-" + std::to_string(run_id));
        CHECK_THAT((*answer)["choices"][0]["message"]["content"].get<std::string>(), Contains("all steps done"));
        CHECK(server.settle(run_id) == "completed");
        ::kill(server.pid, SIGTERM);
        CHECK(wait_exit(server.pid) == 0);
        server.pid = -1;
        check_effects(s, run_id, figures);
    }
    figures.print("serve /v1/chat/completions with an Idempotency-Key, resumed by the next serve");
    CHECK(figures.lost + figures.duplicated + figures.unresumable + figures.integrity_failures == 0);
}

TEST_CASE("durability: two processes writing one database at once never fail on a lock", "[integration][durability]") {
    Setup s("process");
    pid_t a = spawn(s.cli({"run", "--conversation", "first", "crash test"}));
    pid_t b = spawn(s.cli({"run", "--conversation", "second", "crash test"}));
    CHECK(wait_exit(a) == 0);
    CHECK(wait_exit(b) == 0);
    CHECK(s.runs("first")[0]["status"] == "completed");
    CHECK(s.runs("second")[0]["status"] == "completed");
    CHECK(s.runs("second")[0]["tool_calls"] == kSteps);
}

TEST_CASE("durability: databases of every earlier schema migrate, a newer one is refused untouched",
          "[integration][durability]") {
    for (int from = 0; from < sqlite::kSchemaVersion; ++from) {
        INFO("from schema " << from);
        test::TempDir dir;
        auto file = dir.path / "agenthost.db";
        // The old database, built with the old migrations (raw SQLite: no migration runs) and some rows.
        std::string sql;
        for (int v = 1; v <= from; ++v) sql += std::string(sqlite::migration_sql(v)) + ";";
        sql += "PRAGMA user_version = " + std::to_string(from) + ";";
        if (from >= 1) sql += "INSERT INTO memory (conversation, key, value) VALUES ('c', 'session', '{\"goal\": \"kept\"}');";
        if (from >= 2)
            sql +=
                "INSERT INTO messages (conversation, turn, kind, body) VALUES ('c', 1, 'prompt', "
                "'{\"role\":\"user\",\"content\":\"old\"}');";
        if (from >= 3) {
            sql += "INSERT INTO conversations (id, created_at, updated_at) VALUES ('c', 1, 1);";
            // A paused run with two checkpoints: only the later one is needed to resume it.
            sql +=
                "INSERT INTO runs (id, conversation, turn, status, mode, provider, prompt, started_at, updated_at)"
                " VALUES (7, 'c', 2, 'paused', 'execute', 'scripted', 'p', 1, 1);";
            if (from < 5)
                sql +=
                    "INSERT INTO checkpoints (run, step, last_message, state, created_at) VALUES (7, 1, 1, '{\"older\":1}', 1),"
                    " (7, 2, 1, '{\"newer\":2}', 2);";
            else  // schema 5 keeps the latest in the run's row
                sql += "UPDATE runs SET checkpoint = '{\"newer\":2}', checkpoint_step = 2, checkpoint_message = 1 WHERE id = 7;";
        }
        sqlite3* raw = nullptr;
        REQUIRE(sqlite3_open(file.c_str(), &raw) == SQLITE_OK);
        char* failure = nullptr;
        int rc = sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &failure);
        INFO((failure ? failure : ""));
        sqlite3_free(failure);
        sqlite3_close(raw);
        REQUIRE(rc == SQLITE_OK);
        auto db = sqlite::Database::open(file);
        REQUIRE(db);
        auto version = (*db)->read([](sqlite::Database& d) {
            auto stmt = d.prepare("PRAGMA user_version");
            return stmt && stmt->step() ? stmt->integer(0) : -1;
        });
        CHECK(version == sqlite::kSchemaVersion);
        if (from >= 1) {
            auto goal = (*db)->read([](sqlite::Database& d) {
                auto stmt = d.prepare("SELECT value FROM memory WHERE conversation = 'c' AND key = 'session'");
                return stmt && stmt->step() ? stmt->text(0) : std::string();
            });
            CHECK_THAT(goal, Contains("kept"));  // rows survive every migration
        }
        if (from >= 2) {
            auto conversations = (*db)->read([](sqlite::Database& d) {
                auto stmt = d.prepare("SELECT COUNT(*) FROM conversations WHERE id = 'c'");
                return stmt && stmt->step() ? stmt->integer(0) : -1;
            });
            CHECK(conversations == 1);  // conversations were derived from the old messages (or kept)
            auto title = (*db)->read([](sqlite::Database& d) {
                auto stmt = d.prepare("SELECT title FROM conversations WHERE id = 'c'");
                return stmt && stmt->step() ? stmt->text(0) : std::string("(none)");
            });
            CHECK(title.empty());  // schema 4: old conversations are unnamed
        }
        if (from >= 3) {  // schema 5: a run keeps its latest checkpoint
            sqlite::SqliteRunJournal runs(**db, 30);
            auto cp = runs.last_checkpoint(7).value();
            REQUIRE(cp);
            CHECK(cp->step == 2);
            CHECK(cp->state_json == R"({"newer":2})");
            // schema 6: a deleted run's id is never given again, though it was the newest.
            REQUIRE(runs.delete_conversation("c"));
            auto next = runs.begin_run("d", agenthost::Mode::execute, "scripted", "p", R"({"role":"user","content":"p"})");
            REQUIRE(next);
            CHECK(next->id > 7);
        }
    }

    test::TempDir dir;
    auto file = dir.path / "agenthost.db";
    {
        auto db = sqlite::Database::open(file);
        REQUIRE(db);
        REQUIRE((*db)->exec("PRAGMA user_version = " + std::to_string(sqlite::kSchemaVersion + 1)));
    }
    std::string before = test::read_file(file);
    auto refused = sqlite::Database::open(file);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == "store_too_new");
    CHECK_THAT(refused.error().message, Contains("upgrade agenthost") && Contains("left untouched"));
    CHECK(test::read_file(file) == before);
}

TEST_CASE("durability: a store whose tables cannot be read is not ready, and is again once they can",
          "[integration][durability]") {
    test::TempDir dir;
    auto app = test::start(test::config(dir.path, false));
    REQUIRE(app->storage().ready());
    // The database still answers "SELECT 1"; its journal does not.
    REQUIRE(app->storage().sqlite()->exec("ALTER TABLE runs RENAME TO runs_hidden"));
    CHECK_FALSE(app->storage().ready());  // what /readyz and doctor report
    REQUIRE(app->storage().sqlite()->exec("ALTER TABLE runs_hidden RENAME TO runs"));
    CHECK(app->storage().ready());
}
