// Checks tool arguments against the tool's JSON Schema before the call, so a model gets a precise
// complaint ("field 'days': expected integer, got string") instead of a confused plugin.
// Supports the keywords tool schemas use: type, enum, const, properties, required,
// additionalProperties, items, min/maxItems, uniqueItems, minimum, maximum, exclusiveMinimum/Maximum,
// multipleOf, min/maxLength, pattern, anyOf, oneOf, allOf, not. Unknown keywords are ignored.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace agenthost::agent {

// Every violation, each naming the field (a JSON path such as "items[2].name") and why; empty when
// the value is valid.
std::vector<std::string> validate_against_schema(const nlohmann::json& value, const nlohmann::json& schema);

}  // namespace agenthost::agent
