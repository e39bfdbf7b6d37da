// Text and JSON helpers every format shares, and the typing of values written as text by the
// tool's JSON Schema.
#include "toolcalls/format_parts.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace agenthost::toolcalls::formats {

using json_io::dump;
using json_io::JsonStringTracker;

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// End (exclusive) of the JSON value opening at s[pos] ('{' or '['); npos when it never closes.
// String- and escape-aware, so braces inside string values do not count.
size_t json_end(std::string_view s, size_t pos) {
    int depth = 0;
    JsonStringTracker strings;
    for (size_t i = pos; i < s.size(); ++i) {
        const char c = s[i];
        if (strings.in_string(c)) continue;
        if (c == '{' || c == '[')
            ++depth;
        else if ((c == '}' || c == ']') && --depth == 0)
            return i + 1;
    }
    return npos;
}

std::optional<json> parse_json(std::string_view s) {
    json j = json::parse(s.begin(), s.end(), nullptr, false);
    if (j.is_discarded()) return std::nullopt;
    return j;
}

// ---- JSON Schema driven typing of values written as text --------------------------------------

const json* property_schema(const json* schema, const std::string& key) {
    if (!schema || !schema->is_object()) return nullptr;
    auto props = schema->find("properties");
    if (props == schema->end() || !props->is_object()) return nullptr;
    auto s = props->find(key);
    return s == props->end() ? nullptr : &*s;
}

namespace {

std::vector<std::string> schema_types(const json& schema) {
    std::vector<std::string> types;
    if (!schema.is_object()) return types;
    if (auto t = schema.find("type"); t != schema.end()) {
        if (t->is_string())
            types.push_back(*t);
        else if (t->is_array())
            for (const auto& x : *t)
                if (x.is_string()) types.push_back(x);
    }
    for (const char* key : {"anyOf", "oneOf"})
        if (auto alt = schema.find(key); alt != schema.end() && alt->is_array())
            for (const auto& sub : *alt)
                for (auto& t : schema_types(sub)) types.push_back(t);
    return types;
}

}  // namespace

bool has(const std::vector<std::string>& v, std::string_view x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::optional<json> python_literal(std::string_view text);

// A value the model wrote as raw text (XML parameter), typed by its schema. Strings stay strings
// even when they look like numbers; the literal null is null for any type; no schema: a string.
json from_text(std::string_view raw, const json* schema) {
    if (!schema) return std::string(raw);
    std::vector<std::string> types = schema_types(*schema);
    std::string_view t = trim(raw);
    if (t == "null" && !types.empty()) return nullptr;
    if (has(types, "string") || types.empty()) return std::string(raw);
    std::string text(t);
    if (has(types, "integer")) {
        char* end = nullptr;
        long long v = std::strtoll(text.c_str(), &end, 10);
        if (!text.empty() && end && *end == '\0') return v;
    }
    if (has(types, "number") || has(types, "integer")) {
        char* end = nullptr;
        double v = std::strtod(text.c_str(), &end);
        if (!text.empty() && end && *end == '\0' && std::isfinite(v)) {
            if (v == std::floor(v) && std::fabs(v) < 9e15) return static_cast<long long>(v);
            return v;
        }
    }
    if (has(types, "boolean")) {
        std::string lower = text;
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        if (lower == "true") return true;
        if (lower == "false") return false;
    }
    if (has(types, "object") || has(types, "array")) {
        if (auto j = parse_json(t)) return *j;
        if (auto p = python_literal(t)) return *p;
    }
    return std::string(raw);  // left as written; argument validation will say what is wrong
}

// A value that already has a type (pythonic literal), adjusted to its schema where that is lossless.
json fit_to_schema(json value, const json* schema) {
    if (!schema) return value;
    std::vector<std::string> types = schema_types(*schema);
    if (types.empty()) return value;
    if (value.is_string() && !has(types, "string")) return from_text(value.get<std::string>(), schema);
    if ((value.is_number() || value.is_boolean()) && types.size() == 1 && types[0] == "string") return dump(value);
    return value;
}

// Nesting deeper than this in a model's call text is not a call: the readers stop there instead of
// recursing into a 32 MiB reply of brackets.

}  // namespace agenthost::toolcalls::formats
