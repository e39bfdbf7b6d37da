// Why outside JSON was refused by json_io::parse (common/bounded_json.hpp), as callers branch on
// it. Each fault travels as Error::code, a stable word clients see in 400 answers; json_error()
// makes one and json_fault() reads it back, so no caller compares code strings.
#pragma once

#include "common/choices.hpp"
#include "common/result.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace agenthost::json_io {

enum class JsonFault {
    invalid,
    invalid_utf8,
    duplicate_key,
    too_large,
    too_deep,
    too_many_values
};  // meanings in the table below

// Each fault's Error::code word and what it means.
inline constexpr Choice<JsonFault> kJsonFaults[] = {
    {JsonFault::invalid, "json_invalid", "not JSON, or a NUL byte in it"},
    {JsonFault::invalid_utf8, "json_invalid_utf8", "not UTF-8, where the caller refuses to mend it"},
    {JsonFault::duplicate_key, "json_duplicate_key", "an object names one key twice"},
    {JsonFault::too_large, "json_too_large", "more bytes than the limit"},
    {JsonFault::too_deep, "json_too_deep", "nests deeper than the limit"},
    {JsonFault::too_many_values, "json_too_many_values", "more values than the limit"},
};

inline std::string_view json_code(JsonFault fault) { return choice_name<JsonFault>(kJsonFaults, fault); }

inline Error json_error(JsonFault fault, std::string message) { return Error{std::string(json_code(fault)), std::move(message)}; }

// The fault a parse error names (json_io::parse makes no other errors).
inline std::optional<JsonFault> json_fault(const Error& e) { return choice_from<JsonFault>(kJsonFaults, e.code); }

}  // namespace agenthost::json_io
