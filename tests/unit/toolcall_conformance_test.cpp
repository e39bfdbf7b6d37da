// The conformance table of the tool-call extractor: one row per format and edge case of
// shared/reference/toolcall-formats.md, named by its section, in tests/fixtures/toolcall_conformance.json.
// Each row is read as one whole text and as a stream cut at every byte position, and must give
// exactly the calls, content, reasoning and "incomplete" flag the row names. A format the extractor
// does not read shows as a failing row; a format with no row shows as a missing section below.
#include "toolcalls/extractor.hpp"
#include "test_paths.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>

using agenthost::toolcalls::extract_tool_calls;
using agenthost::toolcalls::Extraction;
using agenthost::toolcalls::ToolCallStream;
using agenthost::toolcalls::ToolSet;
using nlohmann::json;

namespace {

const json& table() {
    static const json loaded = [] {
        std::ifstream in(AGENTHOST_SOURCE_DIR "/tests/fixtures/toolcall_conformance.json");
        std::stringstream text;
        text << in.rdbuf();
        return json::parse(text.str());
    }();
    return loaded;
}

json describe(const Extraction& e) {
    json calls = json::array();
    for (const auto& c : e.calls) calls.push_back({{"name", c.name}, {"arguments", json::parse(c.arguments_json)}});
    return {{"calls", calls}, {"content", e.content}, {"reasoning", e.reasoning}, {"incomplete", e.incomplete}};
}

json expected(const json& row) {
    return {{"calls", row["calls"]},
            {"content", row["content"]},
            {"reasoning", row.value("reasoning", "")},
            {"incomplete", row["incomplete"]}};
}

Extraction streamed(const std::string& text, const ToolSet& tools, const std::vector<size_t>& cuts) {
    ToolCallStream stream(tools);
    size_t at = 0;
    for (size_t cut : cuts) {
        stream.feed(std::string_view(text).substr(at, cut - at));
        at = cut;
    }
    stream.feed(std::string_view(text).substr(at));
    return stream.finish();
}

}  // namespace

TEST_CASE("tool-call conformance: every row of the table, whole and split at every byte", "[unit][extractor][conformance]") {
    auto tools = ToolSet::from_json(table()["tools"].dump());
    REQUIRE(tools);
    for (const auto& row : table()["cases"]) {
        const std::string text = row["text"];
        const std::string label = "§" + row["section"].get<std::string>() + " " + row["format"].get<std::string>() + ": " +
                                  row["case"].get<std::string>();
        INFO(label << "\n  text: " << text);
        json want = expected(row);
        json whole = describe(extract_tool_calls(text, *tools));
        CHECK(whole.dump() == want.dump());
        if (whole != want) continue;  // one report per row is enough
        for (size_t cut = 1; cut < text.size(); ++cut) {
            json split = describe(streamed(text, *tools, {cut}));
            if (split != want) {
                INFO("split at byte " << cut);
                CHECK(split.dump() == want.dump());
                break;
            }
        }
        std::vector<size_t> every_byte;
        for (size_t cut = 1; cut < text.size(); ++cut) every_byte.push_back(cut);
        CHECK(describe(streamed(text, *tools, every_byte)).dump() == want.dump());
    }
}

TEST_CASE("tool-call conformance: every section of the reference has rows", "[unit][extractor][conformance]") {
    std::set<std::string> sections;
    for (const auto& row : table()["cases"]) sections.insert(row["section"].get<std::string>());
    for (const char* s : {"1.2", "1.3", "1.4", "1.5", "1.6",  "1.7",  "1.8",  "2.1",  "2.2",  "2.3",  "2.4",  "2.5",
                          "2.6", "2.7", "2.8", "2.9", "2.10", "2.11", "2.12", "2.13", "2.14", "2.15", "2.16", "2.17"}) {
        INFO("section " << s);
        CHECK(sections.count(s) == 1);
    }
}
