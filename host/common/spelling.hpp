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

// Names of plugins and tools: true when `text` matches ^[a-z][a-z0-9_]{0,N}$ with N = max_length - 1
// (and A-Z beside a-z when `upper_case` is set). Checked by hand: a std::regex costs a start-up
// a tenth of a millisecond to build.
bool is_name(std::string_view text, size_t max_length, bool upper_case);

}  // namespace agenthost::spelling
