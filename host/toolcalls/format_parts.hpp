// What the per-family format files share (internal to host/toolcalls): text and JSON helpers,
// the typing of values by schema, the readers of values written by hand, and each family's
// taker, which appends the calls of a region's text to a Parsed. regions.cpp dispatches to them.
#pragma once

#include "common/bounded_json.hpp"
#include "toolcalls/formats.hpp"

#include <cctype>
#include <optional>
#include <string>
#include <string_view>

namespace agenthost::toolcalls::formats {

inline constexpr size_t npos = std::string_view::npos;

// ---- values.cpp: text, JSON and schema typing ----
std::string_view trim(std::string_view s);
bool starts_with(std::string_view s, std::string_view p);
// End (exclusive) of the JSON value opening at s[pos] ('{' or '['); npos when it never closes.
// String- and escape-aware, so braces inside string values do not count.
size_t json_end(std::string_view s, size_t pos);
std::optional<json> parse_json(std::string_view s);
// The schema of `key` among an object schema's properties, or null.
const json* property_schema(const json* schema, const std::string& key);
// A value written as text (an XML parameter, a GLM value), typed by its property's schema.
json from_text(std::string_view raw, const json* schema);
// A parsed value brought to its schema's type where that is unambiguous ("3" for an integer).
json fit_to_schema(json value, const json* schema);

constexpr int kMaxValueDepth = 64;

// Counts one level of nesting for as long as it lives.
class DepthGuard {
public:
    explicit DepthGuard(int& depth) : depth_(depth) { ++depth_; }
    ~DepthGuard() { --depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    bool too_deep() const { return depth_ > kMaxValueDepth; }

private:
    int& depth_;
};

// A position in call text, for the hand-written value readers below.
class TextCursor {
public:
    explicit TextCursor(std::string_view s) : s_(s) {}

    void ws() {
        while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    bool eat(char c) {
        ws();
        if (i_ < s_.size() && s_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }

protected:
    std::string_view s_;
    size_t i_ = 0;
    int depth_ = 0;  // nesting, for DepthGuard
};

// ---- python_calls.cpp ----
std::optional<json> python_literal(std::string_view text);
bool take_pythonic_list(Parsed& out, std::string_view text, const char* format, const ToolSet& tools, bool report);
bool take_pythonic_calls(Parsed& out, std::string_view text, const char* format, const ToolSet& tools);

// ---- json_calls.cpp ----
const json* schema_of(const ToolSet& tools, std::string_view name);
bool add_call(Parsed& out, const std::string& name, const json& args, const char* format, const ToolSet& tools, bool report);
json fit_arguments(json args, const ToolSet& tools, const std::string& name);
bool take_json_call(Parsed& out, const json& j, const char* format, const ToolSet& tools, bool strict, bool report);
bool take_json_calls(Parsed& out, const json& j, const char* format, const ToolSet& tools, bool strict, bool report);
bool take_json_sequence(Parsed& out, std::string_view body, const char* format, const ToolSet& tools, bool terminated = false);

// ---- xml_calls.cpp ----
std::string strip_one_newline(std::string_view v);
void take_xml_functions(Parsed& out, std::string_view body, const ToolSet& tools);
void take_glm(Parsed& out, std::string_view body, bool terminated, const ToolSet& tools);
std::string attribute(std::string_view tag, std::string_view key);
void take_invokes(Parsed& out, std::string_view body, const ToolSet& tools, const char* format = "invoke_xml");

// ---- token_calls.cpp ----
void take_special_token_calls(Parsed& out, std::string_view body, bool terminated, const ToolSet& tools);
void take_mistral(Parsed& out, std::string_view body, const ToolSet& tools);
// Rewrites every <｜…｜> / <|…|> token in `text` to <|normalised|>.
std::string normalize_tokens(std::string_view text);

// ---- functionary_gemma.cpp ----
void take_functionary(Parsed& out, std::string_view segment, bool terminated, const ToolSet& tools, bool first);
void take_gemma(Parsed& out, std::string_view body, bool terminated, const ToolSet& tools);

}  // namespace agenthost::toolcalls::formats
