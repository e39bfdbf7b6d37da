#include "llm/sampling.hpp"

#include "common/bounded_json.hpp"

#include <algorithm>

namespace agenthost::llm {

using nlohmann::json;

namespace {

// The text of one MCP content block; other kinds are named, as the host's providers take text.
std::string block_text(const json& block) {
    const std::string type = json_io::get_string(block, "type");
    if (type == "text") return json_io::get_string(block, "text");
    return "[" + (type.empty() ? std::string("unknown") : type) + " content, not shown to this model]";
}

std::string content_text(const json& content) {
    if (content.is_object()) return block_text(content);
    std::string text;
    if (content.is_array())
        for (const auto& block : content) {
            if (!text.empty()) text += "\n";
            text += block_text(block);
        }
    return text;
}

}  // namespace

Result<std::string> sampling_request(const json& params, const SamplingTarget& target) {
    const json* messages = params.is_object() && params.contains("messages") ? &params["messages"] : nullptr;
    if (!messages || !messages->is_array() || messages->empty())
        return Error{"invalid_arguments", "the sampling request needs \"messages\", a non-empty array"};
    json out = json::array();
    if (std::string system = json_io::get_string(params, "systemPrompt"); !system.empty())
        out.push_back({{"role", "system"}, {"content", system}});
    for (const auto& m : *messages) {
        const std::string role = json_io::get_string(m, "role");
        if (role != "user" && role != "assistant")
            return Error{"invalid_arguments", "each sampling message needs \"role\", \"user\" or \"assistant\""};
        if (!m.contains("content")) return Error{"invalid_arguments", "each sampling message needs \"content\""};
        out.push_back({{"role", role}, {"content", content_text(m["content"])}});
    }
    int64_t asked = json_io::get_int(params, "maxTokens", target.max_tokens);
    int max_tokens = static_cast<int>(std::clamp<int64_t>(asked, 1, target.max_tokens));
    json request{{"max_tokens", max_tokens}, {"messages", std::move(out)}, {"model", target.model},
                 {"stream", true},           {"tool_choice", "none"},      {"tools", json::array()}};
    return json_io::dump(request);
}

plugins::CallerAnswer sample_with_model(ModelClient& model, const SamplingTarget& target, const json& params) {
    auto request = sampling_request(params, target);
    if (!request) return {AH_ERR_INVALID_ARGUMENT, request.error().message};
    plugins::CallInput call;
    call.call_id = "sampling";
    call.arguments_json = std::move(*request);
    call.request_context_json = "{}";
    call.cancel = target.cancel;
    std::string text, stop = "endTurn";
    ChatCallbacks callbacks;
    callbacks.on_event = [&](int32_t type, std::string_view payload) {
        if (type == AH_EVENT_TEXT) text.append(payload);
        if (type == AH_EVENT_STOP && payload.find("max_tokens") != std::string_view::npos) stop = "maxTokens";
        return AH_OK;
    };
    ChatOutcome outcome = model.chat(target.provider, call, callbacks);
    if (!outcome.ok)
        return {AH_ERR_FAILED, "the model of provider '" + target.provider + "' could not answer (" + outcome.error_type +
                                   "): " + outcome.error_message};
    json result{{"role", "assistant"},
                {"content", {{"type", "text"}, {"text", text}}},
                {"model", target.model.empty() ? target.provider : target.model},
                {"stopReason", stop}};
    return {AH_OK, json_io::dump(result)};
}

}  // namespace agenthost::llm
