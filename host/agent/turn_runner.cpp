#include "agent/turn_runner.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace agenthost::agent {
namespace {

using nlohmann::json;

// Collects one provider answer from its event stream, forwarding deltas as they arrive.
struct Reply {
    std::string text;
    json tool_calls = json::array();
    json error;  // the typed error event, when the provider emitted one
    const std::function<void(const TurnEvent&)>* on_event;

    static ah_status emit(void* ctx, int32_t type, ah_str payload) {
        auto* self = static_cast<Reply*>(ctx);
        std::string_view data(payload.data ? payload.data : "", payload.len);
        try {
            switch (type) {
            case AH_EVENT_TEXT:
                self->text.append(data);
                (*self->on_event)({TurnEvent::Kind::text, std::string(data)});
                break;
            case AH_EVENT_REASONING:
                (*self->on_event)({TurnEvent::Kind::reasoning, std::string(data)});
                break;
            case AH_EVENT_TOOL_CALL: {
                json call = json::parse(data);
                if (!call.contains("name") || !call["name"].is_string()) return AH_ERR_INVALID_ARGUMENT;
                if (!call.contains("arguments")) call["arguments"] = json::object();
                if (call["arguments"].is_string()) {  // some providers pass the JSON text through
                    json decoded = json::parse(call["arguments"].get<std::string>(), nullptr, false);
                    if (!decoded.is_discarded()) call["arguments"] = std::move(decoded);
                }
                self->tool_calls.push_back(std::move(call));
                break;
            }
            case AH_EVENT_ERROR:
                self->error = json::parse(data);
                break;
            default:  // stop, usage and event types from newer minors are not needed here
                break;
            }
            return AH_OK;
        } catch (const std::exception&) {
            return AH_ERR_INVALID_ARGUMENT;
        }
    }
};

std::string display(const json& result) {
    const json& content = result.contains("content") ? result["content"] : result;
    return content.is_string() ? content.get<std::string>() : content.dump();
}

}  // namespace

TurnOutcome TurnRunner::run(const TurnRequest& request, const std::function<void(const TurnEvent&)>& on_event) {
    json tools = json::array();
    for (const auto& tool : registry_.tools())
        tools.push_back({{"name", tool.name}, {"description", tool.description},
                         {"parameters", json::parse(tool.input_schema_json)}});

    plugins::CallInput context_call;
    context_call.conversation_id = request.conversation_id;
    std::string system = request.system_prompt;
    if (std::string extra = registry_.context(context_call); !extra.empty()) system += "\n\n" + extra;

    json messages = json::array();
    if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
    messages.push_back({{"role", "user"}, {"content", request.prompt}});

    for (int iteration = 0; iteration < request.max_iterations; ++iteration) {
        json chat_request{{"model", ""}, {"messages", messages}, {"tools", tools},
                          {"tool_choice", tools.empty() ? "none" : "auto"}, {"stream", true}};
        plugins::CallInput call;
        call.call_id = request.conversation_id + "-llm-" + std::to_string(iteration);
        call.conversation_id = request.conversation_id;
        call.arguments_json = chat_request.dump();

        Reply reply;
        reply.on_event = &on_event;
        ah_event_sink sink{sizeof(ah_event_sink), &reply, &Reply::emit};
        auto status = registry_.chat(provider_, call, sink);
        if (!status) return {false, status.error().code, "", status.error().message};
        if (!reply.error.is_null()) {
            std::string type = reply.error.value("type", "transient");
            std::string message = reply.error.value("message", "");
            if (reply.error.contains("retry_after")) message += " (retry after " + reply.error["retry_after"].dump() + " s)";
            return {false, type, "", "provider '" + provider_ + "' failed: " + type + ": " + message};
        }
        if (*status != AH_OK)
            return {false, "provider_failure", "",
                    "provider '" + provider_ + "' broke (status " + std::to_string(*status) + ")"};

        if (reply.tool_calls.empty()) {
            on_event({TurnEvent::Kind::finished, reply.text});
            return {true, "answered", reply.text, ""};
        }

        json assistant{{"role", "assistant"}, {"content", reply.text}, {"tool_calls", json::array()}};
        for (size_t i = 0; i < reply.tool_calls.size(); ++i) {
            json& c = reply.tool_calls[i];
            if (!c.contains("id") || !c["id"].is_string() || c["id"].get<std::string>().empty())
                c["id"] = "call_" + std::to_string(iteration) + "_" + std::to_string(i);
            assistant["tool_calls"].push_back({{"id", c["id"]}, {"name", c["name"]}, {"arguments", c["arguments"]}});
        }
        messages.push_back(assistant);

        for (const json& c : reply.tool_calls) {
            std::string name = c["name"].get<std::string>();
            on_event({TurnEvent::Kind::tool_call, "", name, c["arguments"].dump()});
            std::string result_text;
            if (!c["arguments"].is_object()) {
                result_text = json{{"content", "arguments must be a JSON object"}, {"is_error", true},
                                   {"error_code", "invalid_arguments"}}.dump();
            } else {
                plugins::CallInput tool_call;
                tool_call.call_id = c["id"].get<std::string>();
                tool_call.tool_name = name;
                tool_call.arguments_json = c["arguments"].dump();
                tool_call.conversation_id = request.conversation_id;
                result_text = registry_.call_tool(tool_call);
            }
            json result = json::parse(result_text);
            bool is_error = result.value("is_error", false);
            on_event({TurnEvent::Kind::tool_result, display(result), name, result_text, is_error});
            messages.push_back({{"role", "tool"}, {"tool_call_id", c["id"]}, {"name", name}, {"content", display(result)}});
            if (result.value("marker", "") == "done") {
                std::string summary = result.value("summary", display(result));
                on_event({TurnEvent::Kind::finished, summary});
                return {true, "done", summary, ""};
            }
        }
    }
    return {false, "iteration_limit", "",
            "the turn reached its cap of " + std::to_string(request.max_iterations) +
                " iterations without an answer (raise [limits] execute_iterations)"};
}

}  // namespace agenthost::agent
