// The agent loop against in-memory fakes (a scripted model, an in-memory run journal): the loop's
// decisions without plugins, sockets or SQLite runs.
#include "agent/loop_rig.hpp"

#include <catch2/catch.hpp>

using namespace agenthost;
using nlohmann::json;
using test::FakeReply;
using test::LoopRig;

namespace {

// The tool messages the model was sent in request `n` (0-based).
std::vector<json> tool_messages(LoopRig& rig, size_t n) {
    std::vector<json> out;
    auto requests = rig.model.requests();
    REQUIRE(requests.size() > n);
    for (const auto& m : requests[n]["messages"])
        if (m["role"] == "tool") out.push_back(m);
    return out;
}

}  // namespace

TEST_CASE("loop: a text reply answers the turn and completes the run in the journal", "[unit][loop]") {
    LoopRig rig;
    rig.model.script({FakeReply::answer("Hello there.")});
    auto out = rig.run("hi");
    CHECK(out.stop_reason == StopReason::answered);
    CHECK(out.answer == "Hello there.");
    auto run = rig.journal.run(out.run).value();
    REQUIRE(run);
    CHECK(run->status == RunStatus::completed);
    CHECK(run->answer == "Hello there.");
    // The streamed text reached the front end, and the last event says how the turn ended.
    std::string streamed;
    for (const auto& e : rig.events)
        if (const auto* t = e.as<agent::events::Text>()) streamed += t->delta;
    CHECK(streamed == "Hello there.");
    REQUIRE_FALSE(rig.events.empty());
    CHECK(rig.events.back().is<agent::events::Finished>());
}

TEST_CASE("loop: a tool call runs once, its result goes to the model, the journal records it done", "[unit][loop]") {
    LoopRig rig;
    rig.model.script({FakeReply::call("push_task", {{"task", "water the plants"}}), FakeReply::answer("Noted.")});
    auto out = rig.run("remind me");
    CHECK(out.stop_reason == StopReason::answered);
    CHECK(out.tool_calls == 1);
    auto results = tool_messages(rig, 1);
    REQUIRE(results.size() == 1);
    CHECK(results[0]["name"] == "push_task");
    auto assistant = rig.model.requests()[1]["messages"];
    std::string call_id = results[0]["tool_call_id"];
    auto entry = rig.journal.journal(out.run, call_id).value();
    REQUIRE(entry);
    CHECK(entry->status == agenthost::store::CallStatus::done);
    CHECK(rig.memory->task_stack("c1") == std::vector<std::string>{"water the plants"});
}

TEST_CASE("loop: a provider failure after a tool step ends resumable, and resume does not run the tool again", "[unit][loop]") {
    LoopRig rig;
    rig.model.script({FakeReply::call("push_task", {{"task", "once"}}), FakeReply::failure("transient", "connection reset")});
    auto failed = rig.run("go");
    CHECK(failed.stop_reason == StopReason::transient);
    CHECK(failed.error_code() == "AGENT_FAILURE");
    auto record = rig.journal.run(failed.run).value();
    REQUIRE(record);
    CHECK(record->status == RunStatus::failed);
    CHECK(store::resumable(*record));

    rig.model.script({FakeReply::answer("Done now.")});
    auto resumed = rig.resume(failed.run);
    CHECK(resumed.stop_reason == StopReason::answered);
    CHECK(resumed.answer == "Done now.");
    CHECK(rig.memory->task_stack("c1") == std::vector<std::string>{"once"});  // pushed once, not twice
    CHECK(tool_messages(rig, 2).size() == 1);                                 // the resumed request still carries the one result
}

TEST_CASE("loop: a timed-out provider error is a timeout, an unknown one a provider failure", "[unit][loop]") {
    LoopRig rig;
    rig.model.script({FakeReply::failure("timeout", "the request timed out after 60 s")});
    CHECK(rig.run("a", "c-timeout").stop_reason == StopReason::timeout);
    // The words of a message decide nothing: a transient error that mentions a timeout stays transient.
    rig.model.script({FakeReply::failure("transient", "an upstream proxy timed out")});
    CHECK(rig.run("t", "c-transient").stop_reason == StopReason::transient);
    rig.model.script({FakeReply::failure("exploded")});
    auto out = rig.run("b", "c-unknown");
    CHECK(out.stop_reason == StopReason::provider_failure);
    CHECK(out.error_code() == "PLUGIN_FAILURE");
}

TEST_CASE("loop: a step the journal cannot save ends the turn store_failure, and the interrupted call is settled on resume",
          "[unit][loop]") {
    SECTION("a call that may not repeat is reported as outcome unknown") {
        LoopRig rig;
        // The model's step is saved (with the first checkpoint and the call's intent: one write); the
        // step with the tool's result is not.
        rig.journal.fail_steps_after(1);
        rig.model.script({FakeReply::call("pop_task")});
        auto failed = rig.run("go");
        CHECK(failed.stop_reason == StopReason::store_failure);
        CHECK(failed.error.find("could not save") != std::string::npos);
        rig.journal.fail_steps_after(-1);
        rig.model.script({FakeReply::answer("Checked.")});
        auto resumed = rig.resume(failed.run);
        CHECK(resumed.stop_reason == StopReason::answered);
        auto results = tool_messages(rig, 1);
        REQUIRE(results.size() == 1);
        CHECK(results[0]["content"].get<std::string>().find("Outcome unknown") != std::string::npos);
    }
    SECTION("a call that may repeat runs again") {
        LoopRig rig;
        rig.journal.fail_steps_after(1);
        rig.model.script({FakeReply::call("list_tasks")});
        auto failed = rig.run("go");
        REQUIRE(failed.stop_reason == StopReason::store_failure);
        rig.journal.fail_steps_after(-1);
        rig.model.script({FakeReply::answer("Listed.")});
        auto resumed = rig.resume(failed.run);
        CHECK(resumed.stop_reason == StopReason::answered);
        auto results = tool_messages(rig, 1);
        REQUIRE(results.size() == 1);
        CHECK(results[0]["content"].get<std::string>().find("Outcome unknown") == std::string::npos);
    }
}

TEST_CASE("loop: a run that never saved a step, resumed and stopped by the store again, still resumes from its prompt",
          "[unit][loop]") {
    LoopRig rig;
    rig.journal.fail_steps_after(0);  // not even the first step is saved
    rig.model.script({FakeReply::call("list_tasks")});
    auto failed = rig.run("go");
    REQUIRE(failed.stop_reason == StopReason::store_failure);
    rig.model.script({FakeReply::call("list_tasks")});
    auto again = rig.resume(failed.run);  // from its prompt, and the store refuses it once more
    REQUIRE(again.stop_reason == StopReason::store_failure);
    // Nothing was committed, so no checkpoint was made up at its end (one holding nothing but an
    // event number resumed with no provider, no history and no prompt).
    CHECK_FALSE(rig.journal.last_checkpoint(failed.run).value());
    rig.journal.fail_steps_after(-1);
    rig.model.script({FakeReply::call("list_tasks"), FakeReply::answer("third try")});
    auto resumed = rig.resume(failed.run);
    INFO(resumed.error);
    CHECK(resumed.stop_reason == StopReason::answered);
    CHECK(resumed.answer == "third try");
    auto requests = rig.model.requests();
    REQUIRE(requests.size() == 4);
    CHECK(requests[2]["messages"].back()["content"] == "go");  // the prompt, as the first time
}

TEST_CASE("loop: a run that died mid-turn is resumed from its checkpoint, events numbered after the last one", "[unit][loop]") {
    LoopRig rig;
    rig.journal.fail_steps_after(1);
    rig.model.script({FakeReply::call("list_tasks")});
    auto failed = rig.run("go");
    uint64_t last_seq = rig.events.back().seq;
    rig.journal.fail_steps_after(-1);
    rig.model.script({FakeReply::answer("ok")});
    rig.events.clear();
    auto resumed = rig.resume(failed.run);
    REQUIRE_FALSE(rig.events.empty());
    CHECK(rig.events.front().seq > last_seq);
    CHECK(resumed.iterations == 2);  // the first model call counts, it is not made again
    CHECK(rig.model.requests().size() == 2);
}

TEST_CASE("loop: the loop guard stops a model that repeats the same call with the same result", "[unit][loop]") {
    LoopRig rig;
    std::vector<FakeReply> same(12, FakeReply::call("list_tasks"));
    rig.model.script(same);
    auto out = rig.run("loop");
    CHECK(out.stop_reason == StopReason::loop_detected);
    CHECK(out.error_code() == "AGENT_FAILURE");
    // The model was told before it was stopped.
    bool told = false;
    for (const auto& m : tool_messages(rig, rig.model.requests().size() - 1))
        told = told || m["content"].get<std::string>().find("[loop guard]") != std::string::npos;
    CHECK(told);
}

TEST_CASE("loop: at the mode's iteration cap the model is asked for a summary, which is the answer", "[unit][loop]") {
    config::Config cfg;
    cfg.limits.execute_iterations = 2;
    LoopRig rig(cfg);
    rig.model.script({FakeReply::call("push_task", {{"task", "a"}}), FakeReply::call("push_task", {{"task", "b"}}),
                      FakeReply::answer("I pushed two tasks and stopped.")});
    auto out = rig.run("work");
    CHECK(out.stop_reason == StopReason::iteration_limit);
    CHECK(out.answer == "I pushed two tasks and stopped.");
    CHECK(rig.model.requests().back()["tools"].empty());  // the summary request offers no tools
    CHECK(rig.journal.run(out.run).value()->status == RunStatus::failed);
}

TEST_CASE("loop: a second turn while one runs in the conversation is refused, not started", "[unit][loop]") {
    LoopRig rig;
    auto busy = rig.journal.begin_run("c1", agenthost::Mode::execute, "p", "first", R"({"role":"user","content":"first"})");
    REQUIRE(busy);
    auto out = rig.run("second");
    CHECK(out.stop_reason == StopReason::conversation_busy);
    CHECK(out.run == 0);
    CHECK(rig.model.requests().empty());
}

TEST_CASE("loop: a claimed run whose checkpoint cannot be read is handed back interrupted, its checkpoint kept", "[unit][loop]") {
    LoopRig rig;
    auto run = rig.journal.begin_run("c1", agenthost::Mode::execute, "p", "hi", R"({"role":"user","content":"hi"})");
    REQUIRE(run);
    const std::string newer = R"({"schema": 99, "iteration": 3})";
    agenthost::store::StepWrite step;
    step.state_json = newer;
    REQUIRE(rig.journal.write_step(run->id, step));
    rig.journal.mark_interrupted(run->id);
    auto out = rig.resume(run->id);
    CHECK(out.stop_reason == StopReason::run_not_resumable);
    CHECK(out.error.find("newer agenthost") != std::string::npos);
    auto after = rig.journal.run(run->id).value();
    REQUIRE(after);
    CHECK(after->status == RunStatus::interrupted);  // not left running
    CHECK(rig.journal.last_checkpoint(run->id).value()->state_json == newer);
    CHECK(rig.model.requests().empty());
}

TEST_CASE("loop: a resume that cannot read the journal is handed back, and no call runs on a guess", "[unit][loop]") {
    // A reviewer's finding: an unreadable checkpoint read as "never took a step" (the run started
    // over and wrote over its checkpoint), and an unreadable tool journal as "never started" (a
    // call that may not repeat ran again).
    using Reads = test::MemoryJournal::Reads;
    LoopRig rig;
    rig.journal.fail_steps_after(1);
    rig.model.script({FakeReply::call("pop_task")});
    auto failed = rig.run("go");
    REQUIRE(failed.stop_reason == StopReason::store_failure);
    rig.journal.fail_steps_after(-1);
    const std::string checkpoint = rig.journal.last_checkpoint(failed.run).value()->state_json;

    rig.journal.fail_reads(Reads::resume);
    auto refused = rig.resume(failed.run);
    CHECK(refused.stop_reason == StopReason::store_unavailable);
    CHECK(refused.error.find("its checkpoint could not be read") != std::string::npos);
    rig.journal.fail_reads(Reads::none);
    CHECK(rig.journal.run(failed.run).value()->status == RunStatus::interrupted);  // handed back, not left running
    CHECK(rig.journal.last_checkpoint(failed.run).value()->state_json == checkpoint);
    CHECK(rig.model.requests().size() == 1);

    rig.journal.fail_reads(Reads::tool_journal);
    auto unsure = rig.resume(failed.run);
    CHECK(unsure.stop_reason == StopReason::store_failure);
    CHECK(unsure.error.find("tool journal could not be read") != std::string::npos);
    CHECK(rig.model.requests().size() == 1);
    rig.journal.fail_reads(Reads::none);

    rig.model.script({FakeReply::answer("Checked.")});
    auto resumed = rig.resume(failed.run);
    CHECK(resumed.stop_reason == StopReason::answered);
    auto results = tool_messages(rig, 1);
    REQUIRE(results.size() == 1);  // the call is settled once, from the journal, never run again
    CHECK(results[0]["content"].get<std::string>().find("Outcome unknown") != std::string::npos);
}

TEST_CASE("loop: a paused run is found by the start of the next turn, which reads nothing else to check", "[unit][loop]") {
    LoopRig rig;
    rig.model.script({FakeReply::answer("fine")});
    rig.journal.fail_reads(test::MemoryJournal::Reads::resume);   // paused_run and last_checkpoint fail
    CHECK(rig.run("hello").stop_reason == StopReason::answered);  // no read asks first
    auto run = rig.journal.begin_run("c2", agenthost::Mode::execute, "p", "hi", R"({"role":"user","content":"hi"})");
    REQUIRE(run);
    agenthost::store::RunEnd end;
    end.stop_reason = StopReason::approval_pending;
    REQUIRE(rig.journal.end_run(run->id, end));
    auto out = rig.run("another", "c2");
    CHECK(out.stop_reason == StopReason::approval_pending);
    CHECK(out.run == 0);
    // The waiting call cannot be read: the refusal names the run instead.
    CHECK(out.error.find("run " + std::to_string(run->id) + " waiting for approval") != std::string::npos);
    CHECK(rig.model.requests().size() == 1);
}

TEST_CASE("loop: a paused run with an unreadable checkpoint still holds its conversation", "[unit][loop]") {
    LoopRig rig;
    auto run = rig.journal.begin_run("c1", agenthost::Mode::execute, "p", "hi", R"({"role":"user","content":"hi"})");
    REQUIRE(run);
    agenthost::store::RunEnd end;
    end.stop_reason = StopReason::approval_pending;
    end.state_json = R"({"schema": 99})";
    REQUIRE(rig.journal.end_run(run->id, end));
    auto waiting = rig.runner->pending_approval("c1").value();
    REQUIRE(waiting);
    CHECK(waiting->reason.find("newer agenthost") != std::string::npos);
    auto out = rig.run("another");
    CHECK(out.stop_reason == StopReason::approval_pending);
    CHECK(rig.model.requests().empty());
}

TEST_CASE("loop: a run followed by a later turn of its conversation is not resumed into that turn's history", "[unit][loop]") {
    LoopRig rig;
    rig.model.script({FakeReply::call("push_task", {{"task", "x"}}), FakeReply::failure("transient", "reset")});
    auto first = rig.run("first");
    REQUIRE(first.stop_reason == StopReason::transient);
    rig.model.script({FakeReply::answer("second answered")});
    REQUIRE(rig.run("second").stop_reason == StopReason::answered);
    size_t requests = rig.model.requests().size();
    auto out = rig.resume(first.run);
    CHECK(out.stop_reason == StopReason::run_not_resumable);
    CHECK(out.error.find("later turn") != std::string::npos);
    CHECK(rig.model.requests().size() == requests);
    CHECK(rig.journal.run(first.run).value()->status == RunStatus::failed);  // left as it was
}

TEST_CASE("loop: the reply a person is asked about is stored before they are asked", "[unit][loop]") {
    config::Config cfg;
    cfg.tools["push_task"].needs_approval = true;
    LoopRig rig(cfg);
    rig.model.script({FakeReply::call("push_task", {{"task", "a"}}), FakeReply::answer("Done.")});
    agent::TurnRequest request;
    request.prompt = "go";
    request.conversation_id = "c1";
    agent::RunControls controls;
    size_t stored_when_asked = 0;
    controls.approve = [&](const agent::ApprovalRequest&) {
        // A second Ctrl-C here exits at once: what was shown must already be in the journal.
        auto runs = rig.journal.runs("c1", 1).value();
        if (!runs.empty()) {
            const auto messages = rig.journal.run_messages(runs.front().id, 0).value();  // held: not a temporary's
            for (const auto& m : messages)
                if (m.body.find("push_task") != std::string::npos) ++stored_when_asked;
        }
        return agent::ApprovalDecision{agent::ApprovalDecision::Kind::approve};
    };
    auto out = rig.runner->run(request, controls);
    CHECK(out.stop_reason == StopReason::answered);
    CHECK(stored_when_asked == 1);  // the reply with its call, once
    // The reply was not written a second time with the call's intent or result.
    size_t replies = 0;
    const auto messages = rig.journal.run_messages(out.run, 0).value();
    for (const auto& m : messages)
        if (m.body.find("\"tool_calls\"") != std::string::npos) ++replies;
    CHECK(replies == 1);
}

TEST_CASE("loop: only a call that changes things waits for the disk before it runs", "[unit][loop]") {
    // A read-only or idempotent call's intent may be lost in a power cut (the run redoes the call);
    // a call that changes things has its intent on disk first, so its outcome is never silently lost.
    // Both ways a call's intent is written: riding with the reply (the first call) and alone.
    LoopRig rig;
    auto two_calls = [](const std::string& first, const std::string& second, const std::string& ids) {
        FakeReply r;
        r.calls = json::array(
            {{{"name", first}, {"arguments", first == "push_task" ? json{{"task", "t"}} : json::object()}, {"id", ids + "a"}},
             {{"name", second}, {"arguments", second == "push_task" ? json{{"task", "t"}} : json::object()}, {"id", ids + "b"}}});
        return r;
    };
    rig.model.script(
        {two_calls("list_tasks", "push_task", "one_"), two_calls("push_task", "list_tasks", "two_"), FakeReply::answer("Done.")});
    auto out = rig.run("plan it");
    REQUIRE(out.stop_reason == StopReason::answered);
    CHECK(out.tool_calls == 4);
    using store::Flush;
    CHECK(rig.journal.intent_flush(out.run, "one_a") == Flush::with_next);  // read-only, with the reply
    CHECK(rig.journal.intent_flush(out.run, "one_b") == Flush::now);        // changes the stack, alone
    CHECK(rig.journal.intent_flush(out.run, "two_a") == Flush::now);        // changes the stack, with the reply
    CHECK(rig.journal.intent_flush(out.run, "two_b") == Flush::with_next);  // read-only, alone
    for (const char* id : {"one_a", "one_b", "two_a", "two_b"})
        CHECK(rig.journal.journal(out.run, id).value()->status == agenthost::store::CallStatus::done);
}

TEST_CASE("loop: a client's history and request context are stored with the run's start, and a restart keeps them",
          "[unit][loop]") {
    const std::string history = R"([{"role":"user","content":"my name is Ada"},{"role":"assistant","content":"Hello Ada."}])";
    SECTION("they ride with the run's start: an answer needs no step of its own") {
        LoopRig rig;
        rig.journal.fail_steps_after(0);  // any step written would fail the turn
        rig.model.script({FakeReply::answer("Still Ada.")});
        agent::TurnRequest request;
        request.prompt = "what is my name?";
        request.conversation_id = "c1";
        request.history_json = history;
        request.request_context_json = R"({"user":"ada"})";
        auto out = rig.run(request);
        INFO(out.error);
        REQUIRE(out.stop_reason == StopReason::answered);
        json inputs = json::parse(rig.journal.run_inputs(out.run).value());
        CHECK(inputs["history"].size() == 2);
        CHECK(inputs["request_context"] == R"({"user":"ada"})");
        CHECK(rig.model.requests()[0]["messages"].dump().find("my name is Ada") != std::string::npos);
    }
    SECTION("a run stopped before its first checkpoint starts again from its prompt with them") {
        LoopRig rig;
        json inputs{
            {"history", json::parse(history)}, {"request_context", R"({"user":"ada"})"}, {"notifications", json::array()}};
        auto run = rig.journal.begin_run("c1", agenthost::Mode::execute, "p", "what is my name?",
                                         R"({"role":"user","content":"what is my name?"})", inputs.dump());
        REQUIRE(run);
        rig.journal.mark_interrupted(run->id);
        REQUIRE_FALSE(rig.journal.last_checkpoint(run->id).value());
        rig.model.script({FakeReply::answer("Ada.")});
        auto out = rig.resume(run->id);
        INFO(out.error);
        REQUIRE(out.stop_reason == StopReason::answered);
        std::string sent = rig.model.requests()[0]["messages"].dump();
        CHECK(sent.find("my name is Ada") != std::string::npos);
        CHECK(sent.find("Hello Ada.") != std::string::npos);
        CHECK(sent.find("what is my name?") != std::string::npos);
    }
}

TEST_CASE("loop: a run found abandoned by its process numbers its events past any that process sent", "[unit][loop]") {
    // The dead process may have streamed events its last checkpoint does not count; ids continue
    // past a whole block per recovery, so a client's Last-Event-ID never meets a repeated id.
    LoopRig rig;
    auto run = rig.journal.begin_run("c1", agenthost::Mode::execute, "p", "hi", R"({"role":"user","content":"hi"})");
    REQUIRE(run);
    rig.journal.mark_interrupted(run->id);
    rig.model.script({FakeReply::call("push_task", {{"task", "x"}}), FakeReply::failure("transient", "reset")});
    auto first = rig.resume(run->id);
    REQUIRE(first.stop_reason == StopReason::transient);
    REQUIRE_FALSE(rig.events.empty());
    const uint64_t block = 1'000'000'000;
    CHECK(rig.events.front().seq == block + 1);
    uint64_t last = rig.events.back().seq;
    for (size_t i = 1; i < rig.events.size(); ++i) CHECK(rig.events[i].seq == rig.events[i - 1].seq + 1);
    // Resumed again without another recovery: it goes on after the ids its checkpoint counts.
    rig.events.clear();
    rig.model.script({FakeReply::answer("done")});
    auto second = rig.resume(run->id);
    REQUIRE(second.stop_reason == StopReason::answered);
    REQUIRE_FALSE(rig.events.empty());
    CHECK(rig.events.front().seq > last);
    CHECK(rig.events.front().seq < 2 * block);
}

TEST_CASE("loop: a turn whose earlier turns cannot be read stops resumable instead of answering without them", "[unit][loop]") {
    LoopRig rig;
    rig.model.script({FakeReply::answer("First.")});
    REQUIRE(rig.run("my name is Ada").stop_reason == StopReason::answered);

    rig.journal.fail_history(true);
    rig.model.script({FakeReply::answer("You are Ada.")});
    auto stopped = rig.run("what is my name?");
    CHECK(stopped.stop_reason == StopReason::store_failure);
    CHECK(stopped.error.find("earlier turns could not be read") != std::string::npos);
    CHECK(rig.model.requests().size() == 1);  // the model was not asked without the history
    auto record = rig.journal.run(stopped.run).value();
    REQUIRE(record);
    CHECK(store::resumable(*record));

    rig.journal.fail_history(false);
    auto resumed = rig.resume(stopped.run);
    CHECK(resumed.stop_reason == StopReason::answered);
    REQUIRE(rig.model.requests().size() == 2);
    CHECK(rig.model.requests()[1]["messages"].dump().find("my name is Ada") != std::string::npos);
}

TEST_CASE("loop: clearing a session the journal cannot read clears nothing", "[unit][loop]") {
    LoopRig rig;
    rig.model.script({FakeReply::call("push_task", {{"task", "keep me"}}), FakeReply::answer("Noted.")});
    REQUIRE(rig.run("remind me").stop_reason == StopReason::answered);

    rig.journal.fail_reads(test::MemoryJournal::Reads::every);
    auto cleared = rig.runner->clear_session("c1");
    REQUIRE_FALSE(cleared);
    CHECK(rig.memory->task_stack("c1") == std::vector<std::string>{"keep me"});

    rig.journal.fail_reads(test::MemoryJournal::Reads::none);
    auto retried = rig.runner->clear_session("c1");
    REQUIRE(retried);
    CHECK(rig.memory->task_stack("c1").empty());
}
