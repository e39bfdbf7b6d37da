// "Did you mean …?" for names a user typed: config keys, plugin, tool and provider names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace agenthost::spelling {

// The candidate closest to `typed` when it is close enough to be a slip (a few edits, a different
// case, or one name inside the other: "qbittorrent_password_env" → "password_env"); empty when none is.
std::string closest(std::string_view typed, const std::vector<std::string>& candidates);

// " (did you mean 'X'?)" or "".
std::string did_you_mean(std::string_view typed, const std::vector<std::string>& candidates);

// "a, b, c", or "none" for an empty list.
std::string join_names(const std::vector<std::string>& names);

}  // namespace agenthost::spelling
