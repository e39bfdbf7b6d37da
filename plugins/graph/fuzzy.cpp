#include "fuzzy.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

namespace graph {
namespace {

// Latin letters with accents (UTF-8, two bytes) → their base letter; other bytes pass through.
std::string fold_accents(const std::string& s) {
    static const char* from[] = {"à", "á", "â", "ã", "ä", "å", "ç", "è", "é", "ê", "ë", "ì", "í", "î", "ï", "ñ", "ò", "ó", "ô",
                                 "õ", "ö", "ø", "ù", "ú", "û", "ü", "ý", "ÿ", "À", "Á", "Â", "Ã", "Ä", "Å", "Ç", "È", "É", "Ê",
                                 "Ë", "Ì", "Í", "Î", "Ï", "Ñ", "Ò", "Ó", "Ô", "Õ", "Ö", "Ø", "Ù", "Ú", "Û", "Ü", "Ý", "ß"};
    static const char* to[] = {"a", "a", "a", "a", "a", "a", "c", "e", "e", "e", "e", "i", "i", "i", "i", "n", "o", "o", "o",
                               "o", "o", "o", "u", "u", "u", "u", "y", "y", "a", "a", "a", "a", "a", "a", "c", "e", "e", "e",
                               "e", "i", "i", "i", "i", "n", "o", "o", "o", "o", "o", "o", "u", "u", "u", "u", "y", "ss"};
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

// A word that is a roman numeral in canonical form ("ii", "viii", "xiv", "lviii"): its value, else
// 0. Letters I, V, X, L, C only, and the canonical spelling only: "mix", "did" and "civil" are words.
int roman_value(const std::string& w) {
    if (w.empty() || w.size() > 8 || w.find_first_not_of("ivxlc") != std::string::npos) return 0;
    auto digit = [](char c) { return c == 'i' ? 1 : c == 'v' ? 5 : c == 'x' ? 10 : c == 'l' ? 50 : 100; };
    int total = 0;
    for (size_t i = 0; i < w.size(); ++i) {
        int d = digit(w[i]);
        total += i + 1 < w.size() && digit(w[i + 1]) > d ? -d : d;
    }
    if (total <= 0 || total >= 400) return 0;
    static const std::pair<int, const char*> parts[] = {{100, "c"}, {90, "xc"}, {50, "l"}, {40, "xl"}, {10, "x"},
                                                        {9, "ix"},  {5, "v"},   {4, "iv"}, {1, "i"}};
    std::string canonical;
    for (int left = total; left > 0;)
        for (const auto& [value, letters] : parts)
            if (left >= value) {
                canonical += letters;
                left -= value;
                break;
            }
    return canonical == w ? total : 0;
}

// The numbers a normal form names, sorted: digit runs ("iphone15" → 15, "2024"; roman numerals
// are digits by then). Two names that name different numbers are different things: Apollo 11 and
// 13, World War I and II, iPhone 14 and 15, Python 3.11 and 3.12.
std::vector<std::string> numbers_of(const std::string& normal) {
    std::vector<std::string> out;
    std::istringstream in(normal);
    for (std::string w; in >> w;) {
        for (size_t i = 0; i < w.size();) {
            if (!std::isdigit(static_cast<unsigned char>(w[i]))) {
                ++i;
                continue;
            }
            size_t end = i;
            while (end < w.size() && std::isdigit(static_cast<unsigned char>(w[end]))) ++end;
            std::string digits = w.substr(i, end - i);
            digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));  // "007" and "7" are one number
            out.push_back(digits);
            i = end;
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

std::string normal_form(const std::string& name) {
    std::string folded = fold_accents(name), cleaned;
    for (unsigned char c : folded) cleaned += std::isalnum(c) || c >= 0x80 ? static_cast<char>(std::tolower(c)) : ' ';
    std::istringstream in(cleaned);
    std::vector<std::string> words;
    for (std::string w; in >> w;) {
        // Numbers in one spelling: "vii" and "007" are 7, so Rocky II is Rocky 2 and Bond 007 is Bond 7.
        if (int r = roman_value(w))
            w = std::to_string(r);
        else if (w.find_first_not_of("0123456789") == std::string::npos)
            w.erase(0, std::min(w.find_first_not_of('0'), w.size() - 1));
        words.push_back(w);
    }
    if (words.size() > 1 && words.front() == "the") words.erase(words.begin());
    std::sort(words.begin(), words.end());
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
    return out;
}

std::string exact_form(const std::string& name) {
    std::istringstream in(fold_accents(name));
    std::string out;
    for (std::string w; in >> w;) {
        for (char& c : w) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        out += (out.empty() ? "" : " ") + w;
    }
    return out;
}

std::string compact_form(const std::string& name) {
    std::string out;
    for (unsigned char c : fold_accents(name))
        if (std::isalnum(c) || c >= 0x80) out += static_cast<char>(std::tolower(c));
    return out;
}

double similarity(const std::string& a, const std::string& b) {
    if (std::string compact = compact_form(a); !compact.empty() && compact == compact_form(b)) return 1.0;
    return similarity_of_normal(normal_form(a), normal_form(b));
}

namespace {

// Types that all name a person: a model calls one person "Person" in one spec and "Singer" in the next.
bool person_like(const std::string& type) {
    static const char* const kPersonTypes[] = {"person",   "people",  "human",      "individual", "character", "actor",
                                               "actress",  "athlete", "player",     "singer",     "musician",  "artist",
                                               "author",   "writer",  "politician", "scientist",  "celebrity", "coach",
                                               "director", "rapper",  "king",       "queen",      "president"};
    const std::string t = exact_form(type);
    return std::any_of(std::begin(kPersonTypes), std::end(kPersonTypes), [&](const char* p) { return t == p; });
}

std::string type_family(const std::string& type) { return person_like(type) ? std::string("person") : normal_form(type); }

// The words of a name in the order written, without punctuation ("Snow, Jon" → snow jon).
std::vector<std::string> words_in_order(const std::string& name) {
    std::string cleaned;
    for (unsigned char c : fold_accents(name)) cleaned += std::isalnum(c) || c >= 0x80 ? static_cast<char>(std::tolower(c)) : ' ';
    std::istringstream in(cleaned);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    return words;
}

}  // namespace

// "a Planet", "an Element": the type with the article English gives it (by its first letter).
static std::string with_article(const std::string& type) {
    const bool vowel = !type.empty() && std::string_view("AEIOUaeiou").find(type[0]) != std::string_view::npos;
    return (vowel ? "an " : "a ") + type;
}

std::optional<std::string> kept_apart(const std::string& name_a, const std::string& type_a, const std::string& name_b,
                                      const std::string& type_b) {
    if (!type_a.empty() && !type_b.empty() && type_family(type_a) != type_family(type_b))
        return "'" + name_a + "' is " + with_article(type_a) + " and '" + name_b + "' " + with_article(type_b) +
               ": different types are different things";
    if (!person_like(type_a) && !person_like(type_b)) return std::nullopt;
    auto a = words_in_order(name_a), b = words_in_order(name_b);
    if (a.size() < 2 || a.size() != b.size() || a[0] == b[0] || a[0].size() < 2 || b[0].size() < 2) return std::nullopt;
    if (!std::equal(a.begin() + 1, a.end(), b.begin() + 1)) return std::nullopt;
    return "'" + name_a + "' and '" + name_b + "' are people whose given names differ";
}

bool same_concept(const std::string& name_a, const std::string& type_a, const std::string& name_b, const std::string& type_b,
                  double threshold) {
    return similarity(name_a, name_b) >= threshold && !kept_apart(name_a, type_a, name_b, type_b);
}

double similarity_of_normal(const std::string& x, const std::string& y) {
    if (x == y) return 1.0;
    size_t longest = std::max(x.size(), y.size());
    if (longest == 0) return 1.0;
    // Typos are forgiven in words, never in numbers: different numbers are different things.
    if (numbers_of(x) != numbers_of(y)) return 0.0;
    return 1.0 - static_cast<double>(edit_distance(x, y)) / static_cast<double>(longest);
}

std::string title_case(const std::string& name) {
    std::string out;
    bool start = true;
    char previous = 0;
    for (char c : name) {
        const bool camel_break =
            std::islower(static_cast<unsigned char>(previous)) && std::isupper(static_cast<unsigned char>(c));
        previous = c;
        if (c == '_' || c == '-' || std::isspace(static_cast<unsigned char>(c)) || camel_break) {
            if (!out.empty() && out.back() != ' ') out += ' ';
            start = true;
            if (!camel_break) continue;
        }
        out += start ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                     : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        start = false;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

}  // namespace graph
