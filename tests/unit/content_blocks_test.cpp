// MCP content blocks as plugins return them (ABI 1.5): which shapes pass, and what the model reads.
#include "tools/content_blocks.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using agenthost::tools::content_block_problem;
using agenthost::tools::content_block_text;
using Catch::Matchers::Contains;
using nlohmann::json;

TEST_CASE("content blocks: each type passes with its required fields and fails without them", "[unit]") {
    CHECK(content_block_problem({{"type", "text"}, {"text", "hi"}}).empty());
    CHECK(content_block_problem({{"type", "image"}, {"data", "AAAA"}, {"mimeType", "image/png"}}).empty());
    CHECK(content_block_problem({{"type", "audio"}, {"data", "AAAA"}, {"mimeType", "audio/wav"}}).empty());
    CHECK(content_block_problem({{"type", "resource"}, {"resource", {{"uri", "test://x"}, {"text", "t"}}}}).empty());
    CHECK(content_block_problem({{"type", "resource"}, {"resource", {{"uri", "test://x"}, {"blob", "AAAA"}}}}).empty());
    CHECK(content_block_problem({{"type", "resource_link"}, {"uri", "test://x"}, {"name", "x"}}).empty());

    CHECK_THAT(content_block_problem({{"type", "text"}}), Contains("\"text\""));
    CHECK_THAT(content_block_problem({{"type", "image"}, {"data", "AAAA"}}), Contains("mimeType"));
    CHECK_THAT(content_block_problem({{"type", "image"}, {"data", 5}, {"mimeType", "image/png"}}), Contains("\"data\""));
    CHECK_THAT(content_block_problem({{"type", "resource"}, {"resource", {{"uri", "test://x"}}}}), Contains("blob"));
    CHECK_THAT(content_block_problem({{"type", "resource"}, {"resource", "test://x"}}), Contains("an object"));
    CHECK_THAT(content_block_problem({{"type", "video"}}), Contains("unknown block type 'video'"));
    CHECK_THAT(content_block_problem(json::array()), Contains("JSON object"));
    CHECK_THAT(content_block_problem("text"), Contains("JSON object"));
}

TEST_CASE("content blocks: the model reads text as is and a note for each other block", "[unit]") {
    CHECK(content_block_text({{"type", "text"}, {"text", "hello"}}) == "hello");
    // 8 characters of base64 are 6 bytes.
    CHECK(content_block_text({{"type", "image"}, {"data", "AAAAAAAA"}, {"mimeType", "image/png"}}) ==
          "[image/png image, 6 bytes]");
    CHECK(content_block_text({{"type", "audio"}, {"data", std::string(4096, 'A')}, {"mimeType", "audio/wav"}}) ==
          "[audio/wav audio, 3.0 KiB]");
    CHECK(content_block_text(
              {{"type", "resource"}, {"resource", {{"uri", "test://x"}, {"mimeType", "text/plain"}, {"text", "body"}}}}) ==
          "[resource test://x (text/plain)]: body");
    CHECK(content_block_text({{"type", "resource"}, {"resource", {{"uri", "test://y"}, {"blob", "AAAA"}}}}) ==
          "[resource test://y (no type), 3 bytes]");
    CHECK(content_block_text({{"type", "resource_link"}, {"uri", "graph://Solar"}, {"name", "Solar"}}) ==
          "[link to resource graph://Solar (Solar)]");
}
