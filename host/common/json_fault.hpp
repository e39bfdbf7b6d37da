// Why outside JSON was refused by json_io::parse (common/bounded_json.hpp), as callers branch on
// it. Each fault travels as Error::code, a stable word clients see in 400 answers; json_error()
// makes one and json_fault() reads it back, so no caller compares code strings.
#pragma once

#include "common/result.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace agenthost::json_io {

enum class JsonFault {
    invalid,          // not JSON, or a NUL byte in it
    invalid_utf8,     // not UTF-8, where the caller refuses to mend it
    duplicate_key,    // an object names one key twice
    too_large,        // more bytes than the limit
    too_deep,         // nests deeper than the limit
    too_many_values,  // more values than the limit
};

inline constexpr std::pair<JsonFault, std::string_view> kJsonFaultCodes[] = {
    {JsonFault::invalid, "json_invalid"},
    {JsonFault::invalid_utf8, "json_invalid_utf8"},
    {JsonFault::duplicate_key, "json_duplicate_key"},
    {JsonFault::too_large, "json_too_large"},
    {JsonFault::too_deep, "json_too_deep"},
    {JsonFault::too_many_values, "json_too_many_values"},
};

// The fault's Error::code: "json_invalid", "json_invalid_utf8", "json_duplicate_key", "json_too_large", "json_too_deep",
// "json_too_many_values".
constexpr std::string_view json_code(JsonFault fault) {
    for (const auto& [f, code] : kJsonFaultCodes)
        if (f == fault) return code;
    return "json_invalid";
}

inline Error json_error(JsonFault fault, std::string message) { return Error{std::string(json_code(fault)), std::move(message)}; }

// The fault a parse error names (json_io::parse makes no other errors).
inline std::optional<JsonFault> json_fault(const Error& e) {
    for (const auto& [f, code] : kJsonFaultCodes)
        if (e.code == code) return f;
    return std::nullopt;
}

}  // namespace agenthost::json_io
