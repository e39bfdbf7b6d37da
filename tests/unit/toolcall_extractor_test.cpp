// The tool-call extractor: every text format of shared/reference/toolcall-formats.md, reasoning
// separation, schema typing, refusals, and the streamed = whole-text property.
#include "toolcalls/extractor.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <random>

using agenthost::toolcalls::extract_tool_calls;
using agenthost::toolcalls::Extraction;
using agenthost::toolcalls::ToolCallStream;
using agenthost::toolcalls::ToolSet;
using nlohmann::json;

namespace {

ToolSet weather_tools() {
    auto tools = ToolSet::from_json(R"([
      {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "metric": {"type": "boolean"},
                       "ratio": {"type": "number"}, "tags": {"type": "array"}, "id": {"type": "string"},
                       "opts": {"type": "object"}}}}},
      {"type": "function", "function": {"name": "search", "parameters": {"type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}}}},
      {"name": "list_tasks", "parameters": {"type": "object", "properties": {}}}
    ])");
    REQUIRE(tools);
    return *tools;
}

json args(const Extraction& e, size_t i) { return json::parse(e.calls.at(i).arguments_json); }

std::string describe(const Extraction& e) {
    json j{{"content", e.content}, {"reasoning", e.reasoning}, {"incomplete", e.incomplete}, {"calls", json::array()}};
    for (const auto& c : e.calls) j["calls"].push_back({{"name", c.name}, {"arguments", json::parse(c.arguments_json)}});
    return j.dump();
}

// Feeding the text in any split must give exactly what the whole text gives.
void require_stream_equals_whole(const std::string& text, const ToolSet& tools) {
    std::string whole = describe(extract_tool_calls(text, tools));
    auto feed_in = [&](const std::vector<size_t>& cuts) {
        ToolCallStream stream(tools);
        size_t at = 0;
        std::string shown;
        for (size_t cut : cuts) {
            auto d = stream.feed(std::string_view(text).substr(at, cut - at));
            shown += d.content;
            at = cut;
        }
        auto d = stream.feed(std::string_view(text).substr(at));
        shown += d.content;
        return describe(stream.finish());
    };
    for (size_t step : {1, 2, 3, 5, 8, 13}) {
        std::vector<size_t> cuts;
        for (size_t at = step; at < text.size(); at += step) cuts.push_back(at);
        INFO("chunk size " << step << " of: " << text);
        REQUIRE(feed_in(cuts) == whole);
    }
    std::mt19937 random(42);
    for (int round = 0; round < 20; ++round) {
        std::vector<size_t> cuts;
        for (size_t at = 0; at < text.size();) {
            at += 1 + random() % 9;
            if (at < text.size()) cuts.push_back(at);
        }
        INFO("random split of: " << text);
        REQUIRE(feed_in(cuts) == whole);
    }
}

Extraction extract(const std::string& text, const ToolSet& tools = {}) {
    require_stream_equals_whole(text, tools);
    return extract_tool_calls(text, tools);
}

}  // namespace

TEST_CASE("plain text has no calls and is kept whole", "[unit][extractor]") {
    auto e = extract("The answer is 42. Braces {like this} and [brackets] and `code` stay.", weather_tools());
    CHECK(e.calls.empty());
    CHECK(e.content == "The answer is 42. Braces {like this} and [brackets] and `code` stay.");
    CHECK_FALSE(e.incomplete);
}

TEST_CASE("Hermes / Qwen <tool_call> JSON, several calls, prose before", "[unit][extractor]") {
    auto e = extract(
        "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
        "<tool_call>{\"arguments\": {\"query\": \"a \\\"quoted\\\" {brace}\"}, \"name\": \"search\"}</tool_call>",
        weather_tools());
    REQUIRE(e.calls.size() == 2);
    CHECK(e.calls[0].name == "get_weather");
    CHECK(args(e, 0) == json{{"city", "Paris"}});
    CHECK(e.calls[1].name == "search");
    CHECK(args(e, 1)["query"] == "a \"quoted\" {brace}");
    CHECK(e.content == "Let me check.");
}

TEST_CASE("arguments given as a JSON string are decoded once", "[unit][extractor]") {
    auto e =
        extract(R"(<tool_call>{"name": "search", "arguments": "{\"query\": \"x\", \"limit\": 3}"}</tool_call>)", weather_tools());
    REQUIRE(e.calls.size() == 1);
    CHECK(args(e, 0) == json{{"query", "x"}, {"limit", 3}});
}

TEST_CASE("a missing </tool_call> at the end is accepted when the JSON is complete", "[unit][extractor]") {
    auto e = extract(R"(<tool_call>{"name": "search", "arguments": {"query": "ok"}})", weather_tools());
    REQUIRE(e.calls.size() == 1);
    CHECK_FALSE(e.incomplete);
}

TEST_CASE("a call cut off mid-JSON is never returned and is flagged", "[unit][extractor]") {
    auto e = extract(R"(<tool_call>{"name": "search", "arguments": {"query": "unfinis)", weather_tools());
    CHECK(e.calls.empty());
    CHECK(e.incomplete);
    CHECK_FALSE(e.problems.empty());
}

TEST_CASE("<think> reasoning is separated and calls inside it are ignored", "[unit][extractor]") {
    auto e = extract(
        "<think>Maybe <tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>? No.</think>"
        "Done thinking.<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>",
        weather_tools());
    REQUIRE(e.calls.size() == 1);
    CHECK(e.calls[0].name == "get_weather");
    CHECK(e.reasoning.find("Maybe") == 0);
    CHECK(e.content == "Done thinking.");
}

TEST_CASE("thinking forced open: a lone </think> closes reasoning from the start", "[unit][extractor]") {
    auto e = extract("I should search first.\n</think>\n\nHere is the plan.", weather_tools());
    CHECK(e.reasoning == "I should search first.");
    CHECK(e.content == "Here is the plan.");
}

TEST_CASE("other reasoning markers: THINK tags, <|START_THINKING|>, <seed:think>", "[unit][extractor]") {
    auto a = extract("[THINK]hmm[/THINK]answer");
    CHECK(a.reasoning == "hmm");
    CHECK(a.content == "answer");
    auto b = extract("<|START_THINKING|>plan<|END_THINKING|><|START_RESPONSE|>hi<|END_RESPONSE|>");
    CHECK(b.reasoning == "plan");
    CHECK(b.content == "hi");
    auto c = extract("<seed:think>x</seed:think>y");
    CHECK(c.reasoning == "x");
    CHECK(c.content == "y");
}

TEST_CASE("Qwen3-Coder XML with schema typing", "[unit][extractor]") {
    std::string text =
        "I'll call it.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n<parameter=metric>\ntrue\n</parameter>\n<parameter=ratio>\n0.5\n</parameter>\n"
        "<parameter=id>\n12345\n</parameter>\n<parameter=tags>\n[\"a\", \"b\"]\n</parameter>\n"
        "<parameter=opts>\n{\"x\": 1}\n</parameter>\n<parameter=unknown>\n7\n</parameter>\n</function>\n</tool_call>";
    auto e = extract(text, weather_tools());
    REQUIRE(e.calls.size() == 1);
    json a = args(e, 0);
    CHECK(a["city"] == "New York");
    CHECK(a["days"] == 3);
    CHECK(a["metric"] == true);
    CHECK(a["ratio"] == 0.5);
    CHECK(a["id"] == "12345");  // a string stays a string even when it looks like a number
    CHECK(a["tags"] == json::array({"a", "b"}));
    CHECK(a["opts"] == json{{"x", 1}});
    CHECK(a["unknown"] == "7");  // no schema: as written
    CHECK(e.content == "I'll call it.");
}

TEST_CASE("Qwen3-Coder XML: values with < > & verbatim, missing </parameter>, several functions", "[unit][extractor]") {
    auto e = extract(
        "<tool_call><function=search><parameter=query>a < b && c > d\n<parameter=limit>2</function>"
        "<function=list_tasks></function></tool_call>",
        weather_tools());
    REQUIRE(e.calls.size() == 2);
    CHECK(args(e, 0)["query"] == "a < b && c > d");
    CHECK(args(e, 0)["limit"] == 2);
    CHECK(e.calls[1].name == "list_tasks");
}

TEST_CASE("Qwen3-Coder XML cut off before </function> is not a call", "[unit][extractor]") {
    auto e = extract("<tool_call><function=search><parameter=query>half", weather_tools());
    CHECK(e.calls.empty());
    CHECK(e.incomplete);
}

TEST_CASE("Llama 3 <|python_tag|> JSON and builtin .call()", "[unit][extractor]") {
    auto e = extract(
        R"(<|python_tag|>{"name": "search", "parameters": {"query": "x"}}; {"type": "function", "name": "get_weather", "parameters": {"city": "Rome"}}<|eom_id|>)",
        weather_tools());
    REQUIRE(e.calls.size() == 2);
    CHECK(args(e, 1)["city"] == "Rome");
    auto b = extract(R"(<|python_tag|>brave_search.call(query="today's news"))");
    REQUIRE(b.calls.size() == 1);
    CHECK(b.calls[0].name == "brave_search");
    CHECK(args(b, 0)["query"] == "today's news");
}

TEST_CASE("gpt-oss harmony: analysis is reasoning, commentary to=functions.X is a call", "[unit][extractor]") {
    std::string text =
        "<|channel|>analysis<|message|>Need weather; to=functions.search is not a call here.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": "
        "\"Tokyo\"}<|call|>";
    auto e = extract(text, weather_tools());
    REQUIRE(e.calls.size() == 1);
    CHECK(e.calls[0].name == "get_weather");
    CHECK(args(e, 0) == json{{"city", "Tokyo"}});
    CHECK(e.reasoning.find("Need weather") == 0);
    CHECK(e.content.empty());
}

TEST_CASE("harmony variants: recipient in the role header, no space before <|constrain|>, no <|call|>", "[unit][extractor]") {
    auto e = extract("<|start|>assistant to=functions.search<|channel|>commentary<|constrain|>json<|message|>{\"query\": \"q\"}",
                     weather_tools());
    REQUIRE(e.calls.size() == 1);
    CHECK(e.calls[0].name == "search");
    auto final = extract("<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>The answer.");
    CHECK(final.calls.empty());
    CHECK(final.content == "The answer.");
    CHECK(final.reasoning == "think");
    auto cut =
        extract("<|channel|>commentary to=functions.search <|constrain|>json<|message|>{\"query\": \"unfin", weather_tools());
    CHECK(cut.calls.empty());
    CHECK(cut.incomplete);
}

TEST_CASE("Mistral TOOL_CALLS: JSON array (pre-v11) and NAME then ARGS{…} (v11)", "[unit][extractor]") {
    auto a = extract(
        R"([TOOL_CALLS] [{"name": "search", "arguments": {"query": "x"}, "id": "abc123def"}, {"name": "list_tasks", "arguments": {}}])",
        weather_tools());
    REQUIRE(a.calls.size() == 2);
    CHECK(a.calls[1].name == "list_tasks");
    auto b = extract(R"([THINK]plan[/THINK][TOOL_CALLS]search[ARGS]{"query": "a"}[TOOL_CALLS]get_weather[ARGS]{"city": "B"})",
                     weather_tools());
    REQUIRE(b.calls.size() == 2);
    CHECK(b.reasoning == "plan");
    CHECK(args(b, 1)["city"] == "B");
    auto c = extract(R"([TOOL_CALLS]search{"query": "stripped args token"})", weather_tools());
    REQUIRE(c.calls.size() == 1);
    auto d = extract("Hello[TOOL_CALLS]not json at all", weather_tools());
    CHECK(d.calls.empty());
    CHECK(d.content.find("Hello") == 0);
}

TEST_CASE("DeepSeek R1 / V3.1 tool tokens, fullwidth and ASCII bars", "[unit][extractor]") {
    std::string r1 =
        "<think>I will search</think>"
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>search\n```json\n{\"query\": "
        "\"x\"}\n```<｜tool▁call▁end｜>"
        "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": "
        "\"Lima\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    auto a = extract(r1, weather_tools());
    REQUIRE(a.calls.size() == 2);
    CHECK(a.calls[0].name == "search");
    CHECK(args(a, 1)["city"] == "Lima");
    CHECK(a.reasoning == "I will search");
    CHECK(a.content.empty());
    auto b = extract(
        "First.<|tool▁calls▁begin|><|tool▁call▁begin|>search<|tool▁sep|>{\"query\": \"v31\"}<|tool▁call▁end|><|tool▁calls▁end|>",
        weather_tools());
    REQUIRE(b.calls.size() == 1);
    CHECK(args(b, 0)["query"] == "v31");
    CHECK(b.content == "First.");
    auto cut = extract("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>{\"query\": ", weather_tools());
    CHECK(cut.calls.empty());
    CHECK(cut.incomplete);
}

TEST_CASE("Kimi K2 section tokens", "[unit][extractor]") {
    auto e = extract(
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>"
        "{\"query\": \"π ≈ 3.14 🚀\"}<|tool_call_end|><|tool_calls_section_end|>",
        weather_tools());
    REQUIRE(e.calls.size() == 1);
    CHECK(e.calls[0].name == "search");
    CHECK(args(e, 0)["query"] == "π ≈ 3.14 🚀");
}

TEST_CASE("pythonic call lists with Python literals, converted by schema", "[unit][extractor]") {
    auto e = extract(
        R"([get_weather(city='San Francisco', days=2, metric=True, id=12345, tags=['a', "b"]), search(query="it\'s", limit=None)])",
        weather_tools());
    REQUIRE(e.calls.size() == 2);
    json a = args(e, 0);
    CHECK(a["city"] == "San Francisco");
    CHECK(a["days"] == 2);
    CHECK(a["metric"] == true);
    CHECK(a["id"] == "12345");
    CHECK(a["tags"] == json::array({"a", "b"}));
    CHECK(args(e, 1)["query"] == "it's");
    CHECK(args(e, 1)["limit"].is_null());
    auto empty_args = extract("[list_tasks()]", weather_tools());
    REQUIRE(empty_args.calls.size() == 1);
    CHECK(args(empty_args, 0) == json::object());
}

TEST_CASE("bracketed prose and number lists are not pythonic calls", "[unit][extractor]") {
    for (const char* text : {"[special delivery]", "[12, 40, 7]", "See [1] and [the docs](http://x).", "[search(query=1e999)]"}) {
        auto e = extract(text, weather_tools());
        CHECK(e.calls.empty());
        CHECK(e.content == text);
    }
}

TEST_CASE("```json fences with a call, data fences and code blocks stay content", "[unit][extractor]") {
    auto a = extract("Calling:\n```json\n{\"name\": \"search\", \"arguments\": {\"query\": \"fence\"}}\n```", weather_tools());
    REQUIRE(a.calls.size() == 1);
    CHECK(a.content == "Calling:");
    auto b = extract("```xml\n<tool_call>{\"name\": \"list_tasks\", \"arguments\": {}}</tool_call>\n```", weather_tools());
    REQUIRE(b.calls.size() == 1);
    std::string data = "Here is data:\n```json\n{\"name\": \"Bob\", \"age\": 3}\n```";
    auto c = extract(data, weather_tools());
    CHECK(c.calls.empty());
    CHECK(c.content == data);
    std::string code = "```python\nprint({\"name\": \"search\", \"arguments\": {}})\n```";
    auto d = extract(code, weather_tools());
    CHECK(d.calls.empty());
    CHECK(d.content == code);
    auto cmdr = extract("Action: ```json\n[{\"tool_name\": \"search\", \"parameters\": {\"query\": \"c\"}}]```", weather_tools());
    REQUIRE(cmdr.calls.size() == 1);
    CHECK(cmdr.content.empty());
}

TEST_CASE("bare JSON calls: object, array, nested, prose JSON is not a call", "[unit][extractor]") {
    auto a = extract(R"({"name": "search", "arguments": {"query": "bare", "nested": {"a": [1, {"b": "}"}]}}})", weather_tools());
    REQUIRE(a.calls.size() == 1);
    CHECK(args(a, 0)["nested"]["a"][1]["b"] == "}");
    auto b = extract(R"(Sure: [{"name": "search", "arguments": {"query": "1"}}, {"name": "list_tasks", "parameters": {}}] ok)",
                     weather_tools());
    REQUIRE(b.calls.size() == 2);
    CHECK(b.content == "Sure:  ok");
    auto generic = extract(R"({"tool_calls": [{"name": "search", "arguments": {"query": "g"}, "id": "1"}]})", weather_tools());
    REQUIRE(generic.calls.size() == 1);
    auto not_call = extract(R"(The config is {"name": "server", "port": 80}.)", weather_tools());
    CHECK(not_call.calls.empty());
    auto unknown = extract(R"({"name": "rm_rf", "arguments": {}})", weather_tools());
    CHECK(unknown.calls.empty());
    CHECK(unknown.content == R"({"name": "rm_rf", "arguments": {}})");
}

TEST_CASE("tool names not offered are not calls, explicit markers report why", "[unit][extractor]") {
    auto e = extract(R"(<tool_call>{"name": "launch_rockets", "arguments": {}}</tool_call>)", weather_tools());
    CHECK(e.calls.empty());
    REQUIRE(e.problems.size() == 1);
    CHECK(e.problems[0].find("launch_rockets") != std::string::npos);
    auto any = extract(R"(<tool_call>{"name": "launch_rockets", "arguments": {}}</tool_call>)");
    CHECK(any.calls.size() == 1);  // no tool list: any name counts
}

TEST_CASE("malformed calls are reported, never executed", "[unit][extractor]") {
    auto bad_json = extract(R"(<tool_call>{"name": "search", "arguments": {"query": }}</tool_call>)", weather_tools());
    CHECK(bad_json.calls.empty());
    CHECK_FALSE(bad_json.problems.empty());
    auto bad_args = extract(R"(<tool_call>{"name": "search", "arguments": [1, 2]}</tool_call>)", weather_tools());
    CHECK(bad_args.calls.empty());
    CHECK_FALSE(bad_args.problems.empty());
    auto cut_bare = extract(R"(I will call {"name": "search", "arguments": {"query": "x)", weather_tools());
    CHECK(cut_bare.calls.empty());
    CHECK(cut_bare.incomplete);
}

TEST_CASE("other native wrappers: <function=…>, <TOOLCALL>, <|tool_call|>, START_ACTION, functools, MiniMax, GLM",
          "[unit][extractor]") {
    auto tools = weather_tools();
    CHECK(extract(R"(<function=search>{"query": "f"}</function>)", tools).calls.size() == 1);
    CHECK(extract(R"(<TOOLCALL>[{"name": "search", "arguments": {"query": "n"}}]</TOOLCALL>)", tools).calls.size() == 1);
    CHECK(extract(R"(<|tool_call|>[{"name": "search", "arguments": {"query": "g"}}])", tools).calls.size() == 1);
    CHECK(extract(R"(<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "search", "parameters": {"query": "c"}}]<|END_ACTION|>)",
                  tools)
              .calls.size() == 1);
    auto f = extract(R"( functools[{"name": "search", "arguments": {"query": "p"}}])", tools);
    REQUIRE(f.calls.size() == 1);
    CHECK(f.content.empty());
    auto m = extract(
        "<minimax:tool_call>\n<invoke name=\"search\">\n<parameter name=\"limit\">5</parameter>\n</invoke>\n</minimax:tool_call>",
        tools);
    REQUIRE(m.calls.size() == 1);
    CHECK(args(m, 0)["limit"] == 5);
    auto g = extract(
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Bern</arg_value>\n<arg_key>days</arg_key>\n"
        "<arg_value>4</arg_value>\n</tool_call>",
        tools);
    REQUIRE(g.calls.size() == 1);
    CHECK(args(g, 0) == json{{"city", "Bern"}, {"days", 4}});
    auto olmo = extract("<function_calls>search(query=\"o\")\nlist_tasks()</function_calls>", tools);
    CHECK(olmo.calls.size() == 2);
}

TEST_CASE("unicode and escapes survive", "[unit][extractor]") {
    auto e = extract(
        "Ünïcödé prose 日本語 <tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"\\u00e9t\\u00e9 \\n \\\\ "
        "🎉\"}}</tool_call>",
        weather_tools());
    REQUIRE(e.calls.size() == 1);
    CHECK(args(e, 0)["query"] == "été \n \\ 🎉");
    CHECK(e.content == "Ünïcödé prose 日本語");
}

TEST_CASE("streamed visible text never shows call markup", "[unit][extractor]") {
    ToolCallStream stream(weather_tools());
    std::string shown, reasoning;
    std::string text = "<think>r</think>Hi <tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call> bye";
    for (char c : text) {
        auto d = stream.feed(std::string(1, c));
        shown += d.content;
        reasoning += d.reasoning;
    }
    auto e = stream.finish();
    CHECK(shown == "Hi  bye");
    CHECK(reasoning == "r");
    CHECK(e.calls.size() == 1);
}

TEST_CASE("extraction is linear: a long reply with many calls parses quickly and completely", "[unit][extractor]") {
    std::string text;
    for (int i = 0; i < 2000; ++i)
        text += "Step " + std::to_string(i) + " {x} [y] <tool_call>{\"name\": \"search\", \"arguments\": {\"query\": \"" +
                std::to_string(i) + "\"}}</tool_call>\n";
    ToolCallStream stream(weather_tools());
    for (size_t at = 0; at < text.size(); at += 7) stream.feed(std::string_view(text).substr(at, 7));
    auto e = stream.finish();
    REQUIRE(e.calls.size() == 2000);
    CHECK(json::parse(e.calls[1999].arguments_json)["query"] == "1999");
}

TEST_CASE("a >>> in prose is text and no problem, deep brackets in Gemma and pythonic calls never recurse far",
          "[unit][extractor]") {
    auto tools = weather_tools();
    auto repl = extract(">>> import math\n>>> math.sqrt(2)\n1.4142135623730951", tools);
    CHECK(repl.calls.empty());
    CHECK(repl.problems.empty());
    CHECK(repl.content == ">>> import math\n>>> math.sqrt(2)\n1.4142135623730951");
    // 200k nested brackets: refused as a call, not a stack overflow.
    std::string deep_gemma = "<start_function_call>call:get_weather{city:" + std::string(200000, '[') + "<end_function_call>";
    auto gemma = extract_tool_calls(deep_gemma, tools);
    CHECK(gemma.calls.empty());
    std::string deep_pythonic = "<function_calls>get_weather(city=" + std::string(200000, '[') + ")</function_calls>";
    auto pythonic = extract_tool_calls(deep_pythonic, tools);
    CHECK(pythonic.calls.empty());
}
