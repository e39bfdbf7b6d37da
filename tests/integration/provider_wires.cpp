#include "integration/provider_wires.hpp"

#include <zlib.h>

namespace test::providers {

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
    if (content_type == "application/vnd.amazon.eventstream")  // an event no adapter acts on keeps it open
        r.keep_alive = aws_frame({{":event-type", "keepAlive"}, {":message-type", "event"}}, "{}");
    return r;
}

std::string sse(const json& data, const std::string& event) {
    return (event.empty() ? "" : "event: " + event + "\n") + "data: " + data.dump() + "\n\n";
}

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
        r.push_back(sse(
            {{"choices", json::array()},
             {"usage", {{"prompt_tokens", 12}, {"completion_tokens", 5}, {"prompt_tokens_details", {{"cached_tokens", 8}}}}}}));
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
        r.push_back(sse(
            {{"choices", json::array()},
             {"usage", {{"prompt_tokens", 12}, {"completion_tokens", 5}, {"prompt_tokens_details", {{"cached_tokens", 8}}}}}}));
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
                      {"usage",
                       {{"input_tokens", 2},
                        {"cache_creation_input_tokens", 2},
                        {"cache_read_input_tokens", 8},
                        {"output_tokens", 1}}}}}},
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
    w.not_json = "{not json\n";
    w.endless = [](size_t size) { return std::string(size, 'q'); };
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

// Gemini's stream: one GenerateContentResponse per event, whole function calls (each with the
// thoughtSignature the API wants back), thoughts as parts marked "thought", usage at the end, and
// no closing marker: the finishReason is what says the reply is whole.
Wire gemini_wire() {
    Wire w;
    w.plugin = "gemini";
    w.base_suffix = "/v1beta";
    w.chat_path = "/v1beta/models/m1:streamGenerateContent";
    w.models_path = "/v1beta/models";
    w.content_type = "text/event-stream";
    auto chunk = [](const json& parts, const std::string& finish = "") {
        json candidate{{"content", {{"role", "model"}, {"parts", parts}}}, {"index", 0}};
        json j{{"candidates", json::array({candidate})}, {"modelVersion", "m1"}};
        if (!finish.empty()) {
            j["candidates"][0]["finishReason"] = finish;
            j["usageMetadata"] = {{"promptTokenCount", 12},
                                  {"candidatesTokenCount", 3},
                                  {"thoughtsTokenCount", 2},
                                  {"cachedContentTokenCount", 8},
                                  {"totalTokenCount", 17}};
        }
        return sse(j);
    };
    w.text = [=](const std::vector<std::string>& deltas) {
        std::vector<std::string> r{chunk(json::array({{{"text", "thinking…"}, {"thought", true}}}))};
        for (const auto& d : deltas) r.push_back(chunk(json::array({{{"text", d}}})));
        r.push_back(chunk(json::array({{{"text", ""}}}), "STOP"));
        return r;
    };
    w.tools = [=](const std::vector<Call>& calls) {
        std::vector<std::string> r;
        for (size_t i = 0; i < calls.size(); ++i)
            r.push_back(chunk(json::array({{{"functionCall", {{"name", calls[i].name}, {"args", calls[i].arguments}}},
                                            {"thoughtSignature", "c2lnbmF0dXJl" + std::to_string(i)}}})));
        r.push_back(chunk(json::array({{{"text", ""}}}), "STOP"));
        return r;
    };
    w.models = [](const std::vector<std::string>& ids) {
        json models = json::array();
        for (const auto& id : ids)
            models.push_back({{"name", "models/" + id}, {"supportedGenerationMethods", {"generateContent", "countTokens"}}});
        return json{{"models", models}}.dump();
    };
    w.error = [](int status, const std::string& message, const std::string& kind) {
        test::CannedResponse r = canned(status, "application/json");
        json error{{"code", status}, {"message", message}, {"status", kind}};
        if (kind == "INVALID_ARGUMENT" && message.find("API key") != std::string::npos)
            error["details"] = {{{"@type", "type.googleapis.com/google.rpc.ErrorInfo"},
                                 {"reason", "API_KEY_INVALID"},
                                 {"domain", "googleapis.com"}}};
        r.chunks = {json{{"error", error}}.dump()};
        return r;
    };
    return w;
}

// The Responses API's stream: named events, a reasoning item (summary streamed, encrypted content
// whole at its end) before the message or the calls, calls as output items whose arguments stream
// by output_index, and response.completed with the usage last.
Wire responses_wire() {
    Wire w = openai_wire();  // the same errors and model list
    w.plugin = "openai_responses";
    w.chat_path = "/v1/responses";
    w.settings = {{"reasoning", "on"}};  // "m1" is no reasoning model's name
    auto event = [](const std::string& type, json data) {
        data["type"] = type;
        return sse(data, type);
    };
    auto reasoning = [=](std::vector<std::string>& r) {
        r.push_back(event("response.created", {{"response", {{"id", "resp_1"}, {"status", "in_progress"}}}}));
        r.push_back(event("response.output_item.added",
                          {{"output_index", 0}, {"item", {{"type", "reasoning"}, {"id", "rs_1"}, {"summary", json::array()}}}}));
        r.push_back(
            event("response.reasoning_summary_text.delta", {{"item_id", "rs_1"}, {"output_index", 0}, {"delta", "thinking…"}}));
        r.push_back(event("response.output_item.done", {{"output_index", 0},
                                                        {"item",
                                                         {{"type", "reasoning"},
                                                          {"id", "rs_1"},
                                                          {"summary", {{{"type", "summary_text"}, {"text", "thinking…"}}}},
                                                          {"encrypted_content", "gAAAAB-sealed"}}}}));
    };
    auto completed = [=](std::vector<std::string>& r) {
        r.push_back(event("response.completed", {{"response",
                                                  {{"id", "resp_1"},
                                                   {"status", "completed"},
                                                   {"usage",
                                                    {{"input_tokens", 12},
                                                     {"output_tokens", 5},
                                                     {"input_tokens_details", {{"cached_tokens", 8}}},
                                                     {"output_tokens_details", {{"reasoning_tokens", 2}}}}}}}}));
    };
    w.text = [=](const std::vector<std::string>& deltas) {
        std::vector<std::string> r;
        reasoning(r);
        r.push_back(event("response.output_item.added",
                          {{"output_index", 1}, {"item", {{"type", "message"}, {"id", "msg_1"}, {"role", "assistant"}}}}));
        for (const auto& d : deltas)
            r.push_back(event("response.output_text.delta", {{"item_id", "msg_1"}, {"output_index", 1}, {"delta", d}}));
        r.push_back(event("response.output_item.done",
                          {{"output_index", 1}, {"item", {{"type", "message"}, {"id", "msg_1"}, {"role", "assistant"}}}}));
        completed(r);
        return r;
    };
    w.tools = [=](const std::vector<Call>& calls) {
        std::vector<std::string> r;
        reasoning(r);
        auto item = [&](size_t i, const std::string& arguments) {
            return json{{"type", "function_call"},
                        {"id", "fc_" + std::to_string(i)},
                        {"call_id", "call_" + std::to_string(i)},
                        {"name", calls[i].name},
                        {"arguments", arguments}};
        };
        for (size_t i = 0; i < calls.size(); ++i)
            r.push_back(event("response.output_item.added", {{"output_index", i + 1}, {"item", item(i, "")}}));
        std::vector<std::string> texts;
        for (const auto& c : calls) texts.push_back(c.arguments.dump());
        for (size_t at = 0; at < 200; at += 4)  // the calls' argument text, interleaved in small pieces
            for (size_t i = 0; i < texts.size(); ++i)
                if (at < texts[i].size())
                    r.push_back(event(
                        "response.function_call_arguments.delta",
                        {{"item_id", "fc_" + std::to_string(i)}, {"output_index", i + 1}, {"delta", texts[i].substr(at, 4)}}));
        for (size_t i = 0; i < calls.size(); ++i)
            r.push_back(event("response.output_item.done", {{"output_index", i + 1}, {"item", item(i, texts[i])}}));
        completed(r);
        return r;
    };
    return w;
}

namespace {

void put32(std::string& out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xFF);
}

// A JSON string's text with bytes >= 0x80 left as they are, valid UTF-8 or not (json::dump would
// refuse invalid bytes), so a frame can carry them with checksums that match.
std::string raw_json_string(const std::string& text) {
    std::string out = "\"";
    for (unsigned char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        if (c < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
            out += escaped;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

}  // namespace

std::string aws_frame(const std::vector<std::pair<std::string, std::string>>& headers, const std::string& payload) {
    std::string h;
    for (const auto& [name, value] : headers) {
        h += static_cast<char>(name.size());
        h += name;
        h += static_cast<char>(7);  // a string
        h += static_cast<char>(value.size() >> 8);
        h += static_cast<char>(value.size() & 0xFF);
        h += value;
    }
    std::string out;
    put32(out, static_cast<uint32_t>(12 + h.size() + payload.size() + 4));
    put32(out, static_cast<uint32_t>(h.size()));
    put32(out, static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(out.data()), 8)));
    out += h + payload;
    put32(out, static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(out.data()), static_cast<uInt>(out.size()))));
    return out;
}

// Bedrock's ConverseStream: AWS event-stream messages (:event-type, :message-type, JSON payload),
// blocks one after another by contentBlockIndex (reasoning with its signature, text, each call's
// input in pieces), messageStop, then metadata with the usage (inputTokens without the cache's
// part). A failure is {"message"} with the exception's name in x-amzn-ErrorType.
Wire bedrock_wire() {
    Wire w;
    w.plugin = "bedrock";
    w.chat_path = "/model/m1/converse-stream";
    w.models_path = "/foundation-models";
    w.more_models_path = "/inference-profiles";
    w.content_type = "application/vnd.amazon.eventstream";
    w.settings = {{"region", "us-east-1"}, {"models_url", "{server}"}};
    auto event = [](const std::string& type, const std::string& payload) {
        return aws_frame({{":event-type", type}, {":content-type", "application/json"}, {":message-type", "event"}}, payload);
    };
    auto ending = [=](std::vector<std::string>& r, const std::string& reason) {
        r.push_back(event("messageStop", json{{"stopReason", reason}}.dump()));
        r.push_back(event("metadata", json{{"usage",
                                            {{"inputTokens", 4},
                                             {"outputTokens", 5},
                                             {"cacheReadInputTokens", 8},
                                             {"cacheWriteInputTokens", 0},
                                             {"totalTokens", 17}}},
                                           {"metrics", {{"latencyMs", 120}}}}
                                          .dump()));
    };
    w.text = [=](const std::vector<std::string>& deltas) {
        std::vector<std::string> r{event("messageStart", R"({"role":"assistant"})")};
        r.push_back(event("contentBlockDelta", R"({"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"thinking…"}}})"));
        r.push_back(event("contentBlockDelta", R"({"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"c2ln"}}})"));
        r.push_back(event("contentBlockStop", R"({"contentBlockIndex":0})"));
        for (const auto& d : deltas)
            r.push_back(event("contentBlockDelta", R"({"contentBlockIndex":1,"delta":{"text":)" + raw_json_string(d) + "}}"));
        r.push_back(event("contentBlockStop", R"({"contentBlockIndex":1})"));
        ending(r, "end_turn");
        return r;
    };
    w.raw_text = w.text;
    w.tools = [=](const std::vector<Call>& calls) {
        std::vector<std::string> r{event("messageStart", R"({"role":"assistant"})")};
        for (size_t i = 0; i < calls.size(); ++i) {
            r.push_back(
                event("contentBlockStart",
                      json{{"contentBlockIndex", i},
                           {"start", {{"toolUse", {{"toolUseId", "tooluse_" + std::to_string(i)}, {"name", calls[i].name}}}}}}
                          .dump()));
            const std::string text = calls[i].arguments.dump();
            for (size_t at = 0; at < text.size(); at += 5)
                r.push_back(
                    event("contentBlockDelta",
                          json{{"contentBlockIndex", i}, {"delta", {{"toolUse", {{"input", text.substr(at, 5)}}}}}}.dump()));
            r.push_back(event("contentBlockStop", json{{"contentBlockIndex", i}}.dump()));
        }
        ending(r, "tool_use");
        return r;
    };
    w.models = [](const std::vector<std::string>& ids) {
        json models = json::array();
        for (const auto& id : ids) models.push_back({{"modelId", id}, {"modelName", id}, {"responseStreamingSupported", true}});
        return json{{"modelSummaries", models}}.dump();
    };
    w.more_models = [](const std::vector<std::string>& ids) {
        json profiles = json::array();
        for (const auto& id : ids) profiles.push_back({{"inferenceProfileId", id}, {"status", "ACTIVE"}});
        return json{{"inferenceProfileSummaries", profiles}}.dump();
    };
    w.error = [](int status, const std::string& message, const std::string& kind) {
        test::CannedResponse r = canned(status, "application/json");
        std::string exception = kind;
        if (exception.find("Exception") == std::string::npos)
            exception = status == 429   ? "ThrottlingException"
                        : status >= 500 ? "InternalServerException"
                        : status == 403 ? "AccessDeniedException"
                                        : "ValidationException";
        r.headers["x-amzn-ErrorType"] = exception + ":http://internal.amazon.com/coral/com.amazon.bedrock/";
        r.chunks = {json{{"message", message}}.dump()};
        return r;
    };
    w.not_json = event("contentBlockDelta", "{not json");
    w.endless = [](size_t size) {  // a prelude announcing `size` bytes, then bytes that never finish it
        std::string head;
        put32(head, static_cast<uint32_t>(size));
        put32(head, 0);
        put32(head, static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(head.data()), 8)));
        return head + std::string(size / 2, 'q');
    };
    return w;
}

Situation unknown_model(const Wire& w) {
    if (w.plugin == "openai" || w.plugin == "openai_responses")
        return {404, "The model `m1` does not exist or you do not have access to it.", "model_not_found"};
    if (w.plugin == "anthropic") return {404, "model: m1", "not_found_error"};
    if (w.plugin == "gemini")
        return {404,
                "models/m1 is not found for API version v1beta, or is not supported for generateContent. Call ListModels "
                "to see the list of available models and their supported methods.",
                "NOT_FOUND"};
    if (w.plugin == "bedrock") return {400, "The provided model identifier is invalid.", "ValidationException"};
    return {404, "model \"m1\" not found, try pulling it first", ""};
}

Situation context_overflow(const Wire& w) {
    if (w.plugin == "openai" || w.plugin == "openai_responses")
        return {400,
                "This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens. "
                "Please reduce the length of the messages.",
                "context_length_exceeded"};
    if (w.plugin == "anthropic") return {400, "prompt is too long: 210432 tokens > 200000 maximum", "invalid_request_error"};
    if (w.plugin == "gemini")
        return {400, "The input token count (1207000) exceeds the maximum number of tokens allowed (1048576).",
                "INVALID_ARGUMENT"};
    if (w.plugin == "bedrock") return {400, "Input is too long for requested model.", "ValidationException"};
    return {400, "the input length exceeds the context length", ""};
}

Situation unauthorized(const Wire& w) {
    if (w.plugin == "openai" || w.plugin == "openai_responses")
        return {401, "Incorrect API key provided: sk-test***1234.", "invalid_api_key"};
    if (w.plugin == "anthropic") return {401, "invalid x-api-key", "authentication_error"};
    if (w.plugin == "gemini") return {400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT"};
    if (w.plugin == "bedrock")
        return {403, "The security token included in the request is invalid.", "UnrecognizedClientException"};
    return {401, "unauthorized", ""};
}

}  // namespace test::providers
