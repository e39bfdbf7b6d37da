// JSON Schema argument validation: each keyword, the field path in the message, nesting.
#include "common/schema_validator.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using agenthost::schema::validate_against_schema;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {
std::string first_error(const json& value, const json& schema) {
    auto errors = validate_against_schema(value, schema);
    return errors.empty() ? "" : errors.front();
}
}  // namespace

TEST_CASE("schema: valid arguments pass", "[unit][schema]") {
    json schema = json::parse(R"({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer",
        "minimum": 1, "maximum": 14}, "units": {"enum": ["metric", "imperial"]}}, "required": ["city"], "additionalProperties": false})");
    CHECK(validate_against_schema({{"city", "Oslo"}, {"days", 3}, {"units", "metric"}}, schema).empty());
    CHECK(validate_against_schema({{"city", "Oslo"}, {"days", 3.0}}, schema).empty());  // 3.0 is an integer
    CHECK(validate_against_schema(json::object(), json::object()).empty());             // no constraints
}

TEST_CASE("schema: each violation names the field and why", "[unit][schema]") {
    json schema = json::parse(R"({"type": "object", "properties": {
        "city": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[A-Z]"},
        "days": {"type": "integer", "minimum": 1, "maximum": 14, "multipleOf": 1},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2, "uniqueItems": true},
        "mode": {"const": "fast"},
        "where": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]}},
      "required": ["city"], "additionalProperties": false})");
    CHECK_THAT(first_error({{"days", 3}}, schema), Contains("field 'city'") && Contains("required"));
    CHECK_THAT(first_error({{"city", 7}}, schema), Contains("field 'city'") && Contains("expected string, got integer 7"));
    CHECK_THAT(first_error({{"city", "O"}}, schema), Contains("at least 2 characters"));
    CHECK_THAT(first_error({{"city", "Ostrava"}}, schema), Contains("at most 5 characters"));
    CHECK_THAT(first_error({{"city", "ÅÅÅÅÅ"}}, schema), !Contains("characters"));  // counted in characters, not bytes
    const json one =
        json::parse(R"({"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 1}}})");
    CHECK_THAT(first_error({{"name", ""}}, one), Contains("must be at least 1 character long"));
    CHECK_THAT(first_error({{"name", "ab"}}, one), Contains("must be at most 1 character long"));
    CHECK_THAT(first_error({{"city", "oslo"}}, schema), Contains("pattern"));
    CHECK_THAT(first_error({{"city", "Oslo"}, {"days", 0}}, schema), Contains("field 'days'") && Contains("at least 1"));
    CHECK_THAT(first_error({{"city", "Oslo"}, {"days", "3"}}, schema), Contains("expected integer, got string \"3\""));
    CHECK_THAT(first_error({{"city", "Oslo"}, {"ratio", 1}}, schema), Contains("less than 1"));
    CHECK_THAT(first_error({{"city", "Oslo"}, {"tags", json::array()}}, schema),
               Contains("must have at least 1 item") && !Contains("1 items"));
    CHECK_THAT(first_error({{"city", "Oslo"}, {"tags", {"a", "a"}}}, schema), Contains("unique"));
    CHECK_THAT(first_error({{"city", "Oslo"}, {"tags", {"a", 5}}}, schema), Contains("field 'tags[1]'"));
    CHECK_THAT(first_error({{"city", "Oslo"}, {"mode", "slow"}}, schema), Contains("must be \"fast\""));
    CHECK_THAT(first_error({{"city", "Oslo"}, {"where", json::object()}}, schema), Contains("field 'where.lat'"));
    CHECK_THAT(first_error({{"city", "Oslo"}, {"colour", "red"}}, schema),
               Contains("field 'colour'") && Contains("not a parameter") && Contains("city, days"));
    CHECK_THAT(first_error(json::array(), schema), Contains("the arguments") && Contains("expected object"));
}

TEST_CASE("schema: type lists, anyOf, oneOf, allOf, not, enum", "[unit][schema]") {
    CHECK(validate_against_schema(nullptr, json::parse(R"({"type": ["string", "null"]})")).empty());
    CHECK_THAT(first_error(3, json::parse(R"({"type": ["string", "null"]})")), Contains("expected string or null"));
    json any = json::parse(R"({"anyOf": [{"type": "string"}, {"type": "integer"}]})");
    CHECK(validate_against_schema(4, any).empty());
    CHECK_THAT(first_error(true, any), Contains("none of the allowed shapes"));
    json one = json::parse(R"({"oneOf": [{"type": "number"}, {"type": "integer"}]})");
    CHECK_THAT(first_error(4, one), Contains("more than one"));
    CHECK_THAT(first_error(4, json::parse(R"({"allOf": [{"type": "integer"}, {"minimum": 5}]})")), Contains("at least 5"));
    CHECK_THAT(first_error("x", json::parse(R"({"not": {"type": "string"}})")), Contains("forbidden"));
    CHECK_THAT(first_error("blue", json::parse(R"({"enum": ["red", "green"]})")), Contains("not one of"));
    CHECK(validate_against_schema("x", json::parse(R"({"pattern": "([unclosed"})"))
              .empty());  // a broken pattern is not the model's fault
}

TEST_CASE("schema: patterns are ECMA-262 flavoured and a hostile one cannot stall the host", "[unit][schema]") {
    auto pattern = [](const std::string& p) { return json{{"type", "string"}, {"pattern", p}}; };
    CHECK(validate_against_schema("ab12", pattern("^[a-z]+\\d{2}$")).empty());
    CHECK_THAT(first_error("ab12\n", pattern("^[a-z]+\\d{2}$")), Contains("must match"));  // $ is the very end, as in JavaScript
    CHECK(validate_against_schema("caf\u00e9", pattern("^caf\\u00e9$")).empty());          // \uHHHH escapes
    CHECK(validate_against_schema("x1", pattern("^(?=.*\\d)")).empty());                   // lookahead
    // Catastrophic backtracking (std::regex ran for minutes on the fuzzer's input): bounded, and
    // reported instead of passed.
    std::string subject(40, 'a');
    CHECK_THAT(first_error(subject + "!", pattern("^(a+)+$")), Contains("work limit"));
    CHECK(validate_against_schema(std::string("\xff\xfe"), pattern("^a")).size() ==
          1);  // invalid UTF-8 is a mismatch, not a crash
}
