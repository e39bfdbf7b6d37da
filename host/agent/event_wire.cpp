#include "agent/event_wire.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>

namespace agenthost::agent {

using nlohmann::json;

namespace {

json parsed(const std::string& text) {
    json j = json::parse(text, nullptr, false);
    return j.is_discarded() ? json(text) : j;
}

}  // namespace

WireEvent to_wire(const TurnEvent& e) {
    json data{{"seq", e.seq}};
    std::string name;
    switch (e.kind) {
        case TurnEvent::Kind::text:
            name = "token";
            data["text"] = e.text;
            break;
        case TurnEvent::Kind::reasoning:
            name = "reasoning";
            data["text"] = e.text;
            break;
        case TurnEvent::Kind::tool_call:
            name = "tool_call";
            data.update({{"tool", e.tool}, {"call_id", e.call_id}, {"arguments", parsed(e.json)}});
            break;
        case TurnEvent::Kind::tool_result:
            name = "tool_result";
            data.update({{"tool", e.tool},
                         {"call_id", e.call_id},
                         {"content", e.text},
                         {"is_error", e.is_error},
                         {"result", parsed(e.json)}});
            break;
        case TurnEvent::Kind::log:
            name = "log";
            data.update({{"level", e.level}, {"message", e.text}});
            break;
        case TurnEvent::Kind::tasks:
            name = "tasks";
            data["tasks"] = parsed(e.json);
            break;
        case TurnEvent::Kind::approval:
            name = "approval";
            data.update({{"tool", e.tool}, {"call_id", e.call_id}, {"arguments", parsed(e.json)}, {"reason", e.text}});
            break;
        case TurnEvent::Kind::usage:
            name = "usage";
            data["usage"] = parsed(e.json);
            break;
        case TurnEvent::Kind::queued:
            name = "queue";
            data["ahead"] = std::atoi(e.text.c_str());
            break;
        case TurnEvent::Kind::model_request:
            name = "status";
            data["text"] = "waiting for the model (" + e.text + ")";
            break;
        case TurnEvent::Kind::error:
            name = "error";
            data["message"] = e.text;
            if (!e.json.empty()) data.update(parsed(e.json));  // code and stop_reason, as "end" has them
            break;
        case TurnEvent::Kind::finished:
            name = "end";
            data.update(parsed(e.json));
            data["answer"] = e.text;
            break;
    }
    return {name, data.dump(-1, ' ', false, json::error_handler_t::replace)};
}

}  // namespace agenthost::agent
