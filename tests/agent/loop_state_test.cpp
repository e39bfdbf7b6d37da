// The loop's typed state and the one stop-reason table: what checkpoints hold and what every
// front end reads from a run's end.
#include "agent/loop_state.hpp"
#include "common/stop_reason.hpp"
#include "server/error_table.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace agenthost;
using agent::LoopState;
using nlohmann::json;

TEST_CASE("every stop reason has one row whose name reads back to it", "[unit][stop_reason]") {
    std::set<std::string> names;
    for (const StopInfo& row : all_stop_reasons()) {
        CHECK(names.insert(row.name).second);
        REQUIRE(parse_stop_reason(row.name));
        CHECK(*parse_stop_reason(row.name) == row.reason);
        // ok rows complete and carry no error code; every failure carries one.
        if (row.ok) {
            CHECK(row.status == RunStatus::completed);
            CHECK(std::string(row.error_code).empty());
            CHECK(std::string(row.finish_reason) == "stop");
        } else if (row.reason != StopReason::approval_pending) {
            CHECK_FALSE(std::string(row.error_code).empty());
        }
    }
    CHECK_FALSE(parse_stop_reason("no_such_reason"));
}

TEST_CASE("the stop-reason table gives the run status, code, resumability and HTTP answer", "[unit][stop_reason]") {
    CHECK(stop_info(StopReason::approval_pending).status == RunStatus::paused);
    CHECK(stop_info(StopReason::interrupted).status == RunStatus::interrupted);
    CHECK(stop_info(StopReason::cancelled).status == RunStatus::cancelled);
    CHECK(std::string(stop_info(StopReason::iteration_limit).finish_reason) == "length");
    // The failures whose cause can go away may be resumed; the model's own failures may not.
    for (StopReason r : {StopReason::provider_failure, StopReason::rate_limit, StopReason::model_unavailable,
                         StopReason::transient, StopReason::timeout, StopReason::auth, StopReason::store_failure,
                         StopReason::provider_unavailable, StopReason::output_limit})
        CHECK(stop_info(r).resumable);
    for (StopReason r :
         {StopReason::loop_detected, StopReason::malformed_output, StopReason::token_budget, StopReason::context_too_large})
        CHECK_FALSE(stop_info(r).resumable);

    agent::TurnOutcome out;
    out.stop_reason = StopReason::rate_limit;
    server::HttpError e = server::error_for_outcome(out);
    CHECK(e.status == 429);
    CHECK(e.retry_after_s == 30);
    CHECK_FALSE(e.should_retry);  // a run started: a retry would run the agent again
    CHECK(out.error_code() == "RATE_LIMITED");
    // Refused before any run existed: the client may retry.
    server::HttpError busy = server::error_for_start({StopReason::server_busy, "all slots busy"});
    CHECK(busy.status == 429);
    CHECK(busy.should_retry);
    CHECK(server::error_for_start({StopReason::run_not_resumable, "no"}).status == 409);
}

TEST_CASE("a provider error becomes its stop reason, a timeout its own, an unknown type a provider failure",
          "[unit][stop_reason]") {
    CHECK(provider_stop_reason("auth") == StopReason::auth);
    CHECK(provider_stop_reason("transient") == StopReason::transient);
    CHECK(provider_stop_reason("timeout") == StopReason::timeout);
    CHECK(provider_stop_reason("quota_exploded") == StopReason::provider_failure);
    // A name from the table that no model call can give is not taken at its word.
    CHECK(provider_stop_reason("answered") == StopReason::provider_failure);
    // The queue retries what may go away by itself, nothing else.
    CHECK(retried_by_queue(StopReason::timeout));
    CHECK(retried_by_queue(StopReason::rate_limit));
    CHECK_FALSE(retried_by_queue(StopReason::auth));
}

TEST_CASE("the loop state survives a checkpoint round trip field by field", "[unit][loop_state]") {
    LoopState s;
    s.conversation = "c1";
    s.run = 7;
    s.turn = 3;
    s.mode = tools::Mode::plan;
    s.provider = "local";
    s.model = "m";
    s.prompt = "hi";
    s.request_context = R"({"active_graph":"g"})";
    s.plugin_context = "ctx";
    s.notifications = {"[torrent] done"};
    s.history = json::array({{{"role", "user"}, {"content", "earlier"}}});
    s.iteration = 4;
    s.tool_calls = 5;
    s.input_tokens = 100;
    s.output_tokens = 20;
    s.working_from = 12;
    s.pending = {{"call_1", "add", {{"a", 1}}}, {"call_2", "echo", json::object()}};
    s.rejected = {{"rm\n{}", "no"}};
    s.guard = {"sig", 2, "blocked", 1};
    s.retried_cut = true;
    s.malformed = 2;
    s.awaiting = "needs approval";
    s.seq = 42;

    json saved = agent::to_json(s);
    json inputs = agent::inputs_to_json(s);
    CHECK(saved["schema"] == LoopState::kSchema);
    // The run's inputs are kept apart, not in every checkpoint.
    CHECK_FALSE(saved.contains("history"));
    CHECK_FALSE(saved.contains("request_context"));
    CHECK_FALSE(saved.contains("notifications"));
    auto back = agent::loop_state_from_json(json::parse(saved.dump()), inputs.dump());
    REQUIRE(back);
    CHECK(agent::to_json(*back) == saved);
    CHECK(agent::inputs_to_json(*back) == inputs);
    CHECK(back->history == s.history);
    CHECK(back->notifications == s.notifications);
    CHECK(back->mode == tools::Mode::plan);
    REQUIRE(back->pending.size() == 2);
    CHECK(back->pending[0].arguments == json{{"a", 1}});
    CHECK(back->awaiting == std::optional<std::string>("needs approval"));
}

TEST_CASE("a checkpoint of an earlier version without a schema number is read", "[unit][loop_state]") {
    json v1 = {{"conversation", "c"},
               {"run", 1},
               {"turn", 1},
               {"mode", "execute"},
               {"provider", "p"},
               {"model", ""},
               {"prompt", "x"},
               {"request_context", "{}"},
               {"iteration", 2},
               {"tool_calls", 1},
               {"input_tokens", 3},
               {"output_tokens", 4},
               {"working_from", 0},
               {"pending", json::array()},
               {"rejected", json::object()},
               {"guard", {{"last", ""}, {"count", 0}, {"blocked", ""}, {"refusals", 0}}},
               {"retried_cut", false},
               {"malformed", 0},
               {"plugin_context", ""},
               {"notifications", json::array({"[torrent] done"})},
               {"history", json::array({{{"role", "user"}, {"content", "earlier"}}})},
               {"seq", 9}};
    auto s = agent::loop_state_from_json(v1);  // its inputs are in it, as before they were stored apart
    REQUIRE(s);
    CHECK(s->history.size() == 1);
    CHECK(s->notifications == std::vector<std::string>{"[torrent] done"});
    CHECK(s->iteration == 2);
    CHECK(s->seq == 9);
    CHECK_FALSE(s->awaiting);
}

TEST_CASE("a checkpoint of a newer version or with a field of the wrong type is refused with its name", "[unit][loop_state]") {
    auto newer = agent::loop_state_from_json({{"schema", LoopState::kSchema + 1}});
    REQUIRE_FALSE(newer);
    CHECK(newer.error().code == "store_newer");
    CHECK(newer.error().message.find("newer agenthost") != std::string::npos);

    auto wrong = agent::loop_state_from_json({{"iteration", "three"}});
    REQUIRE_FALSE(wrong);
    CHECK(wrong.error().code == "store_corrupt");
    CHECK(wrong.error().message.find("'iteration'") != std::string::npos);

    CHECK_FALSE(agent::loop_state_from_json(json::array()));
}
