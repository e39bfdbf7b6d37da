// The step writer: how a turn's steps reach the run journal (here the in-memory journal).
#include "agent/memory_journal.hpp"
#include "agent/step_writer.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace agenthost;
using namespace agenthost::agent;
using nlohmann::json;

namespace {

const char* kPrompt = R"({"content":"hi","role":"user"})";

struct Rig {
    Rig() {
        auto run = journal.begin_run("c1", agenthost::Mode::execute, "p", "hi", kPrompt);
        REQUIRE(run);
        state.run = run->id;
        state.conversation = "c1";
        state.prompt = "hi";
    }
    test::MemoryJournal journal;
    LoopState state;
    ContextWindow window;
    StepWriter writer{journal, state, window};
};

store::NewMessage step(const std::string& content) {
    return {store::MessageKind::step, json{{"role", "assistant"}, {"content", content}}.dump()};
}

}  // namespace

TEST_CASE("step writer: a held step rides with the next write, in one checkpoint, before its messages", "[unit][steps]") {
    Rig r;
    r.state.iteration = 1;
    r.writer.hold({step("reply")});
    CHECK(r.writer.holding());
    CHECK(r.journal.run_messages(r.state.run, 0).value().size() == 1);  // only the prompt: nothing written yet
    CHECK_FALSE(r.writer.committed_state().is_object());
    r.state.iteration = 2;
    REQUIRE(r.writer.commit({step("result")}));
    CHECK_FALSE(r.writer.holding());
    auto messages = r.journal.run_messages(r.state.run, 0).value();
    REQUIRE(messages.size() == 3);
    CHECK(json::parse(messages[1].body)["content"] == "reply");  // the held step first
    CHECK(json::parse(messages[2].body)["content"] == "result");
    CHECK(r.writer.committed_state()["iteration"] == 2);
    CHECK(r.journal.last_checkpoint(r.state.run).value()->state_json.find("\"iteration\":2") != std::string::npos);
    CHECK(r.journal.run(r.state.run).value()->counters.iterations == 2);
    CHECK(r.writer.inputs_to_store().empty());  // stored with the first write, once
}

TEST_CASE("step writer: an intent rides with the held step, and one that may run twice need not reach the disk",
          "[unit][steps]") {
    Rig r;
    tools::Tool reader;
    reader.name = "read";
    reader.hints = AH_TOOL_READ_ONLY;
    tools::Tool writer_tool;
    writer_tool.name = "write";
    r.writer.hold({step("calls")});
    REQUIRE(r.writer.commit_intent({"call-1", "read", json::object()}, reader));
    CHECK_FALSE(r.writer.holding());  // written with the intent
    CHECK(r.journal.run_messages(r.state.run, 0).value().size() == 2);
    CHECK(r.journal.intent_flush(r.state.run, "call-1") == store::Flush::with_next);
    REQUIRE(r.writer.commit_intent({"call-2", "write", json::object()}, writer_tool));
    CHECK(r.journal.intent_flush(r.state.run, "call-2") == store::Flush::now);
    CHECK(r.journal.journal(r.state.run, "call-2").value()->status == agenthost::store::CallStatus::started);
}

TEST_CASE("step writer: a failed write says so and keeps the last committed checkpoint", "[unit][steps]") {
    Rig r;
    REQUIRE(r.writer.commit({step("one")}));
    json committed = r.writer.committed_state();
    r.journal.fail_steps_after(0);
    r.state.iteration = 5;
    auto failed = r.writer.commit({step("two")});
    REQUIRE_FALSE(failed);
    CHECK(failed.error().code == "store_io");
    CHECK(r.writer.committed_state() == committed);
    // The end takes a held step's messages and its checkpoint becomes the committed one.
    r.writer.hold({step("held")});
    auto held = r.writer.take_held_for_end();
    REQUIRE(held.size() == 1);
    CHECK(r.writer.committed_state()["iteration"] == 5);
}
