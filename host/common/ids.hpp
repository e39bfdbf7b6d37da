// Random identifiers: conversation ids, MCP session ids, generated tokens. One source of
// randomness (the kernel's), so ids from the CLI and the server look and behave alike.
#pragma once

#include <cstddef>
#include <string>

namespace agenthost {

// `bytes` random bytes as lower-case hex (2 × bytes characters), from /dev/urandom.
std::string random_hex(size_t bytes);

// "c-" and 16 hex digits: a new conversation's id.
std::string new_conversation_id();

}  // namespace agenthost
