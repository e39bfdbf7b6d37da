// "Did you mean …?" for names a user typed: config keys, plugin, tool and provider names; lists
// and counts written for a person.
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

// "1 iteration", "3 iterations": a count and its noun in agreement.
std::string counted(long long n, std::string_view one, std::string_view many);

}  // namespace agenthost::spelling
