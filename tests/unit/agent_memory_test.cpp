// Agent memory in SQLite: session, plan, task stack, facts, episodic entries, and the system
// prompt built from them.
#include "agent/system_prompt.hpp"
#include "memory/memory_snapshot.hpp"
#include "tools/builtin_tools.hpp"
#include "unit/test_support.hpp"

#include <catch2/catch.hpp>

using namespace agenthost;
using Catch::Matchers::Contains;

TEST_CASE("memory: session, plan and task stack are per conversation and survive a restart", "[unit][memory]") {
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
    CHECK(m.pop_task("a") == "second");  // last in, first out
    CHECK(m.pop_task("a") == "first");
    CHECK_FALSE(m.pop_task("a"));
}

TEST_CASE("memory: facts are long-term, deduplicated, searchable by keywords and forgettable", "[unit][memory]") {
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
    CHECK(m.forget_fact(*cat));
    CHECK_FALSE(m.forget_fact(*cat));
    CHECK(m.recall_facts("cat", 10).empty());
}

TEST_CASE("memory: the system prompt shows each non-empty section once", "[unit][memory]") {
    test::TempDir dir;
    auto app = test::start(test::config(dir.path, false));
    auto& m = app->memory();
    agent::PromptInputs in{"Base instructions.", "plan", "tell me about the cat", "", "{}", {}, ""};
    std::string empty = agent::build_system_prompt(m, "c", in);
    CHECK_THAT(empty, Contains("Base instructions.") && Contains("Mode: plan"));
    CHECK_THAT(empty, !Contains("## "));

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
    std::string full = agent::build_system_prompt(m, "c", in);
    for (const char* expected : {"## Goal\nfind the cat", "1. [pending] search the garden", "- check the shed", "Miso",
                                 "1. Garden map", "2. Shed key", "topic: choosing a torrent", "Which garden?",
                                 "lookup: timed out", "download finished", "folders: downloads, music", "selected_nodes"})
        CHECK_THAT(full, Contains(expected));
}

TEST_CASE("memory: a snapshot answers what memory held when it was taken, for its conversation only, and writes nothing",
          "[unit][memory]") {
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

TEST_CASE("memory: update_task offers the table's statuses and refuses another word naming them", "[unit][memory]") {
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
