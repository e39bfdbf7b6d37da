// The content of a /v1 answer: steps' texts apart, the run's answer once, the same from events and
// from the stored transcript.
#include "server/answer_text.hpp"

#include <catch2/catch.hpp>

using agenthost::server::answer_from_transcript;
using agenthost::server::AnswerText;
using agenthost::store::MessageKind;
using agenthost::store::StoredMessage;

TEST_CASE("answer text: a tool call between two texts leaves a blank line, the answer a step said is not repeated",
          "[unit][server]") {
    AnswerText a;
    CHECK(a.text("I will add") == "I will add");
    CHECK(a.text(" them.") == " them.");
    a.step_break();
    CHECK(a.text("").empty());
    CHECK(a.text("42") == "\n\n42");
    CHECK(a.answer("42\n").empty());
    CHECK(a.whole() == "I will add them.\n\n42");
}

TEST_CASE("answer text: an answer no step said (agent_done's summary) ends the content, after a blank line", "[unit][server]") {
    AnswerText a;
    a.step_break();  // a first step with only a tool call
    CHECK(a.text("Looking.") == "Looking.");
    a.step_break();
    CHECK(a.answer("Done.") == "\n\nDone.");
    CHECK(a.whole() == "Looking.\n\nDone.");
    AnswerText only;
    only.step_break();
    CHECK(only.answer("Done.") == "Done.");
}

TEST_CASE("answer text: the stored transcript gives what the events gave", "[unit][server]") {
    auto message = [](MessageKind kind, std::string body) { return StoredMessage{1, 1, 1, kind, std::move(body), ""}; };
    std::vector<StoredMessage> messages{
        message(MessageKind::prompt, R"({"role":"user","content":"add"})"),
        message(MessageKind::step,
                R"({"role":"assistant","content":"I will add them.","tool_calls":[{"id":"c1","name":"add"}]})"),
        message(MessageKind::step, R"({"role":"tool","tool_call_id":"c1","content":"42"})"),
        message(MessageKind::answer, R"({"role":"assistant","content":"It is 42."})")};
    CHECK(answer_from_transcript(messages, "It is 42.") == "I will add them.\n\nIt is 42.");
    messages.back() =
        message(MessageKind::step, R"({"role":"assistant","content":"","tool_calls":[{"id":"c2","name":"agent_done"}]})");
    CHECK(answer_from_transcript(messages, "Summary.") == "I will add them.\n\nSummary.");
}

TEST_CASE("answer text: blanks at a step's ends and an answer a step already said are left out, from events and from the store",
          "[unit][server]") {
    // Outside try: a tool call written in the text left "\n" (or " ") before it in the stream but not in the store.
    AnswerText streamed;
    CHECK(streamed.text("Let me note that.") == "Let me note that.");
    CHECK(streamed.text("\n").empty());
    streamed.step_break();
    CHECK(streamed.text(" Noted") == "\n\nNoted");
    CHECK(streamed.text(" it. ") == " it.");
    CHECK(streamed.answer("Noted it.").empty());
    CHECK(streamed.whole() == "Let me note that.\n\nNoted it.");
    // Text, then agent_done with the same words: said once.
    auto message = [](MessageKind kind, std::string body) { return StoredMessage{1, 1, 1, kind, std::move(body), ""}; };
    std::vector<StoredMessage> same{
        message(MessageKind::step,
                R"({"role":"assistant","content":"Same words.","tool_calls":[{"id":"c1","name":"agent_done"}]})"),
        message(MessageKind::answer, R"({"role":"assistant","content":"Same words."})")};
    CHECK(answer_from_transcript(same, "Same words.") == "Same words.");
    AnswerText live;
    live.text("Same words.");
    live.step_break();
    CHECK(live.answer("Same words.").empty());
    CHECK(live.whole() == "Same words.");
}
