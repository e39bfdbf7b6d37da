#include "common/spelling.hpp"

#include <algorithm>
#include <cctype>

namespace agenthost::spelling {

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// Edits (insert, delete, substitute, swap two neighbours) between a and b.
size_t distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

}  // namespace

std::string closest(std::string_view typed, const std::vector<std::string>& candidates) {
    if (typed.empty() || typed.size() > 200) return {};
    const std::string t = lower(typed);
    std::string best;
    size_t best_score = SIZE_MAX, best_gap = SIZE_MAX;
    for (const auto& c : candidates) {
        if (c.size() > 200) continue;
        const std::string lc = lower(c);
        size_t score = distance(t, lc);
        // One name inside the other (a prefix added or dropped) counts as close when the shorter is
        // long enough to mean something.
        size_t shorter = std::min(t.size(), lc.size());
        if (shorter >= 4 && (t.find(lc) != std::string::npos || lc.find(t) != std::string::npos))
            score = std::min<size_t>(score, 1);
        size_t allowed = std::max<size_t>(1, std::max(t.size(), lc.size()) / 3);
        // Ties go to the candidate nearest in length ("qbittorrent_password_env": password_env, not password).
        size_t gap = t.size() > lc.size() ? t.size() - lc.size() : lc.size() - t.size();
        if (score <= allowed && (score < best_score || (score == best_score && gap < best_gap))) {
            best = c;
            best_score = score;
            best_gap = gap;
        }
    }
    return best;
}

std::string did_you_mean(std::string_view typed, const std::vector<std::string>& candidates) {
    std::string c = closest(typed, candidates);
    return c.empty() ? std::string() : " (did you mean '" + c + "'?)";
}

std::string join_names(const std::vector<std::string>& names) {
    if (names.empty()) return "none";
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

std::string counted(long long n, std::string_view one, std::string_view many) {
    return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

bool is_name(std::string_view text, size_t max_length, bool upper_case) {
    auto letter = [&](char c) { return (c >= 'a' && c <= 'z') || (upper_case && c >= 'A' && c <= 'Z'); };
    if (text.empty() || text.size() > max_length || !letter(text.front())) return false;
    return std::all_of(text.begin(), text.end(), [&](char c) { return letter(c) || (c >= '0' && c <= '9') || c == '_'; });
}

}  // namespace agenthost::spelling
