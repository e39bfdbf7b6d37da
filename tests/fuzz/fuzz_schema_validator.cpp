// The JSON Schema argument validator on arbitrary schema/value pairs (split at the first NUL):
// never crashes, never loops, and a value always satisfies the empty schema.
#include "common/schema_validator.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>

using nlohmann::json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view input(reinterpret_cast<const char*>(data), size);
    size_t cut = input.find('\0');
    if (cut == std::string_view::npos) return 0;
    json schema = json::parse(input.substr(0, cut), nullptr, false);
    json value = json::parse(input.substr(cut + 1), nullptr, false);
    if (schema.is_discarded() || value.is_discarded()) return 0;
    (void)agenthost::schema::validate_against_schema(value, schema);
    if (!agenthost::schema::validate_against_schema(value, json::object()).empty()) std::abort();
    return 0;
}
