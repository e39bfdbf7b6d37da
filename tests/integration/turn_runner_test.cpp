// The agent runner driven by the scripted provider against real plugins (the C example plugin and
// the agent_tools fixture): limits, pruning, markers, approvals, the loop guard, schema errors,
// text-embedded calls, output budgets, memory across turns and conversations.
#include "agent/turn_runner.hpp"
#include "sqlite/database.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>

using namespace agenthost;
using agent::ApprovalDecision;
using agent::Mode;
using agent::TurnEvent;
namespace events = agent::events;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

json call(const std::string& name, json args = json::object()) {
    return {{"tool_calls", json::array({{{"name", name}, {"arguments", std::move(args)}}})}};
}
json text(const std::string& t) { return {{"text", t}}; }

struct Harness {
    test::TempDir dir;
    std::unique_ptr<app::HostApp> app;
    std::vector<TurnEvent> events;
    std::vector<agent::ApprovalRequest> asked;
    std::function<ApprovalDecision(const agent::ApprovalRequest&)> decide = [](const agent::ApprovalRequest&) {
        return ApprovalDecision{ApprovalDecision::Kind::approve};
    };

    explicit Harness(const json& cassette, const std::function<void(config::Config&)>& tweak = {}) {
        test::write_file(dir.path / "cassette.json", cassette.dump());
        auto cfg = test::config(dir.path, true);
        cfg.enabled_plugins = {"scripted", "example_c", "agent_tools"};
        cfg.plugin_tables["scripted"] =
            json{{"cassette", (dir.path / "cassette.json").string()}, {"request_log", (dir.path / "requests.jsonl").string()}}
                .dump();
        if (tweak) tweak(cfg);
        app = test::start(cfg);
    }

    agent::RunControls controls() {
        agent::RunControls c;
        c.on_event = [this](const TurnEvent& e) { events.push_back(e); };
        c.approve = [this](const agent::ApprovalRequest& r) {
            asked.push_back(r);
            return decide(r);
        };
        return c;
    }

    agent::TurnOutcome run(const std::string& prompt, Mode mode = Mode::execute, const std::string& conversation = "conv") {
        events.clear();
        return app->runner().run({prompt, conversation, mode, "{}"}, controls());
    }

    agent::TurnOutcome resume(const ApprovalDecision& decision, const std::string& conversation = "conv") {
        events.clear();
        return app->runner().resume(conversation, decision, controls());
    }

    std::vector<json> requests() {
        std::vector<json> out;
        std::ifstream in(dir.path / "requests.jsonl");
        for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
        return out;
    }

    template <class T>
    std::vector<T> of() {
        std::vector<T> out;
        for (const auto& e : events)
            if (const T* one = e.as<T>()) out.push_back(*one);
        return out;
    }

    std::string runs(const std::string& tool) { return test::call_tool(*app, "runs", {{"tool", tool}})["content"]; }
};

std::set<std::string> tool_names(const json& request) {
    std::set<std::string> names;
    for (const auto& t : request["tools"]) names.insert(t["name"].get<std::string>());
    return names;
}

// What the model is told besides the conversation: the system prompt, and the agent's state when
// the request ends with it.
std::string system_prompt(const json& request) {
    std::string told = request["messages"][0]["content"];
    const json& messages = request["messages"];
    for (auto m = messages.rbegin(); m != messages.rend(); ++m)
        if (m->value("agenthost_state", false)) return told + "\n" + (*m)["content"].get<std::string>();  // the newest counts
    return told;
}

}  // namespace

TEST_CASE("runner: tool calls run and their results reach the model until it answers", "[integration][runner]") {
    Harness h(json{
        {"replies",
         {{{"tool_calls",
            {{{"name", "add"}, {"arguments", {{"a", 1}, {"b", 2}}}}, {{"name", "echo"}, {"arguments", "{\"text\":\"x\"}"}}}}},
          text("The answer is 3.")}}});
    auto out = h.run("please");
    REQUIRE(out.ok());
    CHECK(out.stop_reason == StopReason::answered);
    CHECK(out.answer == "The answer is 3.");
    CHECK(out.tool_calls == 2);
    std::vector<std::string> seen;
    for (const auto& e : h.of<events::ToolResult>()) seen.push_back(e.tool + "=" + e.content);
    CHECK(seen == std::vector<std::string>{"add=3", "echo=x"});
    auto last = h.requests().back()["messages"];
    CHECK(last[last.size() - 1]["role"] == "tool");
    CHECK(last[last.size() - 1]["content"] == "x");
}

TEST_CASE("runner: events are numbered in order and the turn ends with one finished event", "[integration][runner]") {
    Harness h(json{{"replies", {call("echo", {{"text", "a"}}), call("nope"), text("done")}}});
    h.run("go");
    REQUIRE(h.events.size() > 4);
    std::set<std::string> started;
    for (const auto& e : h.events) {
        if (const auto* call = e.as<events::ToolCall>()) started.insert(call->call_id);
        if (const auto* result = e.as<events::ToolResult>()) CHECK(started.count(result->call_id) == 1);  // refused calls too
    }
    CHECK(started.size() == 2);
    for (size_t i = 0; i < h.events.size(); ++i) CHECK(h.events[i].seq == i + 1);
    REQUIRE(h.events.back().is<events::Finished>());
    CHECK(h.of<events::Finished>().size() == 1);
    CHECK(h.events.back().as<events::Finished>()->stop_reason == StopReason::answered);
}

TEST_CASE("runner: calls written as text are extracted and run", "[integration][runner]") {
    Harness h(json{{"replies",
                    {text("Checking.\n<tool_call>\n<function=add>\n<parameter=a>\n2\n</parameter>\n<parameter=b>\n5\n"
                          "</parameter>\n</function>\n</tool_call>"),
                     text("[echo(text='pythonic')]"), text("All good.")}}});
    auto out = h.run("go");
    REQUIRE(out.ok());
    auto results = h.of<events::ToolResult>();
    REQUIRE(results.size() == 2);
    CHECK(results[0].content == "7");  // "2" and "5" typed as numbers by add's schema
    CHECK(results[1].content == "pythonic");
    std::string shown;
    for (const auto& e : h.of<events::Text>()) shown += e.delta;
    CHECK(shown.find("<tool_call>") == std::string::npos);
}

TEST_CASE("runner: unknown tools, bad JSON and schema errors go back to the model, which fixes them", "[integration][runner]") {
    Harness h(json{{"replies",
                    {{{"tool_calls", {{{"name", "no_such_tool"}}, {{"name", "echo"}, {"arguments", "not json"}}}}},
                     call("add", {{"a", "one"}, {"b", 2}}),
                     call("add", {{"a", 1}, {"b", 2}}),
                     text("3")}}});
    auto out = h.run("add");
    REQUIRE(out.ok());
    auto results = h.of<events::ToolResult>();
    REQUIRE(results.size() == 4);
    CHECK(results[0].is_error);
    CHECK_THAT(results[0].content, Contains("no tool named 'no_such_tool'") && Contains("echo"));
    CHECK(results[1].is_error);
    CHECK(results[2].is_error);
    CHECK_THAT(results[2].content, Contains("field 'a'") && Contains("expected number"));
    CHECK_FALSE(results[3].is_error);
    CHECK(results[3].content == "3");
    CHECK_FALSE(h.app->memory().recent_errors("conv").empty());  // episodic memory keeps the errors
}

TEST_CASE("runner: a malformed text call is explained to the model, never run", "[integration][runner]") {
    Harness h(json{{"replies",
                    {text("<tool_call>{\"name\": \"echo\", \"arguments\": {\"text\": }}</tool_call>"),
                     text("<tool_call>{\"name\": \"echo\", \"arguments\": {\"text\": \"fixed\"}}</tool_call>"), text("ok")}}});
    auto out = h.run("go");
    REQUIRE(out.ok());
    auto results = h.of<events::ToolResult>();
    REQUIRE(results.size() == 1);
    CHECK(results[0].content == "fixed");
    auto second = h.requests()[1]["messages"];
    CHECK_THAT(second[second.size() - 1]["content"].get<std::string>(), Contains("could not be used"));
}

TEST_CASE("runner: reaching the cap stops with iteration_limit and one tool-less summary call", "[integration][runner]") {
    Harness h(json{{"replies",
                    {call("echo", {{"text", "1"}}), call("echo", {{"text", "2"}}), call("echo", {{"text", "3"}}),
                     text("Summary: I echoed three times and stopped.")}}},
              [](config::Config& c) { c.limits.execute_iterations = 3; });
    auto out = h.run("loop");
    CHECK_FALSE(out.ok());
    CHECK(out.stop_reason == StopReason::iteration_limit);
    CHECK(out.answer == "Summary: I echoed three times and stopped.");
    CHECK_THAT(out.error, Contains("3 iterations"));
    auto requests = h.requests();
    REQUIRE(requests.size() == 4);
    CHECK(requests[3]["tools"].empty());
    CHECK(requests[3]["tool_choice"] == "none");
}

TEST_CASE("runner: pruning keeps pinned messages and call/result pairs", "[integration][runner]") {
    json replies = json::array();
    for (int i = 0; i < 12; ++i)
        replies.push_back({{"tool_calls",
                            {{{"name", "echo"}, {"arguments", {{"text", "a" + std::to_string(i)}}}},
                             {{"name", "echo"}, {"arguments", {{"text", "b" + std::to_string(i)}}}}}}});
    replies.push_back(text("finished"));
    Harness h(json{{"replies", replies}, {"rules", {{{"match", "first turn"}, {"replies", {text("first answer")}}}}}},
              [](config::Config& c) {
                  c.agent.prune_every = 4;
                  c.agent.keep_messages = 2;
              });
    h.run("first turn");
    auto out = h.run("the pinned prompt");
    REQUIRE(out.ok());
    bool pruned_seen = false;
    for (const auto& request : h.requests()) {
        const json& messages = request["messages"];
        CHECK(messages[0]["role"] == "system");
        std::set<std::string> open_calls;
        bool prompt_seen = false;
        for (const auto& m : messages) {
            if (m["role"] == "user" && m["content"] == "the pinned prompt") prompt_seen = true;
            if (m["role"] == "assistant" && m.contains("tool_calls"))
                for (const auto& c : m["tool_calls"]) open_calls.insert(c["id"].get<std::string>());
            if (m["role"] == "tool") CHECK(open_calls.count(m["tool_call_id"].get<std::string>()) == 1);  // never orphaned
        }
        std::set<std::string> results;  // the echo results in this request
        for (const auto& m : messages)
            if (m["role"] == "tool") results.insert(m["content"].get<std::string>());
        if (!results.count("a0") && results.count("a5")) pruned_seen = true;
        if (messages.dump().find("the pinned prompt") != std::string::npos) CHECK(prompt_seen);
    }
    CHECK(pruned_seen);
    // The previous exchange ("first turn" and its answer) is pinned into the second turn.
    auto last = h.requests().back()["messages"];
    CHECK(last[1]["content"] == "first turn");
    CHECK(last[2]["role"] == "assistant");
}

TEST_CASE("runner: long tool results are cut for the model and kept whole in the transcript", "[integration][runner]") {
    Harness h(json{{"replies", {call("big", {{"size", 5001}}), text("ok")}}},
              [](config::Config& c) { c.agent.tool_result_max_chars = 1000; });
    REQUIRE(h.run("big").ok());
    auto last = h.requests().back()["messages"];
    std::string shown = last[last.size() - 1]["content"];
    CHECK_THAT(shown, Contains("[result cut: showing the first 999 of 5001 bytes"));  // byte 1000 is inside an 'é'
    CHECK_NOTHROW(json(shown.substr(0, 999)).dump());                                 // valid UTF-8
    bool full = false;
    for (const auto& m : h.app->runs().all("conv").value()) {
        json body = json::parse(m.body);
        if (body.value("role", "") != "tool") continue;
        CHECK(body["content"] == shown);                                            // the transcript keeps what the model saw …
        full = json::parse(m.result)["content"].get<std::string>().size() == 5001;  // … and the whole result
    }
    CHECK(full);
}

TEST_CASE("runner: a huge result is shown by its start, stored whole, and never copied into the checkpoint",
          "[integration][runner]") {
    const int size = 3 << 20;
    Harness h(json{{"replies",
                    {call("big", {{"size", size}}), call("big", {{"size", size}}), call("big", {{"size", size}}), text("ok")}}},
              [](config::Config& c) { c.agent.loop_guard_repeats = 3; });
    REQUIRE(h.run("big").ok());
    auto shown = h.of<events::ToolResult>();
    REQUIRE(shown.size() == 3);
    CHECK(shown[0].content.size() < (300u << 10));
    CHECK_THAT(shown[0].content, Contains("of " + std::to_string(size) + " bytes; the whole result is in the run's transcript"));
    REQUIRE(shown[0].truncated);
    CHECK(shown[0].truncated->content_bytes == size);
    CHECK(shown[0].result_json.empty());
    size_t stored = 0;
    for (const auto& m : h.app->runs().all("conv").value())
        if (json::parse(m.body).value("role", "") == "tool") stored = json::parse(m.result)["content"].get<std::string>().size();
    CHECK(stored == static_cast<size_t>(size));
    // The third identical result trips the loop guard: its note reaches the model although the result was cut.
    auto messages = h.requests().back()["messages"];
    CHECK_THAT(messages[messages.size() - 1]["content"].get<std::string>(), Contains("[result cut") && Contains("[loop guard]"));
    // The checkpoint holds a digest of the result, not its megabytes.
    auto checkpoint = h.app->runs().last_checkpoint(h.app->runs().runs("conv", 1).value().at(0).id).value();
    REQUIRE(checkpoint);
    CHECK(checkpoint->state_json.size() < 64u * 1024);
}

TEST_CASE("runner: first call gets first_max_tokens, later calls max_tokens", "[integration][runner]") {
    Harness h(json{{"replies", {call("echo", {{"text", "x"}}), text("done")}}});
    h.run("go");
    auto requests = h.requests();
    REQUIRE(requests.size() == 2);
    CHECK(requests[0]["max_tokens"] == 2000);
    CHECK(requests[1]["max_tokens"] == 1500);
}

TEST_CASE("runner: a call cut by max_tokens is retried once, then reported", "[integration][runner]") {
    json cut = {{"text", "<tool_call>{\"name\": \"echo\", \"arguments\": {\"text\": \"unfini"}, {"stop", "max_tokens"}};
    Harness retried(json{{"replies", {cut, call("echo", {{"text", "whole"}}), text("done")}}});
    auto out = retried.run("go");
    REQUIRE(out.ok());
    auto requests = retried.requests();
    REQUIRE(requests.size() == 3);
    CHECK(requests[1]["max_tokens"] == 2000);
    CHECK_THAT(requests[1]["messages"].back()["content"].get<std::string>(), Contains("cut off by the output limit"));
    CHECK(retried.of<events::ToolResult>().at(0).content == "whole");

    Harness twice(json{{"replies", {cut, cut, text("never")}}});
    auto failed = twice.run("go");
    CHECK_FALSE(failed.ok());
    CHECK(failed.stop_reason == StopReason::output_truncated);
    CHECK(twice.of<events::ToolResult>().empty());
}

TEST_CASE("runner: markers — done ends the turn with its summary, plan_created fills the task list", "[integration][runner]") {
    Harness h(
        json{{"replies",
              {call("create_plan", {{"steps", {"look", "fix", "test"}}}), call("update_task", {{"id", 1}, {"status", "done"}}),
               call("agent_done", {{"summary", "Planned and started."}}), text("never reached")}}});
    auto out = h.run("plan it");
    REQUIRE(out.ok());
    CHECK(out.stop_reason == StopReason::done);
    CHECK(out.answer == "Planned and started.");
    auto plan = h.app->memory().plan("conv");
    REQUIRE(plan.size() == 3);
    CHECK(plan[0].status == memory::TaskStatus::done);
    CHECK(plan[1].title == "fix");
    auto tasks = h.of<events::Tasks>();
    REQUIRE(tasks.size() == 2);
    CHECK(tasks[1].plan.at(0).status == memory::TaskStatus::done);
    CHECK(h.requests().size() == 3);

    Harness plugin(json{{"replies", {call("make_plan"), text("ok")}}});
    REQUIRE(plugin.run("plan").ok());
    auto adopted = plugin.app->memory().plan("conv");
    REQUIRE(adopted.size() == 2);
    CHECK(adopted[1].title == "sort");
    CHECK(plugin.of<events::Tasks>().size() == 1);
}

TEST_CASE("runner: approval requested by a tool's marker, approved, reruns with approval", "[integration][runner]") {
    Harness h(json{{"replies", {call("guarded", {{"action", "launch"}}), text("launched")}}});
    auto out = h.run("go");
    REQUIRE(out.ok());
    REQUIRE(h.asked.size() == 1);
    CHECK_THAT(h.asked[0].reason, Contains("this will launch"));
    auto results = h.of<events::ToolResult>();
    REQUIRE(results.size() == 1);
    CHECK(results[0].content == "did launch");
}

TEST_CASE("runner: a cancel while the user is asked wins over a yes given after it, nothing runs", "[integration][runner]") {
    Harness h(json{{"replies", {call("delete_item", {{"name", "photos"}}), text("deleted")}}});
    ah_cancel cancel;
    h.decide = [&](const agent::ApprovalRequest&) {
        cancel.cancel();                                           // Ctrl-C at the prompt …
        return ApprovalDecision{ApprovalDecision::Kind::approve};  // … then a "y" typed anyway
    };
    agent::RunControls c = h.controls();
    c.cancel = &cancel;
    auto out = h.app->runner().run({"delete the photos", "conv", Mode::execute, "{}"}, c);
    CHECK_FALSE(out.ok());
    CHECK(out.stop_reason == StopReason::cancelled);
    CHECK_THAT(out.error, Contains("was not run"));
    CHECK(h.runs("delete_item") == "0");
}

TEST_CASE("runner: destructive calls need approval, a rejection reaches the model and is not asked twice",
          "[integration][runner]") {
    Harness h(json{
        {"replies", {call("delete_item", {{"name", "photos"}}), call("delete_item", {{"name", "photos"}}), text("kept them")}}});
    h.decide = [](const agent::ApprovalRequest&) {
        return ApprovalDecision{ApprovalDecision::Kind::reject, "those are precious"};
    };
    auto out = h.run("clean up");
    REQUIRE(out.ok());
    CHECK(h.asked.size() == 1);  // the same call is not proposed for approval again
    auto results = h.of<events::ToolResult>();
    REQUIRE(results.size() == 2);
    CHECK_THAT(results[0].content, Contains("rejected") && Contains("those are precious"));
    CHECK_THAT(results[1].content, Contains("already rejected"));
    CHECK(h.runs("delete_item") == "0");
}

TEST_CASE("runner: a call that needs approval but has invalid arguments goes back to the model, nobody is asked",
          "[integration][runner]") {
    // Outside try: a person was asked to approve a call that was then refused for its arguments.
    Harness h(json{{"replies", {call("delete_item", {{"name", 42}}), text("fixed it")}}});
    h.decide = [](const agent::ApprovalRequest&) { return ApprovalDecision{ApprovalDecision::Kind::approve}; };
    auto out = h.run("clean");
    REQUIRE(out.ok());
    CHECK(h.asked.empty());
    auto results = h.of<events::ToolResult>();
    REQUIRE(results.size() == 1);
    CHECK(results[0].is_error);
    CHECK(h.runs("delete_item") == "0");
}

TEST_CASE("runner: a paused run is saved, then approve resumes from the saved iteration", "[integration][runner]") {
    Harness h(json{{"replies",
                    {{{"tool_calls",
                       {{{"name", "echo"}, {"arguments", {{"text", "before"}}}},
                        {{"name", "delete_item"}, {"arguments", {{"name", "tmp"}}}},
                        {{"name", "echo"}, {"arguments", {{"text", "after"}}}}}}},
                     text("cleaned")}}});
    h.decide = [](const agent::ApprovalRequest&) { return ApprovalDecision{ApprovalDecision::Kind::later}; };
    auto paused = h.run("clean");
    CHECK_FALSE(paused.ok());
    CHECK(paused.stop_reason == StopReason::approval_pending);
    auto waiting = h.app->runner().pending_approval("conv").value();
    REQUIRE(waiting);
    CHECK(waiting->tool == "delete_item");
    CHECK(h.runs("delete_item") == "0");
    uint64_t last_seq = h.events.back().seq;

    auto blocked = h.run("something else");  // a new turn waits until the paused one is decided
    CHECK(blocked.stop_reason == StopReason::approval_pending);

    auto out = h.resume({ApprovalDecision::Kind::approve});
    REQUIRE(out.ok());
    CHECK(out.answer == "cleaned");
    CHECK(h.runs("delete_item") == "1");
    CHECK(h.events.front().seq > last_seq);  // the event stream continues
    std::vector<std::string> results;
    for (const auto& e : h.of<events::ToolResult>()) results.push_back(e.content);
    CHECK(results == std::vector<std::string>{"deleted tmp", "after"});
    CHECK(h.requests().size() == 2);  // the model was not asked again for the paused step
    CHECK_FALSE(h.app->runner().pending_approval("conv").value());
}

TEST_CASE("runner: a paused run rejected by the user continues with the reason", "[integration][runner]") {
    Harness h(json{{"replies", {call("delete_item", {{"name", "tmp"}}), text("ok, not deleting")}}});
    h.decide = [](const agent::ApprovalRequest&) { return ApprovalDecision{ApprovalDecision::Kind::later}; };
    REQUIRE(h.run("clean").stop_reason == StopReason::approval_pending);
    auto out = h.resume({ApprovalDecision::Kind::reject, "not today"});
    REQUIRE(out.ok());
    CHECK(out.answer == "ok, not deleting");
    auto last = h.requests().back()["messages"];
    CHECK_THAT(last[last.size() - 1]["content"].get<std::string>(), Contains("not today"));
    CHECK(h.runs("delete_item") == "0");
}

TEST_CASE("runner: modes filter the tools, plan mode asks before a forbidden call, explore refuses it", "[integration][runner]") {
    auto every_tool = [](config::Config& c) { c.agent.on_demand_tools = 0; };
    Harness explore(json{{"replies", {call("write_note", {{"text", "x"}}), text("could not")}}}, every_tool);
    auto out = explore.run("look", Mode::explore);
    REQUIRE(out.ok());
    auto names = tool_names(explore.requests()[0]);
    CHECK(names.count("lookup"));
    CHECK(names.count("echo"));  // the C plugin's echo is read-only
    CHECK_FALSE(names.count("write_note"));
    CHECK_FALSE(names.count("delete_item"));
    CHECK_FALSE(names.count("create_plan"));
    CHECK(names.count("remember_fact"));
    CHECK_THAT(explore.of<events::ToolResult>().at(0).content, Contains("not available in explore mode"));
    CHECK(explore.asked.empty());

    Harness plan(json{{"replies", {call("write_note", {{"text", "x"}}), text("planned")}}}, every_tool);
    REQUIRE(plan.run("plan", Mode::plan).ok());
    auto plan_names = tool_names(plan.requests()[0]);
    CHECK(plan_names.count("create_plan"));
    CHECK_FALSE(plan_names.count("write_note"));
    REQUIRE(plan.asked.size() == 1);
    CHECK_THAT(plan.asked[0].reason, Contains("plan mode"));
    CHECK(plan.runs("write_note") == "1");  // approved by the harness

    Harness execute(json{{"replies", {text("hi")}}}, every_tool);
    execute.run("x", Mode::execute);
    CHECK(tool_names(execute.requests()[0]).count("delete_item"));
}

TEST_CASE("runner: a big tool family is offered once loaded or used, and stays offered in its conversation",
          "[integration][runner]") {
    // The fixture plugin agent_tools has 5 tools, example_c 2: at 3, only agent_tools waits.
    auto at_three = [](config::Config& c) { c.agent.on_demand_tools = 3; };
    Harness h(json{{"replies",
                    {call("load_tools", {{"family", "agent_tools"}}), call("lookup", {{"key", "k"}}), text("found"),
                     call("load_tools", {{"family", "nope"}}), text("no such family")}}},
              at_three);
    REQUIRE(h.run("look it up").ok());
    auto first = h.requests()[0];
    auto names = tool_names(first);
    CHECK_FALSE(names.count("lookup"));
    CHECK(names.count("echo"));  // example_c is small: always offered
    CHECK(names.count("load_tools"));
    std::string system = first["messages"][0]["content"];
    CHECK_THAT(system, Contains("## Tool families on demand") && Contains("- agent_tools: ") && Contains("lookup") &&
                           !Contains("- example_c"));
    // Loaded: offered from the next step, after the tools offered before (the start of the request
    // stays what a prompt cache holds: load_tools stays, and so does the system prompt, for the turn).
    auto after = h.requests()[1];
    CHECK(tool_names(after).count("lookup"));
    CHECK(tool_names(after).count("load_tools"));
    const json& before_tools = first["tools"];
    REQUIRE(after["tools"].size() > before_tools.size());
    for (size_t i = 0; i < before_tools.size(); ++i) CHECK(after["tools"][i] == before_tools[i]);
    CHECK(after["messages"][0]["content"].get<std::string>() == system);

    // The next turn of the conversation still offers them; a family that does not exist is an error the model reads.
    REQUIRE(h.run("again").ok());
    auto later = h.requests()[3];
    CHECK(tool_names(later).count("lookup"));
    CHECK_FALSE(tool_names(later).count("load_tools"));  // a new turn: nothing waits, nothing to load
    CHECK_THAT(later["messages"][0]["content"].get<std::string>(), !Contains("Tool families on demand"));
    CHECK_THAT(h.of<events::ToolResult>().at(0).content, Contains("no tool family 'nope'"));

    // Another conversation starts without them; calling one by name runs it and loads the family.
    Harness direct(json{{"replies", {call("lookup", {{"key", "k"}}), text("done")}}}, at_three);
    REQUIRE(direct.run("look", Mode::execute, "other").ok());
    CHECK_FALSE(tool_names(direct.requests()[0]).count("lookup"));
    CHECK(direct.runs("lookup") == "1");
    CHECK(tool_names(direct.requests()[1]).count("lookup"));
}

TEST_CASE("runner: an approved call of a tool whose family waits loads the family when it runs", "[integration][runner]") {
    auto at_three = [](config::Config& c) { c.agent.on_demand_tools = 3; };  // agent_tools (5 tools) waits
    Harness h(json{{"replies", {call("delete_item", {{"name", "tmp"}}), text("deleted"), text("and again")}}}, at_three);
    h.decide = [](const agent::ApprovalRequest&) { return ApprovalDecision{ApprovalDecision::Kind::later}; };
    REQUIRE(h.run("clean").stop_reason == StopReason::approval_pending);
    CHECK(h.runs("delete_item") == "0");
    auto out = h.resume({ApprovalDecision::Kind::approve});  // the call runs first in the resumed turn
    REQUIRE(out.ok());
    CHECK(h.runs("delete_item") == "1");
    auto requests = h.requests();
    REQUIRE(requests.size() == 2);
    CHECK(tool_names(requests[1]).count("lookup"));  // the step after the call offers the family
    REQUIRE(h.run("again").ok());
    CHECK(tool_names(h.requests()[2]).count("lookup"));  // and so does the next turn
}

TEST_CASE("runner: the loop guard tells the model, then refuses, then stops the turn", "[integration][runner]") {
    Harness h(json{{"fallback", call("lookup", {{"key", "k"}})}});
    auto out = h.run("loop");
    CHECK_FALSE(out.ok());
    CHECK(out.stop_reason == StopReason::loop_detected);
    CHECK(h.runs("lookup") == "3");
    auto requests = h.requests();
    REQUIRE(requests.size() >= 4);
    auto after_third = requests[3]["messages"];
    CHECK_THAT(after_third[after_third.size() - 1]["content"].get<std::string>(), Contains("[loop guard]"));
}

TEST_CASE("runner: token and tool-call budgets stop the turn with named reasons", "[integration][runner]") {
    json costly = call("echo", {{"text", "x"}});
    costly["usage"] = {{"input_tokens", 600}, {"output_tokens", 100}};
    Harness tokens(json{{"fallback", costly}}, [](config::Config& c) { c.limits.token_budget = 1000; });
    auto t = tokens.run("go");
    CHECK(t.stop_reason == StopReason::token_budget);
    CHECK(t.tokens == 1400);
    CHECK_THAT(t.error, Contains("token_budget"));

    json replies = json::array();
    for (int i = 0; i < 5; ++i) replies.push_back(call("echo", {{"text", std::to_string(i)}}));
    Harness calls(json{{"replies", replies}}, [](config::Config& c) { c.limits.tool_call_budget = 3; });
    auto c = calls.run("go");
    CHECK(c.stop_reason == StopReason::tool_call_budget);
    CHECK(c.tool_calls == 3);
}

TEST_CASE("runner: provider errors end the turn with their type and message", "[integration][runner]") {
    Harness h(json{{"replies", {{{"error", {{"type", "auth"}, {"message", "bad key"}}}}}}});
    auto out = h.run("hi");
    CHECK_FALSE(out.ok());
    CHECK(out.stop_reason == StopReason::auth);
    CHECK_THAT(out.error, Contains("bad key"));
    CHECK(h.of<events::Failed>().size() == 1);
}

TEST_CASE("runner: memory tools across two turns and two conversations", "[integration][runner]") {
    Harness h(json{
        {"rules",
         {{{"match", "remember"},
           {"replies",
            {call("set_goal", {{"goal", "ship the release"}}), call("remember_fact", {{"fact", "The user's cat is called Miso"}}),
             call("push_task", {{"task", "write changelog"}}), call("ask_user", {{"question", "Which version number?"}})}}},
          {{"match", "2\\.0"}, {"replies", {call("pop_task"), text("Version 2.0 noted.")}}},
          {{"match", "cat"}, {"replies", {call("recall_facts", {{"query", "cat name"}}), text("Miso.")}}}}}});
    auto first = h.run("remember things");
    REQUIRE(first.ok());
    CHECK(first.stop_reason == StopReason::ask_user);
    CHECK(first.answer == "Which version number?");

    auto second = h.run("2.0 please");
    REQUIRE(second.ok());
    std::string prompt = system_prompt(h.requests()[4]);
    CHECK_THAT(prompt, Contains("ship the release"));
    CHECK_THAT(prompt, Contains("Miso"));
    CHECK_THAT(prompt, Contains("write changelog"));
    CHECK_THAT(prompt, Contains("Which version number?"));
    CHECK_THAT(h.of<events::ToolResult>().at(0).content, Contains("write changelog"));
    CHECK(h.app->memory().task_stack("conv").empty());
    CHECK(h.app->memory().pending_question("conv").empty());  // answered by the second turn

    auto other = h.run("what is my cat called", Mode::execute, "other-conversation");
    REQUIRE(other.ok());
    auto requests = h.requests();
    std::string other_prompt = system_prompt(requests[requests.size() - 2]);
    CHECK_THAT(other_prompt, Contains("Miso"));               // facts are long-term
    CHECK_THAT(other_prompt, !Contains("ship the release"));  // the goal belongs to its session
    CHECK_THAT(h.of<events::ToolResult>().at(0).content, Contains("Miso"));
}

TEST_CASE("runner: plugin context, request context and posted events reach the system prompt", "[integration][runner]") {
    Harness h(json{{"replies", {text("seen"), text("again")}}},
              [](config::Config& c) { c.enabled_plugins.push_back("service_probe"); });
    REQUIRE(test::call_tool(*h.app, "probe_event", {{"message", "download finished"}}, "conv")["is_error"] == false);
    h.app->runner().run({"hi", "conv", Mode::execute, R"({"selected_nodes": ["n1"]})"}, h.controls());
    std::string prompt = system_prompt(h.requests()[0]);
    CHECK_THAT(prompt, Contains("service_probe context for conv"));
    CHECK_THAT(prompt, Contains("selected_nodes"));
    CHECK_THAT(prompt, Contains("download finished"));
    h.run("again");
    CHECK_THAT(system_prompt(h.requests()[1]), !Contains("download finished"));  // shown once
}

TEST_CASE("runner: a stored run resumes in another mode, runs are listed with their state", "[integration][runner]") {
    Harness h(json{{"replies", {call("delete_item", {{"name", "tmp"}}), text("done in explore")}}});
    h.decide = [](const agent::ApprovalRequest&) { return ApprovalDecision{ApprovalDecision::Kind::later}; };
    auto paused = h.run("clean");
    REQUIRE(paused.stop_reason == StopReason::approval_pending);
    auto record = h.app->runs().run(paused.run).value();
    REQUIRE(record);
    CHECK(record->status == RunStatus::paused);
    CHECK(record->mode == Mode::execute);

    agent::ResumeOptions options;
    options.mode = Mode::explore;
    options.model = "bigger-model";
    options.decision = {ApprovalDecision::Kind::approve};
    auto out = h.app->runner().resume_run(paused.run, options, h.controls());
    REQUIRE(out.ok());
    CHECK(out.answer == "done in explore");
    CHECK(h.runs("delete_item") == "1");
    auto names = tool_names(h.requests().back());
    CHECK_FALSE(names.count("write_note"));                 // the model now sees explore mode's tools …
    CHECK(h.requests().back()["model"] == "bigger-model");  // … and is the one asked for
    auto done = h.app->runs().run(paused.run).value();
    CHECK(done->status == RunStatus::completed);
    CHECK(done->counters.tool_calls == 1);

    auto again = h.app->runner().resume_run(paused.run, {}, h.controls());
    CHECK(again.stop_reason == StopReason::run_not_resumable);
    CHECK_THAT(again.error, Contains("completed"));
}

TEST_CASE("runner: a call rejected on the marker path is not asked for again", "[integration][runner]") {
    Harness h(json{
        {"replies", {call("guarded", {{"action", "launch"}}), call("guarded", {{"action", "launch"}}), text("did not launch")}}});
    h.decide = [](const agent::ApprovalRequest&) { return ApprovalDecision{ApprovalDecision::Kind::reject, "not today"}; };
    auto out = h.run("go");
    REQUIRE(out.ok());
    CHECK(h.asked.size() == 1);  // the identical second call is refused from the rejection memory
    auto results = h.of<events::ToolResult>();
    REQUIRE(results.size() == 2);
    CHECK_THAT(results[0].content, Contains("not today"));
    CHECK_THAT(results[1].content, Contains("already rejected"));
    CHECK(h.runs("guarded") == "1");  // it ran once to ask; never with approval
}

TEST_CASE("runner: approving a call whose tool is gone ends the run with a clear error", "[integration][runner]") {
    Harness h(json{{"replies", {call("delete_item", {{"name", "tmp"}}), text("never reached")}}});
    h.decide = [](const agent::ApprovalRequest&) { return ApprovalDecision{ApprovalDecision::Kind::later}; };
    auto paused = h.run("clean");
    REQUIRE(paused.stop_reason == StopReason::approval_pending);
    h.app.reset();

    // The config changed while the run waited: the plugin with delete_item is disabled.
    auto cfg = test::config(h.dir.path, true);
    cfg.enabled_plugins = {"scripted", "example_c"};
    cfg.plugin_tables["scripted"] = json{{"cassette", (h.dir.path / "cassette.json").string()}}.dump();
    auto app = test::start(cfg);
    REQUIRE(app->runner().pending_approval("conv").value());
    auto out = app->runner().resume("conv", {ApprovalDecision::Kind::approve}, {});
    CHECK_FALSE(out.ok());
    CHECK(out.stop_reason == StopReason::tool_unavailable);
    CHECK_THAT(out.error, Contains("delete_item") && Contains("no tool of that name"));
    auto record = app->runs().run(out.run).value();
    REQUIRE(record);
    CHECK(record->status == RunStatus::failed);
    CHECK_FALSE(app->runner().pending_approval("conv").value());  // nothing left waiting
}

TEST_CASE("runner: a run stopped before its first checkpoint starts again from its prompt", "[integration][runner]") {
    Harness h(json{{"replies", {text("hello again")}}});
    // What a process killed right after creating the run leaves: a run, its prompt, no checkpoint.
    auto run =
        h.app->runs().begin_run("conv", agenthost::Mode::execute, "scripted", "hello", R"({"role":"user","content":"hello"})");
    REQUIRE(run);
    REQUIRE(h.app->storage().sqlite()->exec("UPDATE runs SET status = 'interrupted', lease_owner = NULL WHERE id = " +
                                            std::to_string(run->id)));
    REQUIRE_FALSE(h.app->runs().last_checkpoint(run->id).value());
    auto out = h.app->runner().resume_run(run->id, {}, h.controls());
    INFO(out.error);
    REQUIRE(out.ok());
    CHECK(out.answer == "hello again");
    CHECK(out.run == run->id);
    CHECK(h.app->runs().run(run->id).value()->status == RunStatus::completed);
    CHECK(h.requests().back()["messages"].back()["content"] == "hello");
}

TEST_CASE("runner: a run failed by the provider after tool steps resumes without redoing them", "[integration][runner]") {
    test::TempDir files;
    std::string path = (files.path / "lines.txt").string();
    Harness h(json{{"replies",
                    {call("append_line", {{"path", path}, {"text", "once"}}),
                     {{"error", {{"type", "model_unavailable"}, {"message", "the model is loading"}}}},
                     text("appended")}}});
    auto failed = h.run("append a line");
    CHECK_FALSE(failed.ok());
    CHECK(failed.stop_reason == StopReason::model_unavailable);
    CHECK(h.app->runs().run(failed.run).value()->status == RunStatus::failed);
    auto out = h.app->runner().resume_run(failed.run, {}, h.controls());
    INFO(out.error);
    REQUIRE(out.ok());
    CHECK(out.answer == "appended");
    CHECK(test::read_file(path) == "once\n");  // the finished step was not run again
    // A run that failed for a reason resuming cannot fix is refused, with the rule.
    Harness loop(json{{"replies", {text("x")}}}, [](config::Config& c) { c.limits.token_budget = 1; });
    auto over = loop.run("go");
    REQUIRE(over.stop_reason == StopReason::token_budget);
    auto refused = loop.app->runner().resume_run(over.run, {}, loop.controls());
    CHECK(refused.stop_reason == StopReason::run_not_resumable);
    CHECK_THAT(refused.error, Contains("failed by the provider"));
}

TEST_CASE("runner: clear_session keeps the transcript but the model no longer sees earlier exchanges", "[integration][runner]") {
    Harness h(json{{"replies", {text("first answer"), text("second answer")}}});
    REQUIRE(h.run("my secret is 42").ok());
    REQUIRE(h.app->runner().clear_session("conv"));
    REQUIRE(h.run("what was my secret?").ok());
    std::string sent = h.requests().back()["messages"].dump();
    CHECK(sent.find("my secret is 42") == std::string::npos);
    CHECK(sent.find("first answer") == std::string::npos);
    CHECK(h.app->runs().all("conv").value().size() >= 4);  // both exchanges are still in the transcript
}

TEST_CASE("runner: a host shutting down never starts a model call that was still waiting in the queue", "[integration][runner]") {
    // One model slot: the second conversation's call waits behind the first one's slow reply.
    Harness h(json{{"replies", {{{"delay_ms", 1500}, {"text", "slow answer"}}, text("never sent")}}},
              [](config::Config& c) { c.provider.concurrency = 1; });
    std::thread first([&] { h.app->runner().run({"first", "c1", Mode::execute, "{}"}, agent::RunControls{}); });
    for (int i = 0; i < 500 && h.requests().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(h.requests().size() == 1);  // the first call holds the only slot
    std::atomic<bool> stop{false};
    agent::RunControls c;
    c.stop_requested = &stop;
    bool queued = false;
    c.on_event = [&](const TurnEvent& e) {
        if (e.is<events::Queued>()) queued = true;
    };
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        stop = true;  // SIGTERM on serve
    });
    auto started = std::chrono::steady_clock::now();
    auto out = h.app->runner().run({"second", "c2", Mode::execute, "{}"}, c);
    auto waited = std::chrono::steady_clock::now() - started;
    stopper.join();
    first.join();
    CHECK(queued);
    CHECK(out.stop_reason == StopReason::interrupted);
    CHECK(waited < std::chrono::milliseconds(1200));  // left the queue, did not wait for the slot (the slot frees at ~1.5 s)
    CHECK(h.requests().size() == 1);                  // only the first conversation's call reached the model
}

TEST_CASE("runner: the agent's state joins the conversation when it changes, so each request starts with the one before",
          "[integration][runner]") {
    // A goal, a plan, a task marked done, a progress note between calls: the agent's state changes
    // step after step, and the cassette's rules still read the user's own words, not the state.
    Harness h(json{{"rules",
                    {{{"match", "^tidy"},
                      {"replies",
                       {call("set_goal", {{"goal", "tidy the notes"}}), call("create_plan", {{"steps", {"list", "merge"}}}),
                        call("echo", {{"text", "a"}}), call("update_task", {{"id", 1}, {"status", "done"}}),
                        call("note_progress", {{"note", "listed 12 notes"}}), call("echo", {{"text", "b"}}), text("tidied")}}}}}},
              [](config::Config& c) { c.agent.on_demand_tools = 0; });  // no family loads mid-turn
    auto out = h.run("tidy my notes");
    REQUIRE(out.ok());
    CHECK(out.answer == "tidied");
    auto requests = h.requests();
    REQUIRE(requests.size() == 7);
    for (size_t i = 1; i < requests.size(); ++i) {
        INFO("request " << i);
        const json& before = requests[i - 1]["messages"];
        const json& now = requests[i]["messages"];
        REQUIRE(now.size() > before.size());
        for (size_t m = 0; m < before.size(); ++m) CHECK(now[m] == before[m]);  // only ever grows at its end
        CHECK(requests[i]["tools"] == requests[i - 1]["tools"]);
    }
    // A state joined after each step that changed it (goal, plan, done, progress) and not after the echoes.
    std::vector<std::string> states;
    for (const auto& m : requests.back()["messages"])
        if (m.value("agenthost_state", false)) states.push_back(m["content"]);
    REQUIRE(states.size() == 4);
    CHECK(requests.back()["messages"].back().value("agenthost_state", false) == false);  // the echo's result is last
    CHECK_THAT(states.back(), Contains("## Goal\ntidy the notes") && Contains("[done] list") && Contains("listed 12 notes"));
    CHECK_THAT(requests.back()["messages"][0]["content"].get<std::string>(), !Contains("tidy the notes"));
}
