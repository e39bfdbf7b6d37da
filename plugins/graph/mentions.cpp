#include "mentions.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace graph {
namespace {

constexpr size_t kMaxWords = 6;

bool ends_word(char c) {
    return std::isspace(static_cast<unsigned char>(c)) || std::string_view(",.;:!?@\"()").find(c) != std::string_view::npos;
}
bool ends_sentence(char c) { return std::string_view(".;:!?\n").find(c) != std::string_view::npos; }

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// "Tony", "Stark", "in" → "Tony Stark in", "Tony Stark", "Tony".
std::vector<std::string> prefixes(const std::vector<std::string>& words) {
    std::vector<std::string> out;
    for (size_t n = words.size(); n > 0; --n) {
        std::string s;
        for (size_t k = 0; k < n; ++k) s += (k ? " " : "") + words[k];
        out.push_back(std::move(s));
    }
    return out;
}

struct Word {
    std::string text;
    size_t begin = 0;
};

// The words of one sentence, in order.
std::vector<std::vector<Word>> sentences(const std::string& message) {
    std::vector<std::vector<Word>> out(1);
    for (size_t i = 0; i < message.size();) {
        if (ends_sentence(message[i])) {
            if (!out.back().empty()) out.emplace_back();
            ++i;
            continue;
        }
        if (ends_word(message[i])) {
            ++i;
            continue;
        }
        size_t start = i;
        while (i < message.size() && !ends_word(message[i]) && !ends_sentence(message[i])) ++i;
        out.back().push_back({message.substr(start, i - start), start});
    }
    return out;
}

const std::array<const char*, 5> kSwitchVerbs{"open", "switch", "use", "select", "go"};

}  // namespace

std::vector<Reference> mentions(const std::string& message) {
    std::vector<Reference> out;
    for (size_t at = message.find('@'); at != std::string::npos; at = message.find('@', at + 1)) {
        std::vector<std::string> words;
        size_t i = at + 1;
        while (words.size() < kMaxWords && i < message.size() && !ends_sentence(message[i]) && message[i] != '@' &&
               message[i] != ',') {
            while (i < message.size() && (message[i] == ' ' || message[i] == '\t')) ++i;
            size_t start = i;
            while (i < message.size() && !ends_word(message[i]) && !ends_sentence(message[i])) ++i;
            if (i == start) break;
            words.push_back(message.substr(start, i - start));
            if (i < message.size() && message[i] != ' ' && message[i] != '\t') break;  // "@Node," ends the mention
        }
        if (!words.empty()) out.push_back({prefixes(words), false});
    }
    return out;
}

std::vector<Reference> graph_phrases(const std::string& message) {
    std::vector<Reference> out;
    for (const auto& words : sentences(message))
        for (size_t t = 0; t < words.size(); ++t) {
            std::string trigger = lower(words[t].text);
            if (trigger != "graph" && trigger != "network") continue;
            size_t first = t > kMaxWords ? t - kMaxWords : 0;
            Reference ref;
            for (size_t start = first; start < t; ++start) {  // longest first
                std::string phrase;
                for (size_t k = start; k < t; ++k) phrase += (k > start ? " " : "") + words[k].text;
                ref.candidates.push_back(phrase + " " + words[t].text);
                ref.candidates.push_back(phrase);
            }
            for (size_t k = first; k < t; ++k)
                if (std::find(kSwitchVerbs.begin(), kSwitchVerbs.end(), lower(words[k].text)) != kSwitchVerbs.end())
                    ref.asks_to_switch = true;
            if (!ref.candidates.empty()) out.push_back(std::move(ref));
        }
    return out;
}

bool only_filler_words(const std::string& phrase) {
    static const std::array<const char*, 30> filler{
        "the",     "a",         "an",  "this",  "that",   "these", "my",    "our",     "your",  "its",
        "current", "active",    "new", "whole", "entire", "same",  "other", "another", "empty", "first",
        "last",    "knowledge", "in",  "to",    "into",   "from",  "on",    "of",      "graph", "network"};
    size_t i = 0;
    while (i < phrase.size()) {
        while (i < phrase.size() && phrase[i] == ' ') ++i;
        size_t start = i;
        while (i < phrase.size() && phrase[i] != ' ') ++i;
        if (i == start) break;
        std::string w = lower(phrase.substr(start, i - start));
        if (std::find(filler.begin(), filler.end(), w) == filler.end()) return false;
    }
    return true;
}

}  // namespace graph
