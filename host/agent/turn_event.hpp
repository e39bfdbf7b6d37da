// What a turn shows while it runs: one ordered stream of typed events. Each event is one struct
// whose fields mean one thing; front ends read them with std::visit or TurnEvent::as<T>(), and
// agent/event_wire.hpp turns them into the names and JSON objects the SSE API and `run --json` send.
#pragma once

#include "common/choices.hpp"
#include "common/stop_reason.hpp"
#include "memory/agent_memory.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace agenthost::agent {

// How much a log event matters to the person watching: info is progress (pruning, a call waiting),
// warn something they may want to act on (a retry, a loop guard), error something that failed.
enum class EventLevel { info, warn, error };
inline constexpr Choice<EventLevel> kEventLevels[] = {
    {EventLevel::info, "info", "progress"},
    {EventLevel::warn, "warn", "worth a look"},
    {EventLevel::error, "error", "something failed"},
};
inline const char* level_name(EventLevel level) { return choice_name<EventLevel>(kEventLevels, level); }

namespace events {

// Waiting for the model: iteration N of the turn, and after a failed attempt which attempt this is.
struct ModelRequest {
    int iteration = 1;
    int attempt = 1;       // 1 for the first attempt
    int max_attempts = 1;  // the LLM queue's retry budget; shown only from the second attempt on
};

// The model call goes on with another provider of the run's fallback chain: `from` failed after
// its retries, or (`from` a fallback) the run's own provider's cool-down has passed.
struct ProviderSwitch {
    std::string from;
    std::string to;
    std::string reason;  // why, in words
};

// The request waits in the LLM queue behind `ahead` others.
struct Queued {
    size_t ahead = 0;
};

// One model call's tokens (all its attempts together).
struct Usage {
    int64_t input_tokens = 0;
    int64_t output_tokens = 0;
    bool estimated = false;  // the provider reported none: counted from the text
    int attempts = 0;
    int64_t cached_input_tokens = 0;  // the part of input_tokens the provider's prompt cache served
    // The turn's totals so far, this call included.
    int64_t turn_input_tokens = 0, turn_output_tokens = 0, turn_cached_input_tokens = 0;
};

// A delta of the answer.
struct Text {
    std::string delta;
};

// A delta of the model's reasoning (not part of the answer).
struct Reasoning {
    std::string delta;
};

// A call starts.
struct ToolCall {
    std::string tool;
    std::string call_id;
    std::string arguments_json;  // a JSON object
};

// A result larger than the shown limit: only its first part is in `content`; the whole is in the
// run's transcript.
struct Truncation {
    size_t content_bytes = 0;  // the whole content's size
};

// A call's result, once stored.
struct ToolResult {
    std::string tool;
    std::string call_id;
    std::string content;  // what the model reads (cut when `truncated`)
    bool is_error = false;
    std::string error_code = {};            // the result's error_code ("rejected" for a call the user refused); "" when none
    std::string result_json = {};           // the whole result object; "" when truncated
    std::optional<Truncation> truncated{};  // set when the result was too large to show whole
};

// Diagnostics for the activity log (retries, pruning, refusals).
struct Log {
    EventLevel level = EventLevel::info;
    std::string message;
};

// The plan and the task stack after a change.
struct Tasks {
    std::vector<memory::Task> plan;
    std::vector<std::string> stack;  // bottom first
};

// A call waits for the user's decision.
struct Approval {
    std::string tool;
    std::string call_id;
    std::string arguments_json;  // a JSON object
    std::string reason;          // why it needs approval
};

// A plugin asks the person something while its call runs (MCP elicitation, or consent to let it
// use the model); the call waits for the answer, which the front end gives through RunControls.
struct Question {
    std::string tool;
    std::string call_id;
    std::string message;
    std::string schema_json;  // the requested schema, a JSON object of flat properties
};

// The turn ended; always the last event. ok, the error code and the rest follow from stop_reason
// (common/stop_reason.hpp).
struct Finished {
    std::string answer;
    StopReason stop_reason = StopReason::answered;
    std::string error;              // one line naming the cause when the turn failed
    int64_t run = 0;                // the run in the store (0: none was started)
    std::string conversation = {};  // the conversation it belongs to, to go on with
};

// The cause of a failed turn, sent just before Finished (or alone when no run could start).
struct Failed {
    std::string message;
    StopReason stop_reason = StopReason::internal_error;
};

}  // namespace events

using TurnEventBody = std::variant<events::ModelRequest, events::Queued, events::Usage, events::Text, events::Reasoning,
                                   events::ToolCall, events::ToolResult, events::Log, events::Tasks, events::Approval,
                                   events::Question, events::Finished, events::Failed, events::ProviderSwitch>;

struct TurnEvent {
    uint64_t seq = 0;  // 1, 2, 3 … within the turn (continued across a resume)
    TurnEventBody body;

    // The event as T, or null when it is another kind.
    template <class T>
    const T* as() const {
        return std::get_if<T>(&body);
    }
    template <class T>
    bool is() const {
        return std::holds_alternative<T>(body);
    }
};
using EventSink = std::function<void(const TurnEvent&)>;

}  // namespace agenthost::agent
