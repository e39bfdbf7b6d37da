// The context window: what the model is sent of a turn, written by appending.
#include "agent/context_window.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace agenthost::agent;
using nlohmann::json;

TEST_CASE("context window: the request text is byte for byte the serialised request object", "[unit][context]") {
    ContextWindow window;
    window.pin(json{{"role", "user"}, {"content", "earlier"}}.dump());
    window.add(json{{"role", "assistant"}, {"content", "é \"quoted\"\n"}}.dump(), 7);
    const json system{{"role", "system"}, {"content", "be brief"}};
    const json tools = json::array({{{"name", "add"}, {"description", "adds"}, {"parameters", json::object()}}});
    const std::string prompt = "hi \x01 there \\ \"you\"";
    std::string text = window.request_text(system.dump(), prompt, "model-x", tools.dump(), 64);
    json expected{{"max_tokens", 64},
                  {"messages", json::array({system,
                                            {{"role", "user"}, {"content", "earlier"}},
                                            {{"role", "user"}, {"content", prompt}},
                                            {{"role", "assistant"}, {"content", "é \"quoted\"\n"}}})},
                  {"model", "model-x"},
                  {"stream", true},
                  {"tool_choice", "auto"},
                  {"tools", tools}};
    CHECK(text == expected.dump());
    CHECK(ContextWindow::prompt_message(prompt) == json({{"role", "user"}, {"content", prompt}}).dump());
    // No tools: the model is told not to call any.
    CHECK(json::parse(window.request_text(system.dump(), prompt, "m", "[]", 8))["tool_choice"] == "none");
}

TEST_CASE("context window: pruning keeps the newest messages and never parts a tool result from its call", "[unit][context]") {
    ContextWindow window;
    window.pin(json{{"role", "user"}, {"content", "pinned"}}.dump());
    window.add(json{{"role", "assistant"}, {"content", "a"}}.dump(), 1);
    window.add(json{{"role", "assistant"}, {"tool_calls", json::array()}}.dump(), 2);
    window.add(json{{"role", "tool"}, {"content", "r1"}}.dump(), 3);
    window.add(json{{"role", "tool"}, {"content", "r2"}}.dump(), 4);
    window.add(json{{"role", "assistant"}, {"content", "b"}}.dump(), 5);
    CHECK(window.prune(10) == 0);  // fits: nothing dropped
    CHECK(window.working_from() == 1);
    // Keeping 3 would start at a tool result (id 3): widened back to its call (id 2).
    CHECK(window.prune(3) == 1);
    CHECK(window.working_from() == 2);
    json request = json::parse(window.request_text("{}", "p", "m", "[]", 1));
    CHECK(request["messages"].size() == 1 + 1 + 1 + 4);    // system, pinned, prompt, the four kept
    CHECK(request["messages"][1]["content"] == "pinned");  // pinned messages are never pruned
}

TEST_CASE("context window: the agent's state joins when it changes, stays where it joined, and comes back after a prune",
          "[unit][context]") {
    auto messages = [](const ContextWindow& w) { return json::parse(w.request_text("{}", "p", "m", "[]", 1))["messages"]; };
    ContextWindow window;
    window.note_state("plan: 1");
    window.add(json{{"role", "assistant"}, {"content", "a"}}.dump(), 1);
    window.note_state("plan: 1");  // the same: not sent again
    json first = messages(window);
    CHECK(first.size() == 4);  // system, prompt, state, a
    CHECK(first[2]["content"] == "plan: 1");
    window.add(json{{"role", "assistant"}, {"content", "b"}}.dump(), 2);
    window.note_state("plan: 2");  // changed: joins after the newest message
    json second = messages(window);
    REQUIRE(second.size() == 6);
    for (size_t i = 0; i < first.size(); ++i) CHECK(second[i] == first[i]);  // the request before is its prefix
    CHECK(second[5]["content"] == "plan: 2");
    CHECK(window.working_from() == 0);  // nothing pruned yet (the first state joined before any message)

    // Pruned away, the state comes back with the next request; a state is never the first kept.
    window.add(json{{"role", "assistant"}, {"content", "c"}}.dump(), 3);
    window.add(json{{"role", "assistant"}, {"content", "d"}}.dump(), 4);
    CHECK(window.prune(2) == 4);  // state, a, b, state 2
    CHECK(window.working_from() == 3);
    window.note_state("plan: 2");
    json after = messages(window);
    REQUIRE(after.size() == 5);  // system, prompt, c, d, the state again
    CHECK(after[4]["content"] == "plan: 2");

    // Emptied, the model is told so rather than left with the last state.
    window.note_state("");
    CHECK_THAT(messages(window).back()["content"].get<std::string>(), Catch::Matchers::Contains("state is now empty"));
}
