// `agenthost serve` as a separate process on a loopback port, driven by the official npm `openai`
// client, curl (SSE, Last-Event-ID) and plain HTTP: approvals, cancel, 409, 401, readiness, and a
// SIGTERM mid-run followed by a resume.
#include "support/loopback_server.hpp"
#include "support/test_support.hpp"
#include "test_paths.h"

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <csignal>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

extern char** environ;

using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

constexpr const char* kToken = "test-token-8c1f";

json cassette() {
    auto call = [](const std::string& name, json args) { return json{{"tool_calls", {{{"name", name}, {"arguments", args}}}}}; };
    json title{{"text", "## \"Sums, quickly\"\nA title for a conversation about adding."}};
    return {{"rules",
             {{{"match", "Write a title"}, {"replies", {title, title, title}}},
              {{"match", "add"},
               {"replies",
                {call("add", {{"a", 2}, {"b", 3}}),
                 {{"text", "2 + 3 = 5."}},
                 call("add", {{"a", 2}, {"b", 3}}),
                 {{"text", "2 + 3 = 5."}},
                 call("add", {{"a", 2}, {"b", 3}}),
                 {{"text", "2 + 3 = 5."}}}}},
              {{"match", "delete"},
               {"replies",
                {call("delete_item", {{"name", "old"}}),
                 {{"text", "Deleted it."}},
                 call("delete_item", {{"name", "old"}}),
                 {{"text", "Kept it."}}}}},
              {{"match", "slow"}, {"replies", {{{"delay_ms", 20000}, {"text", "too late"}}}}},
              {{"match", "ask me"},
               {"replies", {call("test_elicitation", {{"message", "Who is asking?"}}), {{"text", "Thanks, noted."}}}}},
              {{"match", "narrate"},
               {"replies",
                {{{"text", "I will add them with the add tool."},
                  {"tool_calls", {{{"name", "add"}, {"arguments", {{"a", 19}, {"b", 23}}}}}}},
                 {{"text", "19 + 23 = 42."}},
                 {{"text", "I will add them with the add tool."},
                  {"tool_calls", {{{"name", "add"}, {"arguments", {{"a", 19}, {"b", 23}}}}}}},
                 {{"text", "19 + 23 = 42."}}}}},
              {{"match", "summarise"},
               {"replies",
                {{{"text", "Looking."},
                  {"tool_calls", {{{"name", "agent_done"}, {"arguments", {{"summary", "All done: **42**."}}}}}}},
                 {{"text", "Looking."},
                  {"tool_calls", {{{"name", "agent_done"}, {"arguments", {{"summary", "All done: **42**."}}}}}}}}}},
              {{"match", "steps"},
               {"replies",
                {{{"delay_ms", 300}, {"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", "one"}}}}}}},
                 {{"delay_ms", 300}, {"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", "two"}}}}}}},
                 {{"delay_ms", 300}, {"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", "three"}}}}}}},
                 {{"text", "three steps done"}}}}}}},
            {"fallback", {{"text", "fallback answer"}}}};
}

// A running `agenthost serve`, stopped (SIGTERM) when the test ends.
struct Served {
    test::TempDir dir;
    std::string config;
    int port = test::free_port();
    pid_t pid = -1;

    // `server_extra`: more [server] keys; `extra`: more tables; `plugins`: more enabled plugins.
    explicit Served(const std::string& extra = "", const std::string& server_extra = "", const std::string& plugins = "") {
        test::write_file(dir.path / "cassette.json", cassette().dump());
        config = (dir.path / "agenthost.toml").string();
        test::write_file(config, "data_dir = \"" + (dir.path / "data").string() +
                                     "\"\ndefault_plugin_dirs = false\n"
                                     "enabled_plugins = [\"scripted\", \"example_c\", \"agent_tools\"" +
                                     plugins +
                                     "]\n"
                                     "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                                     "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_FIXTURE_PLUGIN_DIR
                                     "\"]\n"
                                     "[plugins.scripted]\ncassette = \"" +
                                     (dir.path / "cassette.json").string() +
                                     "\"\n"
                                     "[server]\ntoken_env = \"SERVE_TEST_TOKEN\"\nshutdown_grace_seconds = 5\n" +
                                     server_extra + extra);
        start();
    }
    ~Served() { stop(); }

    void start() {
        ::setenv("SERVE_TEST_TOKEN", kToken, 1);
        std::string listen = "127.0.0.1:" + std::to_string(port);
        std::string log = (dir.path / "serve.log").string();
        std::vector<std::string> args{test::cli(), "--config", config, "serve", "--listen", listen};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        posix_spawn_file_actions_t files;
        posix_spawn_file_actions_init(&files);
        posix_spawn_file_actions_addopen(&files, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        REQUIRE(posix_spawn(&pid, argv[0], &files, nullptr, argv.data(), environ) == 0);
        posix_spawn_file_actions_destroy(&files);
        httplib::Client c("127.0.0.1", port);
        for (int i = 0; i < 1200; ++i) {  // 30 s: a sanitizer's build on a loaded machine starts slowly
            if (auto r = c.Get("/health"); r && r->status == 200) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(25));
        }
        FAIL("agenthost serve did not start: " << test::read_file(log));
    }

    int stop() { return test::terminate(pid); }

    std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }

    httplib::Client client() const {
        httplib::Client c("127.0.0.1", port);
        c.set_bearer_token_auth(kToken);
        c.set_read_timeout(30, 0);
        return c;
    }

    json post(const std::string& path, const json& body, int expect) const {
        auto r = client().Post(path, body.dump(), "application/json");
        REQUIRE(r);
        INFO(path << " → " << r->status << " " << r->body);
        CHECK(r->status == expect);
        return r->body.empty() ? json() : json::parse(r->body);
    }

    json get(const std::string& path) const {
        auto r = client().Get(path);
        REQUIRE(r);
        INFO(path << " → " << r->body);
        REQUIRE(r->status == 200);
        return json::parse(r->body);
    }

    // Polls a run until its status is one of `states`.
    json wait_run(int64_t run, std::initializer_list<const char*> states) const {
        for (int i = 0; i < 400; ++i) {
            json r = get("/api/runs/" + std::to_string(run));
            for (const char* s : states)
                if (r["status"] == s && !r["executing"].get<bool>()) return r;
            std::this_thread::sleep_for(std::chrono::milliseconds(25));
        }
        FAIL("run " << run << " never reached the expected status");
        return {};
    }

    // curl reads the SSE stream of a run (from Last-Event-ID when given) until it ends.
    std::vector<json> sse(int64_t run, int last_event_id = -1) const {
        std::string header = last_event_id >= 0 ? " -H 'Last-Event-ID: " + std::to_string(last_event_id) + "'" : "";
        auto r = test::run_command("curl -s -N --max-time 30 -H 'Authorization: Bearer " + std::string(kToken) + "'" + header +
                                   " '" + url() + "/api/chat?run=" + std::to_string(run) + "'");
        REQUIRE(r.exit_code == 0);
        std::vector<json> events;
        std::string id, name;
        std::istringstream lines(r.out);
        for (std::string line; std::getline(lines, line);) {
            if (line.rfind("id: ", 0) == 0)
                id = line.substr(4);
            else if (line.rfind("event: ", 0) == 0)
                name = line.substr(7);
            else if (line.rfind("data: ", 0) == 0)
                events.push_back({{"id", std::stoll(id)}, {"event", name}, {"data", json::parse(line.substr(6))}});
        }
        return events;
    }
};

}  // namespace

TEST_CASE("serve: the official npm openai client works unchanged, with its own error classes", "[peer][server]") {
    Served s;
    auto r = test::run_command("node '" + std::string(test::source_dir()) + "/tests/peers/openai_client.mjs' " + s.url() + " " +
                               kToken);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    json out = json::parse(r.out);
    CHECK(out["plain"]["object"] == "chat.completion");
    CHECK(out["plain"]["content"] == "2 + 3 = 5.");
    CHECK(out["plain"]["finish"] == "stop");
    CHECK(out["plain"]["usage"]["total_tokens"].get<int>() > 0);
    CHECK(out["stream"]["text"] == "2 + 3 = 5.");
    CHECK(out["stream"]["chunks"].get<int>() > 3);  // streamed in deltas
    CHECK(out["stream"]["finish"] == "stop");
    CHECK(out["stream"]["usage"]["total_tokens"].get<int>() > 0);
    CHECK(std::find(out["models"].begin(), out["models"].end(), "agenthost") != out["models"].end());
    CHECK(out["unauthorized"]["authentication"] == true);
    CHECK(out["unauthorized"]["status"] == 401);
    CHECK(out["missing"]["notFound"] == true);
    CHECK(out["missing"]["code"] == "model_not_found");
}

// The content of a streamed /v1 answer: its deltas joined.
std::string streamed_content(const std::string& body) {
    std::string content;
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("data: {", 0) != 0) continue;
        json chunk = json::parse(line.substr(6));
        if (chunk.contains("choices") && !chunk["choices"].empty() && chunk["choices"][0]["delta"].contains("content"))
            content += chunk["choices"][0]["delta"]["content"].get<std::string>();
    }
    return content;
}

TEST_CASE("serve: /v1 answers keep the text around tool calls apart, end with agent_done's summary, streamed or whole alike",
          "[integration][server]") {
    Served s;
    for (auto [prompt, expected] :
         {std::pair<std::string, std::string>{"narrate the sum", "I will add them with the add tool.\n\n19 + 23 = 42."},
          {"summarise it", "Looking.\n\nAll done: **42**."}}) {
        INFO(prompt);
        json ask{{"messages", {{{"role", "user"}, {"content", prompt}}}}};
        json whole = s.post("/v1/chat/completions", ask, 200);
        CHECK(whole["choices"][0]["message"]["content"] == expected);
        ask["stream"] = true;
        auto streamed = s.client().Post("/v1/chat/completions", ask.dump(), "application/json");
        REQUIRE(streamed);
        REQUIRE(streamed->status == 200);
        CHECK(streamed_content(streamed->body) == expected);
    }
}

TEST_CASE("serve: SSE events are numbered, a reconnect with Last-Event-ID misses nothing and repeats nothing",
          "[integration][server]") {
    Served s;
    json started = s.post("/api/chat", {{"message", "please add"}}, 200);
    int64_t run = started["run"];
    auto all = s.sse(run);
    REQUIRE(all.size() > 6);
    for (size_t i = 0; i < all.size(); ++i) CHECK(all[i]["id"] == static_cast<int64_t>(i + 1));
    CHECK(all.back()["event"] == "end");
    CHECK(all.back()["data"]["answer"] == "2 + 3 = 5.");
    std::set<std::string> kinds;
    for (const auto& e : all) kinds.insert(e["event"]);
    for (const char* kind : {"token", "tool_call", "tool_result", "usage", "end"}) CHECK(kinds.count(kind));

    auto tail = s.sse(run, 4);
    REQUIRE(tail.size() == all.size() - 4);
    for (size_t i = 0; i < tail.size(); ++i) CHECK(tail[i] == all[i + 4]);

    json conversation = s.get("/api/conversations/" + started["conversation"].get<std::string>());
    CHECK(conversation["runs"].size() == 1);
    CHECK(conversation["messages"].size() == 4);      // prompt, the call, its result, the answer
    CHECK(conversation["runs"][0]["messages"] == 4);  // each run says how many it added
}

TEST_CASE("serve: a deleted run's id is never given again, and its stream never shows a later run", "[integration][server]") {
    // SQLite gave a new row the largest id + 1: deleting the newest conversation handed its run's id
    // to the next run, and a client still following the deleted run (or its Last-Event-ID) read a
    // stranger's events.
    Served s;
    int64_t first = s.post("/api/chat", {{"message", "please add"}, {"conversation", "kept"}}, 200)["run"];
    s.wait_run(first, {"completed"});
    int64_t deleted = s.post("/api/chat", {{"message", "narrate the sum"}, {"conversation", "dropped"}}, 200)["run"];
    s.wait_run(deleted, {"completed"});
    REQUIRE(deleted > first);
    auto gone = s.client().Delete("/api/conversations/dropped");
    REQUIRE(gone);
    REQUIRE(gone->status == 204);

    json next = s.post("/api/chat", {{"message", "summarise it"}, {"conversation", "later"}}, 200);
    int64_t later = next["run"];
    CHECK(later > deleted);
    json done = s.wait_run(later, {"completed"});
    REQUIRE(done["answer"] == "All done: **42**.");

    auto record = s.client().Get("/api/runs/" + std::to_string(deleted));
    REQUIRE(record);
    INFO(record->body);
    CHECK(record->status == 404);
    // The deleted run's stream is gone with it (its kept events too): a 404, never the later run's
    // prompt or answer.
    auto stream = test::run_command("curl -s -N --max-time 10 -H 'Authorization: Bearer " + std::string(kToken) + "' '" +
                                    s.url() + "/api/chat?run=" + std::to_string(deleted) + "'");
    REQUIRE(stream.exit_code == 0);
    INFO(stream.out);
    CHECK_THAT(stream.out, !Contains("All done") && !Contains("Looking.") && !Contains("summarise"));
    CHECK_THAT(stream.out, Contains("run_not_found"));
    CHECK(s.sse(later).back()["data"]["answer"] == "All done: **42**.");  // the later run streams as its own
}

TEST_CASE("serve: approve, reject and cancel over HTTP, 409 on a busy conversation, 401 without the token",
          "[integration][server]") {
    Served s;
    json paused = s.post("/api/chat", {{"message", "delete the old one"}, {"conversation", "approvals"}}, 200);
    json waiting = s.wait_run(paused["run"], {"paused"});
    CHECK(waiting["waiting"]["tool"] == "delete_item");
    s.post("/api/runs/" + std::to_string(paused["run"].get<int64_t>()) + "/approve", json::object(), 202);
    json approved = s.wait_run(paused["run"], {"completed"});
    CHECK(approved["answer"] == "Deleted it.");
    json again = s.post("/api/runs/" + std::to_string(paused["run"].get<int64_t>()) + "/approve", json::object(), 409);
    CHECK(again["error"]["code"] == "not_paused");  // the code docs/server.md names, as a resume finding none says

    json second = s.post("/api/chat", {{"message", "delete it again"}, {"conversation", "approvals"}}, 200);
    s.wait_run(second["run"], {"paused"});
    s.post("/api/runs/" + std::to_string(second["run"].get<int64_t>()) + "/reject", {{"reason", "keep it"}}, 202);
    json rejected = s.wait_run(second["run"], {"completed"});
    CHECK(rejected["answer"] == "Kept it.");

    json slow = s.post("/api/chat", {{"message", "slow please"}, {"conversation", "busy"}}, 200);
    json busy = s.post("/api/chat", {{"message", "another"}, {"conversation", "busy"}}, 409);
    CHECK(busy["error"]["code"] == "conversation_busy");
    s.post("/api/runs/" + std::to_string(slow["run"].get<int64_t>()) + "/cancel", json::object(), 202);
    json cancelled = s.wait_run(slow["run"], {"cancelled"});
    CHECK(cancelled["error_code"] == "CANCELLED");

    httplib::Client anonymous("127.0.0.1", s.port);
    auto denied = anonymous.Get("/api/conversations");
    REQUIRE(denied);
    CHECK(denied->status == 401);
    CHECK(json::parse(denied->body)["error"]["code"] == "invalid_api_key");
    auto health = anonymous.Get("/health");
    REQUIRE(health);
    CHECK(health->status == 200);  // the one open endpoint

    auto metrics = s.client().Get("/metrics");
    REQUIRE(metrics);
    CHECK_THAT(metrics->body, Contains("agenthost_runs{status=\"completed\"}") &&
                                  Contains("agenthost_provider_request_seconds_bucket") &&
                                  Contains("agenthost_tool_calls_total{tool=\"delete_item\",outcome=\"ok\"}"));
    json memory = s.get("/memory/state?conversation=approvals");
    CHECK(memory.contains("session"));
    CHECK(s.post("/memory/clear-session", {{"conversation", "approvals"}}, 200)["facts_kept"] == true);
    CHECK(s.get("/api/plugins")["plugins"].size() >= 3);
}

// A tool asks the person while the run executes: the question is an SSE event and in the run's
// state, the answer comes over HTTP, checked against the question's schema; the call goes on with it.
TEST_CASE("serve: a tool's question during a run is an event, answered over HTTP, a misfit refused in words",
          "[integration][server]") {
    Served s("", "", ", \"conformance\"");
    json started = s.post("/api/chat", {{"message", "ask me something"}, {"conversation", "asked"}}, 200);
    const std::string run = std::to_string(started["run"].get<int64_t>());
    json waiting;
    for (int i = 0; i < 400 && !waiting.contains("question"); ++i) {
        waiting = s.get("/api/runs/" + run);
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    REQUIRE(waiting.contains("question"));
    CHECK(waiting["question"]["tool"] == "test_elicitation");
    CHECK(waiting["question"]["message"] == "Who is asking?");
    CHECK(waiting["question"]["schema"]["required"] == json::array({"username", "email"}));
    json wrong = s.post("/api/runs/" + run + "/answer", {{"action", "accept"}, {"content", {{"username", "ada"}}}}, 400);
    CHECK(wrong["error"]["code"] == "invalid_answer");
    CHECK_THAT(wrong["error"]["message"].get<std::string>(), Contains("email"));
    CHECK(s.post("/api/runs/" + run + "/answer", {{"action", "perhaps"}}, 400)["error"]["code"] == "invalid_answer");
    s.post("/api/runs/" + run + "/answer",
           {{"action", "accept"}, {"content", {{"username", "ada"}, {"email", "ada@example.org"}}}}, 200);
    json done = s.wait_run(started["run"], {"completed"});
    CHECK(done["answer"] == "Thanks, noted.");
    CHECK(s.post("/api/runs/" + run + "/answer", {{"action", "decline"}}, 409)["error"]["code"] == "no_question");
    std::vector<json> events = s.sse(started["run"]);
    auto named = [&](const char* name) {
        return std::find_if(events.begin(), events.end(), [&](const json& e) { return e["event"] == name; });
    };
    REQUIRE(named("question") != events.end());
    CHECK((*named("question"))["data"]["schema"]["properties"].contains("email"));
    REQUIRE(named("tool_result") != events.end());
    CHECK_THAT((*named("tool_result"))["data"]["content"].get<std::string>(),
               Contains("action=accept") && Contains("ada@example.org"));
    CHECK(named("question") < named("tool_result"));

    // An OpenAI client sees no question: its run's tool is told at once that nobody can answer.
    json completion = s.post("/v1/chat/completions",
                             {{"model", "agenthost"}, {"messages", {{{"role", "user"}, {"content", "ask me again"}}}}}, 200);
    CHECK(completion["choices"][0]["message"]["content"] == "Thanks, noted.");
    json transcript = s.get("/api/conversations");
    bool refused = false;
    for (const auto& c : transcript["conversations"]) {
        const json conversation = s.get("/api/conversations/" + c["id"].get<std::string>());
        refused = refused || conversation["messages"].dump().find("nobody can be asked") != std::string::npos;
    }
    CHECK(refused);
    json unknown = s.post("/api/runs/987654/answer", {{"action", "decline"}}, 404);
    CHECK(unknown["error"]["code"] == "run_not_found");
}

TEST_CASE("serve: a message after an earlier turn starts a branch, and each run says the turn it follows and its model",
          "[integration][server]") {
    Served s;
    json first = s.post("/api/chat", {{"message", "please add"}, {"conversation", "branchy"}}, 200);
    s.wait_run(first["run"], {"completed"});
    json second = s.post("/api/chat", {{"message", "please add again"}, {"conversation", "branchy"}}, 200);
    s.wait_run(second["run"], {"completed"});
    // The second answer regenerated: the same prompt, after turn 1. An edited first prompt: after turn 0.
    json again = s.post("/api/chat", {{"message", "please add again"}, {"conversation", "branchy"}, {"after_turn", 1}}, 200);
    s.wait_run(again["run"], {"completed"});
    json edited = s.post("/api/chat", {{"message", "please add, edited"}, {"conversation", "branchy"}, {"after_turn", 0}}, 200);
    s.wait_run(edited["run"], {"completed"});
    json convo = s.get("/api/conversations/branchy");
    REQUIRE(convo["runs"].size() == 4);
    std::vector<int> follows;
    for (const auto& run : convo["runs"]) follows.push_back(run["after_turn"]);
    CHECK(follows == std::vector<int>{0, 1, 1, 0});
    CHECK(convo["runs"][2]["turn"] == 3);
    CHECK(convo["runs"][2]["model"] == convo["runs"][0]["model"]);  // the provider's configured model, recorded
    CHECK(convo["runs"][2]["resumable"] == false);
    CHECK(convo["title"] == "please add");  // the first prompt's words, whatever came after
    // Refused in words: a turn the conversation does not have, a negative one, one without a conversation.
    json unknown = s.post("/api/chat", {{"message", "x"}, {"conversation", "branchy"}, {"after_turn", 9}}, 400);
    CHECK(unknown["error"]["code"] == "invalid_after_turn");
    CHECK_THAT(unknown["error"]["message"].get<std::string>(), Contains("has 4 turn(s)"));
    json negative = s.post("/api/chat", {{"message", "x"}, {"conversation", "branchy"}, {"after_turn", -1}}, 400);
    CHECK_THAT(negative["error"]["message"].get<std::string>(), Contains("\"after_turn\" must be a whole number, 0 or more"));
    json alone = s.post("/api/chat", {{"message", "x"}, {"after_turn", 2}}, 400);
    CHECK(alone["error"]["code"] == "invalid_after_turn");
    CHECK(s.get("/api/conversations/branchy")["runs"].size() == 4);  // nothing refused was started
}

TEST_CASE("serve: a file attached in the panel is saved by the folders plugin into the folder the operator allows",
          "[integration][server]") {
    test::TempDir place;
    const auto inbox = place.path / "inbox";
    test::fs::create_directories(inbox);
    Served s("[plugins.folders]\nfolders = {inbox = \"" + inbox.string() + "\"}\n",
             "attachment_folder = \"inbox\"\nmax_attachment_mb = 1\n", ", \"folders\"");
    json settings = s.get("/api/attachments");
    CHECK(settings == json{{"enabled", true}, {"folder", "inbox"}, {"max_bytes", 1 << 20}});
    json saved = s.post("/api/attachments", {{"name", "notes.txt"}, {"content_base64", "aGVsbG8="}}, 201);
    CHECK(saved["folder"] == "inbox");
    CHECK(saved["path"] == "notes.txt");
    CHECK(test::read_file(inbox / "notes.txt") == "hello");
    // The same name again: numbered, the first kept. A path is only ever a name.
    CHECK(s.post("/api/attachments", {{"name", "notes.txt"}, {"content_base64", "d29ybGQ="}}, 201)["path"] == "notes (2).txt");
    CHECK(test::read_file(inbox / "notes.txt") == "hello");
    CHECK(s.post("/api/attachments", {{"name", "../../escape.txt"}, {"content_base64", "eA=="}}, 201)["path"] == "escape.txt");
    CHECK(s.post("/api/attachments", {{"name", "C:\\Users\\me\\win.txt"}, {"content_base64", "eA=="}}, 201)["path"] == "win.txt");
    CHECK_FALSE(test::fs::exists(place.path / "escape.txt"));
    // Refused in words: no name, not base64, larger than max_attachment_mb (before it is read whole).
    CHECK(s.post("/api/attachments", {{"name", ".."}, {"content_base64", "eA=="}}, 400)["error"]["code"] == "invalid_name");
    CHECK(s.post("/api/attachments", {{"name", "x.txt"}, {"content_base64", "%%%"}}, 400)["error"]["code"] ==
          "validation_failed");
    auto big = s.client().Post(
        "/api/attachments", json{{"name", "big.bin"}, {"content_base64", std::string(2 << 20, 'A')}}.dump(), "application/json");
    REQUIRE(big);
    CHECK(big->status == 413);
    CHECK_FALSE(test::fs::exists(inbox / "big.bin"));
    // The agent's tools read it: read_file is offered to the model.
    json tools = s.get("/api/plugins");
    CHECK(tools.dump().find("read_file") != std::string::npos);
}

TEST_CASE("serve: with model_titles the conversation's model names it from its first exchange, never over a person's name",
          "[integration][server]") {
    Served s("", "model_titles = true\n");
    json started = s.post("/api/chat", {{"message", "please add"}, {"conversation", "sums"}}, 200);
    s.wait_run(started["run"], {"completed"});
    CHECK(s.get("/api/conversations/sums")["title"] == "please add");  // the first words, until the model names it
    json named = s.post("/api/conversations/sums/title", json::object(), 200);
    CHECK(named == json{{"id", "sums"}, {"title", "Sums, quickly"}, {"from", "model"}});  // its first line, without marks
    CHECK(s.get("/api/conversations/sums")["title"] == "Sums, quickly");
    // Renamed by a person: theirs stays.
    REQUIRE(s.client().Patch("/api/conversations/sums", R"({"title": "Mine"})", "application/json")->status == 200);
    json again = s.post("/api/conversations/sums/title", json::object(), 200);
    CHECK(again["title"] == "Mine");
    CHECK(again["from"] == "person");
    CHECK(s.post("/api/conversations/nobody/title", json::object(), 404)["error"]["code"] == "conversation_not_found");
}

TEST_CASE("serve: without model_titles a conversation keeps its first words, and the server says how to ask the model",
          "[integration][server]") {
    Served s;
    json started = s.post("/api/chat", {{"message", "please add"}, {"conversation", "sums"}}, 200);
    s.wait_run(started["run"], {"completed"});
    json off = s.post("/api/conversations/sums/title", json::object(), 409);
    CHECK(off["error"]["code"] == "model_titles_off");
    CHECK_THAT(off["error"]["message"].get<std::string>(), Contains("model_titles = true"));
    CHECK(s.get("/api/conversations/sums")["title"] == "please add");
}

TEST_CASE("serve: without an attachment folder the server takes no attachments, and says how to allow them",
          "[integration][server]") {
    Served s;
    CHECK(s.get("/api/attachments")["enabled"] == false);
    json off = s.post("/api/attachments", {{"name", "notes.txt"}, {"content_base64", "aGVsbG8="}}, 409);
    CHECK(off["error"]["code"] == "attachments_off");
    CHECK_THAT(off["error"]["message"].get<std::string>(), Contains("attachment_folder"));
}

TEST_CASE("serve: PATCH renames a conversation, the list and the transcript show the title, bad titles get a 400 in words",
          "[integration][server]") {
    Served s;
    json started = s.post("/api/chat", {{"message", "please add"}, {"conversation", "named"}}, 200);
    s.wait_run(started["run"], {"completed"});
    json other = s.post("/api/chat", {{"message", "please add"}, {"conversation", "later"}}, 200);
    s.wait_run(other["run"], {"completed"});
    auto c = s.client();
    auto patch = [&](const std::string& id, const std::string& body, int expect, const httplib::Headers& headers = {},
                     const char* type = "application/json") {
        auto r = c.Patch("/api/conversations/" + id, headers, body, type);
        REQUIRE(r);
        INFO("PATCH " << id << " " << body.substr(0, 80) << " → " << r->status << " " << r->body);
        CHECK(r->status == expect);
        return r->body.empty() ? json() : json::parse(r->body);
    };
    auto listed = [&](const std::string& id) {
        json all = s.get("/api/conversations");
        for (const auto& item : all["conversations"])
            if (item["id"] == id) return item;
        FAIL("conversation " << id << " is not listed: " << all.dump());
        return json();
    };
    CHECK(listed("named")["title"] == "please add");  // titled with its first prompt's words
    double updated = listed("named")["updated_at"];

    CHECK(patch("named", R"({"title": "  Sums \u00e0 la carte \n"})", 200) ==
          json{{"id", "named"}, {"title", "Sums à la carte"}});
    CHECK(listed("named")["title"] == "Sums à la carte");
    CHECK(listed("named")["updated_at"] == updated);  // renaming is not activity
    CHECK(s.get("/api/conversations")["conversations"][0]["id"] == "later");
    CHECK(s.get("/api/conversations/named")["title"] == "Sums à la carte");
    CHECK(s.get("/api/conversations/later")["title"] == "please add");

    json control = patch("named", R"({"title": "two\nlines"})", 400);
    CHECK(control["error"]["code"] == "invalid_title");
    CHECK_THAT(control["error"]["message"].get<std::string>(), Contains("control character") && Contains("U+000A"));
    json too_long = patch("named", json{{"title", std::string(201, 'a')}}.dump(), 400);
    CHECK(too_long["error"]["code"] == "invalid_title");
    CHECK_THAT(too_long["error"]["message"].get<std::string>(), Contains("201 characters") && Contains("at most 200"));
    std::string longest;
    for (int i = 0; i < 200; ++i) longest += "é";  // 200 characters (400 bytes) are fine
    CHECK(patch("named", json{{"title", longest}}.dump(), 200)["title"] == longest);
    CHECK(patch("named", R"({"title": 7})", 400)["error"]["message"] == "\"title\" must be a string; fix the request body");
    CHECK(patch("named", R"({"title": null})", 400)["error"]["message"] == "\"title\" must be a string; fix the request body");
    CHECK(patch("named", R"({"name": "x"})", 400)["error"]["code"] == "missing_title");
    CHECK(patch("named", "not json", 400)["error"]["code"] == "invalid_json");
    CHECK(patch("nobody", R"({"title": "x"})", 404)["error"]["code"] == "conversation_not_found");

    // The browser defences of POST: a cross-site page cannot rename, nor send a "simple request".
    json cross = patch("named", R"({"title": "pwned"})", 403, {{"Origin", "https://evil.example"}});
    CHECK(cross["error"]["code"] == "origin_not_allowed");
    patch("named", R"({"title": "pwned"})", 403, {{"Sec-Fetch-Site", "cross-site"}});
    CHECK(patch("named", R"({"title": "pwned"})", 415, {}, "text/plain")["error"]["code"] == "unsupported_media_type");
    patch("named", R"({"title": "from the panel"})", 200, {{"Origin", s.url()}});
    httplib::Client anonymous("127.0.0.1", s.port);
    CHECK(anonymous.Patch("/api/conversations/named", R"({"title": "pwned"})", "application/json")->status == 401);
    CHECK(listed("named")["title"] == "from the panel");
    CHECK(c.Patch("/api/nothing", "{}", "application/json")->status == 404);
    CHECK(c.Put("/api/conversations/named", R"({"title": "x"})", "application/json")->status == 405);

    CHECK(patch("named", R"({"title": ""})", 200)["title"] == "");  // cleared
    CHECK(listed("named")["title"] == "");
}

TEST_CASE("serve: /readyz names a missing model and the models that exist", "[integration][server]") {
    Served s("[provider]\nuse = \"scripted\"\nmodel = \"gpt-17\"\n");
    auto r = s.client().Get("/readyz");
    REQUIRE(r);
    CHECK(r->status == 503);
    json body = json::parse(r->body);
    CHECK(body["error"]["code"] == "MODEL_UNAVAILABLE");
    CHECK(body["error"]["models"] == json::array({"scripted"}));
}

TEST_CASE("serve: /readyz stays ready through a fallback that answers while the default cannot, and says so",
          "[integration][server]") {
    Served s(
        "[provider]\nuse = \"scripted\"\nmodel = \"gpt-17\"\nfallback = [\"backup\"]\n"
        "[providers.backup]\nuse = \"scripted\"\n");
    auto r = s.client().Get("/readyz");
    REQUIRE(r);
    INFO(r->body);
    CHECK(r->status == 200);
    json body = json::parse(r->body);
    CHECK(body["ready"] == true);
    CHECK(body["checks"]["provider"] == "MODEL_UNAVAILABLE");
    CHECK(body["checks"]["fallback"] == "ok (backup)");
    CHECK(body["answering_through"] == "backup");
    CHECK_THAT(body["warning"]["message"].get<std::string>(), Contains("fallback 'backup'"));
    CHECK_FALSE(body.contains("error"));
}

TEST_CASE("serve: SIGTERM mid-run exits cleanly, the run is interrupted, and resume finishes it", "[integration][server]") {
    Served s;
    json started = s.post("/api/chat", {{"message", "three steps"}, {"conversation", "shutdown"}}, 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(450));  // inside the second step
    CHECK(s.stop() == 0);
    auto runs =
        test::run_command("'" + std::string(test::cli()) + "' --config '" + s.config + "' runs --json --conversation shutdown");
    REQUIRE(runs.exit_code == 0);
    json listed = json::parse(runs.out);
    REQUIRE(listed.size() == 1);
    CHECK(listed[0]["status"] == "interrupted");
    CHECK(listed[0]["tool_calls"].get<int>() < 3);
    auto resumed = test::run_command("'" + std::string(test::cli()) + "' --config '" + s.config + "' resume " +
                                     std::to_string(started["run"].get<int64_t>()));
    INFO(resumed.err);
    CHECK(resumed.exit_code == 0);
    CHECK_THAT(resumed.out, Contains("three steps done"));
    json after = json::parse(
        test::run_command("'" + std::string(test::cli()) + "' --config '" + s.config + "' runs --json --conversation shutdown")
            .out);
    CHECK(after[0]["status"] == "completed");
    CHECK(after[0]["tool_calls"] == 3);
}

TEST_CASE("serve: its runs stopped by a restart go on at the next start by themselves, a terminal's wait for its user",
          "[integration][server]") {
    Served s;
    // A terminal's run on the same data dir, killed mid-run: its user resumes it, or not. It is
    // killed once its run has taken a step (a slow start, under a sanitizer or load, is waited for).
    test::Process terminal({test::cli(), "--config", s.config, "run", "--conversation", "terminal", "three steps"});
    // Read from the database itself: a `runs` command per look took longer than the whole run
    // under a sanitizer, and the run had ended before it was killed.
    auto steps_of = [&](const std::string& conversation) {
        sqlite3* db = nullptr;
        int64_t steps = 0;
        if (sqlite3_open_v2((s.dir.path / "data" / "agenthost.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
            sqlite3_busy_timeout(db, 1000);
            sqlite3_stmt* stmt = nullptr;
            if (sqlite3_prepare_v2(db, "SELECT iterations FROM runs WHERE conversation = ?1", -1, &stmt, nullptr) == SQLITE_OK) {
                sqlite3_bind_text(stmt, 1, conversation.c_str(), -1, SQLITE_TRANSIENT);
                if (sqlite3_step(stmt) == SQLITE_ROW) steps = sqlite3_column_int64(stmt, 0);
            }
            sqlite3_finalize(stmt);
        }
        sqlite3_close(db);
        return steps;
    };
    for (int i = 0; i < 3000 && steps_of("terminal") < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ::kill(terminal.pid, SIGKILL);
    ::waitpid(terminal.pid, nullptr, 0);
    terminal.pid = -1;
    // The server's run, stopped by the server's own stop inside its second step.
    const int64_t served = s.post("/api/chat", {{"message", "three steps"}, {"conversation", "restart"}}, 200)["run"];
    std::this_thread::sleep_for(std::chrono::milliseconds(450));
    CHECK(s.stop() == 0);
    auto listed = [&](const std::string& conversation) {
        auto r = test::run_command("'" + std::string(test::cli()) + "' --config '" + s.config + "' runs --json --conversation " +
                                   conversation);
        REQUIRE(r.exit_code == 0);
        json runs = json::parse(r.out);
        REQUIRE(runs.size() == 1);
        return runs[0];
    };
    REQUIRE(listed("restart")["status"] == "interrupted");

    s.start();  // nobody posts /resume
    json done = s.wait_run(served, {"completed", "failed"});
    CHECK(done["status"] == "completed");
    CHECK(done["tool_calls"] == 3);
    auto events = s.sse(served);
    REQUIRE_FALSE(events.empty());
    CHECK(events.back()["event"] == "end");
    CHECK(events.back()["data"]["stop_reason"] == "answered");

    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past a takeover pass (every 1 s or more)
    json left = listed("terminal");
    CHECK(left["status"] == "interrupted");
    CHECK(left["origin"] == "cli");
    CHECK(s.get("/api/runs/" + std::to_string(served))["origin"] == "server");
}

TEST_CASE("serve: a keyed completion cut by a shutdown is told to send itself again, and then gets its answer",
          "[integration][server]") {
    Served s;
    const std::string body = json{{"model", "agenthost"},
                                  {"conversation", "keyed-restart"},
                                  {"messages", {{{"role", "user"}, {"content", "three steps"}}}}}
                                 .dump();
    auto send = [&] {
        return s.client().Post("/v1/chat/completions", {{"Idempotency-Key", "restart-1"}}, body, "application/json");
    };
    std::optional<httplib::Result> cut;
    std::thread first([&] { cut = send(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(450));  // inside the second step
    CHECK(s.stop() == 0);
    first.join();
    REQUIRE(cut);
    REQUIRE(*cut);
    const auto& r = **cut;
    INFO(r.body);
    CHECK(r.status == 503);
    CHECK_THAT(r.body, Contains("run_interrupted") && Contains("send the same request with the same Idempotency-Key"));
    CHECK(r.get_header_value("x-should-retry") == "true");  // the official clients retry it

    s.start();  // resumes the run; the retry waits for it (409), then gets its answer
    std::optional<json> answer;
    for (int i = 0; i < 200 && !answer; ++i) {
        auto again = send();
        REQUIRE(again);
        if (again->status == 200)
            answer = json::parse(again->body);
        else {
            REQUIRE(again->status == 409);
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
    REQUIRE(answer);
    CHECK_THAT((*answer)["choices"][0]["message"]["content"].get<std::string>(), Contains("three steps done"));
}

TEST_CASE("serve: a client that leaves does not stop its run, limits answer in JSON, no empty token", "[integration][server]") {
    Served s("", "max_body_bytes = 2048\nmax_messages = 3\n");
    json started = s.post("/api/chat", {{"message", "three steps"}, {"conversation", "leaving"}}, 200);
    int64_t run = started["run"];
    auto partial = test::run_command("curl -s -N --max-time 0.4 -H 'Authorization: Bearer " + std::string(kToken) + "' '" +
                                     s.url() + "/api/chat?run=" + std::to_string(run) + "'");
    CHECK_THAT(partial.out, !Contains("event: end"));  // left before the end
    json done = s.wait_run(run, {"completed"});
    CHECK(done["tool_calls"] == 3);
    auto rest = s.sse(run, 2);
    REQUIRE_FALSE(rest.empty());
    CHECK(rest.front()["id"] == 3);
    CHECK(rest.back()["data"]["answer"] == "three steps done");

    auto big = s.client().Post("/api/chat", json{{"message", std::string(4096, 'x')}}.dump(), "application/json");
    REQUIRE(big);
    CHECK(big->status == 413);
    CHECK(json::parse(big->body)["error"]["code"] == "body_too_large");
    json many = s.post("/v1/chat/completions",
                       {{"model", "agenthost"},
                        {"messages", json::array({{{"role", "user"}, {"content", "a"}},
                                                  {{"role", "user"}, {"content", "b"}},
                                                  {{"role", "user"}, {"content", "c"}},
                                                  {{"role", "user"}, {"content", "d"}}})}},
                       400);
    CHECK(many["error"]["code"] == "too_many_messages");

    // token_env names an empty variable: serve refuses to start (on any address), naming it.
    auto exposed = test::run_command("SERVE_TEST_TOKEN= '" + std::string(test::cli()) + "' --config '" + s.config +
                                     "' serve --listen 0.0.0.0:" + std::to_string(s.port + 1));
    CHECK(exposed.exit_code == 2);
    CHECK_THAT(exposed.err, Contains("token_env names SERVE_TEST_TOKEN, which is unset or empty"));
}

namespace {

// Shuts down, from outside the process, the listening socket of `pid` (a copy taken with
// pidfd_getfd): its accept() then fails with EINVAL, as a network error passed on by the kernel
// would make it fail. The number of listening sockets shut down.
int shut_listening_socket(pid_t pid) {
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    REQUIRE(pidfd >= 0);
    int shut = 0;
    for (int fd = 0; fd < 4096; ++fd) {
        int copy = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
        if (copy < 0) continue;
        int listening = 0;
        socklen_t size = sizeof listening;
        if (::getsockopt(copy, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) == 0 && listening &&
            ::shutdown(copy, SHUT_RDWR) == 0)
            ++shut;
        ::close(copy);
    }
    ::close(pidfd);
    return shut;
}

}  // namespace

TEST_CASE("serve: a listening socket that fails under it is opened again, not taken for a stop", "[integration][server]") {
    Served s;
    for (int round = 0; round < 2; ++round) {
        REQUIRE(shut_listening_socket(s.pid) == 1);
        bool answered = false;
        for (int i = 0; i < 100 && !answered; ++i) {
            auto r = s.client().Get("/health");
            answered = r && r->status == 200;
            if (!answered) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        INFO(test::read_file(s.dir.path / "serve.log"));
        CHECK(answered);
        CHECK(::waitpid(s.pid, nullptr, WNOHANG) == 0);  // still running
    }
    json done =
        s.post("/v1/chat/completions", {{"model", "agenthost"}, {"messages", {{{"role", "user"}, {"content", "add"}}}}}, 200);
    CHECK(done["choices"][0]["message"]["content"] == "2 + 3 = 5.");
    CHECK_THAT(test::read_file(s.dir.path / "serve.log"), Contains("listening socket failed"));
    CHECK(s.stop() == 0);
}

TEST_CASE("serve: every route that names an unknown conversation answers 404, and writes nothing for it",
          "[integration][server]") {
    Served s;
    auto not_found = [&](const httplib::Result& r) {
        REQUIRE(r);
        INFO(r->body);
        CHECK(r->status == 404);
        CHECK(json::parse(r->body)["error"]["code"] == "conversation_not_found");
    };
    not_found(s.client().Post("/memory/clear-session", json{{"conversation", "nobody"}}.dump(), "application/json"));
    not_found(s.client().Get("/memory/state?conversation=nobody"));
    not_found(s.client().Get("/api/chat?conversation=nobody"));
    not_found(s.client().Get("/api/conversations/nobody"));
    not_found(s.client().Get("/api/conversations/nobody"));  // clear-session created nothing
    CHECK(s.get("/api/conversations")["conversations"].empty());

    // A known one: its latest run's events by conversation, its memory, its session cleared.
    json started = s.post("/api/chat", {{"message", "add"}, {"conversation", "known"}}, 200);
    s.wait_run(started["run"], {"completed"});
    auto stream = s.client().Get("/api/chat?conversation=known");
    REQUIRE(stream);
    CHECK(stream->status == 200);
    CHECK_THAT(stream->body, Contains("event: end"));
    // A run named with another conversation (known or not) is never streamed under it.
    std::string run = std::to_string(started["run"].get<int64_t>());
    for (const char* other : {"nobody", "another"}) {
        if (std::string(other) == "another")
            s.wait_run(s.post("/api/chat", {{"message", "add"}, {"conversation", "another"}}, 200)["run"], {"completed"});
        auto foreign = s.client().Get("/api/chat?conversation=" + std::string(other) + "&run=" + run);
        REQUIRE(foreign);
        INFO(foreign->body);
        CHECK(foreign->status == 404);
        CHECK_THAT(foreign->body, !Contains("event: end"));
    }
    CHECK(s.client().Get("/api/chat?conversation=known&run=" + run)->status == 200);
    json state = s.get("/memory/state?conversation=known");
    CHECK(state["conversation"] == "known");
    CHECK(state["pending_notifications"].is_array());  // what the next turn is shown, not yet taken
    CHECK(state["long_term"].is_object());             // the entries every conversation's prompt shows
    CHECK(s.post("/memory/clear-session", {{"conversation", "known"}}, 200)["facts_kept"] == true);
}

TEST_CASE("serve: /readyz answers within seconds when the model server stalls, not ready and saying why",
          "[integration][server]") {
    test::TempDir dir;
    std::atomic<bool> released{false};
    test::LoopbackServer stalled;  // accepts, then does not answer its model list until released
    stalled.http.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
        for (int i = 0; i < 400 && !released; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        res.set_content(R"({"object":"list","data":[{"id":"m","object":"model"}]})", "application/json");
    });
    int model_port = stalled.start();
    std::string config = (dir.path / "agenthost.toml").string();
    test::write_file(config, "data_dir = \"" + (dir.path / "data").string() +
                                 "\"\ndefault_plugin_dirs = false\nenabled_plugins = [\"openai\"]\n"
                                 "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                                 "\"]\n[provider]\npreset = \"llamacpp\"\nmodel = \"m\"\n"
                                 "base_url = \"http://127.0.0.1:" +
                                 std::to_string(model_port) + "/v1\"\n[server]\nauth = \"none\"\n");
    int port = test::free_port();
    test::Process server({test::cli(), "--config", config, "serve", "--listen", "127.0.0.1:" + std::to_string(port)});
    REQUIRE(server.wait_for_port(port));
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(std::chrono::seconds(12));  // the model server would hold it 20 s
    auto r = client.Get("/readyz");
    released = true;
    REQUIRE(r);
    INFO(r->body);
    CHECK(r->status == 503);
    json body = json::parse(r->body);
    CHECK(body["error"]["code"] == "MODEL_LIST_FAILED");
    CHECK_THAT(body["error"]["message"].get<std::string>(), Contains("did not list its models within 3 s"));
}
