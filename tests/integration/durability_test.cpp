// Durable runs under real failures: the agenthost process killed with SIGKILL at random moments and
// resumed, two processes writing one database, and schema migrations.
#include "store/database.hpp"
#include "unit/test_support.hpp"

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
    for (int i = 0; i + 1 < kSteps; ++i) rules.push_back({{"after", "step=" + std::to_string(i) + ";"}, {"reply", call_for(i + 1)}});
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
        test::write_file(config, "data_dir = \"" + (dir.path / "data").string() + "\"\ndefault_plugin_dirs = false\n"
                                 "enabled_plugins = [\"scripted\", \"agent_tools\"]\n"
                                 "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_FIXTURE_PLUGIN_DIR "\"]\n"
                                 "[plugins.scripted]\ncassette = \"" + (dir.path / "cassette.json").string() + "\"\n"
                                 "[store]\ndurability = \"" + durability + "\"\n");
    }
    std::vector<std::string> cli(std::vector<std::string> args) const {
        args.insert(args.begin(), {test::cli(), "--config", config});
        return args;
    }
    json runs(const std::string& conversation) const {
        auto r = test::run_command("'" + std::string(test::cli()) + "' --config '" + config + "' runs --json --conversation " + conversation);
        REQUIRE(r.exit_code == 0);
        return json::parse(r.out);
    }
};

}  // namespace

TEST_CASE("durability: a run killed with SIGKILL at random steps resumes, every effect happens once or is reported unknown",
          "[durability]") {
    std::mt19937 random(20261130);  // seeded: a failure can be replayed
    const int trials = 8;
    int kills = 0, unknown_outcomes = 0;
    for (int trial = 0; trial < trials; ++trial) {
        INFO("trial " << trial);
        Setup s;
        std::string conversation = "crash-" + std::to_string(trial);
        pid_t pid = spawn(s.cli({"run", "--conversation", conversation, "crash test"}));
        int64_t run_id = 0;
        for (int attempt = 0;; ++attempt) {
            REQUIRE(attempt < 12);  // bounded: every resume makes progress
            if (attempt < 3) {      // kill the first processes at random moments, let the last one finish
                std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(10, 200)(random)));
                ::kill(pid, SIGKILL);
                ++kills;
            }
            wait_exit(pid);
            json runs = s.runs(conversation);
            if (runs.empty() && run_id == 0) {  // killed before the run was stored (a slow start): nothing to resume
                pid = spawn(s.cli({"run", "--conversation", conversation, "crash test"}));
                continue;
            }
            REQUIRE(runs.size() == 1);  // a resume continues the same run
            run_id = runs[0]["id"];
            std::string status = runs[0]["status"];
            if (status == "completed") break;
            REQUIRE(status == "interrupted");  // the dead process's run, recognised as such at once
            CHECK(runs[0]["error_code"] == "INTERRUPTED");
            pid = spawn(s.cli({"resume", std::to_string(run_id)}));
        }

        // Effects: each step's line exactly once — or, for a non-idempotent call interrupted while
        // it ran, at most once and reported to the model as unknown.
        std::map<int, int> seen;
        std::ifstream in(s.lines);
        for (std::string line; std::getline(in, line);) {
            size_t at = line.find("step=");
            REQUIRE(at != std::string::npos);
            ++seen[std::stoi(line.substr(at + 5))];
        }
        auto db = store::Database::open(s.dir.path / "data" / "agenthost.db");
        REQUIRE(db);
        std::set<int> unknown;
        std::map<std::string, int> results_per_call;
        std::vector<std::string> called;
        int prompts = 0, answers = 0;
        (*db)->read([&](store::Database& d) {
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
        // The transcript has no gap and no duplicate: every call made has exactly one result.
        CHECK(called.size() == results_per_call.size());
        for (const auto& id : called) CHECK(results_per_call[id] == 1);
        for (int i = 0; i < kSteps; ++i) {
            INFO("step " << i);
            if (unknown.count(i)) {
                CHECK(i % 2 == 0);  // only the non-idempotent tool is ever reported unknown
                CHECK(seen[i] <= 1);
            } else {
                CHECK(seen[i] == 1);
            }
        }
        unknown_outcomes += static_cast<int>(unknown.size());
        std::string integrity = (*db)->read([&](store::Database& d) {
            auto stmt = d.prepare("PRAGMA integrity_check");
            return stmt && stmt->step() ? stmt->text(0) : std::string("no answer");
        });
        CHECK(integrity == "ok");
    }
    WARN("crash test: " << trials << " trials, " << kills << " kills, " << unknown_outcomes << " outcomes reported unknown");
}

TEST_CASE("durability: two processes writing one database at once never fail on a lock", "[durability]") {
    Setup s("process");
    pid_t a = spawn(s.cli({"run", "--conversation", "first", "crash test"}));
    pid_t b = spawn(s.cli({"run", "--conversation", "second", "crash test"}));
    CHECK(wait_exit(a) == 0);
    CHECK(wait_exit(b) == 0);
    CHECK(s.runs("first")[0]["status"] == "completed");
    CHECK(s.runs("second")[0]["status"] == "completed");
    CHECK(s.runs("second")[0]["tool_calls"] == kSteps);
}

TEST_CASE("durability: databases of every earlier schema migrate, a newer one is refused untouched", "[durability]") {
    for (int from = 0; from < store::kSchemaVersion; ++from) {
        INFO("from schema " << from);
        test::TempDir dir;
        auto file = dir.path / "agenthost.db";
        // The old database, built with the old migrations (raw SQLite: no migration runs) and some rows.
        std::string sql;
        for (int v = 1; v <= from; ++v) sql += std::string(store::migration_sql(v)) + ";";
        sql += "PRAGMA user_version = " + std::to_string(from) + ";";
        if (from >= 1) sql += "INSERT INTO memory (conversation, key, value) VALUES ('c', 'session', '{\"goal\": \"kept\"}');";
        if (from >= 2)
            sql += "INSERT INTO messages (conversation, turn, kind, body) VALUES ('c', 1, 'prompt', '{\"role\":\"user\",\"content\":\"old\"}');";
        sqlite3* raw = nullptr;
        REQUIRE(sqlite3_open(file.c_str(), &raw) == SQLITE_OK);
        char* failure = nullptr;
        int rc = sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &failure);
        INFO((failure ? failure : ""));
        sqlite3_free(failure);
        sqlite3_close(raw);
        REQUIRE(rc == SQLITE_OK);
        auto db = store::Database::open(file);
        REQUIRE(db);
        auto version = (*db)->read([](store::Database& d) {
            auto stmt = d.prepare("PRAGMA user_version");
            return stmt && stmt->step() ? stmt->integer(0) : -1;
        });
        CHECK(version == store::kSchemaVersion);
        if (from >= 1) {
            auto goal = (*db)->read([](store::Database& d) {
                auto stmt = d.prepare("SELECT value FROM memory WHERE conversation = 'c' AND key = 'session'");
                return stmt && stmt->step() ? stmt->text(0) : std::string();
            });
            CHECK_THAT(goal, Contains("kept"));  // rows survive every migration
        }
        if (from >= 2) {
            auto conversations = (*db)->read([](store::Database& d) {
                auto stmt = d.prepare("SELECT COUNT(*) FROM conversations WHERE id = 'c'");
                return stmt && stmt->step() ? stmt->integer(0) : -1;
            });
            CHECK(conversations == 1);  // conversations were derived from the old messages
        }
    }

    test::TempDir dir;
    auto file = dir.path / "agenthost.db";
    {
        auto db = store::Database::open(file);
        REQUIRE(db);
        REQUIRE((*db)->exec("PRAGMA user_version = " + std::to_string(store::kSchemaVersion + 1)));
    }
    std::string before = test::read_file(file);
    auto refused = store::Database::open(file);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == "store_too_new");
    CHECK_THAT(refused.error().message, Contains("upgrade agenthost") && Contains("left untouched"));
    CHECK(test::read_file(file) == before);
}
