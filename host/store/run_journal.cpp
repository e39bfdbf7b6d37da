#include "store/run_journal.hpp"

#include <cctype>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace agenthost::store {

std::optional<std::string> conversation_id_problem(std::string_view id) {
    if (id.empty() || id.size() > 128) return "a conversation id has 1 to 128 characters, not " + std::to_string(id.size());
    for (char c : id)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' || c == '@' || c == '-'))
            return std::string(
                "a conversation id holds only letters, digits and . _ : @ - (no spaces, quotes or control characters)");
    return std::nullopt;
}

namespace {

// The code point at `at` in `text`, advancing `at`; nullopt when the bytes there are not UTF-8.
std::optional<char32_t> next_code_point(std::string_view text, size_t& at) {
    auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
    unsigned char lead = byte(at);
    size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : (lead >> 3) == 0x1e ? 4 : 0;
    if (length == 0 || at + length > text.size()) return std::nullopt;
    char32_t cp = length == 1 ? lead : lead & (0x7f >> length);
    for (size_t i = 1; i < length; ++i) {
        if ((byte(at + i) & 0xc0) != 0x80) return std::nullopt;
        cp = (cp << 6) | (byte(at + i) & 0x3f);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8 either.
    static constexpr char32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kSmallest[length] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return std::nullopt;
    at += length;
    return cp;
}

// C0, DEL and C1 controls, the Unicode line and paragraph separators, the bidirectional marks and
// overrides, and the characters that show nothing (zero-width, joiners, fillers, tags): what would
// break a title's line, reorder the text around it, or make two different titles look the same.
bool control_character(char32_t c) {
    return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0xad || c == 0x61c || c == 0x115f || c == 0x1160 || c == 0x180e ||
           (c >= 0x200b && c <= 0x200f) || c == 0x2028 || c == 0x2029 || (c >= 0x202a && c <= 0x202e) ||
           (c >= 0x2060 && c <= 0x206f) || c == 0x3164 || c == 0xfeff || c == 0xffa0 || (c >= 0xe0000 && c <= 0xe007f);
}

// Blanks trimmed from a title's ends: ASCII white space and the Unicode spaces.
bool blank(char32_t c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0d) || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x202f ||
           c == 0x205f || c == 0x3000;
}

}  // namespace

Result<std::string> conversation_title(std::string_view title) {
    // Where each character starts; blanks at either end are trimmed.
    std::vector<std::pair<size_t, char32_t>> chars;
    for (size_t at = 0; at < title.size();) {
        size_t start = at;
        auto c = next_code_point(title, at);
        if (!c) return Error{"invalid_title", "the title is not valid UTF-8 text; send it as UTF-8"};
        chars.emplace_back(start, *c);
    }
    size_t first = 0, last = chars.size();
    while (first < last && blank(chars[first].second)) ++first;
    while (last > first && blank(chars[last - 1].second)) --last;
    for (size_t i = first; i < last; ++i)
        if (control_character(chars[i].second)) {
            char code[16];
            std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(chars[i].second));
            return Error{"invalid_title", std::string("the title holds an invisible or control character (") + code +
                                              " at character " + std::to_string(i - first + 1) +
                                              "); a title is one line of plain, visible text, without line breaks, tabs, "
                                              "direction marks or zero-width characters"};
        }
    if (last - first > kMaxTitleCharacters)
        return Error{"invalid_title", "the title has " + std::to_string(last - first) + " characters; at most " +
                                          std::to_string(kMaxTitleCharacters) + " are kept, so shorten it"};
    if (first == last) return std::string();
    size_t end = last < chars.size() ? chars[last].first : title.size();
    return std::string(title.substr(chars[first].first, end - chars[first].first));
}

std::string title_from_prompt(std::string_view prompt) {
    // Words only: each run of blanks and control characters becomes one space; invalid bytes end it.
    std::string words;
    size_t kept = 0;       // characters in `words`
    size_t word_end = 0;   // where the last whole word ends
    size_t limit_end = 0;  // where the kTitleFromPromptCharacters-th character ends
    bool space = false;
    for (size_t at = 0; at < prompt.size() && kept <= kTitleFromPromptCharacters;) {
        size_t start = at;
        auto c = next_code_point(prompt, at);
        if (!c) break;
        if (blank(*c) || control_character(*c)) {
            space = !words.empty();
            continue;
        }
        if (space) {
            word_end = words.size();
            words += ' ';
            ++kept;
            space = false;
        }
        words.append(prompt.substr(start, at - start));
        if (++kept == kTitleFromPromptCharacters) limit_end = words.size();
    }
    if (kept <= kTitleFromPromptCharacters) return words;
    // Too long: cut after the last whole word that fits (inside one long word, at the limit).
    return words.substr(0, word_end > 0 ? word_end : limit_end) + "…";
}

bool resumable(const RunRecord& run) {
    if (run.status == RunStatus::paused || run.status == RunStatus::interrupted) return true;
    return run.status == RunStatus::failed && run.stop_reason && stop_info(*run.stop_reason).resumable;
}

std::string not_resumable_reason(const RunRecord& run) {
    return "run " + std::to_string(run.id) + " is " + std::string(run_status_name(run.status)) +
           (run.status == RunStatus::running ? " (a live process holds it; its end may not have been written yet, and it "
                                               "is marked interrupted once its lease lapses)"
                                             : "") +
           "; only paused or interrupted runs, and runs failed by the provider, a timeout or the store, can be resumed";
}

}  // namespace agenthost::store
