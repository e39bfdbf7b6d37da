// One conformance list run against each wire format (OpenAI SSE, Anthropic SSE events, Ollama
// NDJSON): a scripted server on 127.0.0.1 speaks the vendor's protocol, the real adapter plugin talks
// to it through the host's HTTP service, and the LLM queue retries and cancels.
#include "unit/test_support.hpp"
#include "unit/wire_server.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kKey = "sk-test-secret-1234";

struct Call {
    std::string name;
    json arguments;
};

// Splits every piece in two (and SSE/NDJSON records mid-way), so decoders see records cut anywhere.
std::vector<std::string> shred(const std::vector<std::string>& records) {
    std::vector<std::string> chunks;
    for (const auto& r : records) {
        size_t cut = r.size() / 3 + 1;
        chunks.push_back(r.substr(0, cut));
        chunks.push_back(r.substr(cut));
    }
    return chunks;
}

test::CannedResponse canned(int status, const std::string& content_type) {
    test::CannedResponse r;
    r.status = status;
    r.content_type = content_type;
    return r;
}

std::string sse(const json& data, const std::string& event = "") {
    return (event.empty() ? "" : "event: " + event + "\n") + "data: " + data.dump() + "\n\n";
}

// A vendor's wire format: the paths, and how its server writes each scripted situation.
struct Wire {
    std::string plugin;
    std::string base_suffix;  // appended to the server URL to make base_url
    std::string chat_path;
    std::string models_path;
    std::string content_type;
    std::function<std::vector<std::string>(const std::vector<std::string>&)> text;
    std::function<std::vector<std::string>(const std::vector<Call>&)> tools;
    std::function<std::string(const std::vector<std::string>&)> models;
    std::function<test::CannedResponse(int status, const std::string& message, const std::string& kind)> error;
};

Wire openai_wire() {
    Wire w;
    w.plugin = "openai";
    w.base_suffix = "/v1";
    w.chat_path = "/v1/chat/completions";
    w.models_path = "/v1/models";
    w.content_type = "text/event-stream";
    w.text = [](const std::vector<std::string>& deltas) {
        std::vector<std::string> r;
        r.push_back(sse({{"choices", {{{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}}}}}));
        r.push_back(sse({{"choices", {{{"index", 0}, {"delta", {{"reasoning_content", "thinking…"}}}}}}}));
        for (const auto& d : deltas)
            r.push_back(sse({{"choices", {{{"index", 0}, {"delta", {{"content", d}}}, {"finish_reason", nullptr}}}}}));
        r.push_back(sse({{"choices", {{{"index", 0}, {"delta", json::object()}, {"finish_reason", "stop"}}}}}));
        r.push_back(sse({{"choices", json::array()}, {"usage", {{"prompt_tokens", 12}, {"completion_tokens", 5}}}}));
        r.push_back("data: [DONE]\n\n");
        return r;
    };
    w.tools = [](const std::vector<Call>& calls) {
        std::vector<std::string> r;
        for (size_t i = 0; i < calls.size(); ++i)
            r.push_back(sse({{"choices",
                              {{{"index", 0},
                                {"delta",
                                 {{"tool_calls",
                                   {{{"index", i},
                                     {"id", "call_" + std::to_string(i)},
                                     {"type", "function"},
                                     {"function", {{"name", calls[i].name}, {"arguments", ""}}}}}}}}}}}}));
        // The argument text of the calls, interleaved in small pieces.
        std::vector<std::string> texts;
        for (const auto& c : calls) texts.push_back(c.arguments.dump());
        for (size_t at = 0; at < 200; at += 4)
            for (size_t i = 0; i < texts.size(); ++i)
                if (at < texts[i].size())
                    r.push_back(
                        sse({{"choices",
                              {{{"index", 0},
                                {"delta",
                                 {{"tool_calls", {{{"index", i}, {"function", {{"arguments", texts[i].substr(at, 4)}}}}}}}}}}}}));
        r.push_back(sse({{"choices", {{{"index", 0}, {"delta", json::object()}, {"finish_reason", "tool_calls"}}}}}));
        r.push_back(sse({{"choices", json::array()}, {"usage", {{"prompt_tokens", 12}, {"completion_tokens", 5}}}}));
        r.push_back("data: [DONE]\n\n");
        return r;
    };
    w.models = [](const std::vector<std::string>& ids) {
        json data = json::array();
        for (const auto& id : ids) data.push_back({{"id", id}, {"object", "model"}});
        return json{{"object", "list"}, {"data", data}}.dump();
    };
    w.error = [](int status, const std::string& message, const std::string& kind) {
        test::CannedResponse r = canned(status, "application/json");
        r.chunks = {json{{"error", {{"message", message}, {"type", "invalid_request_error"}, {"code", kind}}}}.dump()};
        return r;
    };
    return w;
}

Wire anthropic_wire() {
    Wire w;
    w.plugin = "anthropic";
    w.chat_path = "/v1/messages";
    w.models_path = "/v1/models";
    w.content_type = "text/event-stream";
    auto start = [] {
        return sse({{"type", "message_start"},
                    {"message",
                     {{"id", "msg_1"},
                      {"type", "message"},
                      {"role", "assistant"},
                      {"content", json::array()},
                      {"usage", {{"input_tokens", 12}, {"output_tokens", 1}}}}}},
                   "message_start");
    };
    auto end = [](const std::string& reason, std::vector<std::string>& r) {
        r.push_back(sse({{"type", "message_delta"}, {"delta", {{"stop_reason", reason}}}, {"usage", {{"output_tokens", 5}}}},
                        "message_delta"));
        r.push_back(sse({{"type", "message_stop"}}, "message_stop"));
    };
    w.text = [=](const std::vector<std::string>& deltas) {
        std::vector<std::string> r{start(), sse({{"type", "ping"}}, "ping")};
        r.push_back(
            sse({{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "thinking"}, {"thinking", ""}}}},
                "content_block_start"));
        r.push_back(sse(
            {{"type", "content_block_delta"}, {"index", 0}, {"delta", {{"type", "thinking_delta"}, {"thinking", "thinking…"}}}},
            "content_block_delta"));
        r.push_back(sse({{"type", "content_block_stop"}, {"index", 0}}, "content_block_stop"));
        r.push_back(sse({{"type", "content_block_start"}, {"index", 1}, {"content_block", {{"type", "text"}, {"text", ""}}}},
                        "content_block_start"));
        for (const auto& d : deltas)
            r.push_back(sse({{"type", "content_block_delta"}, {"index", 1}, {"delta", {{"type", "text_delta"}, {"text", d}}}},
                            "content_block_delta"));
        r.push_back(sse({{"type", "content_block_stop"}, {"index", 1}}, "content_block_stop"));
        end("end_turn", r);
        return r;
    };
    w.tools = [=](const std::vector<Call>& calls) {
        std::vector<std::string> r{start()};
        for (size_t i = 0; i < calls.size(); ++i) {
            r.push_back(sse({{"type", "content_block_start"},
                             {"index", i},
                             {"content_block",
                              {{"type", "tool_use"},
                               {"id", "toolu_" + std::to_string(i)},
                               {"name", calls[i].name},
                               {"input", json::object()}}}},
                            "content_block_start"));
            std::string text = calls[i].arguments.dump();
            for (size_t at = 0; at < text.size(); at += 4)
                r.push_back(sse({{"type", "content_block_delta"},
                                 {"index", i},
                                 {"delta", {{"type", "input_json_delta"}, {"partial_json", text.substr(at, 4)}}}},
                                "content_block_delta"));
            r.push_back(sse({{"type", "content_block_stop"}, {"index", i}}, "content_block_stop"));
        }
        end("tool_use", r);
        return r;
    };
    w.models = [](const std::vector<std::string>& ids) {
        json data = json::array();
        for (const auto& id : ids) data.push_back({{"id", id}, {"type", "model"}});
        return json{{"data", data}, {"has_more", false}}.dump();
    };
    w.error = [](int status, const std::string& message, const std::string& kind) {
        test::CannedResponse r = canned(status, "application/json");
        r.chunks = {json{{"type", "error"}, {"error", {{"type", kind}, {"message", message}}}}.dump()};
        return r;
    };
    return w;
}

Wire ollama_wire() {
    Wire w;
    w.plugin = "ollama";
    w.chat_path = "/api/chat";
    w.models_path = "/api/tags";
    w.content_type = "application/x-ndjson";
    auto line = [](const json& message, bool done, const std::string& reason = "") {
        json j{{"model", "m1"}, {"created_at", "2026-11-30T08:00:00Z"}, {"message", message}, {"done", done}};
        if (done) {
            j["done_reason"] = reason;
            j["prompt_eval_count"] = 12;
            j["eval_count"] = 5;
        }
        return j.dump() + "\n";
    };
    w.text = [=](const std::vector<std::string>& deltas) {
        std::vector<std::string> r{line({{"role", "assistant"}, {"content", ""}, {"thinking", "thinking…"}}, false)};
        for (const auto& d : deltas) r.push_back(line({{"role", "assistant"}, {"content", d}}, false));
        r.push_back(line({{"role", "assistant"}, {"content", ""}}, true, "stop"));
        return r;
    };
    w.tools = [=](const std::vector<Call>& calls) {
        json list = json::array();
        for (const auto& c : calls) list.push_back({{"function", {{"name", c.name}, {"arguments", c.arguments}}}});
        return std::vector<std::string>{line({{"role", "assistant"}, {"content", ""}, {"tool_calls", list}}, false),
                                        line({{"role", "assistant"}, {"content", ""}}, true, "stop")};
    };
    w.models = [](const std::vector<std::string>& ids) {
        json models = json::array();
        for (const auto& id : ids) models.push_back({{"name", id}, {"model", id}, {"size", 1}});
        return json{{"models", models}}.dump();
    };
    w.error = [](int status, const std::string& message, const std::string&) {
        test::CannedResponse r = canned(status, "application/json");
        r.chunks = {json{{"error", message}}.dump()};
        return r;
    };
    return w;
}

std::vector<Wire> wires() { return {openai_wire(), anthropic_wire(), ollama_wire()}; }

// How each vendor words the situations the adapters must recognise.
struct Situation {
    int status;
    std::string message;
    std::string kind;
};
Situation unknown_model(const Wire& w) {
    if (w.plugin == "openai") return {404, "The model `m1` does not exist or you do not have access to it.", "model_not_found"};
    if (w.plugin == "anthropic") return {404, "model: m1", "not_found_error"};
    return {404, "model \"m1\" not found, try pulling it first", ""};
}
Situation context_overflow(const Wire& w) {
    if (w.plugin == "openai")
        return {400,
                "This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens. "
                "Please reduce the length of the messages.",
                "context_length_exceeded"};
    if (w.plugin == "anthropic") return {400, "prompt is too long: 210432 tokens > 200000 maximum", "invalid_request_error"};
    return {400, "the input length exceeds the context length", ""};
}
Situation unauthorized(const Wire& w) {
    if (w.plugin == "openai") return {401, "Incorrect API key provided: sk-test***1234.", "invalid_api_key"};
    if (w.plugin == "anthropic") return {401, "invalid x-api-key", "authentication_error"};
    return {401, "unauthorized", ""};
}

struct Harness {
    test::TempDir dir;
    test::WireServer server;
    Wire wire;
    std::unique_ptr<app::HostApp> app;

    explicit Harness(Wire w, int concurrency = 1, const std::function<void(config::Config&)>& adjust = {}) : wire(std::move(w)) {
        ::setenv("WIRE_TEST_KEY", kKey, 1);
        auto cfg = test::config(dir.path, false);
        cfg.enabled_plugins = {wire.plugin, "example_c"};
        cfg.provider.use = cfg.provider.name = wire.plugin;
        cfg.provider.base_url = server.url() + wire.base_suffix;
        cfg.provider.model = "m1";
        cfg.provider.api_key = kKey;
        cfg.provider.concurrency = concurrency;
        cfg.provider.retry_base_ms = 50;
        cfg.provider.retry_cap_ms = 200;
        if (adjust) adjust(cfg);
        app = test::start(cfg);
    }

    void push(test::CannedResponse r) { server.push(wire.chat_path, std::move(r)); }
    void push_stream(std::vector<std::string> records, bool split = true) {
        test::CannedResponse r = canned(200, wire.content_type);
        r.chunks = split ? shred(records) : std::move(records);
        push(std::move(r));
    }
    void push_error(const Situation& s, std::map<std::string, std::string> headers = {}) {
        auto r = wire.error(s.status, s.message, s.kind);
        r.headers = std::move(headers);
        push(std::move(r));
    }

    struct Result {
        llm::ChatOutcome outcome;
        std::string text, reasoning, stop;
        std::vector<json> calls;
        std::vector<llm::RetryNotice> retries;
    };

    Result chat(const ah_cancel* cancel = nullptr, const std::string& conversation = "c1") {
        json request{{"model", ""},
                     {"messages", {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Weather?"}}}},
                     {"tools", {{{"name", "get_weather"}, {"description", "weather"}, {"parameters", {{"type", "object"}}}}}},
                     {"tool_choice", "auto"},
                     {"max_tokens", 100},
                     {"stream", true}};
        plugins::CallInput call;
        call.call_id = "t";
        call.conversation_id = conversation;
        call.arguments_json = request.dump();
        call.cancel = cancel;
        Result r;
        llm::ChatCallbacks callbacks;
        callbacks.on_event = [&](int32_t type, std::string_view data) -> ah_status {
            if (type == AH_EVENT_TEXT) r.text += data;
            if (type == AH_EVENT_REASONING) r.reasoning += data;
            if (type == AH_EVENT_TOOL_CALL) r.calls.push_back(json::parse(data));
            if (type == AH_EVENT_STOP) r.stop = json::parse(data)["reason"];
            return AH_OK;
        };
        callbacks.on_retry = [&](const llm::RetryNotice& n) {
            r.retries.push_back(n);
            r.text.clear();
            r.calls.clear();
        };
        r.outcome = app->queue().chat(wire.plugin, call, callbacks);
        return r;
    }
};

}  // namespace

TEST_CASE("providers: streamed text, reasoning, usage and the request each vendor expects", "[integration][providers]") {
    for (const Wire& wire : wires()) {
        INFO("wire format: " << wire.plugin);
        Harness h(wire);
        h.push_stream(wire.text({"Hel", "lo ", "wörld", " 🚀"}));
        auto r = h.chat();
        REQUIRE(r.outcome.ok);
        CHECK(r.text == "Hello wörld 🚀");
        CHECK(r.reasoning == "thinking…");
        CHECK(r.stop == "end");
        CHECK(r.outcome.input_tokens == 12);
        CHECK(r.outcome.output_tokens == 5);
        CHECK_FALSE(r.outcome.usage_estimated);

        auto sent = h.server.requests().at(0);
        json body = json::parse(sent.body);
        CHECK(sent.path == wire.chat_path);
        CHECK(body["model"] == "m1");
        CHECK(body["stream"] == true);
        if (wire.plugin == "openai") {
            CHECK(sent.headers["authorization"] == std::string("Bearer ") + kKey);
            CHECK(body["messages"][0]["role"] == "system");
            CHECK(body["tools"][0]["function"]["name"] == "get_weather");
            CHECK(body["max_tokens"] == 100);
        } else if (wire.plugin == "anthropic") {
            CHECK(sent.headers["x-api-key"] == kKey);
            CHECK(sent.headers["anthropic-version"] == "2023-06-01");
            CHECK(body["system"] == "Be brief.");
            CHECK(body["messages"][0]["role"] == "user");
            CHECK(body["tools"][0]["input_schema"]["type"] == "object");
            CHECK(body["max_tokens"] == 100);
        } else {
            CHECK(body["messages"][0]["role"] == "system");
            CHECK(body["tools"][0]["function"]["name"] == "get_weather");
            CHECK(body["options"]["num_predict"] == 100);
        }
    }
}

TEST_CASE("providers: parallel tool calls streamed across many chunks arrive whole and in order", "[integration][providers]") {
    for (const Wire& wire : wires()) {
        INFO("wire format: " << wire.plugin);
        Harness h(wire);
        std::vector<Call> calls{{"get_weather", {{"city", "Paris"}, {"days", 3}, {"note", "a \"quoted\" {brace}"}}},
                                {"get_time", {{"zone", "Europe/Oslo"}, {"list", {1, 2, 3}}}}};
        h.push_stream(wire.tools(calls));
        auto r = h.chat();
        REQUIRE(r.outcome.ok);
        REQUIRE(r.calls.size() == 2);
        CHECK(r.calls[0]["name"] == "get_weather");
        CHECK(r.calls[0]["arguments"] == calls[0].arguments);
        CHECK(r.calls[1]["name"] == "get_time");
        CHECK(r.calls[1]["arguments"] == calls[1].arguments);
        CHECK_FALSE(r.calls[0]["id"].get<std::string>().empty());
        CHECK(r.calls[0]["id"] != r.calls[1]["id"]);
        CHECK(r.stop == "tool_calls");
    }
}

TEST_CASE("providers: a 429 with Retry-After is waited out, then succeeds", "[integration][providers]") {
    for (const Wire& wire : wires()) {
        INFO("wire format: " << wire.plugin);
        Harness h(wire);
        h.push_error({429, "Rate limit reached, slow down.", "rate_limit_error"}, {{"Retry-After", "1"}});
        h.push_stream(wire.text({"ok"}));
        auto started = Clock::now();
        auto r = h.chat();
        double waited = std::chrono::duration<double>(Clock::now() - started).count();
        REQUIRE(r.outcome.ok);
        CHECK(r.text == "ok");
        CHECK(r.outcome.attempts == 2);
        REQUIRE(r.retries.size() == 1);
        CHECK(r.retries[0].type == "rate_limit");
        CHECK(r.retries[0].delay_s == Approx(1.0));
        CHECK(waited >= 0.95);  // honoured the server's Retry-After …
        CHECK(waited < 10.0);   // … and did not hang
    }
}

TEST_CASE("providers: a 500 and a stream cut mid-way are retried, 401 is not", "[integration][providers]") {
    for (const Wire& wire : wires()) {
        INFO("wire format: " << wire.plugin);
        Harness h(wire);
        h.push_error({500, "internal server error", "api_error"});
        test::CannedResponse cut = canned(200, wire.content_type);
        auto partial = wire.text({"this stream ", "breaks"});
        cut.chunks = {partial[0], partial[1], partial[2]};
        cut.cut = true;
        h.push(cut);
        h.push_stream(wire.text({"recovered"}));
        auto r = h.chat();
        REQUIRE(r.outcome.ok);
        CHECK(r.text == "recovered");  // what the broken attempt streamed was dropped
        CHECK(r.outcome.attempts == 3);
        REQUIRE(r.retries.size() == 2);
        CHECK(r.retries[0].type == "transient");
        CHECK(r.retries[1].type == "transient");

        h.push_error(unauthorized(wire));
        auto denied = h.chat();
        CHECK_FALSE(denied.outcome.ok);
        CHECK(denied.outcome.error_type == "auth");
        CHECK(denied.outcome.attempts == 1);
        CHECK_THAT(denied.outcome.error_message, !Contains(kKey));
    }
}

TEST_CASE("providers: unknown model and context overflow, in each vendor's words, are typed and not retried",
          "[integration][providers]") {
    for (const Wire& wire : wires()) {
        INFO("wire format: " << wire.plugin);
        Harness h(wire);
        h.push_error(unknown_model(wire));
        auto missing = h.chat();
        CHECK(missing.outcome.error_type == "model_unavailable");
        CHECK(missing.outcome.attempts == 1);
        h.push_error(context_overflow(wire));
        auto overflow = h.chat();
        CHECK(overflow.outcome.error_type == "context_too_large");
        CHECK(overflow.outcome.attempts == 1);
        CHECK(h.server.requests_to(wire.chat_path) == 2);

        test::CannedResponse bad = wire.error(422, "messages: field required", "invalid_request_error");
        h.push(bad);
        auto rejected = h.chat();
        CHECK(rejected.outcome.error_type == "bad_request");
        CHECK_THAT(rejected.outcome.error_message, Contains("field required"));
    }
}

TEST_CASE("providers: a slow stream cancelled from another thread ends promptly", "[integration][providers]") {
    for (const Wire& wire : wires()) {
        INFO("wire format: " << wire.plugin);
        Harness h(wire);
        test::CannedResponse slow = canned(200, wire.content_type);
        slow.chunks = {wire.text({"first words"})[0]};
        slow.endless = true;
        h.push(slow);
        ah_cancel cancel;
        Clock::time_point fired;
        std::thread canceller([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            fired = Clock::now();
            cancel.cancel();
        });
        auto r = h.chat(&cancel);
        double after = std::chrono::duration<double>(Clock::now() - fired).count();
        canceller.join();
        CHECK_FALSE(r.outcome.ok);
        CHECK(r.outcome.error_type == "cancelled");
        CHECK(after < 1.0);
    }
}

TEST_CASE("providers: faults — silence, invalid UTF-8, invalid JSON, a 10 MB event, an endless event — end typed and in time",
          "[integration][providers][faults]") {
    // A server that accepts connections (the kernel's backlog does) and never answers.
    int silent = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(silent, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(silent, 16) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(silent, reinterpret_cast<sockaddr*>(&addr), &len);
    const std::string silent_url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));

    for (const Wire& wire : wires()) {
        INFO("wire format: " << wire.plugin);
        Harness h(wire, 1, [&](config::Config& cfg) {
            cfg.provider.timeout_ms = 30000;  // roomy: a sanitizer build moves 40 MB slowly
            cfg.provider.retry_attempts = 2;
        });
        auto events = [&](std::vector<std::string> records) {
            test::CannedResponse r = canned(200, wire.content_type);
            r.chunks = std::move(records);
            return r;
        };
        auto first = wire.text({"x"});

        // Invalid UTF-8 inside a text delta: the text arrives with the bad bytes replaced, nothing else lost.
        auto records = wire.text({"caf\u00e9 REPLACE"});
        bool replaced = false;
        for (auto& record : records)
            if (auto at = record.find("REPLACE"); at != std::string::npos) {
                record.replace(at, 7, "\xff\xfe");
                replaced = true;
            }
        REQUIRE(replaced);
        h.push(events(records));
        auto mangled = h.chat();
        INFO("invalid UTF-8: ok=" << mangled.outcome.ok << " type=" << mangled.outcome.error_type << " text=" << mangled.text);
        CHECK(mangled.outcome.ok);
        CHECK(mangled.text == "caf\u00e9 \uFFFD\uFFFD");

        // A record that is not JSON: a typed error (retried as transient, then reported).
        h.push(events({first[0], wire.plugin == "ollama" ? "{not json\n" : "data: {not json\n\n"}));
        h.push(events({first[0], wire.plugin == "ollama" ? "{not json\n" : "data: {not json\n\n"}));
        auto garbage = h.chat();
        INFO("invalid JSON: ok=" << garbage.outcome.ok << " type=" << garbage.outcome.error_type
                                 << " message=" << garbage.outcome.error_message);
        CHECK_FALSE(garbage.outcome.ok);
        CHECK_FALSE(garbage.outcome.error_type.empty());

        // One 10 MB text event: carried whole.
        std::string huge(10 << 20, 'z');
        h.push(events(wire.text({huge})));
        auto big = h.chat();
        INFO("10 MB event: ok=" << big.outcome.ok << " type=" << big.outcome.error_type);
        CHECK(big.outcome.ok);
        CHECK(big.text.size() == huge.size());

        // One event that never ends (40 MB without a line break): reading stops at 32 MiB, typed, not retried.
        h.push(events({first[0], (wire.plugin == "ollama" ? "" : "data: ") + std::string(40 << 20, 'q')}));
        auto flood = h.chat();
        CHECK_FALSE(flood.outcome.ok);
        CHECK(flood.outcome.error_type == "bad_response");
        CHECK_THAT(flood.outcome.error_message, Contains("32 MiB"));
        CHECK(flood.outcome.attempts == 1);

        // A reply that streams on and on in small deltas: stopped at [agent] max_reply_bytes, typed, not retried.
        {
            Harness capped(wire, 1, [&](config::Config& cfg) { cfg.agent.max_reply_bytes = 1 << 20; });
            std::vector<std::string> deltas(20, std::string(100 << 10, 'r'));
            capped.push(events(wire.text(deltas)));
            auto endless = capped.chat();
            INFO("endless reply: ok=" << endless.outcome.ok << " type=" << endless.outcome.error_type);
            CHECK_FALSE(endless.outcome.ok);
            CHECK(endless.outcome.error_type == "output_limit");
            CHECK_THAT(endless.outcome.error_message, Contains("max_reply_bytes"));
            CHECK(endless.outcome.attempts == 1);
            CHECK(endless.text.size() <= (1u << 20));
        }

        // Silence: the request times out within timeout_ms per attempt.
        test::TempDir dir;
        auto cfg = test::config(dir.path, false);
        cfg.enabled_plugins = {wire.plugin};
        cfg.provider.use = cfg.provider.name = wire.plugin;
        cfg.provider.base_url = silent_url + wire.base_suffix;
        cfg.provider.model = "m1";
        cfg.provider.api_key = kKey;
        cfg.provider.timeout_ms = 800;
        cfg.provider.retry_attempts = 2;
        cfg.provider.retry_base_ms = 50;
        cfg.provider.retry_cap_ms = 100;
        h.app = test::start(cfg);
        auto started = Clock::now();
        auto quiet = h.chat();
        double took = std::chrono::duration<double>(Clock::now() - started).count();
        INFO("silence: type=" << quiet.outcome.error_type << " message=" << quiet.outcome.error_message << " took=" << took);
        CHECK_FALSE(quiet.outcome.ok);
        CHECK(quiet.outcome.error_type == "timeout");  // retried, then reported as a timeout
        CHECK(quiet.outcome.stop_reason == StopReason::timeout);
        CHECK_THAT(quiet.outcome.error_message, Contains("timed out"));
        CHECK(took < 4.0);
    }
    ::close(silent);
}

TEST_CASE("providers: models list and readiness report a missing model with the ones that exist", "[integration][providers]") {
    for (const Wire& wire : wires()) {
        INFO("wire format: " << wire.plugin);
        Harness h(wire);
        test::CannedResponse models = canned(200, "application/json");
        models.chunks = {wire.models({"other-model", "m0"})};
        h.server.push(wire.models_path, models);
        auto missing = h.app->queue().check(wire.plugin);
        CHECK_FALSE(missing.ready);
        CHECK(missing.code == "MODEL_UNAVAILABLE");
        CHECK(missing.models == std::vector<std::string>{"other-model", "m0"});
        CHECK_THAT(missing.message, Contains("other-model"));

        models.chunks = {wire.models({"m1"})};
        h.server.push(wire.models_path, models);
        if (wire.plugin == "ollama") {  // the configured model's context length comes from /api/show
            test::CannedResponse show = canned(200, "application/json");
            show.chunks = {json{{"model_info", {{"llama.context_length", 131072}}}}.dump()};
            h.server.push("/api/show", show);
        }
        CHECK(h.app->queue().check(wire.plugin).ready);
    }
}

TEST_CASE("providers: the runner completes a turn with tool calls against each wire format", "[integration][providers]") {
    for (const Wire& wire : wires()) {
        INFO("wire format: " << wire.plugin);
        Harness h(wire);
        h.push_stream(wire.tools({{"add", {{"a", 40}, {"b", 2}}}}));
        h.push_stream(wire.text({"The sum ", "is 42."}));
        std::vector<agent::TurnEvent> events;
        agent::RunControls controls;
        controls.on_event = [&](const agent::TurnEvent& e) { events.push_back(e); };
        auto out = h.app->runner().run({"add 40 and 2", "e2e", agent::Mode::execute, "{}"}, controls);
        INFO(out.error);
        REQUIRE(out.ok());
        CHECK(out.answer == "The sum is 42.");
        CHECK(out.tool_calls == 1);
        CHECK(out.tokens == 34);  // two calls of 12 + 5 tokens, as the server reported
        json second = json::parse(h.server.requests().at(1).body);
        std::string sent = second["messages"].dump();
        CHECK_THAT(sent, Contains("42"));  // the tool result went back in the vendor's shape
        if (wire.plugin == "anthropic") CHECK_THAT(sent, Contains("tool_result") && Contains("tool_use"));
        if (wire.plugin == "openai") CHECK_THAT(sent, Contains("tool_call_id"));
    }
}

TEST_CASE("providers: after a stream cut and a retry, the text shown is not shown twice", "[integration][providers]") {
    for (const Wire& wire : wires()) {
        INFO("wire format: " << wire.plugin);
        Harness h(wire);
        auto streamed = [&](const std::vector<std::string>& first, const std::vector<std::string>& second) {
            test::CannedResponse cut = canned(200, wire.content_type);
            // Every record up to the first piece of text, then the connection drops.
            for (const std::string& record : wire.text(first)) {
                cut.chunks.push_back(record);
                if (record.find(json(first[0]).dump()) != std::string::npos) break;
            }
            cut.cut = true;
            h.push(cut);
            h.push_stream(wire.text(second), false);
            std::string shown;
            agent::RunControls controls;
            controls.on_event = [&](const agent::TurnEvent& e) {
                if (const auto* t = e.as<agent::events::Text>()) shown += t->delta;
            };
            auto out = h.app->runner().run({"say hello", "", agent::Mode::execute, "{}"}, controls);
            REQUIRE(out.ok());
            return std::make_pair(out.answer, shown);
        };
        // The retry writes the same words again: the user sees them once.
        auto [answer, shown] = streamed({"hello ", "world"}, {"hello ", "from the retry"});
        CHECK(answer == "hello from the retry");
        CHECK(shown == "hello from the retry");
        // The retry writes other words: they follow on a new line, the answer is the retry's.
        auto [other_answer, other_shown] = streamed({"good ", "day"}, {"hi there"});
        CHECK(other_answer == "hi there");
        CHECK(other_shown == "good \n\nhi there");
    }
}

TEST_CASE("llm queue: concurrency 1 serialises sessions, a rate limit pauses every session", "[integration][providers][queue]") {
    Harness h(openai_wire());
    test::CannedResponse slow = canned(200, "text/event-stream");
    slow.chunks = openai_wire().text({"one"});
    slow.chunk_delay_ms = 40;
    h.push(slow);
    slow.chunks = openai_wire().text({"two"});
    h.push(slow);
    Harness::Result a, b;
    Clock::time_point a_done;
    std::thread first([&] {
        a = h.chat(nullptr, "session-a");
        a_done = Clock::now();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    b = h.chat(nullptr, "session-b");
    first.join();
    REQUIRE(a.outcome.ok);
    REQUIRE(b.outcome.ok);
    // With one slot, b's request reached the server only once a's whole stream had been read.
    auto requests = h.server.requests();
    REQUIRE(requests.size() == 2);
    CHECK(requests[1].at >= a_done - std::chrono::milliseconds(5));

    // A 429 seen by one session holds the lane for all: the other session waits out the pause too.
    Harness limited(openai_wire());
    limited.push_error({429, "slow down", "rate_limit_exceeded"}, {{"Retry-After", "1"}});
    limited.push_stream(openai_wire().text({"a"}));
    limited.push_stream(openai_wire().text({"b"}));
    Harness::Result x, y;
    auto t0 = Clock::now();
    std::thread rate_limited([&] { x = limited.chat(nullptr, "session-x"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // x has seen the 429 and paused the lane
    y = limited.chat(nullptr, "session-y");
    double y_done = std::chrono::duration<double>(Clock::now() - t0).count();
    rate_limited.join();
    CHECK(x.outcome.ok);
    CHECK(y.outcome.ok);
    CHECK(y.outcome.attempts == 1);  // y never hit the limit itself …
    CHECK(y_done >= 0.95);           // … but waited for the pause
}

TEST_CASE("llm queue: requests are served fairly across sessions", "[integration][providers][queue]") {
    Harness h(openai_wire());
    test::CannedResponse slow = canned(200, "text/event-stream");
    slow.chunk_delay_ms = 30;
    for (const char* word : {"a1", "a2", "a3", "b1"}) {
        slow.chunks = openai_wire().text({word});
        h.push(slow);
    }
    std::vector<std::string> order;
    std::mutex m;
    auto session = [&](const std::string& name, int requests) {
        for (int i = 0; i < requests; ++i) {
            auto r = h.chat(nullptr, name);
            std::lock_guard lock(m);
            order.push_back(name);
        }
    };
    std::thread a([&] { session("a", 3); });
    std::this_thread::sleep_for(std::chrono::milliseconds(60));  // a is running its first request
    std::thread b([&] { session("b", 1); });
    a.join();
    b.join();
    REQUIRE(order.size() == 4);
    // b arrived while a's first request ran: it is served before a's later ones, not after all of them.
    CHECK(std::find(order.begin(), order.end(), "b") - order.begin() <= 2);
}

TEST_CASE("llm queue: a request cancelled while waiting for its turn leaves at once", "[integration][providers][queue]") {
    Harness h(openai_wire());
    test::CannedResponse endless = canned(200, "text/event-stream");
    endless.chunks = {openai_wire().text({"holding the only slot"})[0]};
    endless.endless = true;
    h.push(endless);
    ah_cancel stop_first, stop_waiting;
    Harness::Result first;
    std::thread holder([&] { first = h.chat(&stop_first, "holder"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // the holder streams; the lane is full
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        stop_waiting.cancel();
    });
    auto started = Clock::now();
    auto waiting = h.chat(&stop_waiting, "waiter");
    double waited = std::chrono::duration<double>(Clock::now() - started).count();
    canceller.join();
    CHECK(waiting.outcome.error_type == "cancelled");
    CHECK(waiting.outcome.attempts == 1);
    CHECK(waited < 1.5);
    CHECK(h.server.requests_to("/v1/chat/completions") == 1);  // the waiter never reached the server
    stop_first.cancel();
    holder.join();
    CHECK(first.outcome.error_type == "cancelled");
}
