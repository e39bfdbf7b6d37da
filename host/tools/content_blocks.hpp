// MCP content blocks (text, image, audio, embedded resource, resource link), as plugins return them
// in a tool result's "blocks" and in their prompts' messages (ABI 1.5). The one check of a block's
// shape, and the one way the model is told of a block it cannot read as text.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace agenthost::tools {

// Empty when `block` is a content block MCP clients can read; else why not, in words.
std::string content_block_problem(const nlohmann::json& block);
// What the model reads for a block: a text block's text, else one line naming it
// ("[image/png image, 2.1 KiB]", "[resource test://x (text/plain)]: its text").
std::string content_block_text(const nlohmann::json& block);

}  // namespace agenthost::tools
