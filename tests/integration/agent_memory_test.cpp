// Agent memory in SQLite: session, plan, task stack, facts, episodic entries, and the system
// prompt built from them.
#include "agent/fake_memory.hpp"
#include "agent/system_prompt.hpp"
#include "memory/memory_snapshot.hpp"
#include "tools/builtin_tools.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>

using namespace agenthost;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("memory: session, plan and task stack are per conversation and survive a restart", "[integration][memory]") {
    test::TempDir dir;
    {
        auto app = test::start(test::config(dir.path, false));
        auto& m = app->memory();
        REQUIRE(m.set_goal("a", "ship it"));
        REQUIRE(m.note_progress("a", "built"));
        REQUIRE(m.step_done("a", "tests written"));
        REQUIRE(m.set_plan("a", {"one", "two"}));
        REQUIRE(m.update_task("a", 2, memory::TaskStatus::in_progress, "halfway"));
        auto missing = m.update_task("a", 9, memory::TaskStatus::done, "");
        REQUIRE_FALSE(missing);
        CHECK_THAT(missing.error().message, Contains("there is no task 9") && Contains("tasks are 1, 2"));
        REQUIRE(m.push_task("a", "first"));
        REQUIRE(m.push_task("a", "second"));
        CHECK(m.session("b").goal.empty());
    }
    auto app = test::start(test::config(dir.path, false));
    auto& m = app->memory();
    CHECK(m.session("a").goal == "ship it");
    CHECK(m.session("a").progress == std::vector<std::string>{"built"});
    CHECK(m.session("a").steps_done == std::vector<std::string>{"tests written"});
    auto plan = m.plan("a");
    REQUIRE(plan.size() == 2);
    CHECK(plan[1].status == memory::TaskStatus::in_progress);
    CHECK(plan[1].note == "halfway");
    CHECK(m.pop_task("a").value() == "second");  // last in, first out
    CHECK(m.pop_task("a").value() == "first");
    CHECK(m.pop_task("a").value() == std::nullopt);
}

TEST_CASE("memory: facts are long-term, deduplicated, searchable by keywords and forgettable", "[integration][memory]") {
    test::TempDir dir;
    auto app = test::start(test::config(dir.path, false));
    auto& m = app->memory();
    auto cat = m.remember_fact("The cat is called Miso");
    auto car = m.remember_fact("The car is a blue Volvo");
    REQUIRE(cat);
    REQUIRE(car);
    auto again = m.remember_fact("The cat is called Miso");
    REQUIRE(again);
    CHECK(*again == *cat);
    auto found = m.recall_facts("what is the CAT called", 10);
    REQUIRE_FALSE(found.empty());
    CHECK(found[0].text == "The cat is called Miso");
    CHECK(m.recall_facts("volvo", 10).size() == 1);
    CHECK(m.recall_facts("zebra", 10).empty());
    CHECK(m.recall_facts("", 1).size() == 1);  // newest first, limited
    CHECK(m.forget_fact(*cat).value());
    CHECK_FALSE(m.forget_fact(*cat).value());
    CHECK(m.recall_facts("cat", 10).empty());
}

TEST_CASE("memory: the system prompt and the agent's state show each non-empty section once", "[integration][memory]") {
    test::TempDir dir;
    auto app = test::start(test::config(dir.path, false));
    auto& m = app->memory();
    agent::PromptInputs in{"Base instructions.", Mode::plan, "tell me about the cat", "", "{}", {}, ""};
    agent::PromptParts empty = agent::build_prompt(m, "c", in);
    CHECK_THAT(empty.system, Contains("Base instructions.") && Contains("Mode: plan"));
    CHECK_THAT(empty.system, !Contains("## "));
    CHECK(empty.state.empty());  // nothing to say: no state message

    REQUIRE(m.set_goal("c", "find the cat"));
    REQUIRE(m.set_plan("c", {"search the garden"}));
    REQUIRE(m.push_task("c", "check the shed"));
    REQUIRE(m.remember_fact("The cat is called Miso"));
    REQUIRE(m.set_pending_question("c", "Which garden?"));
    REQUIRE(m.add_error("c", "lookup: timed out"));
    REQUIRE(app->memory().store().set("c", "search_results", R"([{"title": "Garden map"}, {"title": "Shed key"}])"));
    REQUIRE(app->memory().store().set("c", "topic", R"("choosing a torrent")"));
    in.plugin_context = "folders: downloads, music";
    in.request_context_json = R"({"selected_nodes": ["n1"]})";
    in.notifications = {"[torrent] download finished"};
    agent::PromptParts full = agent::build_prompt(m, "c", in);
    // What stays the same through a turn opens the prompt; what a step may change is the state.
    for (const char* expected : {"Miso", "download finished", "folders: downloads, music", "selected_nodes"}) {
        CHECK_THAT(full.system, Contains(expected));
        CHECK_THAT(full.state, !Contains(expected));
    }
    for (const char* expected : {"## Goal\nfind the cat", "1. [pending] search the garden", "- check the shed", "1. Garden map",
                                 "2. Shed key", "topic: choosing a torrent", "Which garden?", "lookup: timed out"}) {
        CHECK_THAT(full.state, Contains(expected));
        CHECK_THAT(full.system, !Contains(expected));
    }
    CHECK_THAT(full.state, StartsWith("[agenthost] The agent's state"));
}

TEST_CASE("memory: a snapshot answers what memory held when it was taken, for its conversation only, and writes nothing",
          "[integration][memory]") {
    test::TempDir dir;
    auto app = test::start(test::config(dir.path, false));
    auto& m = app->memory();
    REQUIRE(m.set_goal("a", "ship it"));
    REQUIRE(m.push_task("a", "first"));
    REQUIRE(m.set_goal("b", "other"));
    REQUIRE(m.remember_fact("the sky is blue"));
    memory::MemorySnapshot snapshot(m.store(), "a");
    memory::AgentMemory view(snapshot);
    REQUIRE(m.set_goal("a", "changed after"));  // later writes are not in the snapshot
    CHECK(view.session("a").goal == "ship it");
    CHECK(view.task_stack("a") == std::vector<std::string>{"first"});
    CHECK(view.session("b").goal.empty());
    CHECK(view.recall_facts("sky", 5).size() == 1);
    CHECK_FALSE(view.set_goal("a", "no"));
    CHECK(m.session("a").goal == "changed after");
}

TEST_CASE("memory: update_task offers the table's statuses and refuses another word naming them", "[integration][memory]") {
    const auto& tools = tools::builtin_tools();
    auto update = std::find_if(tools.begin(), tools.end(), [](const auto& t) { return t.name == "update_task"; });
    REQUIRE(update != tools.end());
    auto schema = nlohmann::json::parse(update->input_schema_json);
    CHECK(schema["properties"]["status"]["enum"] == nlohmann::json{"pending", "in_progress", "done", "blocked", "skipped"});
    CHECK_THAT(update->description, Contains("pending, in_progress, done, blocked or skipped"));

    test::TempDir dir;
    auto app = test::start(test::config(dir.path, false));
    REQUIRE(app->memory().set_plan("c", {"one"}));
    auto done = tools::call_builtin(app->memory(), "c", "update_task", {{"id", 1}, {"status", "done"}});
    CHECK(done["is_error"] == false);
    CHECK_THAT(done["content"].get<std::string>(), Contains("is now done"));
    CHECK(app->memory().plan("c").at(0).status == memory::TaskStatus::done);
    auto wrong = tools::call_builtin(app->memory(), "c", "update_task", {{"id", 1}, {"status", "finished"}});
    CHECK(wrong["is_error"] == true);
    CHECK_THAT(wrong["content"].get<std::string>(), Contains("pending"));
    CHECK(app->memory().plan("c").at(0).status == memory::TaskStatus::done);
}

TEST_CASE("memory: a change never writes over an entry it could not read", "[integration][memory]") {
    // A reviewer's finding: a failed read looked like an empty entry, so push_task after a lost
    // connection wrote a stack of one over the whole stack.
    test::FakeMemory store;
    memory::AgentMemory m(store);
    REQUIRE(m.set_goal("c", "ship it"));
    REQUIRE(m.set_plan("c", {"one", "two"}));
    REQUIRE(m.push_task("c", "first"));
    REQUIRE(m.push_task("c", "second"));
    REQUIRE(m.add_error("c", "lookup: timed out"));

    store.fail_reads(true);
    auto pushed = m.push_task("c", "third");
    REQUIRE_FALSE(pushed);
    CHECK(pushed.error().code == "store_io");
    CHECK_THAT(pushed.error().message, Contains("'task_stack' could not be read") && Contains("left unchanged"));
    CHECK_FALSE(m.pop_task("c"));
    CHECK_FALSE(m.update_task("c", 1, memory::TaskStatus::done, ""));
    CHECK_FALSE(m.set_goal("c", "another"));
    CHECK_FALSE(m.note_progress("c", "lost?"));
    CHECK_FALSE(m.add_error("c", "another error"));
    CHECK(m.task_stack("c").empty());  // readers show what they can
    store.fail_reads(false);

    CHECK(m.task_stack("c") == std::vector<std::string>{"first", "second"});
    CHECK(m.session("c").goal == "ship it");
    CHECK(m.session("c").progress.empty());
    REQUIRE(m.plan("c").size() == 2);
    CHECK(m.plan("c")[0].status == memory::TaskStatus::pending);
    CHECK(m.recent_errors("c") == std::vector<std::string>{"lookup: timed out"});
}

TEST_CASE("memory: an entry a plugin wrote in another shape is shown without throwing and not written over",
          "[integration][memory]") {
    test::FakeMemory store;
    memory::AgentMemory m(store);
    REQUIRE(store.set("c", "task_stack", R"({"not":"a list"})"));
    REQUIRE(store.set("c", "session", R"({"goal":5,"progress":["ok",7]})"));
    REQUIRE(store.set("c", "plan", R"([3,{"id":"x","title":["t"]},{"id":2,"title":"real","status":"done"}])"));
    REQUIRE(store.set("c", "recent_errors", R"(["an error",{"x":1}])"));

    CHECK(m.task_stack("c").empty());
    CHECK(m.session("c").goal.empty());
    CHECK(m.session("c").progress == std::vector<std::string>{"ok"});
    auto plan = m.plan("c");
    REQUIRE(plan.size() == 2);
    CHECK(plan[1].title == "real");
    CHECK(plan[1].status == memory::TaskStatus::done);
    CHECK(m.recent_errors("c") == std::vector<std::string>{"an error"});

    auto pushed = m.push_task("c", "mine");
    REQUIRE_FALSE(pushed);
    CHECK(pushed.error().code == "memory_entry_invalid");
    CHECK_THAT(pushed.error().message, Contains("'task_stack' is not a JSON list") && Contains("/memory/clear-session"));
    CHECK(**store.get("c", "task_stack") == R"({"not":"a list"})");
    REQUIRE(m.update_task("c", 2, memory::TaskStatus::blocked, "waiting"));  // the plan's own items are still changed
    CHECK(m.plan("c")[1].status == memory::TaskStatus::blocked);
    CHECK(m.plan("c").size() == 2);

    REQUIRE(store.set("c", "task_stack", R"(["a",5])"));
    auto popped = m.pop_task("c");
    REQUIRE_FALSE(popped);
    CHECK_THAT(popped.error().message, Contains("not text"));
    CHECK(**store.get("c", "task_stack") == R"(["a",5])");
}
