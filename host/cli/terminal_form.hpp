// A question a plugin asks while its call runs (MCP elicitation: a message and a flat schema of
// strings, numbers, booleans and choices), answered at the terminal field by field. Enter takes a
// field's default; "decline" refuses the question; end of input (Ctrl-D) dismisses it.
#pragma once

#include "plugins/call_channels.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <ostream>
#include <string>

namespace agenthost::cli {

struct FormIo {
    std::function<std::optional<std::string>()> read_line;  // nullopt: no more input (or cancelled)
    std::ostream& out;
};

// Asks every field of what `tool` asks; AH_OK with {"action": "accept", "content": {...}} (or
// decline / cancel).
plugins::CallerAnswer ask_form(const std::string& tool, const nlohmann::json& params, const FormIo& io);

// What --yes answers: accepted with every field's default; declined, saying which field, when a
// required one has none.
plugins::CallerAnswer accept_defaults(const nlohmann::json& params);

}  // namespace agenthost::cli
