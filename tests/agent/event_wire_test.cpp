// The names and JSON objects a turn's events take outside the process (SSE and `run --json`):
// clients read these fields, so each kind's shape is pinned here.
#include "agent/event_wire.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace agenthost;
using nlohmann::json;
namespace events = agent::events;

namespace {

std::pair<std::string, json> wire(uint64_t seq, agent::TurnEventBody body) {
    auto w = agent::to_wire(agent::TurnEvent{seq, std::move(body)});
    return {w.name, json::parse(w.data)};
}

}  // namespace

TEST_CASE("event wire: text, reasoning, waiting and the queue", "[unit][event_wire]") {
    CHECK(wire(1, events::Text{"Hel"}) == std::pair<std::string, json>{"token", {{"seq", 1}, {"text", "Hel"}}});
    CHECK(wire(2, events::Reasoning{"hmm"}) == std::pair<std::string, json>{"reasoning", {{"seq", 2}, {"text", "hmm"}}});
    CHECK(wire(3, events::ModelRequest{.iteration = 4}).second["text"] == "waiting for the model (iteration 4)");
    CHECK(wire(3, events::ModelRequest{.iteration = 4, .attempt = 2, .max_attempts = 5}).second["text"] ==
          "waiting for the model (iteration 4, attempt 2 of 5)");
    CHECK(wire(5, events::Queued{3}) == std::pair<std::string, json>{"queue", {{"seq", 5}, {"ahead", 3}}});
    CHECK(
        wire(7, events::ProviderSwitch{"cloud", "local", "cloud failed (transient: down); going on with local"}) ==
        std::pair<std::string, json>{
            "provider_switch",
            {{"seq", 7}, {"from", "cloud"}, {"to", "local"}, {"reason", "cloud failed (transient: down); going on with local"}}});
    auto [name, usage] = wire(6, events::Usage{.input_tokens = 12,
                                               .output_tokens = 5,
                                               .estimated = true,
                                               .attempts = 2,
                                               .cached_input_tokens = 8,
                                               .turn_input_tokens = 30,
                                               .turn_output_tokens = 9,
                                               .turn_cached_input_tokens = 16});
    CHECK(name == "usage");
    CHECK(usage["usage"] == json{{"input_tokens", 12},
                                 {"output_tokens", 5},
                                 {"cached_input_tokens", 8},
                                 {"estimated", true},
                                 {"attempts", 2},
                                 {"turn", {{"input_tokens", 30}, {"output_tokens", 9}, {"cached_input_tokens", 16}}}});
}

TEST_CASE("event wire: calls, results and approvals carry their JSON as JSON", "[unit][event_wire]") {
    auto [call_name, call] = wire(1, events::ToolCall{"echo", "c1", R"({"text":"a"})"});
    CHECK(call_name == "tool_call");
    CHECK(call == json{{"seq", 1}, {"tool", "echo"}, {"call_id", "c1"}, {"arguments", {{"text", "a"}}}});

    auto [result_name, result] = wire(2, events::ToolResult{.tool = "echo",
                                                            .call_id = "c1",
                                                            .content = "a",
                                                            .is_error = false,
                                                            .error_code = "",
                                                            .result_json = R"({"content":"a","is_error":false})"});
    CHECK(result_name == "tool_result");
    CHECK(result["content"] == "a");
    CHECK(result["is_error"] == false);
    CHECK(result["result"] == json{{"content", "a"}, {"is_error", false}});

    auto [approval_name, approval] = wire(3, events::Approval{"rm", "c2", R"({"path":"/x"})", "it deletes files"});
    CHECK(approval_name == "approval");
    CHECK(approval["arguments"]["path"] == "/x");
    CHECK(approval["reason"] == "it deletes files");
}

TEST_CASE("event wire: a truncated result is summarised, its error code kept", "[unit][event_wire]") {
    events::ToolResult big{.tool = "cat", .call_id = "c", .content = "first part", .is_error = true, .error_code = "too_big"};
    big.truncated = events::Truncation{1 << 20};
    auto [name, data] = wire(1, big);
    CHECK(data["result"] == json{{"is_error", true}, {"truncated", true}, {"content_bytes", 1 << 20}, {"error_code", "too_big"}});
    big.error_code.clear();
    CHECK_FALSE(wire(1, big).second["result"].contains("error_code"));
}

TEST_CASE("event wire: logs, tasks, failures and the end", "[unit][event_wire]") {
    CHECK(wire(1, events::Log{agent::EventLevel::warn, "retrying"}).second ==
          json{{"seq", 1}, {"level", "warn"}, {"message", "retrying"}});

    events::Tasks tasks{{{1, "fetch", memory::TaskStatus::done, ""}, {2, "sort", memory::TaskStatus::pending, "later"}},
                        {"outer", "inner"}};
    auto [tasks_name, t] = wire(2, tasks);
    CHECK(tasks_name == "tasks");
    CHECK(t["tasks"]["plan"][1] == json{{"id", 2}, {"title", "sort"}, {"status", "pending"}, {"note", "later"}});
    CHECK(t["tasks"]["stack"] == json{"outer", "inner"});

    auto [error_name, error] = wire(3, events::Failed{"no model", StopReason::model_unavailable});
    CHECK(error_name == "error");
    CHECK(error ==
          json{{"seq", 3}, {"message", "no model"}, {"code", "MODEL_UNAVAILABLE"}, {"stop_reason", "model_unavailable"}});

    auto [end_name, end] = wire(4, events::Finished{"42", StopReason::answered, "", 7, "c-1"});
    CHECK(end_name == "end");
    CHECK(end == json{{"seq", 4},
                      {"answer", "42"},
                      {"stop_reason", "answered"},
                      {"ok", true},
                      {"error", ""},
                      {"error_code", ""},
                      {"run", 7},
                      {"conversation", "c-1"}});
}
