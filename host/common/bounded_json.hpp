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
    // Arrays, objects and the elements and members in them, together; 0: no limit. Parsed JSON
    // takes far more memory than its text ("[{},{},…]" about 30 times), so text from clients is
    // also bounded by how many values it holds.
    size_t max_values = 0;
};

// How text that is not valid UTF-8 is treated before parsing.
enum class Utf8 {
    refuse,  // an Error (code "json_invalid_utf8"): for protocols where bad bytes mean a bad peer
    repair,  // for plugin and model data, read tolerantly: each invalid UTF-8 sequence becomes U+FFFD,
             // and so do raw NUL bytes and lone surrogate escapes; raw control characters in
             // strings are escaped, a stray backslash is kept as text, a number too large for a
             // double is kept as a string (see repair_json_text), and of a key given twice in one
             // object the first is kept. Valid JSON is never changed (an escaped \u0000 stays the
             // NUL character it means).
};
// Either way, a text is read one way only: a raw NUL byte outside a string is refused (a parser that
// stops there and one that reads on would see two messages), and so is any byte after the value but
// whitespace. Utf8::refuse also refuses a key given twice in one object (code json_duplicate_key,
// naming the key): one reader takes the first, another the last.

// What had to be mended for a text to be read (Utf8::repair), so the caller can say so once.
struct Repairs {
    bool invalid_utf8 = false;       // invalid UTF-8 or raw NUL bytes, now U+FFFD
    bool control_bytes = false;      // raw control characters inside strings, now escaped
    bool lone_surrogates = false;    // \ud800-style escapes without their pair, now U+FFFD
    bool stray_backslashes = false;  // backslashes that began no JSON escape, now kept as text
    bool huge_numbers = false;       // numbers past the range of a double, now strings of their digits
    bool duplicate_keys = false;     // a key given twice in one object: the first is kept
    bool any() const {
        return invalid_utf8 || control_bytes || lone_surrogates || stray_backslashes || huge_numbers || duplicate_keys;
    }
    // What was found, in words: "invalid UTF-8, raw control characters".
    std::string describe() const;
};

// Parses `text` within `limits`. Error codes: json_too_large, json_too_deep, json_invalid_utf8,
// json_duplicate_key, json_invalid (with the parser's position). Never throws. In repair mode `*repairs` (when given)
// tells what had to be mended for the text to be read.
Result<nlohmann::json> parse(std::string_view text, const Limits& limits = {}, Utf8 utf8 = Utf8::refuse,
                             Repairs* repairs = nullptr);

// JSON text mended the way careless writers break it, leaving its structure alone: inside strings a
// raw control byte becomes its \u00XX escape (a raw NUL becomes U+FFFD), a lone surrogate escape
// becomes U+FFFD, an unknown escape keeps its backslash as text; outside strings a number whose
// value does not fit a double becomes a string holding its digits. Expects valid UTF-8 (see
// repair_utf8). What was mended is added to `*repairs` when given.
std::string repair_json_text(std::string_view text, Repairs* repairs = nullptr);

// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view text);
// `text` with every invalid UTF-8 sequence replaced by U+FFFD and every NUL byte by U+FFFD too
// (NULs cut C strings on the way to terminals and models). Valid text without NUL comes back equal.
std::string repair_utf8(std::string_view text);
// The shape of JSON text, counted on the bytes (strings skipped) before anything is parsed: the
// deepest nesting of arrays/objects, and an upper bound on the values in it (containers, and one
// per element or member). Counting stops once `stop_depth` or `stop_values` (0: none) is passed.
struct TextShape {
    int depth = 0;
    size_t values = 0;
};
TextShape text_shape(std::string_view text, int stop_depth, size_t stop_values = 0);

// Follows JSON text one character at a time: true for a character inside a string (its quotes
// included), which a scan counting brackets skips. Escapes are followed, so \" ends none.
class JsonStringTracker {
public:
    bool in_string(char c) {
        if (inside_) {
            if (escaped_)
                escaped_ = false;
            else if (c == '\\')
                escaped_ = true;
            else if (c == '"')
                inside_ = false;
            return true;
        }
        inside_ = c == '"';
        return inside_;
    }

private:
    bool inside_ = false;
    bool escaped_ = false;
};

// Serialises without ever throwing: invalid UTF-8 inside strings becomes U+FFFD.
std::string dump(const nlohmann::json& value, int indent = -1);
// Appends `text` as a JSON string, quoted and escaped as dump() writes it (invalid UTF-8 becomes
// U+FFFD), without a JSON value in between: a prompt of megabytes is written once, not copied.
void append_json_string(std::string& out, std::string_view text);

// Typed reads of an optional member that never throw. A member of the wrong type counts as absent
// and sets `*wrong_type` (when given) so the caller can warn once, naming the field.
bool get_bool(const nlohmann::json& object, std::string_view key, bool fallback, bool* wrong_type = nullptr);
std::string get_string(const nlohmann::json& object, std::string_view key, std::string fallback = {}, bool* wrong_type = nullptr);
int64_t get_int(const nlohmann::json& object, std::string_view key, int64_t fallback, bool* wrong_type = nullptr);
double get_number(const nlohmann::json& object, std::string_view key, double fallback, bool* wrong_type = nullptr);

}  // namespace agenthost::json_io
