#include "fuzzy.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

namespace graph {
namespace {

// Latin letters with accents (UTF-8, two bytes) → their base letter; other bytes pass through.
std::string fold_accents(const std::string& s) {
    static const char* from[] = {"à", "á", "â", "ã", "ä", "å", "ç", "è", "é", "ê", "ë", "ì", "í", "î", "ï", "ñ", "ò", "ó",
                                 "ô", "õ", "ö", "ø", "ù", "ú", "û", "ü", "ý", "ÿ", "À", "Á", "Â", "Ã", "Ä", "Å", "Ç", "È",
                                 "É", "Ê", "Ë", "Ì", "Í", "Î", "Ï", "Ñ", "Ò", "Ó", "Ô", "Õ", "Ö", "Ø", "Ù", "Ú", "Û", "Ü", "Ý", "ß"};
    static const char* to[] = {"a", "a", "a", "a", "a", "a", "c", "e", "e", "e", "e", "i", "i", "i", "i", "n", "o", "o",
                               "o", "o", "o", "o", "u", "u", "u", "u", "y", "y", "a", "a", "a", "a", "a", "a", "c", "e",
                               "e", "e", "e", "i", "i", "i", "i", "n", "o", "o", "o", "o", "o", "o", "u", "u", "u", "u", "y", "ss"};
    std::string out;
    for (size_t i = 0; i < s.size();) {
        bool replaced = false;
        if (static_cast<unsigned char>(s[i]) >= 0xC0 && i + 1 < s.size()) {
            for (size_t k = 0; k < std::size(from); ++k)
                if (s.compare(i, 2, from[k]) == 0) {
                    out += to[k];
                    i += 2;
                    replaced = true;
                    break;
                }
        }
        if (!replaced) out += s[i++];
    }
    return out;
}

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours
// ("Swfit" → "Swift" is one edit). Three rolling rows: no allocation per cell.
size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> two(b.size() + 1), one(b.size() + 1), row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) one[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            row[j] = std::min({one[j] + 1, row[j - 1] + 1, one[j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) row[j] = std::min(row[j], two[j - 2] + 1);
        }
        std::swap(two, one);
        std::swap(one, row);
    }
    return one[b.size()];
}

}  // namespace

std::string normal_form(const std::string& name) {
    std::string folded = fold_accents(name), cleaned;
    for (unsigned char c : folded) cleaned += std::isalnum(c) || c >= 0x80 ? static_cast<char>(std::tolower(c)) : ' ';
    std::istringstream in(cleaned);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    if (words.size() > 1 && words.front() == "the") words.erase(words.begin());
    std::sort(words.begin(), words.end());
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
    return out;
}

double similarity(const std::string& a, const std::string& b) { return similarity_of_normal(normal_form(a), normal_form(b)); }

double similarity_of_normal(const std::string& x, const std::string& y) {
    if (x == y) return 1.0;
    size_t longest = std::max(x.size(), y.size());
    if (longest == 0) return 1.0;
    return 1.0 - static_cast<double>(edit_distance(x, y)) / static_cast<double>(longest);
}

std::string title_case(const std::string& name) {
    std::string out;
    bool start = true;
    for (char c : name) {
        if (c == '_' || c == '-' || std::isspace(static_cast<unsigned char>(c))) {
            if (!out.empty() && out.back() != ' ') out += ' ';
            start = true;
            continue;
        }
        out += start ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        start = false;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

}  // namespace graph
