// The server core's readings of header values and form bodies.
#include "server/header_values.hpp"

#include <catch2/catch.hpp>

using namespace agenthost::server;

TEST_CASE("header values: the Host name is read without its port, and a malformed one reads as none", "[unit]") {
    CHECK(host_name("Example.COM:8080") == "example.com");
    CHECK(host_name(" localhost ") == "localhost");
    CHECK(host_name("[::1]:80") == "[::1]");
    CHECK(host_name("[::1").empty());
    CHECK(host_name("a.b:").empty());
    CHECK(host_name("a.b:8o").empty());
    CHECK(ip_literal("127.0.0.1"));
    CHECK(ip_literal("[::1]"));
    CHECK_FALSE(ip_literal("localhost"));
}

TEST_CASE("header values: content types ignore case and parameters, and form fields are decoded", "[unit]") {
    CHECK(is_json_type("Application/JSON; charset=utf-8"));
    CHECK_FALSE(is_json_type("text/plain"));
    CHECK(is_form_type("application/x-www-form-urlencoded"));
    CHECK(form_value("a=1&token=s%3Dx+y&b=", "token") == "s=x y");
    CHECK(form_value("a=1&b=%zz", "b") == "%zz");
    CHECK(form_value("a=1", "token").empty());
}

TEST_CASE("header values: the token comparison and the log form of a value", "[unit]") {
    CHECK(constant_time_equal("secret", "secret"));
    CHECK_FALSE(constant_time_equal("secret!", "secret"));
    CHECK_FALSE(constant_time_equal("", ""));  // no token configured never matches
    CHECK(loggable("a\r\nb\x1b") == "a\\x0d\\x0ab\\x1b");
    CHECK(loggable(std::string(300, 'x')).size() == 200);
    CHECK(has_control_character(std::string("a\0b", 3)));
    CHECK_FALSE(has_control_character("a\tb"));
}
