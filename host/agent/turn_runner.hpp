// One agent turn: the user's prompt, then model calls and tool calls until the model answers in
// plain text or the iteration cap is reached. Front ends watch it through TurnEvent callbacks.
#pragma once

#include "config/config.hpp"
#include "plugins/registry.hpp"

#include <functional>
#include <string>

namespace agenthost::agent {

struct TurnEvent {
    enum class Kind { text, reasoning, tool_call, tool_result, finished };
    Kind kind;
    std::string text = {};  // text / reasoning delta, or the final answer
    std::string tool = {};  // tool_call, tool_result: the tool's name
    std::string json = {};  // tool_call: arguments; tool_result: the result object
    bool is_error = false;  // tool_result: the tool reported an error
};

struct TurnOutcome {
    bool ok = false;
    std::string stop_reason;  // "answered", "done", "iteration_limit", or an error code
    std::string answer;
    std::string error;        // one line naming the cause when !ok
};

struct TurnRequest {
    std::string prompt;
    std::string conversation_id;
    std::string system_prompt;
    int max_iterations = 500;
};

class TurnRunner {
public:
    TurnRunner(plugins::Registry& registry, std::string provider) : registry_(registry), provider_(std::move(provider)) {}
    TurnOutcome run(const TurnRequest& request, const std::function<void(const TurnEvent&)>& on_event);

private:
    plugins::Registry& registry_;
    std::string provider_;
};

}  // namespace agenthost::agent
