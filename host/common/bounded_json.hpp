// The one reader for JSON from outside the host: HTTP bodies, JSON-RPC lines, plugin results and
// lists, provider events, isolation frames. Sizes and nesting are checked on the raw bytes before
// the parser sees them, invalid UTF-8 can be repaired (U+FFFD) instead of aborting a dump later,
// and nothing here throws: every failure is an Error naming what was wrong.
#pragma once

#include "common/result.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace agenthost::json_io {

struct Limits {
    size_t max_bytes = 16u << 20;  // the whole text
    int max_depth = 64;            // nested arrays and objects; deeper text is refused unparsed
};

// How text that is not valid UTF-8 is treated before parsing.
enum class Utf8 {
    refuse,  // an Error (code "json_invalid_utf8"): for protocols where bad bytes mean a bad peer
    repair,  // for plugin and model data, read tolerantly: each invalid UTF-8 sequence becomes U+FFFD,
             // and so do NUL (raw or escaped), lone surrogate escapes; raw control characters in
             // strings are escaped, a stray backslash is kept as text, a number too large for a
             // double is kept as a string (see repair_json_text)
};

// Parses `text` within `limits`. Error codes: json_too_large, json_too_deep, json_invalid_utf8,
// json_invalid (with the parser's position). Never throws. In repair mode `*repaired` (when given)
// tells whether the text had to be mended to be read, so the caller can warn once.
Result<nlohmann::json> parse(std::string_view text, const Limits& limits = {}, Utf8 utf8 = Utf8::refuse,
                             bool* repaired = nullptr);

// JSON text mended the way careless writers break it, leaving its structure alone: inside strings a
// raw control byte becomes its \u00XX escape, NUL (raw or \u0000) and a lone surrogate escape become
// U+FFFD, an unknown escape keeps its backslash as text; outside strings a number whose value does
// not fit a double becomes a string holding its digits. Expects valid UTF-8 (see repair_utf8).
std::string repair_json_text(std::string_view text);

// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view text);
// `text` with every invalid UTF-8 sequence replaced by U+FFFD and every NUL byte by U+FFFD too
// (NULs cut C strings on the way to terminals and models). Valid text without NUL comes back equal.
std::string repair_utf8(std::string_view text);
// The deepest nesting of arrays/objects in JSON text, counted on the bytes (strings skipped);
// stops counting once `stop_at` is passed.
int nesting_depth(std::string_view text, int stop_at);

// Serialises without ever throwing: invalid UTF-8 inside strings becomes U+FFFD.
std::string dump(const nlohmann::json& value, int indent = -1);

// Typed reads of an optional member that never throw. A member of the wrong type counts as absent
// and sets `*wrong_type` (when given) so the caller can warn once, naming the field.
bool get_bool(const nlohmann::json& object, std::string_view key, bool fallback, bool* wrong_type = nullptr);
std::string get_string(const nlohmann::json& object, std::string_view key, std::string fallback = {}, bool* wrong_type = nullptr);
int64_t get_int(const nlohmann::json& object, std::string_view key, int64_t fallback, bool* wrong_type = nullptr);

}  // namespace agenthost::json_io
