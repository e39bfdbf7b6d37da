// The one check of a tool a plugin declares: ABI 1.5's title and output schema.
#include "plugins/tool_check.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <string>

using agenthost::plugins::check_tool;
using Catch::Matchers::Contains;

namespace {

ah_str str(const std::string& s) { return {s.data(), s.size()}; }

}  // namespace

TEST_CASE("tool check: a title and an output schema are kept, a bad output schema refuses the tool", "[unit]") {
    const std::string name = "count", description = "counts", input = R"({"type":"object"})";
    std::string title = "Count things", output = R"({"type":"object","properties":{"count":{"type":"integer"}}})";
    ah_tool_def def{sizeof(ah_tool_def), str(name), str(description), str(input), 0, str(title), str(output)};
    auto kept = check_tool(def, {});
    CHECK(kept.refusal.empty());
    CHECK(kept.title == "Count things");
    CHECK_THAT(kept.output_schema_json, Contains("\"count\""));

    output = "{not json";
    def.output_schema_json = str(output);
    CHECK_THAT(check_tool(def, {}).refusal, Contains("output schema is not usable JSON"));
    output = R"({"type":"object","properties":{"count":{"type":"no-such-type"}}})";
    def.output_schema_json = str(output);
    CHECK_THAT(check_tool(def, {}).refusal, Contains("output schema is invalid"));

    // A plugin built for ABI 1.4 has a shorter struct: what lies beyond it is never read.
    def.struct_size = offsetof(ah_tool_def, title);
    auto older = check_tool(def, {});
    CHECK(older.refusal.empty());
    CHECK(older.title.empty());
    CHECK(older.output_schema_json.empty());
}
