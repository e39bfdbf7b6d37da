#include "common/bounded_json.hpp"
#include "common/utf8.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <unordered_set>
#include <vector>

namespace agenthost::json_io {

size_t utf8_sequence(std::string_view s, size_t i) {
    auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char c = at(i);
    if (c < 0x80) return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c == 0xE0) n = 3, lo = 0xA0;
    else if (c == 0xED) n = 3, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) n = 3;
    else if (c == 0xF0) n = 4, lo = 0x90;
    else if (c == 0xF4) n = 4, hi = 0x8F;
    else if (c >= 0xF1 && c <= 0xF3) n = 4;
    else return 0;
    if (i + n > s.size()) return 0;
    if (at(i + 1) < lo || at(i + 1) > hi) return 0;
    for (size_t k = 2; k < n; ++k)
        if ((at(i + k) & 0xC0) != 0x80) return 0;
    return n;
}

namespace {

using nlohmann::json;

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

}  // namespace

bool valid_utf8(std::string_view text) {
    for (size_t i = 0; i < text.size();) {
        size_t n = utf8_sequence(text, i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

std::string repair_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        size_t n = utf8_sequence(text, i);
        if (n == 0 || text[i] == '\0') {
            out += kReplacement;
            i += 1;
            // The rest of a broken sequence is one error, not several (as WHATWG decoders do).
            while (n == 0 && i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80 && utf8_sequence(text, i) == 0) ++i;
            continue;
        }
        out.append(text.substr(i, n));
        i += n;
    }
    return out;
}

TextShape text_shape(std::string_view text, int stop_depth, size_t stop_values) {
    int depth = 0, deepest = 0;
    size_t values = text.empty() ? 0 : 1;  // the top-level value
    bool in_string = false, escaped = false;
    for (char c : text) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        switch (c) {
        case '"': in_string = true; break;
        case '[':
        case '{':
            ++values;  // its first element, if any (the container itself was counted where it stands)
            if (++depth > deepest && (deepest = depth) > stop_depth) return {deepest, values};
            break;
        case ',':
            if (++values > stop_values && stop_values) return {deepest, values};
            break;
        case ']':
        case '}':
            if (depth > 0) --depth;
            break;
        default: break;
        }
    }
    return {deepest, values};
}

namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The code unit of the \uXXXX escape starting at text[i] (the backslash), or -1 when there is none.
int unicode_escape(std::string_view text, size_t i) {
    if (i + 6 > text.size() || text[i] != '\\' || text[i + 1] != 'u') return -1;
    int value = 0;
    for (size_t k = i + 2; k < i + 6; ++k) {
        int h = hex_value(text[k]);
        if (h < 0) return -1;
        value = value * 16 + h;
    }
    return value;
}

bool is_high_surrogate(int unit) { return unit >= 0xD800 && unit <= 0xDBFF; }
bool is_low_surrogate(int unit) { return unit >= 0xDC00 && unit <= 0xDFFF; }

constexpr std::string_view kEscapedReplacement = "\\ufffd";

// Copies the string body starting after its opening quote at text[i]; returns the index after the
// closing quote (or the end of text).
size_t repair_string(std::string_view text, size_t i, std::string& out, Repairs& repairs) {
    static constexpr char kHex[] = "0123456789abcdef";
    while (i < text.size()) {
        char c = text[i];
        auto byte = static_cast<unsigned char>(c);
        if (c == '"') {
            out += c;
            return i + 1;
        }
        if (byte < 0x20) {
            repairs.control_bytes = true;
            if (byte == 0) out += kEscapedReplacement;
            else out.append("\\u00").append(1, kHex[byte >> 4]).append(1, kHex[byte & 15]);
            ++i;
            continue;
        }
        if (c != '\\') {
            out += c;
            ++i;
            continue;
        }
        if (i + 1 >= text.size()) {  // a backslash that ends the text: keep it as text
            repairs.stray_backslashes = true;
            out += "\\\\";
            return text.size();
        }
        char next = text[i + 1];
        if (std::strchr("\"\\/bfnrt", next) != nullptr && next != '\0') {
            out.append(text.substr(i, 2));
            i += 2;
            continue;
        }
        int unit = unicode_escape(text, i);
        if (unit < 0) {  // \x, \u12 …: the backslash was meant as text
            repairs.stray_backslashes = true;
            out += "\\\\";
            ++i;
            continue;
        }
        if (is_high_surrogate(unit) && is_low_surrogate(unicode_escape(text, i + 6))) {
            out.append(text.substr(i, 12));
            i += 12;
            continue;
        }
        if (is_high_surrogate(unit) || is_low_surrogate(unit)) {
            repairs.lone_surrogates = true;
            out += kEscapedReplacement;
        } else {
            out.append(text.substr(i, 6));
        }
        i += 6;
    }
    return i;
}

bool is_number_char(char c) { return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'; }

}  // namespace

std::string Repairs::describe() const {
    struct Named {
        bool Repairs::*flag;
        const char* words;
    };
    static constexpr Named kNames[] = {
        {&Repairs::invalid_utf8, "invalid UTF-8 or NUL bytes"},
        {&Repairs::control_bytes, "raw control characters in strings"},
        {&Repairs::lone_surrogates, "lone surrogate escapes"},
        {&Repairs::stray_backslashes, "backslashes that start no JSON escape"},
        {&Repairs::huge_numbers, "numbers too large for a double"},
        {&Repairs::duplicate_keys, "keys given twice in one object (the first kept)"},
    };
    std::string out;
    for (const Named& n : kNames)
        if (this->*n.flag) out += (out.empty() ? "" : ", ") + std::string(n.words);
    return out;
}

std::string repair_json_text(std::string_view text, Repairs* repairs_out) {
    Repairs local;
    Repairs& repairs = repairs_out ? *repairs_out : local;
    std::string out;
    out.reserve(text.size() + 16);
    for (size_t i = 0; i < text.size();) {
        char c = text[i];
        if (c == '"') {
            out += c;
            i = repair_string(text, i + 1, out, repairs);
            continue;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            size_t end = i;
            while (end < text.size() && is_number_char(text[end])) ++end;
            std::string token(text.substr(i, end - i));
            char* parsed_to = nullptr;
            double value = std::strtod(token.c_str(), &parsed_to);
            bool overflows = parsed_to == token.c_str() + token.size() && !std::isfinite(value);
            if (overflows) {
                repairs.huge_numbers = true;
                out.append("\"").append(token).append("\"");
            }
            else out += token;
            i = end;
            continue;
        }
        out += c;
        ++i;
    }
    return out;
}

namespace {

// The keys seen so far in each open object, by depth: what tells a key given twice. Most objects
// have a few keys, looked up in a short list; a large one moves to a hash set.
class KeysSeen {
public:
    void open(size_t depth) {
        if (levels_.size() <= depth) levels_.resize(depth + 1);
        levels_[depth].few.clear();
        levels_[depth].many.clear();
    }
    // False when `key` was seen before in the object open at `depth`.
    bool add(size_t depth, const std::string& key) {
        if (levels_.size() <= depth) levels_.resize(depth + 1);
        Level& level = levels_[depth];
        if (!level.many.empty()) return level.many.insert(key).second;
        for (const std::string& seen : level.few)
            if (seen == key) return false;
        level.few.push_back(key);
        if (level.few.size() > kFew) {
            level.many.insert(level.few.begin(), level.few.end());
            level.few.clear();
        }
        return true;
    }

private:
    static constexpr size_t kFew = 16;
    struct Level {
        std::vector<std::string> few;
        std::unordered_set<std::string> many;
    };
    std::vector<Level> levels_;
};

// Thrown from the parser's callback to stop at a key given twice (caught in read_once).
struct DuplicateKey {
    std::string key;
};

enum class Duplicates { refuse, keep_first };

// One parse of `text`: nlohmann's, with a key given twice refused or dropped (the first kept).
Result<json> read_once(std::string_view text, Duplicates duplicates, bool& dropped) {
    KeysSeen keys;
    auto on_event = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
        if (event == json::parse_event_t::object_start) {
            keys.open(static_cast<size_t>(depth));
            return true;
        }
        if (event != json::parse_event_t::key || depth < 1) return true;
        if (keys.add(static_cast<size_t>(depth - 1), parsed.get_ref<const std::string&>())) return true;
        if (duplicates == Duplicates::refuse) throw DuplicateKey{parsed.get<std::string>()};
        dropped = true;
        return false;  // the parser drops this member: the first one stays
    };
    try {
        return json::parse(text.begin(), text.end(), on_event);
    } catch (const DuplicateKey& d) {
        std::string shown = d.key.size() > 64 ? d.key.substr(0, 64) + "…" : d.key;
        return Error{"json_duplicate_key", "the key \"" + repair_utf8(shown) + "\" appears twice in one object; send each key once"};
    } catch (const json::exception& e) {
        // "[json.exception.parse_error.101] parse error at line 1, column 18: …": the position and
        // the cause, without the library's own label.
        std::string what = e.what();
        if (size_t label = what.find("] "); what.rfind("[json.exception.", 0) == 0 && label != std::string::npos)
            what.erase(0, label + 2);
        return Error{"json_invalid", "the text is not valid JSON: " + what};
    } catch (const std::exception& e) {
        return Error{"json_invalid", std::string("the JSON text could not be read: ") + e.what()};
    }
}

// A raw NUL byte: nlohmann's lexer takes it for the end of the input, so whatever follows it would
// go unread (and a reader that reads on would see another message).
Error nul_byte_error(size_t at) {
    return Error{"json_invalid", "the text is not valid JSON: a NUL byte at byte " + std::to_string(at + 1) +
                                     " (JSON allows none outside a string's \\u0000 escape)"};
}

// The second reading, of a text repair_json_text mended; `found` is what it mended.
Result<json> read_mended(std::string_view mended, Repairs found, Duplicates duplicates, Repairs* repairs) {
    bool dropped = false;
    auto second = read_once(mended, duplicates, dropped);
    if (second && repairs) {
        found.invalid_utf8 = found.invalid_utf8 || repairs->invalid_utf8;
        found.duplicate_keys = dropped;
        *repairs = found;
    }
    return second;
}

}  // namespace

Result<json> parse(std::string_view text, const Limits& limits, Utf8 utf8, Repairs* repairs) {
    if (text.size() > limits.max_bytes)
        return Error{"json_too_large", "the JSON text has " + std::to_string(text.size()) + " bytes, more than the limit of " +
                                           std::to_string(limits.max_bytes)};
    TextShape shape = text_shape(text, limits.max_depth, limits.max_values);
    if (shape.depth > limits.max_depth)
        return Error{"json_too_deep", "the JSON text nests deeper than " + std::to_string(limits.max_depth) + " levels"};
    if (limits.max_values && shape.values > limits.max_values)
        return Error{"json_too_many_values", "the JSON text holds more than " + std::to_string(limits.max_values) +
                                                 " values (array elements, object members and containers together)"};
    if (repairs) *repairs = Repairs{};
    const void* nul = text.empty() ? nullptr : std::memchr(text.data(), 0, text.size());
    if (nul && utf8 == Utf8::refuse) return nul_byte_error(static_cast<size_t>(static_cast<const char*>(nul) - text.data()));
    std::string repaired;
    if (!valid_utf8(text)) {
        if (utf8 == Utf8::refuse) return Error{"json_invalid_utf8", "the JSON text is not valid UTF-8"};
        repaired = repair_utf8(text);  // NUL bytes become U+FFFD too
        text = repaired;
        nul = nullptr;
        if (repairs) repairs->invalid_utf8 = true;
    }
    const Duplicates duplicates = utf8 == Utf8::refuse ? Duplicates::refuse : Duplicates::keep_first;
    bool dropped = false;
    // Mended only when the text cannot be read as it is: valid JSON pays nothing and is never
    // changed. A text with a raw NUL is always mended (a NUL in a string becomes U+FFFD), never read
    // up to its NUL.
    if (!nul) {
        auto first = read_once(text, duplicates, dropped);
        if (first && repairs) repairs->duplicate_keys = dropped;
        if (first || utf8 == Utf8::refuse) return first;
        Repairs found;
        std::string mended = repair_json_text(text, &found);
        if (!found.any()) return first;
        return read_mended(mended, found, duplicates, repairs);
    }
    Repairs found;
    std::string mended = repair_json_text(text, &found);
    if (const void* left = std::memchr(mended.data(), 0, mended.size()))
        return nul_byte_error(static_cast<size_t>(static_cast<const char*>(left) - mended.data()));
    return read_mended(mended, found, duplicates, repairs);
}

std::string dump(const json& value, int indent) {
    try {
        return value.dump(indent, ' ', false, json::error_handler_t::replace);
    } catch (const std::exception&) {
        return "null";  // only memory exhaustion reaches here
    }
}

namespace {

// The member `key` of `object` when it has the type `is_type` checks; else `fallback` (absent and
// null alike), with `*wrong_type` set when it was there with another type.
template <typename T>
T get_typed(const json& object, std::string_view key, T fallback, bool* wrong_type, bool (json::*is_type)() const noexcept) {
    if (!object.is_object()) return fallback;
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return fallback;
    if (((*it).*is_type)()) return it->get<T>();
    if (wrong_type) *wrong_type = true;
    return fallback;
}

}  // namespace

bool get_bool(const json& object, std::string_view key, bool fallback, bool* wrong_type) {
    return get_typed(object, key, fallback, wrong_type, &json::is_boolean);
}

std::string get_string(const json& object, std::string_view key, std::string fallback, bool* wrong_type) {
    return get_typed(object, key, std::move(fallback), wrong_type, &json::is_string);
}

int64_t get_int(const json& object, std::string_view key, int64_t fallback, bool* wrong_type) {
    return get_typed(object, key, fallback, wrong_type, &json::is_number_integer);
}

}  // namespace agenthost::json_io
