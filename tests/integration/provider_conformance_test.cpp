// One conformance list run against each wire format (OpenAI SSE, Anthropic SSE events, Ollama
// NDJSON): a scripted server on 127.0.0.1 speaks the vendor's protocol, the real adapter plugin talks
// to it through the host's HTTP service, and the LLM queue retries and cancels.
#include "integration/provider_wires.hpp"

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

using namespace test::providers;

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
        CHECK(r.outcome.cached_input_tokens == (wire.plugin == "ollama" ? 0 : 8));  // Ollama has no prompt cache
        CHECK_FALSE(r.outcome.usage_estimated);

        auto sent = h.server.requests().at(0);
        json body = json::parse(sent.body);
        CHECK(sent.path == wire.chat_path);
        if (wire.plugin != "gemini" && wire.plugin != "bedrock") {  // these name the model in the path, and stream by it
            CHECK(body["model"] == "m1");
            CHECK(body["stream"] == true);
        }
        if (wire.plugin == "openai") {
            CHECK(sent.headers["authorization"] == std::string("Bearer ") + kKey);
            CHECK(body["messages"][0]["role"] == "system");
            CHECK(body["tools"][0]["function"]["name"] == "get_weather");
            CHECK(body["max_tokens"] == 100);
        } else if (wire.plugin == "anthropic") {
            CHECK(sent.headers["x-api-key"] == kKey);
            CHECK(sent.headers["anthropic-version"] == "2023-06-01");
            CHECK(body["system"] == json::parse(R"([{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}])"));
            CHECK(body["messages"][0]["role"] == "user");
            CHECK(body["messages"][0]["content"].back()["cache_control"]["type"] == "ephemeral");
            CHECK(body["tools"][0]["input_schema"]["type"] == "object");
            CHECK(body["tools"].back()["cache_control"]["type"] == "ephemeral");
            CHECK(body["max_tokens"] == 100);
        } else if (wire.plugin == "openai_responses") {
            CHECK(sent.headers["authorization"] == std::string("Bearer ") + kKey);
            CHECK(body["instructions"] == "Be brief.");
            CHECK(body["input"] == json::parse(R"([{"role":"user","content":"Weather?"}])"));
            CHECK(body["tools"][0]["name"] == "get_weather");
            CHECK(body["max_output_tokens"] == 100);
            CHECK(body["store"] == false);  // nothing kept at OpenAI: the reasoning comes back in the request
            CHECK(body["include"] == json::array({"reasoning.encrypted_content"}));
        } else if (wire.plugin == "gemini") {
            CHECK(sent.headers["x-goog-api-key"] == kKey);
            CHECK(sent.query["alt"] == "sse");
            CHECK(body["systemInstruction"]["parts"][0]["text"] == "Be brief.");
            CHECK(body["contents"][0] == json{{"role", "user"}, {"parts", {{{"text", "Weather?"}}}}});
            CHECK(body["tools"][0]["functionDeclarations"][0]["name"] == "get_weather");
            CHECK(body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]["type"] == "object");
            CHECK(body["toolConfig"]["functionCallingConfig"]["mode"] == "AUTO");
            CHECK(body["generationConfig"]["maxOutputTokens"] == 100);
        } else if (wire.plugin == "bedrock") {
            CHECK(sent.headers["authorization"] == std::string("Bearer ") + kKey);  // a Bedrock API key
            CHECK(sent.headers["accept"] == "application/vnd.amazon.eventstream");
            CHECK(body["system"][0] == json{{"text", "Be brief."}});
            CHECK(body["messages"][0] == json{{"role", "user"}, {"content", {{{"text", "Weather?"}}}}});
            CHECK(body["toolConfig"]["tools"][0]["toolSpec"]["name"] == "get_weather");
            CHECK(body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["type"] == "object");
            CHECK_FALSE(body["toolConfig"].contains("toolChoice"));  // "auto" is the default, and most models refuse the field
            CHECK(body["inferenceConfig"]["maxTokens"] == 100);
            CHECK(body["messages"].dump().find("cachePoint") == std::string::npos);  // "m1" is no model known to cache
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
        INFO(r.outcome.error_type << ": " << r.outcome.error_message);
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

TEST_CASE("providers: model calls ride on one kept connection, a retry after a 500 on a new one", "[integration][providers]") {
    for (const Wire& wire : wires()) {
        INFO("wire format: " << wire.plugin);
        Harness h(wire);
        for (int i = 0; i < 3; ++i) h.push_stream(wire.text({"answer"}));
        h.push_error({500, "internal server error", "api_error"});
        h.push_stream(wire.text({"recovered"}));
        for (int i = 0; i < 3; ++i) REQUIRE(h.chat().outcome.ok);
        REQUIRE(h.chat().outcome.ok);  // a 500, then a retry
        auto seen = h.server.requests();
        std::vector<int> ports;
        for (const auto& r : seen)
            if (r.path == wire.chat_path) ports.push_back(r.client_port);
        REQUIRE(ports.size() == 5);
        CHECK(ports[1] == ports[0]);  // no new TCP (or TLS) handshake per model call
        CHECK(ports[2] == ports[0]);
        CHECK(ports[3] == ports[0]);  // the call that got the 500
        CHECK(ports[4] != ports[3]);  // its retry opened a new connection

        // A stream that ends early on a clean HTTP exchange (no end of reply, whole body sent) is a
        // failure only the provider sees: its retry starts on a new connection as well.
        test::CannedResponse short_reply = canned(200, wire.content_type);
        auto partial = wire.text({"this reply ", "stops"});
        short_reply.chunks = {partial[0], partial[1]};
        h.push(short_reply);
        h.push_stream(wire.text({"whole"}));
        auto r = h.chat();
        REQUIRE(r.outcome.ok);
        CHECK(r.text == "whole");
        CHECK(r.outcome.attempts == 2);
        ports.clear();
        for (const auto& request : h.server.requests())
            if (request.path == wire.chat_path) ports.push_back(request.client_port);
        REQUIRE(ports.size() == 7);
        CHECK(ports[5] == ports[4]);  // the short reply came on the kept connection
        CHECK(ports[6] != ports[5]);  // its retry did not
    }
}

TEST_CASE("providers: each bundled provider runs sandboxed, its base_url the one place it may connect",
          "[integration][providers]") {
    if (!test::kernel_can_sandbox()) return;
    for (const Wire& wire : wires()) {
        INFO("wire format: " << wire.plugin);
        Harness h(wire, 1, [&](config::Config& cfg) { cfg.plugin_tables[wire.plugin] = json{{"isolation", "sandbox"}}.dump(); });
        bool seen = false;
        for (const auto& p : h.app->registry().plugins()) {
            if (p.name != wire.plugin) continue;
            seen = true;
            CHECK(p.isolation == plugins::Isolation::sandbox);
            // Bedrock reads the standard AWS variables (credentials, profile, region) as the AWS SDKs do.
            const std::string environment = wire.plugin != "bedrock"
                                                ? "environment: none"
                                                : "environment: AWS_BEARER_TOKEN_BEDROCK, AWS_ACCESS_KEY_ID, "
                                                  "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, "
                                                  "AWS_SHARED_CREDENTIALS_FILE, AWS_REGION, AWS_DEFAULT_REGION, HOME";
            const std::vector<std::string> only_its_server{"read: none", "write: none",
                                                           "network: 127.0.0.1:" + std::to_string(h.server.port()), environment,
                                                           "processes: no"};
            CHECK(p.permissions == only_its_server);
        }
        CHECK(seen);
        h.push_stream(wire.text({"from inside the sandbox"}));
        auto r = h.chat();
        INFO(r.outcome.error_message);
        REQUIRE(r.outcome.ok);
        CHECK(r.text == "from inside the sandbox");
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
        auto records = wire.raw_text ? wire.raw_text({"caf\u00e9 \xff\xfe"}) : wire.text({"caf\u00e9 REPLACE"});
        bool replaced = static_cast<bool>(wire.raw_text);
        for (auto& record : records)
            if (auto at = record.find("REPLACE"); at != std::string::npos && !wire.raw_text) {
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
        h.push(events({first[0], wire.not_json}));
        h.push(events({first[0], wire.not_json}));
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
        h.push(events({first[0], wire.endless(40 << 20)}));
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
        cfg.provider.timeout_ms = 1000;  // the least the bundled providers allow
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
        CHECK(took < 5.0);
    }
    ::close(silent);
}

TEST_CASE("providers: models list and readiness report a missing model with the ones that exist", "[integration][providers]") {
    for (const Wire& wire : wires()) {
        INFO("wire format: " << wire.plugin);
        Harness h(wire);
        h.offer_models({"other-model", "m0"});
        auto missing = h.app->queue().check(wire.plugin);
        CHECK_FALSE(missing.ready);
        CHECK(missing.problem == llm::NotReady::model_unavailable);
        CHECK(std::string(missing.code()) == "MODEL_UNAVAILABLE");
        CHECK(missing.models == std::vector<std::string>{"other-model", "m0"});
        CHECK_THAT(missing.message, Contains("other-model"));

        h.offer_models({"m1"});
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
        const char* history = wire.plugin == "gemini" ? "contents" : wire.plugin == "openai_responses" ? "input" : "messages";
        std::string sent = second[history].dump();
        CHECK_THAT(sent, Contains("42"));  // the tool result went back in the vendor's shape
        if (wire.plugin == "anthropic") CHECK_THAT(sent, Contains("tool_result") && Contains("tool_use"));
        if (wire.plugin == "openai") CHECK_THAT(sent, Contains("tool_call_id"));
        if (wire.plugin == "openai_responses") {
            // The reasoning that led to the call went back in front of it, sealed, then the call and its output.
            const json& input = second["input"];
            REQUIRE(input.size() == 4);
            CHECK(input[1]["type"] == "reasoning");
            CHECK(input[1]["encrypted_content"] == "gAAAAB-sealed");
            CHECK(input[2]["type"] == "function_call");
            CHECK(input[2]["call_id"] == "call_0");
            CHECK(json::parse(input[2]["arguments"].get<std::string>()) == json{{"a", 40}, {"b", 2}});
            CHECK(input[3] == json{{"type", "function_call_output"}, {"call_id", "call_0"}, {"output", "42"}});
        }
        if (wire.plugin == "bedrock") {
            // The call went back as a toolUse block, its result as a toolResult in the next user message.
            const json& messages = second["messages"];
            REQUIRE(messages.size() == 3);
            CHECK(messages[1]["role"] == "assistant");
            CHECK(messages[1]["content"].back()["toolUse"] ==
                  json{{"toolUseId", "tooluse_0"}, {"name", "add"}, {"input", {{"a", 40}, {"b", 2}}}});
            CHECK(messages[2]["role"] == "user");
            CHECK(messages[2]["content"][0]["toolResult"]["toolUseId"] == "tooluse_0");
            CHECK(messages[2]["content"][0]["toolResult"]["content"][0]["text"] == "42");
        }
        if (wire.plugin == "gemini") {
            // The call went back as the model wrote it, its thoughtSignature with it, and its result by name.
            const json& contents = second["contents"];
            REQUIRE(contents.size() == 3);
            CHECK(contents[1]["role"] == "model");
            CHECK(contents[1]["parts"][0]["functionCall"] == json{{"name", "add"}, {"args", {{"a", 40}, {"b", 2}}}});
            CHECK(contents[1]["parts"][0]["thoughtSignature"] == "c2lnbmF0dXJl0");
            CHECK(contents[2]["role"] == "user");
            CHECK(contents[2]["parts"][0]["functionResponse"]["name"] == "add");
            CHECK(second["systemInstruction"]["parts"][0]["text"].get<std::string>().size() > 0);
        }
        // The turn's usage event counts the cached part of each prompt, as the vendor reported it.
        const agent::events::Usage* usage = nullptr;
        for (const auto& e : events)
            if (auto u = e.as<agent::events::Usage>()) usage = u;
        REQUIRE(usage);
        CHECK(usage->cached_input_tokens == (wire.plugin == "ollama" ? 0 : 8));
        CHECK(usage->turn_input_tokens == 24);
        CHECK(usage->turn_cached_input_tokens == (wire.plugin == "ollama" ? 0 : 16));
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

TEST_CASE("providers: an Azure OpenAI deployment URL gets its api-version, the key its api-key header",
          "[integration][providers]") {
    Wire azure = openai_wire();
    azure.base_suffix = "/openai/deployments/gpt4";
    azure.chat_path = "/openai/deployments/gpt4/chat/completions";
    Harness h(azure, 1, [](config::Config& cfg) { cfg.plugin_tables["openai"] = json{{"auth_header", "api-key"}}.dump(); });
    h.push_stream(azure.text({"from Azure"}));
    auto r = h.chat();
    REQUIRE(r.outcome.ok);
    CHECK(r.text == "from Azure");
    const auto sent = h.server.requests().at(0);
    CHECK(sent.path == azure.chat_path);
    CHECK(sent.query.at("api-version") == "2024-10-21");  // the GA version when none is configured
    CHECK(sent.headers.at("api-key") == kKey);
    CHECK(sent.headers.count("authorization") == 0);
    // A deployment serves the one model its URL names: readiness does not ask for a list Azure lacks.
    CHECK(h.app->queue().check("openai").ready);
    CHECK(h.server.requests_to("/openai/deployments/gpt4/models") == 0);
}

TEST_CASE("providers: the Responses adapter asks reasoning models for reasoning, and others for none",
          "[integration][providers]") {
    Wire plain = responses_wire();
    plain.settings = nullptr;  // "auto": told by the model's name
    for (const std::string model : {"gpt-4.1", "o4-mini"}) {
        INFO(model);
        Harness h(plain, 1, [&](config::Config& cfg) { cfg.provider.model = model; });
        h.push_stream(plain.text({"ok"}));
        plugins::CallInput call;
        call.conversation_id = "c";
        call.arguments_json = json{
            {"model", ""},
            {"messages", {{{"role", "user"}, {"content", "hi"}}}},
            {"temperature", 0.2},
            {"stream", true}}.dump();
        REQUIRE(h.app->queue().chat("openai_responses", call, {}).ok);
        json body = json::parse(h.server.requests().at(0).body);
        bool reasoning = model == "o4-mini";
        CHECK(body.contains("include") == reasoning);       // gpt-4.1 refuses encrypted reasoning
        CHECK(body.contains("reasoning") == reasoning);     // … and reasoning settings
        CHECK(body.contains("temperature") == !reasoning);  // o-series and gpt-5 refuse a temperature
    }
}

TEST_CASE("providers: Gemini gets tool results apart from text, and a signature for calls it did not write",
          "[integration][providers]") {
    Wire gemini = gemini_wire();
    Harness h(gemini);
    h.push_stream(gemini.text({"ok"}));
    json request{{"model", ""},
                 {"messages",
                  {{{"role", "user"}, {"content", "add"}},
                   {{"role", "assistant"},
                    {"content", ""},
                    {"tool_calls",
                     {{{"id", "c1"}, {"name", "add"}, {"arguments", {{"a", 1}}}},
                      {{"id", "c2"}, {"name", "add"}, {"arguments", {{"a", 2}}}}}}},
                   {{"role", "tool"}, {"tool_call_id", "c1"}, {"name", "add"}, {"content", "1"}},
                   {{"role", "tool"}, {"tool_call_id", "c2"}, {"name", "add"}, {"content", "2"}},
                   {{"role", "user"}, {"content", "[agenthost] state"}, {"agenthost_state", true}}}},
                 {"stream", true}};
    plugins::CallInput call;
    call.conversation_id = "c";
    call.arguments_json = request.dump();
    REQUIRE(h.app->queue().chat("gemini", call, {}).ok);
    const json contents = json::parse(h.server.requests().at(0).body)["contents"];
    REQUIRE(contents.size() == 4);
    // Another provider wrote these calls: the first carries the value Gemini documents for such history.
    CHECK(contents[1]["parts"][0]["thoughtSignature"] == "skip_thought_signature_validator");
    CHECK_FALSE(contents[1]["parts"][1].contains("thoughtSignature"));
    CHECK(contents[2]["parts"].size() == 2);  // both results in one content …
    CHECK(contents[2]["parts"][1]["functionResponse"]["response"]["result"] == "2");
    CHECK(contents[3] == json{{"role", "user"}, {"parts", {{{"text", "[agenthost] state"}}}}});  // … and the text apart
}

TEST_CASE("providers: a Gemini prompt its safety filters block ends the turn with the cause in its log",
          "[integration][providers]") {
    Wire gemini = gemini_wire();
    Harness h(gemini);
    h.push_stream({sse({{"promptFeedback", {{"blockReason", "SAFETY"}}}, {"usageMetadata", {{"promptTokenCount", 12}}}})});
    auto r = h.chat();
    REQUIRE(r.outcome.ok);
    CHECK(r.stop == "content_filter");

    h.push_stream({sse({{"promptFeedback", {{"blockReason", "SAFETY"}}}})});
    std::vector<agent::TurnEvent> events;
    agent::RunControls controls;
    controls.on_event = [&](const agent::TurnEvent& e) { events.push_back(e); };
    auto out = h.app->runner().run({"something blocked", "blocked", agent::Mode::execute, "{}"}, controls);
    REQUIRE(out.ok());
    bool said = false;
    for (const auto& e : events)
        if (auto log = e.as<agent::events::Log>()) said = said || log->message.find("content filter") != std::string::npos;
    CHECK(said);
}

namespace {

// Bedrock's reply when Claude thinks before a call: a reasoning block with its signature, the call.
std::vector<std::string> bedrock_reasoned_call() {
    auto event = [](const std::string& type, const json& payload) {
        return aws_frame({{":event-type", type}, {":content-type", "application/json"}, {":message-type", "event"}},
                         payload.dump());
    };
    return {
        event("messageStart", {{"role", "assistant"}}),
        event("contentBlockDelta", {{"contentBlockIndex", 0}, {"delta", {{"reasoningContent", {{"text", "The user wants "}}}}}}),
        event("contentBlockDelta", {{"contentBlockIndex", 0}, {"delta", {{"reasoningContent", {{"text", "a sum."}}}}}}),
        event("contentBlockDelta",
              {{"contentBlockIndex", 0}, {"delta", {{"reasoningContent", {{"signature", "EqQBCkYIBBgC"}}}}}}),
        event("contentBlockStop", {{"contentBlockIndex", 0}}),
        event("contentBlockStart",
              {{"contentBlockIndex", 1}, {"start", {{"toolUse", {{"toolUseId", "tooluse_A"}, {"name", "add"}}}}}}),
        event("contentBlockDelta", {{"contentBlockIndex", 1}, {"delta", {{"toolUse", {{"input", R"({"a": 40, "b": 2})"}}}}}}),
        event("contentBlockStop", {{"contentBlockIndex", 1}}),
        event("messageStop", {{"stopReason", "tool_use"}}),
        event("metadata", {{"usage", {{"inputTokens", 3}, {"outputTokens", 9}, {"cacheWriteInputTokens", 1200}}}})};
}

}  // namespace

namespace {

// AWS credentials in the environment for one test.
struct AwsKeys {
    AwsKeys(const char* id, const char* secret, const char* token = nullptr) {
        ::unsetenv("AWS_BEARER_TOKEN_BEDROCK");
        ::setenv("AWS_ACCESS_KEY_ID", id, 1);
        ::setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
        if (token) ::setenv("AWS_SESSION_TOKEN", token, 1);
    }
    ~AwsKeys() {
        for (const char* name : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}) ::unsetenv(name);
    }
};

}  // namespace

TEST_CASE("providers: Bedrock signs a request from the AWS credentials exactly as curl's own SigV4 does",
          "[peer][providers][bedrock]") {
    AwsKeys keys("AKIDBEDROCKTEST", "wJalrXUtnFEMI/bedrock/secret", "session-token-1");
    Wire bedrock = bedrock_wire();
    Harness h(bedrock, 1, [](config::Config& cfg) { cfg.provider.api_key.clear(); });  // no API key: SigV4
    h.push_stream(bedrock.text({"signed"}));
    auto r = h.chat();
    INFO(r.outcome.error_message);
    REQUIRE(r.outcome.ok);
    const auto sent = h.server.requests().at(0);
    CHECK_THAT(sent.headers.at("authorization"),
               Contains("Credential=AKIDBEDROCKTEST/" + sent.headers.at("x-amz-date").substr(0, 8) +
                        "/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, "));
    CHECK(sent.headers.at("x-amz-security-token") == "session-token-1");

    // curl signs the same request (same date, body, headers) with its own implementation.
    test::TempDir scratch;
    test::write_file(scratch.path / "body.json", sent.body);
    h.server.push(bedrock.chat_path, canned(200, "application/json"));
    auto replay = test::run_command(
        "curl -s -o /dev/null --aws-sigv4 aws:amz:us-east-1:bedrock --user 'AKIDBEDROCKTEST:wJalrXUtnFEMI/bedrock/secret' "
        "-H 'Content-Type: application/json' -H 'X-Amz-Date: " +
        sent.headers.at("x-amz-date") + "' -H 'X-Amz-Security-Token: session-token-1' --data-binary @" +
        (scratch.path / "body.json").string() + " '" + h.server.url() + bedrock.chat_path + "'");
    REQUIRE(replay.exit_code == 0);
    const auto all = h.server.requests();
    REQUIRE(all.size() == 2);
    CHECK(all[1].headers.at("authorization") == sent.headers.at("authorization"));
}

TEST_CASE("providers: Bedrock marks cache points, asks Claude to think, and returns its reasoning signed before the call",
          "[integration][providers][bedrock]") {
    AwsKeys keys("AKIDBEDROCKTEST", "secret");
    Wire bedrock = bedrock_wire();
    bedrock.settings["thinking_budget"] = 2048;
    Harness h(bedrock, 1, [](config::Config& cfg) {
        cfg.provider.api_key.clear();
        cfg.provider.model = "us.anthropic.claude-sonnet-4-20250514-v1:0";  // cache points: auto, and this model takes them
    });
    const std::string path = "/model/us.anthropic.claude-sonnet-4-20250514-v1:0/converse-stream";  // as the server decodes it
    test::CannedResponse first = canned(200, bedrock.content_type), second = first;
    first.chunks = shred(bedrock_reasoned_call());
    second.chunks = shred(bedrock.text({"The sum ", "is 42."}));
    h.server.push(path, first);
    h.server.push(path, second);
    std::vector<agent::TurnEvent> events;
    agent::RunControls controls;
    controls.on_event = [&](const agent::TurnEvent& e) { events.push_back(e); };
    auto out = h.app->runner().run({"add 40 and 2", "bedrock", agent::Mode::execute, "{}"}, controls);
    INFO(out.error);
    REQUIRE(out.ok());
    CHECK(out.answer == "The sum is 42.");
    const auto sent = h.server.requests();
    REQUIRE(sent.size() == 2);

    // Cache points close the system prompt, the tools and the conversation so far; thinking is on.
    json body = json::parse(sent[0].body);
    const json point{{"cachePoint", {{"type", "default"}}}};
    CHECK(body["system"].back() == point);
    CHECK(body["toolConfig"]["tools"].back() == point);
    CHECK(body["messages"].back()["content"].back() == point);
    CHECK(body["additionalModelRequestFields"]["thinking"] == json{{"type", "enabled"}, {"budget_tokens", 2048}});
    CHECK_FALSE((body.contains("inferenceConfig") && body["inferenceConfig"].contains("temperature")));

    // The reasoning went back in front of the call, with its signature, as Claude requires.
    json next = json::parse(sent[1].body);
    const json& assistant = next["messages"][1];
    REQUIRE(assistant["role"] == "assistant");
    CHECK(assistant["content"][0] ==
          json{{"reasoningContent", {{"reasoningText", {{"text", "The user wants a sum."}, {"signature", "EqQBCkYIBBgC"}}}}}});
    CHECK(assistant["content"][1]["toolUse"]["toolUseId"] == "tooluse_A");
    CHECK(next["messages"][2]["content"][0]["toolResult"]["content"][0]["text"] == "42");

    // Cache writes count as input: 3 + 1,200 for the first call, 4 + 8 cached for the second.
    const agent::events::Usage* usage = nullptr;
    for (const auto& e : events)
        if (auto u = e.as<agent::events::Usage>()) usage = u;
    REQUIRE(usage);
    CHECK(usage->turn_input_tokens == 1215);
    CHECK(usage->turn_cached_input_tokens == 8);
}

TEST_CASE("providers: Bedrock lists foundation models and inference profiles, signed, and says when credentials are missing",
          "[integration][providers][bedrock]") {
    ::unsetenv("AWS_BEARER_TOKEN_BEDROCK");
    ::setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
    Wire bedrock = bedrock_wire();
    Harness h(bedrock, 1, [](config::Config& cfg) {
        cfg.provider.api_key.clear();
        cfg.provider.model = "us.anthropic.claude-sonnet-4-20250514-v1:0";
    });
    auto none = h.app->queue().check("bedrock");
    CHECK_FALSE(none.ready);
    CHECK_THAT(none.message, Contains("AWS_ACCESS_KEY_ID") && Contains("/nonexistent/credentials"));

    AwsKeys keys("AKIDLIST", "secret");
    // doctor shows where the credentials and the region come from.
    std::map<std::string, plugins::HealthCheck> checks;
    for (auto& c : h.app->registry().health("bedrock")) checks[c.name] = c;
    CHECK(checks["credentials"].ok);
    CHECK(checks["credentials"].detail == "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
    CHECK(checks["region"].ok);
    CHECK(checks["region"].detail == "us-east-1 (from region in [plugins.bedrock])");
    test::CannedResponse list = canned(200, "application/json");
    list.chunks = {bedrock.models({"anthropic.claude-sonnet-4-20250514-v1:0", "amazon.nova-pro-v1:0"})};
    h.server.push(bedrock.models_path, list);
    list.chunks = {bedrock.more_models({"us.anthropic.claude-sonnet-4-20250514-v1:0"})};
    h.server.push(bedrock.more_models_path, list);
    auto ready = h.app->queue().check("bedrock");
    ::unsetenv("AWS_SHARED_CREDENTIALS_FILE");
    INFO(ready.message);
    CHECK(ready.ready);  // the inference profile is the configured model
    auto seen = h.server.requests();
    REQUIRE(seen.size() == 2);
    CHECK_THAT(seen[0].headers.at("authorization"),
               Contains("Credential=AKIDLIST/") && Contains("/us-east-1/bedrock/aws4_request"));
    CHECK(seen[1].query.at("maxResults") == "1000");

    // AWS_REGION naming another region than base_url's: doctor says which lines to write.
    ::setenv("AWS_REGION", "eu-central-1", 1);
    Wire unset_region = bedrock;
    unset_region.settings.erase("region");
    Harness elsewhere(unset_region, 1, [](config::Config& cfg) {
        cfg.provider.api_key.clear();
        cfg.provider.base_url = "https://bedrock-runtime.us-east-1.amazonaws.com";
    });
    auto mismatch = elsewhere.app->queue().check("bedrock");
    ::unsetenv("AWS_REGION");
    CHECK_FALSE(mismatch.ready);
    CHECK_THAT(mismatch.message, Contains("AWS_REGION says eu-central-1") &&
                                     Contains("base_url = \"https://bedrock-runtime.eu-central-1.amazonaws.com\""));
    CHECK(elsewhere.server.requests().empty());

    // The control plane for a runtime, and a region setting that is not base_url's: said, with the line to write.
    Harness plane(bedrock, 1, [](config::Config& cfg) {
        cfg.provider.api_key.clear();
        cfg.provider.base_url = "https://bedrock.eu-west-1.amazonaws.com";
    });
    auto control = plane.app->queue().check("bedrock");
    CHECK_FALSE(control.ready);
    CHECK_THAT(control.message, Contains("control plane") && Contains("https://bedrock-runtime.eu-west-1.amazonaws.com"));
    Harness signed_elsewhere(bedrock, 1, [](config::Config& cfg) {  // region = "us-east-1" in its [plugins.bedrock]
        cfg.provider.api_key.clear();
        cfg.provider.base_url = "https://bedrock-runtime.eu-west-1.amazonaws.com";
    });
    auto wrong_region = signed_elsewhere.app->queue().check("bedrock");
    CHECK_FALSE(wrong_region.ready);
    CHECK_THAT(wrong_region.message, Contains("region is us-east-1 but base_url") && Contains("is in eu-west-1"));
}

TEST_CASE("providers: a Bedrock stream that reports throttling mid-way is retried as a rate limit",
          "[integration][providers][bedrock]") {
    Wire bedrock = bedrock_wire();
    Harness h(bedrock);
    auto partial = bedrock.text({"half an ans"});
    h.push_stream(
        {partial[0], partial[4],
         aws_frame(
             {{":exception-type", "throttlingException"}, {":content-type", "application/json"}, {":message-type", "exception"}},
             R"({"message":"Too many tokens, please wait before trying again."})")});
    h.push_stream(bedrock.text({"whole"}));
    auto r = h.chat();
    INFO(r.outcome.error_type << ": " << r.outcome.error_message);
    REQUIRE(r.outcome.ok);
    CHECK(r.text == "whole");
    REQUIRE(r.retries.size() == 1);
    CHECK(r.retries[0].type == "rate_limit");
    CHECK_THAT(r.retries[0].message, Contains("Too many tokens"));
}

TEST_CASE("providers: Bedrock as its models refuse: tools unstreamed, tool history without tools, model access, malformed calls",
          "[integration][providers][bedrock]") {
    Wire bedrock = bedrock_wire();
    Harness h(bedrock);
    // Llama and gpt-oss take tools only unstreamed: the call goes again to /converse, whole.
    h.push_error({400, "This model doesn't support tool use in streaming mode.", "ValidationException"});
    test::CannedResponse whole = canned(200, "application/json");
    whole.chunks = {json{{"output",
                          {{"message",
                            {{"role", "assistant"},
                             {"content",
                              {{{"text", "Checking."}},
                               {{"toolUse", {{"toolUseId", "t1"}, {"name", "get_weather"}, {"input", {{"city", "Oslo"}}}}}}}}}}}},
                         {"stopReason", "tool_use"},
                         {"usage", {{"inputTokens", 12}, {"outputTokens", 5}}}}
                        .dump()};
    h.server.push("/model/m1/converse", whole);
    auto r = h.chat();
    INFO(r.outcome.error_message);
    REQUIRE(r.outcome.ok);
    CHECK(r.outcome.attempts == 1);  // not a retry: the same attempt, asked the way the model takes it
    CHECK(r.text == "Checking.");
    REQUIRE(r.calls.size() == 1);
    CHECK(r.calls[0]["arguments"] == json{{"city", "Oslo"}});
    CHECK(r.stop == "tool_calls");

    // A request offering no tools (a title, a summary) after calls: the calls go as text, with no toolConfig.
    h.push_stream(bedrock.text({"A title"}));
    json request{{"model", ""},
                 {"messages",
                  {{{"role", "user"}, {"content", "weather?"}},
                   {{"role", "assistant"},
                    {"content", ""},
                    {"tool_calls", {{{"id", "t1"}, {"name", "get_weather"}, {"arguments", {{"city", "Oslo"}}}}}}},
                   {{"role", "tool"}, {"tool_call_id", "t1"}, {"name", "get_weather"}, {"content", "sunny"}},
                   {{"role", "user"}, {"content", "Title this conversation."}}}},
                 {"tools", json::array()},
                 {"tool_choice", "none"},
                 {"stream", true}};
    plugins::CallInput call;
    call.conversation_id = "c";
    call.arguments_json = request.dump();
    REQUIRE(h.app->queue().chat("bedrock", call, {}).ok);
    json sent = json::parse(h.server.requests().back().body);
    CHECK_FALSE(sent.contains("toolConfig"));
    CHECK_THAT(sent["messages"].dump(), !Contains("toolUse") && !Contains("toolResult") && Contains("[called get_weather with"));
    CHECK(sent["messages"][2]["content"][0]["text"] == "[result of get_weather] sunny");

    // No access to a model is not a bad key: model_unavailable, saying where access is asked for.
    h.push_error({403, "You don't have access to the model with the specified model ID.", "AccessDeniedException"});
    auto denied = h.chat();
    CHECK(denied.outcome.error_type == "model_unavailable");
    CHECK_THAT(denied.outcome.error_message, Contains("Model access"));

    // A call the model wrote unreadably is tried again.
    auto malformed = bedrock.tools({{"get_weather", {{"city", "Oslo"}}}});
    for (auto& record : malformed)
        if (auto at = record.find("tool_use\"}"); at != std::string::npos)
            record =
                aws_frame({{":event-type", "messageStop"}, {":content-type", "application/json"}, {":message-type", "event"}},
                          R"({"stopReason":"malformed_tool_use"})");
    h.push_stream(malformed);
    h.push_stream(bedrock.text({"fine"}));
    auto retried = h.chat();
    REQUIRE(retried.outcome.ok);
    CHECK(retried.text == "fine");
    REQUIRE(retried.retries.size() == 1);
    CHECK_THAT(retried.retries[0].message, Contains("malformed_tool_use"));
}

TEST_CASE("providers: Bedrock reads fields of unexpected types without failing, and a call cut by max_tokens says so",
          "[integration][providers][bedrock]") {
    Wire bedrock = bedrock_wire();
    Harness h(bedrock);
    auto event = [](const std::string& type, const std::string& payload) {
        return aws_frame({{":event-type", type}, {":content-type", "application/json"}, {":message-type", "event"}}, payload);
    };
    // A proxy's liberties: an index as text, a call's input as an object, no stop reason, a null usage.
    h.push_stream(
        {event("messageStart", R"({"role":"assistant"})"),
         event("contentBlockStart", R"({"contentBlockIndex":"0","start":{"toolUse":{"toolUseId":7,"name":"get_weather"}}})"),
         event("contentBlockDelta", R"({"contentBlockIndex":"0","delta":{"toolUse":{"input":{"city":"Oslo"}}}})"),
         event("contentBlockStop", R"({"contentBlockIndex":"0"})"), event("messageStop", R"({"stopReason":null})"),
         event("metadata", R"({"usage":null})")});
    auto odd = h.chat();
    INFO(odd.outcome.error_type << ": " << odd.outcome.error_message);
    REQUIRE(odd.outcome.ok);
    REQUIRE(odd.calls.size() == 1);
    CHECK(odd.calls[0]["name"] == "get_weather");
    CHECK(odd.calls[0]["arguments"] == json{{"city", "Oslo"}});

    // The output limit cut the call's input: the stop says max_tokens, not tool_calls.
    h.push_stream(
        {event("messageStart", R"({"role":"assistant"})"),
         event("contentBlockStart", R"({"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"t1","name":"get_weather"}}})"),
         event("contentBlockDelta", R"({"contentBlockIndex":0,"delta":{"toolUse":{"input":"{\"city\": \"Os"}}})"),
         event("contentBlockStop", R"({"contentBlockIndex":0})"), event("messageStop", R"({"stopReason":"max_tokens"})")});
    auto cut = h.chat();
    REQUIRE(cut.outcome.ok);
    CHECK(cut.stop == "max_tokens");
}
