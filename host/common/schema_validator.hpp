// Checks tool arguments against the tool's JSON Schema before the call, so a model gets a precise
// complaint ("field 'days': expected integer, got string") instead of a confused plugin.
// Supports the keywords tool schemas use: type, enum, const, properties, required,
// additionalProperties, items, min/maxItems, uniqueItems, minimum, maximum, exclusiveMinimum/Maximum,
// multipleOf, min/maxLength, pattern, anyOf, oneOf, allOf, not. Unknown keywords are ignored.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace agenthost::schema {

// Every violation, each naming the field (a JSON path such as "items[2].name") and why; empty when
// the value is valid.
std::vector<std::string> validate_against_schema(const nlohmann::json& value, const nlohmann::json& schema);

// Checks that a tool's input schema is one this validator understands and MCP clients accept: an
// object schema (`type` absent or "object") whose keywords have the types JSON Schema gives them —
// `type` names real types, `required` is an array of strings, `properties` an object of schemas,
// `pattern` compiles, bounds are numbers … — at every level. Returns the first problem, naming the
// keyword and where it is ("properties.city.type: \"strng\" is not a JSON Schema type"); empty when fine.
std::string check_tool_schema(const nlohmann::json& schema);

}  // namespace agenthost::schema
