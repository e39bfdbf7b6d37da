// The state of one run's loop: what every checkpoint saves and a resumed run starts from. The
// messages the model sees are not in it: they are rebuilt from the transcript.
#pragma once

#include "common/result.hpp"
#include "tools/policy.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

namespace agenthost::agent {

// One tool call of the model's reply. Its id is unique within the run: it keys the tool journal.
struct ToolCall {
    std::string id;
    std::string name;
    nlohmann::json arguments = nlohmann::json::object();
};

// Stops the model from repeating a call that keeps returning the same result.
struct LoopGuard {
    std::string last;     // the last call's signature and result digest
    int count = 0;        // how many times in a row it returned that result
    std::string blocked;  // the signature the model was told to stop repeating
    int refusals = 0;     // how often it was refused since
};

struct LoopState {
    // Checkpoints carry this number; a checkpoint without one is version 1 (the same fields).
    // Version 2 leaves the prompt out: it is the run's (its record and its first message), and a
    // large one was written again with every step.
    static constexpr int kSchema = 2;

    // What the run is.
    std::string conversation;
    int64_t run = 0;
    int64_t turn = 0;
    tools::Mode mode = tools::Mode::execute;
    std::string provider;
    std::string model;                   // empty: the provider's configured model
    std::string prompt;                  // from the run's record on resume: checkpoints (version 2) leave it out
    std::string request_context = "{}";  // a JSON object's text, passed to tools and shown to the model
    std::string plugin_context;          // the plugins' context hooks' text, taken at the start
    std::vector<std::string> notifications;
    nlohmann::json history = nlohmann::json::array();  // messages the client sent with the prompt

    // How far it got.
    int iteration = 0;
    int tool_calls = 0;
    int64_t input_tokens = 0;
    int64_t output_tokens = 0;
    int64_t cached_input_tokens = 0;              // the part of input_tokens a prompt cache served
    int64_t working_from = 0;                     // the first message of the model's working window
    std::deque<ToolCall> pending;                 // calls of the last reply not yet settled
    std::map<std::string, std::string> rejected;  // call signature → the reason the user rejected it
    LoopGuard guard;
    bool retried_cut = false;             // a call cut off by max_tokens was retried once
    int malformed = 0;                    // unreadable replies in a row
    std::optional<std::string> awaiting;  // the first pending call waits for approval, for this reason
    uint64_t seq = 0;                     // the last event number announced
    // The steps (model calls, by iteration) another provider of the fallback chain answered.
    std::map<std::string, std::string> answered_by;

    int64_t tokens() const { return input_tokens + output_tokens; }
};

// The run's inputs: what it was started with and keeps to its end (the client's history, the
// request context, the notifications taken at its start). Stored once per run, not in every
// checkpoint: a client's long history would otherwise be written again with every step.
nlohmann::json inputs_to_json(const LoopState& state);
// The checkpoint: everything else.
nlohmann::json to_json(const LoopState& state);
// Reads a checkpoint and the run's inputs as stored ("": none; a checkpoint written before inputs
// were stored apart holds them itself); a wrong type or a newer schema is an error naming the field.
Result<LoopState> loop_state_from_json(const nlohmann::json& saved, std::string_view inputs_json = {});

}  // namespace agenthost::agent
