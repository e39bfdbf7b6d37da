#include "common/bounded_json.hpp"

namespace agenthost::json_io {
namespace {

using nlohmann::json;

// Length of the valid UTF-8 sequence at s[i], or 0 when the bytes there are not one
// (Unicode Table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF).
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

int nesting_depth(std::string_view text, int stop_at) {
    int depth = 0, deepest = 0;
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
            if (++depth > deepest && (deepest = depth) > stop_at) return deepest;
            break;
        case ']':
        case '}':
            if (depth > 0) --depth;
            break;
        default: break;
        }
    }
    return deepest;
}

Result<json> parse(std::string_view text, const Limits& limits, Utf8 utf8) {
    if (text.size() > limits.max_bytes)
        return Error{"json_too_large", "the JSON text has " + std::to_string(text.size()) + " bytes, more than the limit of " +
                                           std::to_string(limits.max_bytes)};
    if (int depth = nesting_depth(text, limits.max_depth); depth > limits.max_depth)
        return Error{"json_too_deep", "the JSON text nests deeper than " + std::to_string(limits.max_depth) + " levels"};
    std::string repaired;
    if (!valid_utf8(text)) {
        if (utf8 == Utf8::refuse) return Error{"json_invalid_utf8", "the JSON text is not valid UTF-8"};
        repaired = repair_utf8(text);
        text = repaired;
    }
    try {
        return json::parse(text.begin(), text.end());
    } catch (const json::exception& e) {
        return Error{"json_invalid", std::string("the text is not valid JSON: ") + e.what()};
    } catch (const std::exception& e) {
        return Error{"json_invalid", std::string("the JSON text could not be read: ") + e.what()};
    }
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
