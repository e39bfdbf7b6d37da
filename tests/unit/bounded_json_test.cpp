// The bounded reader for outside JSON: sizes and depth refused before parsing, UTF-8 checked or
// repaired, no exception for any input.
#include "common/bounded_json.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace io = agenthost::json_io;
using nlohmann::json;

TEST_CASE("bounded json: valid text parses, invalid text is an error with a code", "[unit][json]") {
    auto ok = io::parse(R"({"a": [1, 2, {"b": "c"}]})");
    REQUIRE(ok);
    CHECK((*ok)["a"][2]["b"] == "c");
    auto bad = io::parse("{\"a\": ");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().code == "json_invalid");
    CHECK_FALSE(io::parse(""));
}

namespace {

std::string many_elements() {
    std::string text = "[";
    for (int i = 0; i < 10000; ++i) text += std::to_string(i * 7) + (i % 3 ? ",\"s\"," : ",{\"k\":[1]},");
    return text + "0]";
}

}  // namespace

TEST_CASE("bounded json: the value read is the one nlohmann's own parser reads, and so are its errors", "[unit][json]") {
    // The checks before parsing and the repairs after a failure never change what a valid text means,
    // and an invalid one fails with the parser's position, not its label.
    const std::vector<std::string> texts{"null",
                                         "true",
                                         "false",
                                         "0",
                                         "-0",
                                         "-12",
                                         "18446744073709551615",
                                         "9223372036854775807",
                                         "-9223372036854775808",
                                         "1.5e300",
                                         "1E-300",
                                         "3.0",
                                         "\"\"",
                                         R"("a\u00e9\ud83d\ude00\n\"\\")",
                                         "[]",
                                         "{}",
                                         "[[],[[]],{}]",
                                         R"({"a":1,"b":{"a":[1,{"c":null,"a":2}]}})",
                                         R"([1,"two",3.5,true,null,{"k":[{"x":{}}]},[]])",
                                         R"({"z":1,"y":[{"w":"v"},{"w":"u"}],"x":{}})",
                                         " \t\n[ 1 , 2 ]\n",
                                         many_elements(),
                                         R"({"content":")" + std::string(1u << 20, 'a') + R"(","is_error":false})"};
    for (const auto& text : texts) {
        INFO(text.substr(0, 80));
        auto ours = io::parse(text, {8u << 20, 64});
        REQUIRE(ours);
        CHECK(*ours == json::parse(text));
        CHECK(ours->dump() == json::parse(text).dump());
    }
    for (const std::string bad : {"[1,]", "{\"a\" 1}", "[1] 2", "1e999999", "\"\\x\"", "{\"a\":[}", "tru"}) {
        INFO(bad);
        auto ours = io::parse(bad);
        REQUIRE_FALSE(ours);
        CHECK(ours.error().code == "json_invalid");
        CHECK_THROWS(json::parse(bad));
    }
    auto why = io::parse("[1,]");
    REQUIRE_FALSE(why);
    CHECK_THAT(why.error().message, Catch::Contains("parse error at line 1, column 4") && !Catch::Contains("[json.exception"));
}

TEST_CASE("bounded json: depth is refused on the bytes, 100k levels included", "[unit][json]") {
    std::string deep(100000, '[');
    deep += std::string(100000, ']');
    auto r = io::parse(deep);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == "json_too_deep");
    // Brackets inside strings are not nesting.
    std::string in_string = "\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"";
    CHECK(io::parse(in_string));
    std::string at_limit = std::string(64, '[') + std::string(64, ']');
    CHECK(io::parse(at_limit, {1 << 20, 64}));
    CHECK_FALSE(io::parse(at_limit, {1 << 20, 63}));
}

TEST_CASE("bounded json: size is refused before parsing", "[unit][json]") {
    std::string big = "\"" + std::string(2000, 'x') + "\"";
    auto r = io::parse(big, {1000, 8});
    REQUIRE_FALSE(r);
    CHECK(r.error().code == "json_too_large");
}

TEST_CASE("bounded json: invalid UTF-8 refused or repaired as asked", "[unit][json]") {
    const std::string cases[] = {
        "\"\xff\"",              // never valid
        "\"\xc0\xaf\"",          // overlong '/'
        "\"\xed\xa0\x80\"",      // a surrogate, UTF-8 encoded
        "\"\xf4\x90\x80\x80\"",  // past U+10FFFF
        "\"\xe2\x82\"",          // truncated
    };
    for (const auto& text : cases) {
        auto refused = io::parse(text);
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == "json_invalid_utf8");
        auto repaired = io::parse(text, {}, io::Utf8::repair);
        REQUIRE(repaired);
        CHECK(repaired->get<std::string>().find("\xEF\xBF\xBD") != std::string::npos);
        CHECK(io::valid_utf8(io::dump(*repaired)));
    }
    CHECK(io::valid_utf8("h\xc3\xa9llo \xf0\x9f\x98\x80"));
    CHECK(io::repair_utf8("h\xc3\xa9llo") == "h\xc3\xa9llo");
    CHECK(io::repair_utf8(std::string("a\0b", 3)) ==
          "a\xEF\xBF\xBD"
          "b");
    // One replacement for one broken sequence, not one per byte.
    CHECK(io::repair_utf8("a\xe2\x82z") == "a\xEF\xBF\xBDz");
}

TEST_CASE("bounded json: dump never throws on bad bytes inside strings", "[unit][json]") {
    json j{{"text", std::string("bad \xff\xfe bytes")}};
    std::string out = io::dump(j);
    CHECK(io::valid_utf8(out));
    CHECK(out.find("bad") != std::string::npos);
}

TEST_CASE("bounded json: typed reads treat a wrong type as absent and say so", "[unit][json]") {
    json j = json::parse(R"({"flag": "yes", "ok": true, "n": 3, "s": 4, "nul": null})");
    bool wrong = false;
    CHECK(io::get_bool(j, "flag", false, &wrong) == false);
    CHECK(wrong);
    wrong = false;
    CHECK(io::get_bool(j, "ok", false, &wrong));
    CHECK(io::get_bool(j, "nul", true, &wrong));
    CHECK(io::get_int(j, "n", 0, &wrong) == 3);
    CHECK_FALSE(wrong);
    CHECK(io::get_string(j, "s", "d", &wrong) == "d");
    CHECK(wrong);
    CHECK(io::get_string(json(42), "s", "d") == "d");  // not an object at all
}

TEST_CASE("bounded json: repair mode mends what careless writers break and keeps the structure", "[unit][json]") {
    struct Case {
        std::string text;
        std::string expected_value;  // the member "v" after reading
    };
    const Case cases[] = {
        {std::string("{\"v\":\"a\0b\"}", 11),
         "a\xEF\xBF\xBD"
         "b"},                                                         // raw NUL
        {"{\"v\":\"tab\there\nline\"}", "tab\there\nline"},            // raw control bytes
        {"{\"v\":\"lone \\ud800 high\"}", "lone \xEF\xBF\xBD high"},   // lone high surrogate
        {"{\"v\":\"lone \\udc00 low\"}", "lone \xEF\xBF\xBD low"},     // lone low surrogate
        {"{\"v\":\"C:\\dir\\x\"}", "C:\\dir\\x"},                      // unknown escapes
        {"{\"v\":\"pair \\ud83d\\ude00\"}", "pair \xF0\x9F\x98\x80"},  // a real pair is kept
    };
    for (const auto& c : cases) {
        INFO(c.text);
        io::Repairs repairs;
        auto r = io::parse(c.text, {}, io::Utf8::repair, &repairs);
        REQUIRE(r);
        CHECK(r->at("v").get<std::string>() == c.expected_value);
        CHECK(io::valid_utf8(io::dump(*r)));
        CHECK(repairs.any() == (c.text.find("pair") == std::string::npos));
    }
    // Refuse mode still refuses what is not JSON.
    CHECK_FALSE(io::parse("{\"v\":\"a\\x\"}"));
}

TEST_CASE("bounded json: a number too large for a double is kept as its digits", "[unit][json]") {
    io::Repairs repairs;
    auto r = io::parse(R"({"is_error": false, "n": 1e999999, "m": -1E400, "ok": 2.5e3})", {}, io::Utf8::repair, &repairs);
    REQUIRE(r);
    CHECK(repairs.huge_numbers);
    CHECK(repairs.describe() == "numbers too large for a double");
    CHECK(r->at("n") == "1e999999");
    CHECK(r->at("m") == "-1E400");
    CHECK(r->at("ok") == 2500.0);
    CHECK(r->at("is_error") == false);
    CHECK_FALSE(io::parse(R"({"n": 1e999999})"));  // refuse mode: an error, not an exception
}

TEST_CASE("bounded json: text that is fine is not reported as repaired", "[unit][json]") {
    io::Repairs repairs;
    auto r = io::parse(R"({"v":"\\u0000 is an escaped backslash, not a NUL"})", {}, io::Utf8::repair, &repairs);
    REQUIRE(r);
    CHECK_FALSE(repairs.any());
    CHECK(r->at("v").get<std::string>().rfind("\\u0000", 0) == 0);
    // Valid JSON is never changed: an escaped NUL is the NUL it means (the SDK helper writes it so).
    auto nul = io::parse(R"({"v":"a\u0000b"})", {}, io::Utf8::repair, &repairs);
    REQUIRE(nul);
    CHECK_FALSE(repairs.any());
    CHECK(nul->at("v").get<std::string>() == std::string("a\0b", 3));
    // Several kinds at once are all named.
    auto mixed = io::parse("{\"v\":\"\xff\x01 \\q\"}", {}, io::Utf8::repair, &repairs);
    REQUIRE(mixed);
    CHECK(repairs.describe() ==
          "invalid UTF-8 or NUL bytes, raw control characters in strings, backslashes that start no JSON escape");
    // Broken structure stays broken: repair does not invent JSON.
    CHECK_FALSE(io::parse("{\"v\": tru", {}, io::Utf8::repair));
}

TEST_CASE("bounded json: a key given twice is refused from clients and the first kept from plugins", "[unit][json]") {
    // One text, one reading: a proxy or log reading the first key and the host the last would act
    // on different messages.
    for (const std::string text : {R"({"message":"hello","message":"destroy"})", R"({"a":{"k":1,"b":2,"k":1}})",
                                   R"([{"x":1},{"y":{"m":"hello","\u006d":"destroy"}}])"}) {
        INFO(text);
        auto refused = io::parse(text);
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == "json_duplicate_key");
        io::Repairs repairs;
        auto kept = io::parse(text, {}, io::Utf8::repair, &repairs);
        REQUIRE(kept);
        CHECK(repairs.duplicate_keys);
        CHECK_THAT(repairs.describe(), Catch::Contains("keys given twice"));
    }
    auto why = io::parse(R"({"message":"hello","message":"destroy"})");
    CHECK_THAT(why.error().message, Catch::Contains("\"message\" appears twice"));
    io::Repairs repairs;
    auto kept = io::parse(R"({"message":"hello","n":{"message":1},"message":"destroy"})", {}, io::Utf8::repair, &repairs);
    REQUIRE(kept);
    CHECK((*kept)["message"] == "hello");
    CHECK((*kept)["n"]["message"] == 1);
    CHECK(kept->size() == 2);
    // A key is a duplicate only within one object: the same key in sibling and nested objects is fine.
    auto siblings = io::parse(R"({"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]})", {}, io::Utf8::refuse, &repairs);
    REQUIRE(siblings);
    // A large object (past the short list) still finds its duplicate.
    std::string big = "{";
    for (int i = 0; i < 100; ++i) big += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
    CHECK(io::parse(big + "\"k99\":0}").error().code == "json_duplicate_key");
    CHECK(io::parse(big + "\"k100\":0}"));
}

TEST_CASE("bounded json: nothing after the value is ignored, a NUL byte included", "[unit][json]") {
    const std::string hidden = std::string(R"({"message":"hello"})") + '\0' + R"({"message":"destroy"})";
    for (io::Utf8 mode : {io::Utf8::refuse, io::Utf8::repair}) {
        auto read = io::parse(hidden, {}, mode);
        REQUIRE_FALSE(read);
        CHECK(read.error().code == "json_invalid");
        CHECK_THAT(read.error().message, Catch::Contains("NUL byte at byte 20"));
        CHECK_FALSE(io::parse(std::string("[1]") + '\0', {}, mode));
        CHECK_FALSE(io::parse(R"({"a":1} xyz)", {}, mode));
    }
    // Inside a string a raw NUL is mended in repair mode (to U+FFFD), refused otherwise.
    const std::string in_string = std::string(R"({"a":"x)") + '\0' + R"(y"})";
    CHECK_FALSE(io::parse(in_string));
    io::Repairs repairs;
    auto mended = io::parse(in_string, {}, io::Utf8::repair, &repairs);
    REQUIRE(mended);
    CHECK((*mended)["a"] == "x\xEF\xBF\xBDy");
    // Whitespace after the value is fine.
    CHECK(io::parse("{\"a\":1} \r\n\t"));
}
