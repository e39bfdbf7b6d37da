// What the server core reads from a request's header values and form body, with no HTTP library:
// the Host header's name, the content types it accepts, a login form's fields, and how a value is
// compared with the token or written to a log.
#pragma once

#include <string>
#include <string_view>

namespace agenthost::server {

// Compares without an early exit, so the time taken does not tell how much of a guess was right.
bool constant_time_equal(std::string_view given, std::string_view secret);
// An IPv4 literal, or an IPv6 one in brackets ("[::1]").
bool ip_literal(const std::string& name);
// "name:port" / "[v6]:port" / "name" → the lower-case name ("" when malformed).
std::string host_name(const std::string& header);
bool is_json_type(const std::string& content_type);
bool is_form_type(const std::string& content_type);
// The value of `key` in a form body (a=b&c=d, percent-encoded, + for a space); empty when absent.
std::string form_value(const std::string& body, const std::string& key);
// A header value as it may appear in a log line: control characters (a forged line, a terminal
// escape) shown as \xNN, and at most 200 bytes.
std::string loggable(const std::string& value);
// Whether a value holds a control character other than a tab (a NUL cutting it short, a line
// break): the headers every decision reads are refused with one rather than interpreted.
bool has_control_character(const std::string& value);

}  // namespace agenthost::server
