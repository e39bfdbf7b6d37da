// The run journal's contract, checked against every backend: the SQLite journal, the PostgreSQL
// one (on a real server the tests start) and the in-memory one the loop tests use.
#include "agent/memory_journal.hpp"
#include "postgres/pg_schema.hpp"
#include "postgres/pg_sql.hpp"
#include "sqlite/sqlite_sql.hpp"
#include "store/journal_sql.hpp"
#include "store/store_error.hpp"
#include "sqlite/sqlite_backend.hpp"
#include "support/postgres_server.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>

using namespace agenthost;
using namespace agenthost::store;

namespace {

// Renames the journal's tables away: every statement that reads them fails from then on.
void hide_tables(SqlConnection& sql) {
    for (const char* table : {"runs", "messages", "conversations", "tool_journal"})
        REQUIRE(sql.execute("ALTER TABLE " + std::string(table) + " RENAME TO " + table + "_hidden",
                            std::initializer_list<SqlValue>{}));
}

struct SqliteBackend {
    SqliteBackend() {
        auto opened = sqlite::open_backend(dir.path / "journal.db", sqlite::Durability::full, 30);
        REQUIRE(opened);
        backend = std::move(*opened);
    }
    RunJournal& journal() { return backend->journal; }
    // The run's lease runs out and recovery takes it (the store refused writes for that long).
    void lapse(int64_t run) {
        REQUIRE(backend->db->exec("UPDATE runs SET lease_until = unixepoch() - 1 WHERE id = " + std::to_string(run)));
        REQUIRE(journal().recover_interrupted().value() == 1);
    }
    // Runs `body` with the backend's store::SqlConnection.
    template <class Body>
    void with_sql(Body body) {
        sqlite::SqliteSql sql(*backend->db);
        body(sql);
    }
    // Every read fails from now on, as when the store's tables cannot be read.
    void break_reads() {
        with_sql([](SqlConnection& sql) { hide_tables(sql); });
    }
    test::TempDir dir;
    std::unique_ptr<sqlite::SqliteBackend> backend;
};

struct PostgresBackend {
    PostgresBackend() : store(test::open_postgres_backend()) {}
    RunJournal& journal() { return store->journal; }
    void lapse(int64_t run) {
        REQUIRE(store->session.with([&](postgres::Connection& db) -> Status {
            auto done = db.exec("UPDATE runs SET lease_until = 0 WHERE id = $1::bigint", {postgres::param(run)});
            if (!done) return done.error();
            return Ok{};
        }));
        REQUIRE(journal().recover_interrupted().value() == 1);
    }
    template <class Body>
    void with_sql(Body body) {
        store->session.with([&](postgres::Connection& db) {
            postgres::PgSql sql(db);
            body(sql);
            return 0;
        });
    }
    void break_reads() {
        with_sql([](SqlConnection& sql) { hide_tables(sql); });
    }
    std::unique_ptr<postgres::PgBackend> store;
};

struct MemoryBackend {
    RunJournal& journal() { return memory; }
    void lapse(int64_t run) { memory.mark_interrupted(run); }
    void break_reads() { memory.fail_reads(test::MemoryJournal::Reads::every); }
    test::TempDir dir;
    test::MemoryJournal memory;
};

const char* kPrompt = R"({"role":"user","content":"hi"})";

StepWrite step_with(std::vector<NewMessage> messages, std::string state) {
    StepWrite step;
    step.messages = std::move(messages);
    step.state_json = std::move(state);
    return step;
}

}  // namespace

TEMPLATE_TEST_CASE("run journal: turns are numbered per conversation and one run at a time runs", "[peer][journal]",
                   SqliteBackend, PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto first = j.begin_run("c1", agenthost::Mode::execute, "p", "hi", kPrompt);
    REQUIRE(first);
    CHECK(first->turn == 1);
    CHECK(first->status == RunStatus::running);
    CHECK(first->prompt.empty());  // the caller has it; a large prompt is not copied back
    REQUIRE(j.run(first->id).value());
    CHECK(j.run(first->id).value()->prompt == "hi");
    auto busy = j.begin_run("c1", agenthost::Mode::execute, "p", "again", kPrompt);
    REQUIRE_FALSE(busy);
    CHECK(busy.error().code == "conversation_busy");
    RunEnd end;
    end.stop_reason = StopReason::answered;
    end.answer = "hello";
    end.messages = {NewMessage{MessageKind::answer, R"({"role":"assistant","content":"hello"})"}};
    REQUIRE(j.end_run(first->id, end));
    auto second = j.begin_run("c1", agenthost::Mode::execute, "p", "again", kPrompt);
    REQUIRE(second);
    CHECK(second->turn == 2);
    auto other = j.begin_run("c2", agenthost::Mode::execute, "p", "elsewhere", kPrompt);
    REQUIRE(other);
    CHECK(other->turn == 1);
    // The exchanges before turn 2: the first turn's prompt and answer, no steps.
    auto exchanges = j.exchanges("c1", 2, 3).value();
    REQUIRE(exchanges.size() == 2);
    CHECK(exchanges[0].kind == MessageKind::prompt);
    CHECK(exchanges[1].kind == MessageKind::answer);
}

TEMPLATE_TEST_CASE("run journal: a step's messages, journal result and checkpoint are kept together", "[peer][journal]",
                   SqliteBackend, PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto run = j.begin_run("c1", agenthost::Mode::execute, "p", "hi", kPrompt);
    REQUIRE(run);
    REQUIRE(j.journal_intent(run->id, {"call_1", "push_task", "{}"}, store::Flush::now));
    CHECK(j.journal(run->id, "call_1").value()->status == agenthost::store::CallStatus::started);
    StepWrite step =
        step_with({{MessageKind::step, R"({"role":"tool","content":"ok"})", R"({"content":"ok"})"}}, R"({"iteration":1})");
    step.journal_call_id = "call_1";  // its result: the tool message's
    step.counters = {1, 1, 10, 5};
    auto ids = j.write_step(run->id, step);
    REQUIRE(ids);
    REQUIRE(ids->size() == 1);
    auto entry = j.journal(run->id, "call_1").value();
    REQUIRE(entry);
    CHECK(entry->status == agenthost::store::CallStatus::done);
    CHECK(entry->result == R"({"content":"ok"})");
    // An intent for a call that finished does not undo it.
    REQUIRE(j.journal_intent(run->id, {"call_1", "push_task", "{}"}, store::Flush::now));
    CHECK(j.journal(run->id, "call_1").value()->status == agenthost::store::CallStatus::done);
    auto cp = j.last_checkpoint(run->id).value();
    REQUIRE(cp);
    CHECK(cp->state_json == R"({"iteration":1})");
    CHECK(cp->last_message == ids->back());
    auto messages = j.run_messages(run->id, 0).value();
    REQUIRE(messages.size() == 2);
    CHECK(messages[0].kind == MessageKind::prompt);
    CHECK(messages[1].result == R"({"content":"ok"})");
    CHECK(j.run(run->id).value()->counters.tool_calls == 1);
    CHECK(j.run(run->id).value()->messages == 2);  // the prompt and the step's tool result
    CHECK(j.runs("c1", 10).value().front().messages == 2);
    CHECK_FALSE(j.journal(run->id, "call_2").value());
}

TEMPLATE_TEST_CASE("run journal: the run begin_run hands back is the run as stored, field for field", "[peer][journal]",
                   SqliteBackend, PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto begun = j.begin_run("c1", Mode::plan, "p", "hi", kPrompt);
    REQUIRE(begun);
    auto stored = j.run(begun->id).value();
    REQUIRE(stored);
    CHECK(begun->conversation == stored->conversation);
    CHECK(begun->turn == stored->turn);
    CHECK(begun->status == stored->status);
    CHECK(begun->mode == stored->mode);
    CHECK(stored->mode == Mode::plan);  // not the default: the word is written and read back
    CHECK(begun->provider == stored->provider);
    CHECK(begun->messages == stored->messages);  // the prompt: 1
    CHECK(stored->messages == 1);
    CHECK(begun->recoveries == stored->recoveries);
    CHECK(begun->origin == stored->origin);
    CHECK(begun->counters.iterations == stored->counters.iterations);
    CHECK(begun->counters.tool_calls == stored->counters.tool_calls);
    CHECK(begun->prompt.empty());  // never handed back: a prompt may be megabytes (the store has it)
    CHECK(begun->model == stored->model);
    CHECK(begun->after_turn == stored->after_turn);
    CHECK(stored->after_turn == 0);  // the first turn follows none
}

TEMPLATE_TEST_CASE("run journal: a run after an earlier turn starts a branch, and its model sees that branch only",
                   "[peer][journal]", SqliteBackend, PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    // Turns 1, 2, 3 one after another, each answered with its own word.
    auto answer = [&](int64_t run, const std::string& word) {
        RunEnd end;
        end.stop_reason = StopReason::answered;
        end.answer = word;
        end.messages = {NewMessage{MessageKind::answer, R"({"role":"assistant","content":")" + word + "\"}"}};
        REQUIRE(j.end_run(run, end));
    };
    auto start = [&](std::optional<int64_t> after, const std::string& model = "") {
        RunStart how;
        how.model = model;
        how.after_turn = after;
        auto run = j.begin_run("c1", Mode::execute, "p", "q", kPrompt, "", how);
        REQUIRE(run);
        return *run;
    };
    for (const char* word : {"one", "two", "three"}) answer(start(std::nullopt).id, word);
    // Turn 4 edits turn 2's prompt: it follows turn 1; turn 5 follows turn 4 (the newest).
    RunRecord edit = start(1, "model-x");
    CHECK(edit.turn == 4);
    CHECK(edit.after_turn == 1);
    CHECK(edit.model == "model-x");
    auto stored = j.run(edit.id).value();
    REQUIRE(stored);
    CHECK(stored->after_turn == 1);
    CHECK(stored->model == "model-x");
    answer(edit.id, "four");
    RunRecord next = start(std::nullopt);
    CHECK(next.after_turn == 4);
    answer(next.id, "five");
    auto turns_of = [](const std::vector<StoredMessage>& messages) {
        std::vector<int64_t> turns;
        for (const auto& m : messages)
            if (m.kind == MessageKind::answer) turns.push_back(m.turn);
        return turns;
    };
    CHECK(turns_of(j.exchanges("c1", 4, 10).value()) == std::vector<int64_t>{1});
    CHECK(turns_of(j.exchanges("c1", 5, 10).value()) == std::vector<int64_t>{1, 4});
    CHECK(turns_of(j.exchanges("c1", 3, 10).value()) == std::vector<int64_t>{1, 2});
    CHECK(turns_of(j.exchanges("c1", 6, 10).value()) == std::vector<int64_t>{1, 4, 5});  // the next turn: after the newest
    CHECK(turns_of(j.exchanges("c1", 6, 2).value()) == std::vector<int64_t>{4, 5});      // at most `turns`, the nearest
    CHECK(j.exchanges("c1", 6, 0).value().empty());
    // A regenerated first answer follows nothing: its model sees no earlier exchange.
    RunRecord fresh = start(0);
    CHECK(fresh.after_turn == 0);
    CHECK(j.exchanges("c1", fresh.turn, 10).value().empty());
    // A new conversation is titled with its first prompt's words.
    CHECK(j.conversation("c1").value()->title == "q");
}

TEMPLATE_TEST_CASE("run journal: an ended run reads back every field it was written with, through every read", "[peer][journal]",
                   SqliteBackend, PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto begun = j.begin_run("c1", agenthost::Mode::execute, "p", "hi there", kPrompt, "", RunStart{{}, RunOrigin::server});
    REQUIRE(begun);
    REQUIRE(j.write_step(begun->id, step_with({{MessageKind::step, R"({"role":"assistant","content":"a"})"}}, R"({"i":1})")));
    RunEnd end;
    end.stop_reason = StopReason::iteration_limit;
    end.error = "the step cap was reached";
    end.answer = "partial";
    end.counters = {3, 2, 120, 45};
    end.messages.push_back({MessageKind::answer, R"({"role":"assistant","content":"partial"})"});
    REQUIRE(j.end_run(begun->id, end));

    auto check_fields = [&](const RunRecord& r) {
        CHECK(r.id == begun->id);
        CHECK(r.conversation == "c1");
        CHECK(r.turn == 1);
        CHECK(r.mode == Mode::execute);
        CHECK(r.provider == "p");
        CHECK(r.prompt == "hi there");
        CHECK(r.stop_reason == StopReason::iteration_limit);
        CHECK(r.status == stop_info(StopReason::iteration_limit).status);
        CHECK(r.error_code == std::string(stop_info(StopReason::iteration_limit).error_code));
        CHECK(r.error == "the step cap was reached");
        CHECK(r.answer == "partial");
        CHECK(r.counters.iterations == 3);
        CHECK(r.counters.tool_calls == 2);
        CHECK(r.counters.input_tokens == 120);
        CHECK(r.counters.output_tokens == 45);
        CHECK(r.messages == 3);  // the prompt, the step's reply, the answer
        CHECK(r.recoveries == 0);
        CHECK(r.origin == RunOrigin::server);
        CHECK(r.started_at > 0);
        CHECK(r.updated_at >= r.started_at);
        CHECK(r.ended_at >= r.started_at);
    };
    auto one = j.run(begun->id).value();
    REQUIRE(one);
    check_fields(*one);
    auto listed = j.runs("c1", 10).value();
    REQUIRE(listed.size() == 1);
    check_fields(listed[0]);
    auto everywhere = j.runs("", 10).value();
    REQUIRE(everywhere.size() == 1);
    check_fields(everywhere[0]);
    auto summary = j.conversation("c1").value();
    REQUIRE(summary);
    CHECK(summary->runs == 1);
    CHECK(summary->last_prompt == "hi there");
    CHECK(summary->created_at > 0);
    CHECK(summary->updated_at >= summary->created_at);
}

TEMPLATE_TEST_CASE("run journal: a run's inputs are stored with its start", "[peer][journal]", SqliteBackend, PostgresBackend,
                   MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    const std::string inputs = R"({"history":[{"role":"user","content":"earlier"}],"request_context":"{}","notifications":[]})";
    auto with = j.begin_run("c1", agenthost::Mode::execute, "p", "hi", kPrompt, inputs);
    REQUIRE(with);
    CHECK(j.run_inputs(with->id).value() == inputs);
    CHECK_FALSE(j.last_checkpoint(with->id).value());  // inputs are not a checkpoint: a resume starts from the prompt
    auto without = j.begin_run("c2", agenthost::Mode::execute, "p", "hi", kPrompt);
    REQUIRE(without);
    CHECK(j.run_inputs(without->id).value().empty());
    CHECK(j.run_inputs(987654).value().empty());
}

TEMPLATE_TEST_CASE("run journal: a write that may wait for the disk is kept like any other", "[peer][journal]", SqliteBackend,
                   PostgresBackend, MemoryBackend) {
    // Flush::with_next only lets the store return before its log reaches the disk: what it wrote
    // reads back at once, and the next write that flushes carries it.
    TestType backend;
    RunJournal& j = backend.journal();
    auto run = j.begin_run("c1", agenthost::Mode::execute, "p", "hi", kPrompt);
    REQUIRE(run);
    StepWrite held =
        step_with({{MessageKind::step, R"({"role":"assistant","content":"","tool_calls":[]})"}}, R"({"iteration":1})");
    held.intent = ToolIntent{"call_1", "list_tasks", "{}"};
    held.flush = Flush::with_next;
    auto held_ids = j.write_step(run->id, held);
    REQUIRE(held_ids);
    REQUIRE(j.journal_intent(run->id, {"call_2", "list_tasks", "{}"}, Flush::with_next));
    CHECK(j.journal(run->id, "call_1").value()->status == agenthost::store::CallStatus::started);
    CHECK(j.journal(run->id, "call_2").value()->status == agenthost::store::CallStatus::started);
    CHECK(j.last_checkpoint(run->id).value()->last_message == held_ids->back());
    StepWrite result =
        step_with({{MessageKind::step, R"({"role":"tool","content":"ok"})", R"({"content":"ok"})"}}, R"({"iteration":2})");
    result.journal_call_id = "call_1";
    REQUIRE(j.write_step(run->id, result));
    CHECK(j.journal(run->id, "call_1").value()->status == agenthost::store::CallStatus::done);
    CHECK(j.journal(run->id, "call_1").value()->result == R"({"content":"ok"})");
    CHECK(j.last_checkpoint(run->id).value()->state_json == R"({"iteration":2})");
    CHECK(j.run_messages(run->id, 0).value().size() == 3);
}

// The stores only: the in-memory journal of the loop tests keeps every checkpoint and compacts nothing.
TEMPLATE_TEST_CASE(
    "run journal: the latest checkpoint is what resume reads and compact drops it with the journal but never messages",
    "[peer][journal]", SqliteBackend, PostgresBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto run = j.begin_run("c1", agenthost::Mode::execute, "p", "hi", kPrompt);
    REQUIRE(run);
    CHECK_FALSE(j.last_checkpoint(run->id).value());
    // A checkpoint written with no message covers the run's newest one: here its prompt.
    REQUIRE(j.write_step(run->id, step_with({}, R"({"iteration":0})")));
    auto first = j.last_checkpoint(run->id).value();
    REQUIRE(first);
    CHECK(first->step == 1);
    CHECK(first->last_message == j.run_messages(run->id, 0).value().back().id);
    auto ids =
        j.write_step(run->id, step_with({{MessageKind::step, R"({"role":"assistant","content":"a"})"}}, R"({"iteration":1})"));
    REQUIRE(ids);
    REQUIRE(j.write_step(run->id, step_with({}, R"({"iteration":2})")));
    auto latest = j.last_checkpoint(run->id).value();
    REQUIRE(latest);
    CHECK(latest->step == 3);
    CHECK(latest->state_json == R"({"iteration":2})");
    CHECK(latest->last_message == ids->back());
    // An end without a state keeps the checkpoint; one with a state replaces it.
    RunEnd pause;
    pause.stop_reason = StopReason::approval_pending;
    REQUIRE(j.end_run(run->id, pause));
    CHECK(j.last_checkpoint(run->id).value()->state_json == R"({"iteration":2})");
    REQUIRE(j.claim(run->id));
    RunEnd end;
    end.stop_reason = StopReason::answered;
    end.state_json = R"({"iteration":3})";
    end.messages = {NewMessage{MessageKind::answer, R"({"role":"assistant","content":"done"})"}};
    REQUIRE(j.end_run(run->id, end));
    CHECK(j.last_checkpoint(run->id).value()->step == 4);
    CHECK(j.last_checkpoint(run->id).value()->last_message == j.run_messages(run->id, 0).value().back().id);
    auto newer = j.begin_run("c1", agenthost::Mode::execute, "p", "again", kPrompt);
    REQUIRE(newer);
    REQUIRE(j.write_step(newer->id, step_with({}, R"({"iteration":0})")));
    size_t messages = j.all("c1").value().size();
    auto dropped = j.compact(0, 365);  // keeps no finished run
    REQUIRE(dropped);
    CHECK(*dropped == 1);  // the finished run's checkpoint (it journaled no call)
    CHECK_FALSE(j.last_checkpoint(run->id).value());
    CHECK(j.last_checkpoint(newer->id).value());  // still running: kept
    CHECK(j.all("c1").value().size() == messages);
}

TEMPLATE_TEST_CASE("run journal: a step carries its first call's intent, and an end carries the steps not yet written",
                   "[peer][journal]", SqliteBackend, PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto run = j.begin_run("c1", agenthost::Mode::execute, "p", "hi", kPrompt);
    REQUIRE(run);
    StepWrite reply = step_with({{MessageKind::step, R"({"role":"assistant","content":"","tool_calls":[{"id":"call_1"}]})"}},
                                R"({"iteration":1,"pending":["call_1"]})");
    reply.intent = ToolIntent{"call_1", "push_task", R"({"task":"x"})"};
    auto ids = j.write_step(run->id, reply);
    REQUIRE(ids);
    // The reply, the call's start and the checkpoint that still lists it as pending: one commit.
    CHECK(j.journal(run->id, "call_1").value()->status == agenthost::store::CallStatus::started);
    CHECK(j.last_checkpoint(run->id).value()->last_message == ids->front());
    // An intent riding with a later step does not undo a call that finished.
    StepWrite result =
        step_with({{MessageKind::step, R"({"role":"tool","content":"ok"})", R"({"content":"ok"})"}}, R"({"iteration":1})");
    result.journal_call_id = "call_1";
    REQUIRE(j.write_step(run->id, result));
    StepWrite again = step_with({}, R"({"iteration":2})");
    again.intent = ToolIntent{"call_1", "push_task", "{}"};
    REQUIRE(j.write_step(run->id, again));
    CHECK(j.journal(run->id, "call_1").value()->status == agenthost::store::CallStatus::done);

    RunEnd end;
    end.stop_reason = StopReason::approval_pending;
    end.messages = {NewMessage{MessageKind::step, R"({"role":"assistant","content":"","tool_calls":[{"id":"call_2"}]})"},
                    NewMessage{MessageKind::step, R"({"role":"user","content":"a note"})"}};
    end.state_json = R"({"iteration":3})";
    REQUIRE(j.end_run(run->id, end));
    auto messages = j.run_messages(run->id, 0).value();
    REQUIRE(messages.size() == 5);  // prompt, reply, result, and the end's two in order
    CHECK(messages[3].body.find("call_2") != std::string::npos);
    CHECK(messages[4].body.find("a note") != std::string::npos);
    CHECK(j.last_checkpoint(run->id).value()->last_message == messages[4].id);
    CHECK(j.run(run->id).value()->status == RunStatus::paused);
}

TEMPLATE_TEST_CASE("run journal: a run's end sets status and code from the stop reason, and only resumable runs are claimed",
                   "[peer][journal]", SqliteBackend, PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto end_with = [&](const std::string& conversation, StopReason reason) {
        auto run = j.begin_run(conversation, agenthost::Mode::execute, "p", "hi", kPrompt);
        REQUIRE(run);
        RunEnd end;
        end.stop_reason = reason;
        end.error = "why";
        if (reason == StopReason::approval_pending) end.state_json = R"({"awaiting":"approve me"})";
        REQUIRE(j.end_run(run->id, end));
        return run->id;
    };
    int64_t limited = end_with("a", StopReason::rate_limit);
    auto record = j.run(limited).value();
    REQUIRE(record);
    CHECK(record->status == RunStatus::failed);
    CHECK(record->stop_reason == StopReason::rate_limit);
    CHECK(record->error_code == "RATE_LIMITED");
    CHECK(resumable(*record));
    REQUIRE(j.claim(limited));
    CHECK(j.run(limited).value()->status == RunStatus::running);
    CHECK_FALSE(j.run(limited).value()->stop_reason);  // a claimed run shows no old result
    CHECK(j.run(limited).value()->error_code.empty());

    int64_t looped = end_with("b", StopReason::loop_detected);
    auto refused = j.claim(looped);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == "run_not_resumable");
    CHECK(refused.error().message.find("failed") != std::string::npos);

    int64_t paused = end_with("c", StopReason::approval_pending);
    CHECK(j.run(paused).value()->status == RunStatus::paused);
    REQUIRE(j.paused_run("c").value());
    CHECK(j.paused_run("c").value()->id == paused);
    CHECK(j.last_checkpoint(paused).value()->state_json == R"({"awaiting":"approve me"})");
    CHECK_FALSE(j.paused_run("a").value());
    // The paused run holds its conversation: a new run is refused, naming it, until it is decided.
    auto past = j.begin_run("c", agenthost::Mode::execute, "p", "next", kPrompt);
    REQUIRE_FALSE(past);
    CHECK(store::is(past.error(), store::StoreFault::approval_pending));
    CHECK(past.error().message.find("run " + std::to_string(paused)) != std::string::npos);
    CHECK(j.runs("c", 10).value().size() == 1);

    auto missing = j.claim(9999);
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == "store_not_found");
}

TEMPLATE_TEST_CASE("run journal: stats count runs by status, tokens, and tool calls by outcome", "[peer][journal]", SqliteBackend,
                   PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto run = j.begin_run("c1", agenthost::Mode::execute, "p", "hi", kPrompt);
    REQUIRE(run);
    REQUIRE(j.journal_intent(run->id, {"ok_call", "push_task", "{}"}, store::Flush::now));
    REQUIRE(j.journal_intent(run->id, {"bad_call", "push_task", "{}"}, store::Flush::now));
    REQUIRE(j.journal_intent(run->id, {"lost_call", "pop_task", "{}"}, store::Flush::now));
    StepWrite ok = step_with({{MessageKind::step, R"({"role":"tool","content":"ok"})", R"({"content":"ok"})"}}, "{}");
    ok.journal_call_id = "ok_call";
    REQUIRE(j.write_step(run->id, ok));
    StepWrite bad =
        step_with({{MessageKind::step, R"({"role":"tool","content":"no"})", R"({"content":"no","is_error":true})"}}, "{}");
    bad.journal_call_id = "bad_call";
    bad.journal_error_code = "TOOL_FAILURE";
    REQUIRE(j.write_step(run->id, bad));
    RunEnd end;
    end.stop_reason = StopReason::answered;
    end.counters = {2, 3, 100, 40};
    REQUIRE(j.end_run(run->id, end));
    REQUIRE(j.begin_run("c2", agenthost::Mode::execute, "p", "hi", kPrompt));

    JournalStats stats = j.stats().value();
    using Pair = std::pair<std::string, int64_t>;
    CHECK(stats.runs_by_status == std::vector<Pair>{{"completed", 1}, {"running", 1}});
    CHECK(stats.iterations == 2);
    CHECK(stats.input_tokens == 100);
    CHECK(stats.output_tokens == 40);
    REQUIRE(stats.tool_calls.size() == 3);
    CHECK((stats.tool_calls[0].tool == "pop_task" && stats.tool_calls[0].outcome == "unfinished"));
    CHECK((stats.tool_calls[1].tool == "push_task" && stats.tool_calls[1].outcome == "error"));
    CHECK((stats.tool_calls[2].tool == "push_task" && stats.tool_calls[2].outcome == "ok" && stats.tool_calls[2].count == 1));
}

TEMPLATE_TEST_CASE("run journal: interrupted runs to take over are the newest of their conversation, longest waiting first",
                   "[peer][journal]", SqliteBackend, PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto interrupted = [&](const std::string& conversation) {
        auto run = j.begin_run(conversation, agenthost::Mode::execute, "p", "hi", kPrompt);
        REQUIRE(run);
        RunEnd end;
        end.stop_reason = StopReason::interrupted;
        end.state_json = R"({"iteration":1})";
        REQUIRE(j.end_run(run->id, end));
        return run->id;
    };
    int64_t first = interrupted("a");
    int64_t superseded = interrupted("b");
    auto later = j.begin_run("b", agenthost::Mode::execute, "p", "again", kPrompt);  // a later turn went on without it
    REQUIRE(later);
    RunEnd done;
    done.stop_reason = StopReason::answered;
    REQUIRE(j.end_run(later->id, done));
    int64_t second = interrupted("c");
    auto running = j.begin_run("d", agenthost::Mode::execute, "p", "hi", kPrompt);
    REQUIRE(running);

    auto waiting = j.interrupted_runs(10, std::nullopt).value();
    REQUIRE(waiting.size() == 2);
    CHECK(waiting[0].id == first);
    CHECK(waiting[1].id == second);
    CHECK(j.interrupted_runs(1, std::nullopt).value().size() == 1);
    REQUIRE(j.claim(first));  // taken by a host: no longer waiting
    REQUIRE(j.interrupted_runs(10, std::nullopt).value().size() == 1);
    CHECK(j.interrupted_runs(10, std::nullopt).value()[0].id == second);
    (void)superseded;
}

TEMPLATE_TEST_CASE("run journal: a run keeps who started it, and interrupted runs are found by it", "[peer][journal]",
                   SqliteBackend, PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto interrupted = [&](const std::string& conversation, RunOrigin origin) {
        auto run = j.begin_run(conversation, agenthost::Mode::execute, "p", "hi", kPrompt, "", RunStart{RunKey{}, origin});
        REQUIRE(run);
        CHECK(run->origin == origin);
        RunEnd end;
        end.stop_reason = StopReason::interrupted;
        end.state_json = R"({"iteration":1})";
        REQUIRE(j.end_run(run->id, end));
        return run->id;
    };
    int64_t terminal = interrupted("a", RunOrigin::cli);
    int64_t served = interrupted("b", RunOrigin::server);
    CHECK(j.run(terminal).value()->origin == RunOrigin::cli);
    CHECK(j.run(served).value()->origin == RunOrigin::server);
    CHECK(j.begin_run("c", agenthost::Mode::execute, "p", "hi", kPrompt)->origin == RunOrigin::cli);  // the default

    auto servers = j.interrupted_runs(10, RunOrigin::server).value();
    REQUIRE(servers.size() == 1);
    CHECK(servers[0].id == served);
    auto terminals = j.interrupted_runs(10, RunOrigin::cli).value();
    REQUIRE(terminals.size() == 1);
    CHECK(terminals[0].id == terminal);
    CHECK(j.interrupted_runs(10, std::nullopt).value().size() == 2);
}

TEMPLATE_TEST_CASE("run journal: the listing shows a long prompt's first characters, never cutting one in two", "[peer][journal]",
                   SqliteBackend, PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    std::string long_prompt;
    for (int i = 0; i < 1000; ++i) long_prompt += "é";
    REQUIRE(j.begin_run("long", agenthost::Mode::execute, "p", long_prompt, kPrompt));
    std::string preview;
    for (int i = 0; i < kPromptPreviewChars; ++i) preview += "é";
    CHECK(j.conversations(10).value()[0].last_prompt == preview);
    CHECK(j.conversation("long").value()->last_prompt == preview);
    CHECK(j.run(j.runs("long", 1).value()[0].id).value()->prompt == long_prompt);  // the run keeps it whole
}

TEMPLATE_TEST_CASE("run journal: conversations are renamed without moving in the list, cleared, and deleted with their title",
                   "[peer][journal]", SqliteBackend, PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto older = j.begin_run("older", agenthost::Mode::execute, "p", "first prompt", kPrompt);
    REQUIRE(older);
    auto newer = j.begin_run("newer", agenthost::Mode::execute, "p", "second prompt", kPrompt);
    REQUIRE(newer);
    CHECK(j.conversation("older").value()->title == "first prompt");  // titled with its first prompt's words

    auto renamed = j.rename_conversation("older", "Holiday plans — été");
    REQUIRE(renamed);
    CHECK(*renamed);
    auto list = j.conversations(10).value();
    REQUIRE(list.size() == 2);
    CHECK(list[0].id == "newer");  // renaming is not activity: the order stays
    CHECK(list[1].id == "older");
    CHECK(list[1].title == "Holiday plans — été");
    CHECK(list[1].last_prompt == "first prompt");
    CHECK(list[0].title == "second prompt");
    auto one = j.conversation("older").value();
    REQUIRE(one);
    CHECK(one->title == "Holiday plans — été");
    CHECK(one->runs == 1);
    CHECK(one->updated_at == list[1].updated_at);
    CHECK_FALSE(j.conversation("nobody").value());

    REQUIRE(j.rename_conversation("older", "").value());  // an empty title clears it
    CHECK(j.conversation("older").value()->title.empty());
    auto unknown = j.rename_conversation("nobody", "x");
    REQUIRE(unknown);
    CHECK_FALSE(*unknown);
    CHECK_FALSE(j.conversation("nobody").value());  // renaming does not create it

    REQUIRE(j.rename_conversation("newer", "Gone soon").value());
    RunEnd end;
    end.stop_reason = StopReason::answered;
    REQUIRE(j.end_run(newer->id, end));
    REQUIRE(j.delete_conversation("newer").value());
    CHECK_FALSE(j.conversation("newer").value());
    CHECK_FALSE(j.rename_conversation("newer", "back?").value());
    REQUIRE(j.conversations(10).value().size() == 1);
    // A conversation started again under the same id has its new first prompt's title, not the old name.
    REQUIRE(j.begin_run("newer", agenthost::Mode::execute, "p", "again", kPrompt));
    CHECK(j.conversation("newer").value()->title == "again");
}

TEST_CASE("run journal: a new conversation's title is its first prompt's first words, on one line", "[unit][journal]") {
    CHECK(title_from_prompt("  What is\nthe  weather\tlike? ") == "What is the weather like?");
    CHECK(title_from_prompt("").empty());
    CHECK(title_from_prompt("\x1b[31m red") == "[31m red");  // control characters are not kept
    const std::string words = "Plan a three day trip to Lisbon with museums, food markets and a day at the beach in Cascais";
    const std::string title = title_from_prompt(words);
    CHECK(title == "Plan a three day trip to Lisbon with museums, food markets…");  // cut after a whole word
    CHECK(conversation_title(title).value() == title);
    std::string accented;
    for (int i = 0; i < 80; ++i) accented += "é";  // one word longer than a title: cut inside it, never inside a character
    const std::string cut = title_from_prompt(accented);
    CHECK(cut.size() == kTitleFromPromptCharacters * 2 + std::string("…").size());
    CHECK(conversation_title(cut));
    CHECK(title_from_prompt("ok\xff\xfe rest") == "ok");  // invalid UTF-8 ends the words
}

TEST_CASE("run journal: titles are trimmed, at most 200 characters, and hold no control or invisible characters",
          "[peer][journal]") {
    CHECK(conversation_title("  Trip to Lisbon \n").value() == "Trip to Lisbon");
    CHECK(conversation_title("   ")->empty());
    CHECK(conversation_title("")->empty());
    std::string accented;
    for (int i = 0; i < 200; ++i) accented += "é";  // 200 characters, 400 bytes
    CHECK(conversation_title(accented).value() == accented);
    auto long_one = conversation_title(accented + "e");
    REQUIRE_FALSE(long_one);
    CHECK(long_one.error().code == "invalid_title");
    CHECK_THAT(long_one.error().message, Catch::Matchers::Contains("201 characters") && Catch::Matchers::Contains("at most 200"));
    for (const std::string& bad : {std::string("two\nlines"), std::string("tab\there"), std::string("bell\x07"),
                                   std::string("esc\x1b[31m"), std::string("c1\xc2\x85"), std::string("bidi\xe2\x80\xae")}) {
        auto refused = conversation_title(bad);
        REQUIRE_FALSE(refused);
        CHECK_THAT(refused.error().message, Catch::Matchers::Contains("control character"));
    }
    // Invisible characters (an outside try's finding): marks, zero-width, fillers and tags are refused,
    // Unicode spaces at the ends are trimmed like ASCII ones.
    for (const std::string& bad :
         {std::string("rlm\xe2\x80\x8f"), std::string("alm\xd8\x9c"), std::string("zw\xe2\x80\x8bsp"),
          std::string("bom\xef\xbb\xbf"), std::string("tag\xf3\xa0\x81\x81"), std::string("filler\xe3\x85\xa4")}) {
        auto refused = conversation_title(bad);
        REQUIRE_FALSE(refused);
        CHECK_THAT(refused.error().message, Catch::Matchers::Contains("invisible"));
    }
    CHECK(conversation_title("\xe3\x80\x80\xe3\x80\x80")->empty());
    CHECK(conversation_title("\xc2\xa0Trip\xe3\x80\x80to Lisbon\xe2\x80\x83").value() == "Trip\xe3\x80\x80to Lisbon");
    CHECK_THAT(conversation_title("broken \xff utf-8").error().message, Catch::Matchers::Contains("UTF-8"));
    CHECK_FALSE(conversation_title("overlong \xc0\xaf"));
}

TEST_CASE("run journal: a PostgreSQL database of schema 5 migrates, and its runs keep their latest checkpoint",
          "[peer][journal]") {
    const std::string url = test::fresh_postgres_database();
    {
        auto db = postgres::Connection::open(url);
        REQUIRE(db);
        std::string sql =
            "CREATE TABLE agenthost_schema (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now());";
        for (int v = 1; v <= 5; ++v)
            sql += std::string(postgres::migration_sql(v)) + ";INSERT INTO agenthost_schema (version) VALUES (" +
                   std::to_string(v) + ");";
        // A paused run with two checkpoints: only the later one is needed to resume it.
        sql +=
            "INSERT INTO runs (conversation, turn, status, mode, provider, prompt, started_at, updated_at)"
            " VALUES ('c', 1, 'paused', 'execute', 'scripted', 'p', 1, 1);"
            "INSERT INTO checkpoints (run, step, last_message, state, created_at) VALUES (1, 1, 0, '{\"older\":1}', 1),"
            " (1, 2, 0, '{\"newer\":2}', 2);";
        REQUIRE((*db)->exec_script(sql));
    }
    auto store = test::open_postgres_backend(url);
    auto cp = store->journal.last_checkpoint(1).value();
    REQUIRE(cp);
    CHECK(cp->step == 2);
    CHECK(cp->state_json == R"({"newer":2})");
    CHECK(store->journal.run(1).value()->status == RunStatus::paused);
}

TEMPLATE_TEST_CASE("run journal: a run id is never given twice, the newest deleted included", "[peer][journal]", SqliteBackend,
                   PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto kept = j.begin_run("kept", agenthost::Mode::execute, "p", "hi", kPrompt);
    REQUIRE(kept);
    auto newest = j.begin_run("gone", agenthost::Mode::execute, "p", "hi", kPrompt);
    REQUIRE(newest);
    RunEnd end;
    end.stop_reason = StopReason::answered;
    REQUIRE(j.end_run(newest->id, end));
    REQUIRE(j.delete_conversation("gone"));
    auto next = j.begin_run("new", agenthost::Mode::execute, "p", "hi", kPrompt);
    REQUIRE(next);
    CHECK(next->id > newest->id);  // a client asking for the deleted run's id never sees this one
}

TEMPLATE_TEST_CASE("run journal: an Idempotency-Key is kept with its run and starts one run", "[peer][journal]", SqliteBackend,
                   PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto none = j.run_for_key("chat\nk-1");
    REQUIRE(none);
    CHECK_FALSE(*none);
    auto first = j.begin_run("c1", agenthost::Mode::execute, "p", "hi", kPrompt, "", RunStart{RunKey{"chat\nk-1", 42}});
    REQUIRE(first);
    auto found = j.run_for_key("chat\nk-1");
    REQUIRE(found);
    REQUIRE(*found);
    CHECK((*found)->run == first->id);
    CHECK((*found)->print == 42);
    // The same key starts nothing more, on the same conversation or another, running or ended.
    auto again = j.begin_run("c2", agenthost::Mode::execute, "p", "hi", kPrompt, "", RunStart{RunKey{"chat\nk-1", 42}});
    REQUIRE_FALSE(again);
    CHECK(again.error().code == "idempotency_key_used");
    RunEnd end;
    end.stop_reason = StopReason::answered;
    REQUIRE(j.end_run(first->id, end));
    CHECK(j.begin_run("c1", agenthost::Mode::execute, "p", "hi", kPrompt, "", RunStart{RunKey{"chat\nk-1", 42}}).error().code ==
          "idempotency_key_used");
    // Another route's key of the same text is another key; runs without a key are not counted.
    CHECK(j.begin_run("c3", agenthost::Mode::execute, "p", "hi", kPrompt, "", RunStart{RunKey{"completions\nk-1", 42}}));
    CHECK(j.begin_run("c4", agenthost::Mode::execute, "p", "hi", kPrompt));
    CHECK(j.begin_run("c5", agenthost::Mode::execute, "p", "hi", kPrompt));
}

TEMPLATE_TEST_CASE("run journal: a run recovered from under its writer refuses every late write", "[peer][journal]",
                   SqliteBackend, PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto run = j.begin_run("c1", Mode::execute, "p", "hi", kPrompt);
    REQUIRE(run);
    REQUIRE(j.journal_intent(run->id, {"call_1", "rename", "{}"}, Flush::now));
    backend.lapse(run->id);  // the lease ran out and the run was recovered as interrupted
    REQUIRE(j.run(run->id).value()->status == RunStatus::interrupted);

    // Nothing the old writer sends lands: above all no intent, so a changing call never starts.
    for (Flush flush : {Flush::now, Flush::with_next}) {
        auto intent = j.journal_intent(run->id, {"call_2", "rename", "{}"}, flush);
        REQUIRE_FALSE(intent);
        CHECK(intent.error().code == "lease_lost");
    }
    CHECK_FALSE(j.journal(run->id, "call_2").value());
    auto step = j.write_step(run->id, step_with({{MessageKind::step, R"({"role":"assistant","content":"late"})", ""}}, ""));
    REQUIRE_FALSE(step);
    CHECK(step.error().code == "lease_lost");
    RunEnd end;
    end.stop_reason = StopReason::answered;
    auto ended = j.end_run(run->id, end);
    REQUIRE_FALSE(ended);
    CHECK(ended.error().code == "lease_lost");
    CHECK(j.run(run->id).value()->status == RunStatus::interrupted);

    // Claimed again, the run is written to as before.
    REQUIRE(j.claim(run->id));
    CHECK(j.journal_intent(run->id, {"call_2", "rename", "{}"}, Flush::now));
}

TEMPLATE_TEST_CASE("run journal: a step or an end that names a mode records it, and one naming none keeps it", "[peer][journal]",
                   SqliteBackend, PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto run = j.begin_run("c1", Mode::execute, "p", "hi", kPrompt);
    REQUIRE(run);
    StepWrite step = step_with({}, "");
    REQUIRE(j.write_step(run->id, step));
    CHECK(j.run(run->id).value()->mode == Mode::execute);
    step.mode = Mode::explore;  // resumed in another mode
    REQUIRE(j.write_step(run->id, step));
    CHECK(j.run(run->id).value()->mode == Mode::explore);
    RunEnd end;
    end.stop_reason = StopReason::answered;
    end.mode = Mode::plan;
    REQUIRE(j.end_run(run->id, end));
    CHECK(j.run(run->id).value()->mode == Mode::plan);
}

TEMPLATE_TEST_CASE("run journal: recovery marks a run interrupted only while it is as recovery read it", "[peer][journal]",
                   SqliteBackend, PostgresBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto run = j.begin_run("c1", Mode::execute, "p", "hi", kPrompt);
    REQUIRE(run);
    const std::string self = this_process_owner();
    // Each step holds the backend's connection alone: the journal is not called inside one.
    auto sql_update = [&](const char* sql, std::string_view text) {
        backend.with_sql([&](SqlConnection& db) { REQUIRE(db.execute(sql, {run->id, text})); });
    };
    auto lapse_and_read = [&] {
        backend.with_sql(
            [&](SqlConnection& db) { REQUIRE(db.execute("UPDATE runs SET lease_until = 1 WHERE id = ?1", {run->id})); });
        AbandonedRun seen;
        backend.with_sql([&](SqlConnection& db) {
            auto dead = abandoned_runs(db, self);
            REQUIRE(dead);
            REQUIRE(dead->size() == 1);
            seen = dead->front();
        });
        CHECK(seen.id == run->id);
        CHECK(seen.why == Abandonment::own_lease_lapsed);
        return seen;
    };
    auto mark = [&](const AbandonedRun& seen) {
        bool marked = false;
        backend.with_sql([&](SqlConnection& db) {
            auto done = mark_interrupted(db, seen);
            REQUIRE(done);
            marked = *done;
        });
        return marked;
    };

    AbandonedRun seen = lapse_and_read();
    REQUIRE(j.renew(run->id));  // its writer came back and renewed the lease meanwhile
    CHECK_FALSE(mark(seen));
    CHECK(j.run(run->id).value()->status == RunStatus::running);

    seen = lapse_and_read();
    // Another process took it meanwhile: its claim left a fresh lease in its own name.
    sql_update("UPDATE runs SET lease_owner = ?2, lease_until = 1e12 WHERE id = ?1", "elsewhere:1:1");
    CHECK_FALSE(mark(seen));
    CHECK(j.run(run->id).value()->status == RunStatus::running);

    sql_update("UPDATE runs SET lease_owner = ?2 WHERE id = ?1", self);
    CHECK(mark(lapse_and_read()));
    auto marked = j.run(run->id).value();
    CHECK(marked->status == RunStatus::interrupted);
    CHECK(marked->stop_reason == StopReason::interrupted);
    CHECK(marked->error_code == "INTERRUPTED");
    CHECK(marked->recoveries == 1);
}

TEMPLATE_TEST_CASE("run journal: a run is not claimed while another run of its conversation is running", "[peer][journal]",
                   SqliteBackend, PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto first = j.begin_run("c1", Mode::execute, "p", "hi", kPrompt);
    REQUIRE(first);
    RunEnd stopped;
    stopped.stop_reason = StopReason::interrupted;
    REQUIRE(j.end_run(first->id, stopped));
    auto second = j.begin_run("c1", Mode::execute, "p", "next", kPrompt);  // a new turn went on meanwhile
    REQUIRE(second);

    auto claimed = j.claim(first->id);
    REQUIRE_FALSE(claimed);
    CHECK(claimed.error().code == "conversation_busy");
    CHECK(j.run(first->id).value()->status == RunStatus::interrupted);
    CHECK(j.run(second->id).value()->status == RunStatus::running);
    // Once the other run ended, the rule that a later turn went on without it is the runner's to apply.
    RunEnd answered;
    answered.stop_reason = StopReason::answered;
    REQUIRE(j.end_run(second->id, answered));
    CHECK(j.claim(first->id));
}

TEMPLATE_TEST_CASE("run journal: every read of a store that cannot be read is an error, never none or empty", "[peer][journal]",
                   SqliteBackend, PostgresBackend, MemoryBackend) {
    TestType backend;
    RunJournal& j = backend.journal();
    auto run = j.begin_run("c1", Mode::execute, "p", "hi", kPrompt);
    REQUIRE(run);
    backend.break_reads();
    // Each of these once answered "none" or "empty" here, and its caller acted on that: a listing
    // shown empty, a session cleared from turn 1, a takeover that forgot a run.
    CHECK_FALSE(j.run(run->id));
    CHECK_FALSE(j.runs("c1", 10));
    CHECK_FALSE(j.runs("", 10));
    CHECK_FALSE(j.interrupted_runs(10, std::nullopt));
    CHECK_FALSE(j.run_inputs(run->id));
    CHECK_FALSE(j.exchanges("c1", 5, 3));
    CHECK_FALSE(j.all("c1"));
    CHECK_FALSE(j.conversations(10));
    CHECK_FALSE(j.conversation("c1"));
    CHECK_FALSE(j.stats());
    CHECK_FALSE(j.paused_run("c1"));
    CHECK_FALSE(j.last_checkpoint(run->id));
    CHECK_FALSE(j.run_messages(run->id, 0));
    CHECK_FALSE(j.journal(run->id, "call-1"));
    auto refused = j.claim(run->id);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code != "store_not_found");  // not "there is no run"
}
