#include "common/bounded_json.hpp"
#include "common/json_fault.hpp"
#include "common/utf8.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace agenthost::json_io {

size_t utf8_sequence(std::string_view s, size_t i) {
    auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char c = at(i);
    if (c < 0x80) return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c == 0xE0)
        n = 3, lo = 0xA0;
    else if (c == 0xED)
        n = 3, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF)
        n = 3;
    else if (c == 0xF0)
        n = 4, lo = 0x90;
    else if (c == 0xF4)
        n = 4, hi = 0x8F;
    else if (c >= 0xF1 && c <= 0xF3)
        n = 4;
    else
        return 0;
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
            while (n == 0 && i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80 &&
                   utf8_sequence(text, i) == 0)
                ++i;
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
    JsonStringTracker strings;
    for (char c : text) {
        if (strings.in_string(c)) continue;
        switch (c) {
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
            if (byte == 0)
                out += kEscapedReplacement;
            else
                out.append("\\u00").append(1, kHex[byte >> 4]).append(1, kHex[byte & 15]);
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
            } else
                out += token;
            i = end;
            continue;
        }
        out += c;
        ++i;
    }
    return out;
}

namespace {

enum class Duplicates { refuse, keep_first };

// nlohmann's parser driving a DOM builder of our own: each string is moved out of the lexer into
// its place (nlohmann's own builders copy it, so a prompt of megabytes was held twice while it was
// read), and a key given twice is refused or its member dropped (the first kept).
class DomBuilder {
public:
    DomBuilder(json& root, Duplicates duplicates) : root_(root), duplicates_(duplicates) {}

    bool null() { return scalar(nullptr); }
    bool boolean(bool v) { return scalar(v); }
    bool number_integer(json::number_integer_t v) { return scalar(v); }
    bool number_unsigned(json::number_unsigned_t v) { return scalar(v); }
    bool number_float(json::number_float_t v, const std::string&) { return scalar(v); }
    bool string(std::string& v) { return scalar(std::move(v)); }
    bool binary(json::binary_t& v) { return scalar(std::move(v)); }
    bool start_object(std::size_t) { return open(json::value_t::object); }
    bool start_array(std::size_t) { return open(json::value_t::array); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }
    bool key(std::string& k) {
        if (skip_depth_ > 0) return true;
        json& object = *open_.back();
        if (object.find(k) != object.end()) {
            if (duplicates_ == Duplicates::refuse) {
                duplicate_ = std::move(k);
                return false;
            }
            dropped = true;
            skip_next_ = true;  // the member's value is read and dropped
            return true;
        }
        slot_ = &object[std::move(k)];
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
        error_ = e.what();
        return false;
    }

    bool dropped = false;
    const std::optional<std::string>& duplicate() const { return duplicate_; }
    const std::string& error() const { return error_; }

private:
    // Where the next value goes: the root, the end of the open array, or the slot of the last key.
    json& place(json value) {
        if (open_.empty()) return root_ = std::move(value);
        json& parent = *open_.back();
        if (parent.is_array()) return parent.emplace_back(std::move(value));
        return *slot_ = std::move(value);
    }
    template <typename V>
    bool scalar(V&& v) {
        if (skip_depth_ > 0) return true;
        if (skip_next_) {
            skip_next_ = false;
            return true;
        }
        place(json(std::forward<V>(v)));
        return true;
    }
    bool open(json::value_t type) {
        if (skip_depth_ > 0 || skip_next_) {
            skip_next_ = false;
            ++skip_depth_;
            return true;
        }
        open_.push_back(&place(json(type)));
        return true;
    }
    bool close() {
        if (skip_depth_ > 0) {
            --skip_depth_;
            return true;
        }
        open_.pop_back();
        return true;
    }

    json& root_;
    const Duplicates duplicates_;
    std::vector<json*> open_;  // the arrays and objects being read, innermost last
    json* slot_ = nullptr;
    bool skip_next_ = false;
    size_t skip_depth_ = 0;  // inside a dropped member's value
    std::optional<std::string> duplicate_;
    std::string error_;
};

// One parse of `text`, with a key given twice refused or dropped (the first kept).
Result<json> read_once(std::string_view text, Duplicates duplicates, bool& dropped) {
    json root;
    DomBuilder builder(root, duplicates);
    try {
        if (json::sax_parse(text.begin(), text.end(), &builder)) {
            dropped = builder.dropped;
            return root;
        }
    } catch (const std::exception& e) {  // memory exhaustion; the parser reports its errors to the builder
        return json_error(JsonFault::invalid, std::string("the JSON text could not be read: ") + e.what());
    }
    if (const auto& key = builder.duplicate()) {
        std::string shown = key->size() > 64 ? key->substr(0, 64) + "…" : *key;
        return json_error(JsonFault::duplicate_key,
                          "the key \"" + repair_utf8(shown) + "\" appears twice in one object; send each key once");
    }
    // "[json.exception.parse_error.101] parse error at line 1, column 18: …": the position and
    // the cause, without the library's own label.
    std::string what = builder.error();
    if (size_t label = what.find("] "); what.rfind("[json.exception.", 0) == 0 && label != std::string::npos)
        what.erase(0, label + 2);
    return json_error(JsonFault::invalid, "the text is not valid JSON: " + what);
}

// A raw NUL byte: nlohmann's lexer takes it for the end of the input, so whatever follows it would
// go unread (and a reader that reads on would see another message).
Error nul_byte_error(size_t at) {
    return json_error(JsonFault::invalid, "the text is not valid JSON: a NUL byte at byte " + std::to_string(at + 1) +
                                              " (JSON allows none outside a string's \\u0000 escape)");
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
        return json_error(JsonFault::too_large, "the JSON text has " + std::to_string(text.size()) +
                                                    " bytes, more than the limit of " + std::to_string(limits.max_bytes));
    TextShape shape = text_shape(text, limits.max_depth, limits.max_values);
    if (shape.depth > limits.max_depth)
        return json_error(JsonFault::too_deep, "the JSON text nests deeper than " + std::to_string(limits.max_depth) + " levels");
    if (limits.max_values && shape.values > limits.max_values)
        return json_error(JsonFault::too_many_values, "the JSON text holds more than " + std::to_string(limits.max_values) +
                                                          " values (array elements, object members and containers together)");
    if (repairs) *repairs = Repairs{};
    const void* nul = text.empty() ? nullptr : std::memchr(text.data(), 0, text.size());
    if (nul && utf8 == Utf8::refuse) return nul_byte_error(static_cast<size_t>(static_cast<const char*>(nul) - text.data()));
    std::string repaired;
    if (!valid_utf8(text)) {
        if (utf8 == Utf8::refuse) return json_error(JsonFault::invalid_utf8, "the JSON text is not valid UTF-8");
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
    if (size_t left = mended.find('\0'); left != std::string::npos) return nul_byte_error(left);
    return read_mended(mended, found, duplicates, repairs);
}

std::string dump(const json& value, int indent) {
    try {
        return value.dump(indent, ' ', false, json::error_handler_t::replace);
    } catch (const std::exception&) {
        return "null";  // only memory exhaustion reaches here
    }
}

void append_json_string(std::string& out, std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    out.reserve(out.size() + text.size() + 2);
    out += '"';
    for (size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x80) {  // a multi-byte sequence, copied when valid
            size_t n = utf8_sequence(text, i);
            if (n == 0) {
                out += "\xEF\xBF\xBD";
                ++i;
            } else {
                out.append(text.data() + i, n);
                i += n;
            }
            continue;
        }
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\t': out += "\\t"; break;
            case '\n': out += "\\n"; break;
            case '\f': out += "\\f"; break;
            case '\r': out += "\\r"; break;
            default:
                if (c < 0x20) {
                    out += "\\u00";
                    out += kHex[c >> 4];
                    out += kHex[c & 0xF];
                } else {
                    out += static_cast<char>(c);
                }
        }
        ++i;
    }
    out += '"';
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

double get_number(const json& object, std::string_view key, double fallback, bool* wrong_type) {
    return get_typed(object, key, fallback, wrong_type, &json::is_number);
}

}  // namespace agenthost::json_io
