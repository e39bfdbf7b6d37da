// The provider tests' scripted vendors: each wire format (OpenAI SSE, Anthropic SSE events, Ollama
// NDJSON, Gemini SSE, OpenAI Responses SSE, Bedrock's AWS event stream) as its server writes each situation, and a host whose
// provider talks to a WireServer speaking it. Shared by the provider conformance list and the LLM queue's tests.
#pragma once

#include "support/test_support.hpp"
#include "support/wire_server.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace test::providers {

using namespace agenthost;  // the host types the harness drives
using nlohmann::json;

// The API key the scripted servers expect.
constexpr const char* kKey = "sk-test-secret-1234";

struct Call {
    std::string name;
    json arguments;
};

// Splits every piece in two (and SSE/NDJSON records mid-way), so decoders see records cut anywhere.
std::vector<std::string> shred(const std::vector<std::string>& records);

// A response with this status and content type, its body still to fill.
test::CannedResponse canned(int status, const std::string& content_type);

// One server-sent event: its data line, after an event line when it is named.
std::string sse(const json& data, const std::string& event = "");

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
    json settings;  // the plugin's own settings ([plugins.NAME]) the harness configures, when not null;
                    // "{server}" in a value stands for the scripted server's URL
    // A record that is not JSON, and the start of one that never ends (`size` bytes announced or sent).
    std::string not_json = "data: {not json\n\n";
    std::function<std::string(size_t size)> endless = [](size_t size) { return "data: " + std::string(size, 'q'); };
    // The text stream built with the deltas' bytes as they are, invalid UTF-8 too; null when the
    // records are text, where the test puts such bytes in afterwards.
    std::function<std::vector<std::string>(const std::vector<std::string>&)> raw_text;
    // A second list the adapter joins to the models (Bedrock's inference profiles), when there is one.
    std::string more_models_path;
    std::function<std::string(const std::vector<std::string>&)> more_models;
};

// One AWS event-stream message: string headers, a payload, both CRC32s.
std::string aws_frame(const std::vector<std::pair<std::string, std::string>>& headers, const std::string& payload);

Wire openai_wire();
Wire anthropic_wire();
Wire ollama_wire();
Wire gemini_wire();
Wire responses_wire();
Wire bedrock_wire();
inline std::vector<Wire> wires() {
    return {openai_wire(), anthropic_wire(), ollama_wire(), gemini_wire(), responses_wire(), bedrock_wire()};
}

// How each vendor words the situations the adapters must recognise.
struct Situation {
    int status;
    std::string message;
    std::string kind;
};

Situation unknown_model(const Wire& w);

Situation context_overflow(const Wire& w);

Situation unauthorized(const Wire& w);

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
        if (!wire.settings.is_null()) {
            std::string table = wire.settings.dump();
            for (auto at = table.find("{server}"); at != std::string::npos; at = table.find("{server}"))
                table.replace(at, 8, server.url());
            cfg.plugin_tables[wire.plugin] = table;
        }
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
        for (auto& [name, value] : headers) r.headers[name] = std::move(value);
        push(std::move(r));
    }
    // The server lists these models (and no more in a second list, where the vendor has one).
    void offer_models(const std::vector<std::string>& ids) {
        test::CannedResponse models = canned(200, "application/json");
        models.chunks = {wire.models(ids)};
        server.push(wire.models_path, models);
        if (!wire.more_models) return;
        models.chunks = {wire.more_models({})};
        server.push(wire.more_models_path, models);
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

}  // namespace test::providers
