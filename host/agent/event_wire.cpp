#include "agent/event_wire.hpp"

#include <nlohmann/json.hpp>

namespace agenthost::agent {

using nlohmann::json;

namespace {

// A JSON text the turn wrote itself; a text that is not JSON is sent as a string rather than lost.
json parsed(const std::string& text) {
    json j = json::parse(text, nullptr, false);
    return j.is_discarded() ? json(text) : j;
}

// One function per event: its wire name and the fields it adds to {"seq"}.
struct WireFields {
    json& data;

    const char* operator()(const events::Text& e) {
        data["text"] = e.delta;
        return wire::token;
    }
    const char* operator()(const events::Reasoning& e) {
        data["text"] = e.delta;
        return wire::reasoning;
    }
    const char* operator()(const events::ToolCall& e) {
        data.update({{"tool", e.tool}, {"call_id", e.call_id}, {"arguments", parsed(e.arguments_json)}});
        return wire::tool_call;
    }
    const char* operator()(const events::ToolResult& e) {
        json result;
        if (e.truncated) {
            result = {{"is_error", e.is_error}, {"truncated", true}, {"content_bytes", e.truncated->content_bytes}};
            if (!e.error_code.empty()) result["error_code"] = e.error_code;
        } else {
            result = parsed(e.result_json);
        }
        data.update({{"tool", e.tool},
                     {"call_id", e.call_id},
                     {"content", e.content},
                     {"is_error", e.is_error},
                     {"result", std::move(result)}});
        return wire::tool_result;
    }
    const char* operator()(const events::Log& e) {
        data.update({{"level", level_name(e.level)}, {"message", e.message}});
        return wire::log;
    }
    const char* operator()(const events::Tasks& e) {
        data["tasks"] = memory::tasks_json(e.plan, e.stack);
        return wire::tasks;
    }
    const char* operator()(const events::Approval& e) {
        data.update({{"tool", e.tool}, {"call_id", e.call_id}, {"arguments", parsed(e.arguments_json)}, {"reason", e.reason}});
        return wire::approval;
    }
    const char* operator()(const events::Question& e) {
        data.update({{"tool", e.tool}, {"call_id", e.call_id}, {"message", e.message}, {"schema", parsed(e.schema_json)}});
        return wire::question;
    }
    const char* operator()(const events::Usage& e) {
        data["usage"] = {{"input_tokens", e.input_tokens},
                         {"output_tokens", e.output_tokens},
                         {"cached_input_tokens", e.cached_input_tokens},
                         {"estimated", e.estimated},
                         {"attempts", e.attempts},
                         {"turn",
                          {{"input_tokens", e.turn_input_tokens},
                           {"output_tokens", e.turn_output_tokens},
                           {"cached_input_tokens", e.turn_cached_input_tokens}}}};
        return wire::usage;
    }
    const char* operator()(const events::ProviderSwitch& e) {
        data.update({{"from", e.from}, {"to", e.to}, {"reason", e.reason}});
        return wire::provider_switch;
    }
    const char* operator()(const events::Queued& e) {
        data["ahead"] = e.ahead;
        return wire::queue;
    }
    const char* operator()(const events::ModelRequest& e) {
        std::string which = "iteration " + std::to_string(e.iteration);
        if (e.attempt > 1) which += ", attempt " + std::to_string(e.attempt) + " of " + std::to_string(e.max_attempts);
        data["text"] = "waiting for the model (" + which + ")";
        return wire::status;
    }
    const char* operator()(const events::Failed& e) {
        const StopInfo& info = stop_info(e.stop_reason);
        data.update({{"message", e.message}, {"code", info.error_code}, {"stop_reason", info.name}});
        return wire::error;
    }
    const char* operator()(const events::Finished& e) {
        const StopInfo& info = stop_info(e.stop_reason);
        data.update({{"answer", e.answer},
                     {"stop_reason", info.name},
                     {"ok", info.ok},
                     {"error", e.error},
                     {"error_code", info.error_code},
                     {"run", e.run}});
        if (!e.conversation.empty()) data["conversation"] = e.conversation;
        return wire::end;
    }
};

}  // namespace

WireEvent to_wire(const TurnEvent& event) {
    json data{{"seq", event.seq}};
    const char* name = std::visit(WireFields{data}, event.body);
    return {name, data.dump(-1, ' ', false, json::error_handler_t::replace)};
}

}  // namespace agenthost::agent
