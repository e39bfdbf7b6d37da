// The one check of a tool a plugin declares through ah_tool_sink.add(), used by the registry for
// in-process plugins and by the plugin runner for isolated ones, so add() answers the same in both.
#pragma once

#include <agenthost/agenthost.h>

#include <cstdint>
#include <string>
#include <vector>

namespace agenthost::plugins {

struct CheckedTool {
    std::string name;               // valid UTF-8
    std::string description;        // valid UTF-8, at most 64 KiB
    std::string input_schema_json;  // re-serialised from the checked schema
    uint32_t hints = 0;
    std::string title;               // ABI 1.5: valid UTF-8, at most 256 bytes; empty for none
    std::string output_schema_json;  // ABI 1.5: re-serialised from the checked schema; empty for none
    std::string refusal;             // empty when the tool is accepted; else why, naming the keyword at fault
};

// Reads `raw` at the plugin's struct size and checks it: the name matches
// ^[a-zA-Z][a-zA-Z0-9_]{0,63}$ and is not in `listed_before` (the plugin's earlier tools in this
// listing), the input schema is JSON within 1 MiB and 64 levels and an object schema the validator
// understands (schema::check_tool_schema); so is its output schema, when it has one. Never throws.
CheckedTool check_tool(const ah_tool_def& raw, const std::vector<std::string>& listed_before);

}  // namespace agenthost::plugins
