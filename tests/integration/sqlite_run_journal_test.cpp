// The run store: leases and recovery, claiming runs, steps, retention.
#include "store/run_lease.hpp"
#include "sqlite/sqlite_run_journal.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

using namespace agenthost;
using Catch::Matchers::Contains;

namespace {

store::StepWrite step(const std::string& body) {
    store::StepWrite s;
    s.messages.push_back({store::MessageKind::step, body});
    s.state_json = "{}";
    return s;
}

int64_t count(sqlite::Database& db, const std::string& sql) {
    return db.read([&](sqlite::Database& d) {
        auto stmt = d.prepare(sql);
        return stmt && stmt->step() ? stmt->integer(0) : -1;
    });
}

// The store's database at `file`, or the test stops.
std::unique_ptr<sqlite::Database> open_db(const std::filesystem::path& file,
                                          sqlite::Durability durability = sqlite::Durability::process) {
    auto db = sqlite::Database::open(file, durability);
    REQUIRE(db);
    return std::move(*db);
}

std::string this_host() {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    return name;
}

}  // namespace

TEST_CASE("run store: a run whose process is gone is interrupted, a live one elsewhere is not", "[integration][store]") {
    test::TempDir dir;
    auto db = open_db(dir.path / "agenthost.db");
    sqlite::SqliteRunJournal runs(*db, 30);
    auto run = runs.begin_run("c", agenthost::Mode::execute, "scripted", "hi", R"({"role":"user","content":"hi"})");
    REQUIRE(run);
    CHECK(run->turn == 1);
    CHECK(runs.recover_interrupted().value() == 0);  // ours

    auto set_lease = [&](const std::string& owner, double from_now) {
        REQUIRE(db->exec("UPDATE runs SET lease_owner = '" + owner + "', lease_until = unixepoch() + " +
                         std::to_string(from_now) + " WHERE id = " + std::to_string(run->id)));
    };
    set_lease("far-away-host:123:456", 100);
    CHECK(runs.recover_interrupted().value() == 0);  // another machine, lease valid: it may well be running
    CHECK(runs.run(run->id).value()->status == RunStatus::running);
    set_lease(this_host() + ":999999:1", 100);
    CHECK(runs.recover_interrupted().value() == 1);  // this machine, and that process does not exist
    CHECK(runs.run(run->id).value()->status == RunStatus::interrupted);
    CHECK(runs.run(run->id).value()->error_code == "INTERRUPTED");

    // A live process on this host keeps its run even when its lease ran out (stopped with Ctrl-Z,
    // held in a debugger): taking the run over would run its steps twice. The test's parent stands in.
    REQUIRE(db->exec("UPDATE runs SET status = 'running' WHERE id = " + std::to_string(run->id)));
    std::ifstream parent_stat("/proc/" + std::to_string(::getppid()) + "/stat");
    std::string parent_text((std::istreambuf_iterator<char>(parent_stat)), std::istreambuf_iterator<char>());
    std::istringstream parent_fields(parent_text.substr(parent_text.rfind(')') + 2));
    std::string parent_start;
    for (int i = 3; i <= 22 && parent_fields >> parent_start; ++i) {
    }
    set_lease(this_host() + ":" + std::to_string(::getppid()) + ":" + parent_start, -100);
    CHECK(runs.recover_interrupted().value() == 0);
    CHECK(runs.run(run->id).value()->status == RunStatus::running);
    CHECK_FALSE(runs.claim(run->id));
    set_lease(this_host() + ":999999:1", 100);
    CHECK(runs.recover_interrupted().value() == 1);

    auto other = runs.begin_run("c", agenthost::Mode::execute, "scripted", "again", R"({"role":"user","content":"again"})");
    REQUIRE(other);
    CHECK(other->turn == 2);
    REQUIRE(db->exec("UPDATE runs SET lease_owner = 'far-away-host:1:1', lease_until = unixepoch() - 1 WHERE id = " +
                     std::to_string(other->id)));
    CHECK(runs.recover_interrupted().value() == 1);  // the lease ran out
    REQUIRE(runs.claim(other->id));
    CHECK(runs.run(other->id).value()->status == RunStatus::running);
    auto twice = runs.claim(other->id);
    REQUIRE_FALSE(twice);
    CHECK_THAT(twice.error().message, Contains("running") && Contains("only paused or interrupted"));
}

TEST_CASE("run store: a new data folder and database are readable by their owner only", "[integration][store]") {
    test::TempDir dir;
    auto file = dir.path / "fresh" / "agenthost.db";
    auto db = open_db(file);
    sqlite::SqliteRunJournal runs(*db, 30);
    REQUIRE(runs.begin_run("c", agenthost::Mode::execute, "scripted", "hi", R"({"role":"user","content":"hi"})"));
    auto mode = [](const std::filesystem::path& p) {
        return std::filesystem::status(p).permissions() & std::filesystem::perms::all;
    };
    using P = std::filesystem::perms;
    CHECK(mode(file.parent_path()) == P::owner_all);
    CHECK(mode(file) == (P::owner_read | P::owner_write));
    CHECK(mode(file.string() + "-wal") == (P::owner_read | P::owner_write));  // SQLite copies the database's mode
}

TEST_CASE("run store: steps append and checkpoint, compact drops old checkpoints, never messages", "[integration][store]") {
    test::TempDir dir;
    auto db = open_db(dir.path / "agenthost.db");
    sqlite::SqliteRunJournal runs(*db, 30);
    std::vector<int64_t> ids;
    for (int i = 0; i < 3; ++i) {
        auto run = runs.begin_run("c", agenthost::Mode::execute, "scripted", "p" + std::to_string(i),
                                  R"({"role":"user","content":"p"})");
        REQUIRE(run);
        ids.push_back(run->id);
        REQUIRE(runs.journal_intent(run->id, {"call_1", "echo", "{}"}, store::Flush::now));
        auto s = step(R"({"role":"tool","tool_call_id":"call_1","content":"x"})");
        s.messages.back().result = R"({"content":"x"})";
        s.journal_call_id = "call_1";  // its result: the tool message's
        s.counters.tool_calls = 1;
        s.inputs_json = R"({"history":[]})";
        auto written = runs.write_step(run->id, s);
        REQUIRE(written);
        REQUIRE(written->size() == 1);
        CHECK(runs.journal(run->id, "call_1").value()->status == agenthost::store::CallStatus::done);
        auto cp = runs.last_checkpoint(run->id).value();
        REQUIRE(cp);
        CHECK(cp->step == 1);
        CHECK(cp->last_message == written->front());
        store::RunEnd end;
        end.stop_reason = StopReason::answered;  // completed, by the stop-reason table
        end.counters.tool_calls = 1;
        end.messages = {store::NewMessage{store::MessageKind::answer, R"({"role":"assistant","content":"done"})"}};
        REQUIRE(runs.end_run(run->id, end));
    }
    CHECK(runs.runs("c", 10).value().size() == 3);
    CHECK(runs.exchanges("c", 4, 3).value().size() == 6);  // prompt and answer of each turn
    int64_t messages = count(*db, "SELECT COUNT(*) FROM messages");
    auto deleted = runs.compact(1, 365);
    REQUIRE(deleted);
    CHECK(*deleted == 4);  // two old runs: a checkpoint and a journal row each
    CHECK(count(*db, "SELECT COUNT(*) FROM runs WHERE checkpoint IS NOT NULL") == 1);
    CHECK(count(*db, "SELECT COUNT(*) FROM runs WHERE inputs IS NOT NULL") == 1);  // a dropped checkpoint's inputs go with it
    CHECK(runs.last_checkpoint(ids.back()).value());
    CHECK(count(*db, "SELECT COUNT(*) FROM messages") == messages);
    CHECK_FALSE(runs.claim(ids.back()));  // a completed run is not resumable
}

TEST_CASE("run store: one run per conversation across processes, a dead or unreaped owner frees it at once",
          "[integration][store]") {
    test::TempDir dir;
    auto db = open_db(dir.path / "agenthost.db");
    sqlite::SqliteRunJournal runs(*db, 30);
    auto first = runs.begin_run("c", agenthost::Mode::execute, "scripted", "hi", R"({"role":"user","content":"hi"})");
    REQUIRE(first);
    // Another live process on this host owns it (this test's own parent stands in for it).
    std::ifstream stat("/proc/" + std::to_string(::getppid()) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::string start;
    for (int i = 3; i <= 22 && fields >> start; ++i) {
    }
    auto own = [&](const std::string& owner) {
        REQUIRE(db->exec("UPDATE runs SET lease_owner = '" + owner +
                         "', lease_until = unixepoch() + 100 WHERE id = " + std::to_string(first->id)));
    };
    own(this_host() + ":" + std::to_string(::getppid()) + ":" + start);
    auto second = runs.begin_run("c", agenthost::Mode::execute, "scripted", "again", R"({"role":"user","content":"again"})");
    REQUIRE_FALSE(second);
    CHECK(second.error().code == "conversation_busy");
    CHECK_THAT(second.error().message, Contains("run " + std::to_string(first->id)));
    CHECK(runs.begin_run("other", agenthost::Mode::execute, "scripted", "hi",
                         R"({"role":"user","content":"hi"})"));  // others are free

    // An owner that has exited but is not yet reaped (a zombie) is gone: no waiting for the lease.
    pid_t child = ::fork();
    if (child == 0) _exit(0);
    std::string child_start;
    for (int tries = 0; tries < 100 && child_start.empty(); ++tries) {
        std::ifstream s("/proc/" + std::to_string(child) + "/stat");
        std::string t((std::istreambuf_iterator<char>(s)), std::istreambuf_iterator<char>());
        std::istringstream f(t.substr(t.rfind(')') + 2));
        std::string field, state;
        for (int i = 3; i <= 22 && f >> field; ++i)
            if (i == 3) state = field;
        if (state == "Z")
            child_start = field;
        else
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE_FALSE(child_start.empty());
    own(this_host() + ":" + std::to_string(child) + ":" + child_start);
    auto third = runs.begin_run("c", agenthost::Mode::execute, "scripted", "now", R"({"role":"user","content":"now"})");
    CHECK(third);
    CHECK(runs.run(first->id).value()->status == RunStatus::interrupted);
    ::waitpid(child, nullptr, 0);
}

TEST_CASE("run store: one keeper renews the leases of every run it holds, and none once let go", "[integration][store]") {
    test::TempDir dir;
    auto db = open_db(dir.path / "leases.db", sqlite::Durability::full);
    sqlite::SqliteRunJournal runs(*db, 1);  // a 1 s lease: renewed every 200 ms
    auto first = runs.begin_run("a", agenthost::Mode::execute, "p", "one", R"({"role":"user","content":"one"})");
    auto second = runs.begin_run("b", agenthost::Mode::execute, "p", "two", R"({"role":"user","content":"two"})");
    REQUIRE(first);
    REQUIRE(second);
    auto lease_of = [&](int64_t run) {
        return db->read([&](sqlite::Database& d) {
            auto stmt = d.prepare("SELECT lease_until FROM runs WHERE id = ?1");
            stmt->bind(1, run);
            return stmt->step() ? stmt->real(0) : 0.0;
        });
    };
    store::LeaseKeeper keeper(runs, 1);
    double first_before = lease_of(first->id), second_before = lease_of(second->id);
    {
        store::RunLease a(keeper, first->id);
        store::RunLease b(keeper, second->id);
        CHECK(keeper.size() == 2);
        std::this_thread::sleep_for(std::chrono::milliseconds(700));
        CHECK(lease_of(first->id) > first_before);
        CHECK(lease_of(second->id) > second_before);
    }
    CHECK(keeper.size() == 0);
    double let_go = lease_of(first->id);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK(lease_of(first->id) == let_go);  // no renewal after its lease was let go
}

TEST_CASE("run store: resuming a run whose process is gone, when the store refuses the write, says so in words",
          "[integration][store]") {
    test::TempDir dir;
    auto db = open_db(dir.path / "agenthost.db");
    sqlite::SqliteRunJournal runs(*db, 30);
    auto run = runs.begin_run("c", agenthost::Mode::execute, "scripted", "hi", R"({"role":"user","content":"hi"})");
    REQUIRE(run);
    REQUIRE(db->exec("UPDATE runs SET lease_owner = '" + this_host() + ":999999:1' WHERE id = " + std::to_string(run->id)));
    // As on a full disk: every write fails. (Once, the answer was "running in another process".)
    REQUIRE(db->exec("PRAGMA query_only = ON"));
    auto refused = runs.claim(run->id);
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.error().message, Contains("is gone") && Contains("could not be marked interrupted"));
    CHECK_THAT(refused.error().message, !Contains("another process"));
    REQUIRE(db->exec("PRAGMA query_only = OFF"));
    CHECK(runs.claim(run->id));  // once the store takes writes again, the run is resumed
}

TEST_CASE("run store: a run recovered from under its writer refuses that writer's late writes", "[integration][store]") {
    test::TempDir dir;
    auto db = open_db(dir.path / "agenthost.db");
    sqlite::SqliteRunJournal runs(*db, 30);
    auto run = runs.begin_run("c", agenthost::Mode::execute, "scripted", "hi", R"({"role":"user","content":"hi"})");
    REQUIRE(run);
    REQUIRE(runs.write_step(run->id, step(R"({"role":"assistant","content":"one"})")));
    // This process's own run whose lease lapsed: no turn renews it (its end could not be written,
    // say). It is recovered, counted, and the writer that held it is fenced off.
    REQUIRE(db->exec("UPDATE runs SET lease_until = unixepoch() - 1 WHERE id = " + std::to_string(run->id)));
    CHECK(runs.recover_interrupted().value() == 1);
    auto recovered = runs.run(run->id).value();
    REQUIRE(recovered);
    CHECK(recovered->status == RunStatus::interrupted);
    CHECK(recovered->recoveries == 1);
    CHECK_THAT(recovered->error, Contains("could not record") && !Contains("killed"));
    auto late = runs.write_step(run->id, step(R"({"role":"assistant","content":"late"})"));
    REQUIRE_FALSE(late);
    CHECK(late.error().code == "lease_lost");
    auto intent = runs.journal_intent(run->id, {"call_9", "rename", "{}"}, store::Flush::now);
    REQUIRE_FALSE(intent);  // no intent recorded, so the call never starts
    CHECK(intent.error().code == "lease_lost");
    CHECK_FALSE(runs.journal(run->id, "call_9").value());
    store::RunEnd end;
    end.stop_reason = StopReason::answered;
    CHECK(runs.end_run(run->id, end).error().code == "lease_lost");
    CHECK(runs.run(run->id).value()->status == RunStatus::interrupted);
    // Claimed again, it is written to as before; a second recovery counts again.
    REQUIRE(runs.claim(run->id));
    REQUIRE(runs.write_step(run->id, step(R"({"role":"assistant","content":"two"})")));
    REQUIRE(db->exec("UPDATE runs SET lease_until = unixepoch() - 1 WHERE id = " + std::to_string(run->id)));
    CHECK(runs.recover_interrupted().value() == 1);
    CHECK(runs.run(run->id).value()->recoveries == 2);
    // A run still leased by this process is its own: never recovered.
    auto live = runs.begin_run("d", agenthost::Mode::execute, "scripted", "hi", R"({"role":"user","content":"hi"})");
    REQUIRE(live);
    CHECK(runs.recover_interrupted().value() == 0);
}
