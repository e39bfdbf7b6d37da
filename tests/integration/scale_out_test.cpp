// Several hosts on one PostgreSQL (#24), as stores with different lease owners in one test
// process and as whole hosts: one running run per conversation across hosts, a dead host's run
// taken over after its lease expires (and the old owner fenced off), events delivered once.
#include "app/host_app.hpp"
#include "support/postgres_server.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <thread>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

const char* kPrompt = R"({"role":"user","content":"hi"})";

}  // namespace

TEST_CASE(
    "postgres: two hosts share runs, one running run per conversation, a dead host's run is taken over and its owner fenced off",
    "[peer][postgres]") {
    std::string url = test::fresh_postgres_database();
    // Owners on other machines: only their leases speak for them.
    auto a = test::open_postgres_backend(url, "host-a:100:1", 2);
    auto b = test::open_postgres_backend(url, "host-b:200:1", 30);

    auto run = a->journal.begin_run("shared", agenthost::Mode::execute, "scripted", "hi", kPrompt);
    REQUIRE(run);
    auto second = b->journal.begin_run("shared", agenthost::Mode::execute, "scripted", "again", kPrompt);
    REQUIRE_FALSE(second);
    CHECK(second.error().code == "conversation_busy");
    CHECK(b->journal.run(run->id).value()->status == RunStatus::running);  // B sees A's run
    CHECK(b->journal.recover_interrupted().value() == 0);                  // its lease is fresh

    // A stops renewing (its machine died); once the lease expires, B recovers and claims the run.
    std::this_thread::sleep_for(std::chrono::milliseconds(2300));
    CHECK(b->journal.recover_interrupted().value() == 1);
    CHECK(b->journal.run(run->id).value()->status == RunStatus::interrupted);
    REQUIRE(b->journal.claim(run->id));
    store::StepWrite step;
    step.messages = {{store::MessageKind::step, R"({"role":"assistant","content":"on B"})"}};
    step.state_json = R"({"iteration":1})";
    REQUIRE(b->journal.write_step(run->id, step));
    // A comes back: its writes are refused, so no step is written twice.
    auto late = a->journal.write_step(run->id, step);
    REQUIRE_FALSE(late);
    CHECK(late.error().code == "lease_lost");
    CHECK_THAT(late.error().message, Contains("host-b:200:1"));
    CHECK(b->journal.run_messages(run->id, 0).value().size() == 2);  // the prompt and B's step, nothing of A's
}

TEST_CASE("postgres: an event posted once is taken by exactly one host, whichever asks first", "[peer][postgres]") {
    std::string url = test::fresh_postgres_database();
    auto a = test::open_postgres_backend(url, "host-a:1:1");
    auto b = test::open_postgres_backend(url, "host-b:2:1");
    for (int i = 0; i < 200; ++i) REQUIRE(a->memory.post_event("c1", "torrent", json{{"n", i}}.dump()));
    std::vector<memory::PostedEvent> got_a, got_b;
    std::thread ta([&] {
        for (int i = 0; i < 50; ++i)
            for (auto& e : a->memory.take_events("c1")) got_a.push_back(e);
    });
    std::thread tb([&] {
        for (int i = 0; i < 50; ++i)
            for (auto& e : b->memory.take_events("c1")) got_b.push_back(e);
    });
    ta.join();
    tb.join();
    std::set<int64_t> ids;
    for (const auto& e : got_a) ids.insert(e.id);
    for (const auto& e : got_b) ids.insert(e.id);
    CHECK(got_a.size() + got_b.size() == 200);  // none twice …
    CHECK(ids.size() == 200);                   // … none lost
    // Plugin data and memory are the same on every host.
    REQUIRE(a->plugin_kv.set("torrent", "seen", "42", store::Flush::now));
    CHECK(b->plugin_kv.get("torrent", "seen").value() == std::optional<std::string>("42"));
    REQUIRE(a->memory.set("c1", "topic", R"("films")"));
    CHECK(b->memory.get("c1", "topic").value() == std::optional<std::string>(R"("films")"));
}

TEST_CASE("postgres: a host runs on the postgresql backend, and says what is missing when the URL is not set",
          "[peer][postgres]") {
    test::TempDir dir;
    std::string url = test::fresh_postgres_database();
    auto call = [](const std::string& name, json args) {
        return json{{"tool_calls", {{{"name", name}, {"arguments", std::move(args)}}}}};
    };
    json cassette{{"replies", {call("remember_fact", {{"fact", "the sky is blue"}}), {{"text", "Noted."}}}}};
    test::write_file(dir.path / "cassette.json", cassette.dump());
    test::write_file(dir.path / "agenthost.toml",
                     "data_dir = \"data\"\n[store]\nbackend = \"postgresql\"\nurl_env = \"TEST_PG_URL\"\n"
                     "[provider]\nuse = \"scripted\"\n[plugins.scripted]\ncassette = \"cassette.json\"\n");
    std::string cli = std::string(test::cli()) + " --config " + (dir.path / "agenthost.toml").string();
    auto missing = test::run_command("env -u TEST_PG_URL " + cli + " run 'remember it'");
    CHECK(missing.exit_code == 2);
    CHECK_THAT(missing.err, Contains("TEST_PG_URL") && Contains("not set") && Contains("agenthost.toml"));
    auto ran = test::run_command("TEST_PG_URL='" + url + "' " + cli + " run 'remember it'");
    INFO(ran.err);
    CHECK(ran.exit_code == 0);
    CHECK_THAT(ran.out, Contains("Noted."));
    // What the run wrote is in PostgreSQL: another host sees the run and the fact.
    auto other = test::open_postgres_backend(url, "host-z:1:1");
    auto runs = other->journal.runs("", 10).value();
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].status == RunStatus::completed);
    CHECK(runs[0].answer == "Noted.");
    auto facts = other->memory.facts();
    REQUIRE(facts.size() == 1);
    CHECK(facts[0].text == "the sky is blue");
    auto doctor = test::run_command("TEST_PG_URL='" + url + "' " + cli + " config");
    CHECK_THAT(doctor.out, Contains("postgresql") && !Contains(url));  // the URL is never shown
    // A database out of reach is not a configuration error: exit 1, not 2, naming the cause.
    auto down = test::run_command("TEST_PG_URL='postgresql://agenthost@127.0.0.1:1/x' " + cli + " doctor");
    CHECK(down.exit_code == 1);
    CHECK_THAT(down.err, Contains("could not connect to PostgreSQL") && Contains("TEST_PG_URL"));
    auto health = test::run_command("TEST_PG_URL='" + url + "' " + cli + " doctor");
    CHECK_THAT(health.out, Contains("store:     postgresql (URL from $TEST_PG_URL), takeover on") && !Contains(url));
    auto as_json = json::parse(test::run_command("TEST_PG_URL='" + url + "' " + cli + " doctor --json").out);
    CHECK(as_json["store"]["backend"] == "postgresql");
    CHECK(as_json["store"]["ready"] == true);
}

TEST_CASE("postgres: the shared event log keeps a run's events in order, replaces a renumbered one, and drops ended runs'",
          "[peer][postgres]") {
    auto store = test::open_postgres_backend();
    auto& log = store->events;
    auto run = store->journal.begin_run("c", agenthost::Mode::execute, "scripted", "hi", kPrompt);
    REQUIRE(run);
    std::vector<store::RunEvent> events;
    for (uint64_t seq = 1; seq <= 450; ++seq)
        events.push_back({run->id, seq, "token", json{{"text", std::to_string(seq)}}.dump()});
    REQUIRE(log.append(events));  // more rows than one statement takes
    CHECK(log.last_seq(run->id) == 450);
    CHECK(log.last_seq(run->id + 1) == 0);
    auto after = log.after(run->id, 440, 100);
    REQUIRE(after.size() == 10);
    CHECK(after.front().seq == 441);
    CHECK(after.back().seq == 450);
    CHECK(log.after(run->id, 0, 5).size() == 5);
    REQUIRE(log.append({{run->id, 450, "end", R"({"status":"completed"})"}}));  // the host running it now wins
    CHECK(log.after(run->id, 449, 10).at(0).name == "end");

    CHECK(log.prune(0).value() == 0);  // still running: kept
    store::RunEnd end;
    end.stop_reason = StopReason::answered;
    REQUIRE(store->journal.end_run(run->id, end));
    CHECK(log.prune(3600).value() == 0);  // ended just now: kept for followers that reconnect
    CHECK(log.prune(-1).value() == 450);
    CHECK(log.last_seq(run->id) == 0);
}

TEST_CASE("postgres: a URL libpq cannot parse is never echoed with its password, by the store or the CLI", "[peer][postgres]") {
    std::string good = test::fresh_postgres_database();
    std::string hostport = good.substr(good.find('@') + 1);  // 127.0.0.1:PORT/db
    const std::vector<std::pair<std::string, std::string>> urls{
        {" postgresql://agenthost:LEAKPW6@" + hostport, "LEAKPW6"},
        {"mysql://agenthost:LEAKPW7@" + hostport, "LEAKPW7"},
        {"postgresql//agenthost:LEAKPW8@" + hostport, "LEAKPW8"},
        {"postgresql://agenthost:LEAK[PW9@" + hostport, "LEAK[PW9"},
        {"postgresql://agenthost:FIRSTPART@SECONDPART@" + hostport, "SECONDPART"},
        {"host=127.0.0.1 port=1 user=agenthost password=KVSECRET1 dbname=x", "KVSECRET1"},
    };
    test::TempDir dir;
    test::write_file(dir.path / "agenthost.toml",
                     "data_dir = \"data\"\n[store]\nbackend = \"postgresql\"\nurl_env = \"TEST_PG_URL\"\n");
    for (const auto& [url, secret] : urls) {
        // (Trust authentication lets one with an unencoded '@' in its password in: nothing to show.)
        if (auto opened = postgres::Connection::open(url); !opened) {
            INFO(opened.error().message);
            CHECK_THAT(opened.error().message, !Contains(secret) && !Contains("FIRSTPART") && Contains("could not connect"));
        }
        auto doctor = test::run_command("TEST_PG_URL='" + url + "' '" + test::cli() + "' --config '" +
                                        (dir.path / "agenthost.toml").string() + "' doctor");
        INFO(doctor.out << doctor.err);
        CHECK_THAT(doctor.out + doctor.err, !Contains(secret) && !Contains("FIRSTPART"));
    }
    CHECK(postgres::without_secrets("bad postgresql://u:hunter2@h/db here", "postgresql://u:hunter2@h/db") == "bad *** here");
}

TEST_CASE("postgres: a run of this host whose lease lapsed (the database was out of reach) is recovered for takeover",
          "[peer][postgres]") {
    auto store = test::open_postgres_backend("", "host-a:100:1", 30);
    auto run = store->journal.begin_run("c", agenthost::Mode::execute, "scripted", "hi", kPrompt);
    REQUIRE(run);
    CHECK(store->journal.recover_interrupted().value() == 0);  // ours, lease fresh: executing
    // The heartbeat could not write while the database was down: the lease ran out.
    REQUIRE(store->session.with([&](postgres::Connection& db) -> Status {
        auto done = db.exec("UPDATE runs SET lease_until = 0 WHERE id = $1::bigint", {postgres::param(run->id)});
        if (!done) return done.error();
        return Ok{};
    }));
    CHECK(store->journal.recover_interrupted().value() == 1);
    CHECK(store->journal.run(run->id).value()->status == RunStatus::interrupted);
    REQUIRE(store->journal.interrupted_runs(10, std::nullopt).value().size() == 1);
    // The turn that held it, if still going, cannot write on.
    store::StepWrite step;
    step.messages = {{store::MessageKind::step, R"({"role":"assistant","content":"late"})"}};
    step.state_json = R"({"iteration":1})";
    auto late = store->journal.write_step(run->id, step);
    REQUIRE_FALSE(late);
    CHECK(late.error().code == "lease_lost");
}

TEST_CASE("postgres: a deleted conversation leaves no run events, cancel requests or keys of its runs behind",
          "[peer][postgres]") {
    std::string url = test::fresh_postgres_database();
    auto a = test::open_postgres_backend(url, "host-a:100:1", 30);
    auto run = a->journal.begin_run("gone", agenthost::Mode::execute, "scripted", "hi", kPrompt);
    REQUIRE(run);
    REQUIRE(a->events.append({{run->id, 1, "text", R"({"delta":"a"})"}}));
    REQUIRE(a->cancels.request(run->id));
    (void)a->idempotency_keys.begin("chat", "key-1", 7);
    a->idempotency_keys.started("chat", "key-1", run->id);
    auto count = [&](const char* table) {
        return a->session.with([&](postgres::Connection& db) -> int64_t {
            auto rows =
                db.exec(std::string("SELECT COUNT(*) FROM ") + table + " WHERE run = $1::bigint", {postgres::param(run->id)});
            return rows ? rows->integer(0, 0) : -1;
        });
    };
    for (const char* table : {"run_events", "run_cancels", "idempotency_keys"}) CHECK(count(table) == 1);
    auto deleted = a->journal.delete_conversation("gone");
    REQUIRE(deleted);
    CHECK(*deleted);
    for (const char* table : {"run_events", "run_cancels", "idempotency_keys"}) {
        CAPTURE(table);
        CHECK(count(table) == 0);
    }
}
