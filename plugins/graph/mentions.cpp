#include "mentions.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>

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
        if (words.empty()) continue;
        Reference ref;
        ref.candidates = prefixes(words);
        out.push_back(std::move(ref));
    }
    return out;
}

namespace {

bool is_switch_verb(const std::string& word) {
    return std::find(kSwitchVerbs.begin(), kSwitchVerbs.end(), lower(word)) != kSwitchVerbs.end();
}

// "this graph", "the current graph": the one the conversation is in.
bool pinning(const std::string& word) {
    static const std::array<const char*, 4> kPinning{"this", "current", "active", "same"};
    return std::find(kPinning.begin(), kPinning.end(), lower(word)) != kPinning.end();
}

bool is_trigger(const std::string& word) {
    std::string w = lower(word);
    return w == "graph" || w == "network";
}

// Words after which a name said after a verb may end: "switch to Solar System and add Pluto".
bool ends_a_request(const std::string& word) {
    static const std::array<const char*, 5> kWords{"and", "then", "please", "now", "so"};
    return std::find(kWords.begin(), kWords.end(), lower(word)) != kWords.end();
}

// "switch to Solar System": the words after the verb ("to" skipped), longest first — only those
// the request ends after (the sentence's end, "graph", "and" …), so a name that is an ordinary word
// of a longer sentence ("use Mars as an example") switches nothing. "go to" asks for a graph only
// with the word graph or network ("go to the Mars graph"; "plan to go to Mars" is about Mars).
std::optional<Reference> after_verb(const std::vector<Word>& words, size_t v) {
    size_t first = v + 1;
    if (first < words.size() && lower(words[first].text) == "to") ++first;
    std::vector<std::string> following;
    size_t k = first;
    for (; k < words.size() && following.size() < kMaxWords; ++k) {
        if (is_trigger(words[k].text) || is_switch_verb(words[k].text)) break;  // the trigger form reads those
        following.push_back(words[k].text);
    }
    const bool ends_in_trigger = k < words.size() && is_trigger(words[k].text);
    if (lower(words[v].text) == "go" && !ends_in_trigger) return std::nullopt;
    if (ends_in_trigger && !following.empty() && pinning(following.back())) return std::nullopt;  // "use this graph"
    Reference ref;
    for (size_t n = following.size(); n > 0; --n) {
        const size_t next = first + n;  // the word after this candidate
        const bool request_ends =
            next >= words.size() || (n == following.size() && ends_in_trigger) || ends_a_request(words[next].text);
        if (!request_ends) continue;
        std::string s;
        for (size_t j = 0; j < n; ++j) s += (j ? " " : "") + following[j];
        ref.candidates.push_back(std::move(s));
    }
    if (ref.candidates.empty()) return std::nullopt;
    return ref;
}

// "open the Jupiter Moons graph": the name said right before the trigger at `t` — back to a verb,
// "to" or a filler word, so "the solar system tour of Taylor Swift to this graph" names no graph
// (the word before "graph" is "this"). nullopt when no word is left.
std::optional<Reference> before_trigger(const std::vector<Word>& words, size_t t) {
    size_t first = t > kMaxWords ? t - kMaxWords : 0;
    size_t from = t;
    while (from > first && !is_switch_verb(words[from - 1].text) && lower(words[from - 1].text) != "to" &&
           !only_filler_words(words[from - 1].text))
        --from;
    // A common word right before the trigger may still be a graph's whole name ("the Other graph"):
    // offered alone, where only an exact name matches it (Graphs::loosely_named).
    if (from == t && t > first && !pinning(words[t - 1].text) && !is_switch_verb(words[t - 1].text) &&
        lower(words[t - 1].text) != "to")
        from = t - 1;
    if (from == t) return std::nullopt;
    Reference ref;
    ref.says_graph = true;
    for (size_t start = from; start < t; ++start) {  // longest first
        std::string phrase;
        for (size_t k = start; k < t; ++k) phrase += (k > start ? " " : "") + words[k].text;
        ref.candidates.push_back(phrase + " " + words[t].text);
        ref.candidates.push_back(phrase);
    }
    for (size_t k = first; k < t; ++k)
        if (is_switch_verb(words[k].text)) ref.asks_to_switch = true;
    for (size_t k = from; k < t; ++k) ref.spoken += (k > from ? " " : "") + words[k].text;
    return ref;
}

}  // namespace

std::vector<Reference> graph_phrases(const std::string& message) {
    std::vector<Reference> out;
    for (const auto& words : sentences(message))
        for (size_t t = 0; t < words.size(); ++t) {
            if (is_switch_verb(words[t].text))
                if (auto ref = after_verb(words, t)) out.push_back(std::move(*ref));
            if (is_trigger(words[t].text) && t > 0)
                if (auto ref = before_trigger(words, t)) out.push_back(std::move(*ref));
        }
    return out;
}

bool pins_current_graph(const std::string& message) {
    for (const auto& words : sentences(message))
        for (size_t t = 1; t < words.size(); ++t)
            if (is_trigger(words[t].text) && pinning(words[t - 1].text)) return true;
    return false;
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
