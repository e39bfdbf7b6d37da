// agenthost chat: an interactive session with line editing and history (libedit), or prompts read
// line by line from a pipe, all in one conversation.
#pragma once

#include "cli/commands.hpp"

namespace agenthost::cli {

int run_chat(Context& ctx);

}  // namespace agenthost::cli
