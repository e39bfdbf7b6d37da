// Bytes as base64 text and back (RFC 4648, standard alphabet, padded): how binary bytes travel in
// JSON strings (the isolation protocol's HTTP bodies and plugin text) and in terminal escapes.
#pragma once

#include <string>
#include <string_view>

namespace agenthost {

std::string to_base64(std::string_view bytes);
// Characters outside the alphabet ('=', line breaks) are skipped, never an error.
std::string from_base64(std::string_view text);

}  // namespace agenthost
