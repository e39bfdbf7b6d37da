// Reading the ABI's strings: an ah_str from the other side of the boundary is a pointer and a
// length, never trusted to be NUL-terminated, and a null pointer is the empty string whatever its
// length says.
#pragma once

#include <agenthost/agenthost.h>

#include <string_view>

namespace agenthost::plugins {

inline std::string_view view(ah_str s) { return s.data ? std::string_view(s.data, s.len) : std::string_view(); }

}  // namespace agenthost::plugins
