// The Bedrock adapter's AWS parts on their own: SigV4 against AWS's published test vectors, the
// event-stream decoder against frames cut anywhere and frames that lie, and where credentials are
// found.
#include "bedrock/credentials.hpp"
#include "bedrock/event_stream.hpp"
#include "bedrock/sigv4.hpp"
#include "integration/provider_wires.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

namespace aws = agenthost::providers::aws;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;

namespace {

// The AWS SigV4 test suite's key, date, region and service.
const aws::Credentials kSuiteKey{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
const aws::Scope kSuiteScope{"us-east-1", "service"};
constexpr const char* kSuiteDate = "20150830T123600Z";

aws::Request suite_request(std::string method, std::string path, std::string query, std::string body = "") {
    return {std::move(method), "example.amazonaws.com", std::move(path),
            std::move(query),  std::move(body),         {{"x-amz-date", kSuiteDate}}};
}

// One event-stream message, written by the provider tests' own encoder (provider_wires.cpp).
std::string frame(const std::vector<std::pair<std::string, std::string>>& headers, const std::string& payload) {
    return test::providers::aws_frame(headers, payload);
}

}  // namespace

TEST_CASE("aws sigv4: the published test vectors sign as AWS does", "[unit][bedrock]") {
    // get-vanilla, get-vanilla-query-order-key-case and post-x-www-form-urlencoded from AWS's suite.
    auto vanilla = aws::sign(suite_request("GET", "/", ""), kSuiteKey, kSuiteScope, kSuiteDate);
    CHECK(vanilla.authorization ==
          "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, "
          "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
    auto ordered = aws::sign(suite_request("GET", "/", "Param2=value2&Param1=value1"), kSuiteKey, kSuiteScope, kSuiteDate);
    CHECK_THAT(ordered.authorization, EndsWith("Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"));
    auto form = suite_request("POST", "/", "", "Param1=value1");
    form.headers["content-type"] = "application/x-www-form-urlencoded";
    auto posted = aws::sign(form, kSuiteKey, kSuiteScope, kSuiteDate);
    CHECK_THAT(posted.authorization, Contains("SignedHeaders=content-type;host;x-amz-date"));
    CHECK_THAT(posted.authorization, EndsWith("Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"));
}

TEST_CASE("aws sigv4: a model id's colon is encoded twice in the canonical path, a session token is signed", "[unit][bedrock]") {
    // The wire path carries "%3A" once; every service but S3 encodes the path again to sign it.
    aws::Request r{"POST",
                   "bedrock-runtime.eu-west-1.amazonaws.com",
                   "/model/anthropic.claude-v1%3A0/converse-stream",
                   "",
                   "{}",
                   {{"x-amz-date", kSuiteDate}, {"x-amz-security-token", "  session  token "}}};
    auto s = aws::sign(r, {"AKID", "SECRET", "session token"}, {"eu-west-1", "bedrock"}, kSuiteDate);
    CHECK_THAT(s.canonical_request, Contains("\n/model/anthropic.claude-v1%253A0/converse-stream\n"));
    CHECK_THAT(s.canonical_request, Contains("x-amz-security-token:session token\n"));  // values trimmed, inner runs one space
    CHECK_THAT(s.authorization, Contains("Credential=AKID/20150830/eu-west-1/bedrock/aws4_request"));
    CHECK_THAT(s.authorization, Contains("SignedHeaders=host;x-amz-date;x-amz-security-token"));
    CHECK(aws::amz_date(0) == "19700101T000000Z");
}

TEST_CASE("aws event stream: messages cut anywhere arrive whole, a lying length or checksum stops the stream",
          "[unit][bedrock]") {
    const std::string one =
        frame({{":event-type", "contentBlockDelta"}, {":message-type", "event"}}, R"({"delta":{"text":"Hi"}})");
    const std::string two = frame({{":event-type", "messageStop"}, {":message-type", "event"}}, R"({"stopReason":"end_turn"})");
    const std::string both = one + two;
    for (size_t cut = 0; cut <= both.size(); ++cut) {
        aws::EventStreamDecoder decoder(1 << 20);
        std::vector<std::string> seen;
        auto on = [&](const aws::EventMessage& m) {
            seen.push_back(m.headers.at(":event-type") + " " + std::string(m.payload));
            return true;
        };
        REQUIRE(decoder.feed(both.substr(0, cut), on));
        REQUIRE(decoder.feed(both.substr(cut), on));
        REQUIRE(seen == std::vector<std::string>{"contentBlockDelta {\"delta\":{\"text\":\"Hi\"}}",
                                                 "messageStop {\"stopReason\":\"end_turn\"}"});
        CHECK(decoder.idle());
    }

    std::string flipped = one;
    flipped[flipped.size() - 8] ^= 0x20;  // a payload byte: the message checksum no longer matches
    aws::EventStreamDecoder corrupt(1 << 20);
    CHECK_FALSE(corrupt.feed(flipped, [](const aws::EventMessage&) { return true; }));
    CHECK(corrupt.fault() == aws::EventStreamDecoder::Fault::corrupt);

    aws::EventStreamDecoder text_instead(1 << 20);  // an SSE line where a prelude should be
    CHECK_FALSE(text_instead.feed("data: {\"not\": \"a frame\"}\n\n", [](const aws::EventMessage&) { return true; }));
    CHECK(text_instead.fault() == aws::EventStreamDecoder::Fault::corrupt);

    // A prelude that announces more than the bound is refused at once, before the bytes come.
    aws::EventStreamDecoder bounded(64);
    CHECK_FALSE(bounded.feed(two.substr(0, 12), [](const aws::EventMessage&) { return true; }));
    CHECK(bounded.fault() == aws::EventStreamDecoder::Fault::too_large);
}

TEST_CASE("aws credentials: the environment first, then the profile of the shared file, else words that say where to put them",
          "[unit][bedrock]") {
    test::TempDir dir;
    const auto file = (dir.path / "credentials").string();
    test::write_file(file,
                     "[default]\naws_access_key_id = AKDEFAULT\naws_secret_access_key = s1\n\n"
                     "# a comment\n[dev]\naws_access_key_id=AKDEV\naws_secret_access_key=s2\naws_session_token = tok\n"
                     "[half]\naws_access_key_id = AKHALF\n");
    ::unsetenv("AWS_ACCESS_KEY_ID");
    ::unsetenv("AWS_SECRET_ACCESS_KEY");
    ::unsetenv("AWS_PROFILE");
    auto from_default = aws::find_credentials("", file);
    CHECK(from_default.credentials.access_key_id == "AKDEFAULT");
    CHECK(from_default.source == "profile default in " + file);
    ::setenv("AWS_PROFILE", "dev", 1);
    auto from_dev = aws::find_credentials("", file);
    CHECK(from_dev.credentials.access_key_id == "AKDEV");
    CHECK(from_dev.credentials.session_token == "tok");
    auto named = aws::find_credentials("default", file);  // the setting wins over AWS_PROFILE
    CHECK(named.credentials.access_key_id == "AKDEFAULT");
    auto half = aws::find_credentials("half", file);
    CHECK_FALSE(half.credentials.usable());
    CHECK_THAT(half.problem, Contains("profile half of " + file + " is there, without both"));
    auto absent = aws::find_credentials("sso-dev", file);
    CHECK_THAT(absent.problem, Contains("profile sso-dev is not in " + file + " (it has default, dev, half)") &&
                                   Contains("aws configure export-credentials --profile sso-dev"));
    ::setenv("AWS_ACCESS_KEY_ID", "AKONLY", 1);
    CHECK_THAT(aws::find_credentials("", file).problem, Contains("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"));
    ::unsetenv("AWS_ACCESS_KEY_ID");
    ::setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", "senv", 1);
    auto from_env = aws::find_credentials("dev", file);
    CHECK(from_env.credentials.access_key_id == "AKENV");
    CHECK(from_env.source == "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
    ::unsetenv("AWS_ACCESS_KEY_ID");
    ::unsetenv("AWS_SECRET_ACCESS_KEY");
    ::unsetenv("AWS_PROFILE");
    auto none = aws::find_credentials("", (dir.path / "missing").string());
    CHECK_FALSE(none.credentials.usable());
    CHECK_THAT(none.problem, Contains((dir.path / "missing").string() + " does not exist") && Contains("AWS_ACCESS_KEY_ID") &&
                                 Contains("AWS_BEARER_TOKEN_BEDROCK"));
}
