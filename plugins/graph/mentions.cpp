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

bool lowercase_article(const std::string& word) { return word == "the" || word == "a" || word == "an"; }

// "this", "current" … written in lower case: the graph the conversation is in, not a graph's name.
bool said_as_pinning(const std::string& word) { return pinning(word) && word == lower(word); }

// "switch to Solar System": the words after the verb ("to" skipped), longest first — only those
// the request ends after (the sentence's end, "graph", "and" …), so a name that is an ordinary word
// of a longer sentence ("use Mars as an example") switches nothing. "graph" and "network" may be
// part of the name ("open My Graph"), and a lower-case article before it is offered without too
// ("open the Network graph": "Network"). "go to" asks for a graph only with the word graph or
// network ("go to the Mars graph"; "plan to go to Mars" is about Mars).
std::optional<Reference> after_verb(const std::vector<Word>& words, size_t v) {
    size_t first = v + 1;
    if (first < words.size() && lower(words[first].text) == "to") ++first;
    std::vector<std::string> following;
    bool says_graph = false;
    for (size_t k = first; k < words.size() && following.size() < kMaxWords && !is_switch_verb(words[k].text); ++k) {
        following.push_back(words[k].text);
        says_graph = says_graph || is_trigger(words[k].text);
    }
    if (lower(words[v].text) == "go" && !says_graph) return std::nullopt;
    const size_t skip = !following.empty() && lowercase_article(following[0]) ? 1 : 0;
    Reference ref;
    ref.asks_to_switch = true;
    for (size_t n = following.size(); n > 0; --n) {
        const size_t next = first + n;  // the word after this candidate
        const bool request_ends = next >= words.size() || ends_a_request(words[next].text) || is_trigger(words[next].text);
        if (!request_ends) continue;
        // "use this graph" keeps to the current one; "open the This graph" names the graph 'This'.
        if (n == skip + 1 && next < words.size() && is_trigger(words[next].text) && said_as_pinning(following[skip])) continue;
        for (size_t from : skip ? std::vector<size_t>{1, 0} : std::vector<size_t>{0}) {  // without the article first
            if (from >= n) continue;
            std::string s;
            for (size_t j = from; j < n; ++j) s += (j > from ? " " : "") + following[j];
            ref.candidates.push_back(std::move(s));
        }
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
    Reference ref;
    for (size_t k = first; k < t; ++k)
        if (is_switch_verb(words[k].text)) ref.asks_to_switch = true;
    // A common word right before the trigger may still be a graph's whole name ("the Other graph"):
    // offered alone, where only an exact name matches it (Graphs::loosely_named) — when the sentence
    // asks for a graph there ("open the Other graph", "add Pluto to the New graph"), never in "a new
    // graph" or "this is my graph", and never a lower-case article ("a graph" is not the graph 'A').
    if (from == t && t > first) {
        const std::string& word = words[t - 1].text;
        const std::string before = t >= 2 ? lower(words[t - 2].text) : "";
        const std::string before_that = t >= 3 ? lower(words[t - 3].text) : "";
        auto preposition = [](const std::string& w) { return w == "in" || w == "to" || w == "into" || w == "from" || w == "on"; };
        const bool asked_for =
            ref.asks_to_switch || preposition(before) || (lowercase_article(before) && preposition(before_that));
        if (asked_for && !said_as_pinning(word) && !is_switch_verb(word) && lower(word) != "to" && !lowercase_article(word))
            from = t - 1;
    }
    if (from == t) return std::nullopt;
    ref.says_graph = true;
    for (size_t start = from; start < t; ++start) {  // longest first
        std::string phrase;
        for (size_t k = start; k < t; ++k) phrase += (k > start ? " " : "") + words[k].text;
        ref.candidates.push_back(phrase + " " + words[t].text);
        ref.candidates.push_back(phrase);
    }
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
