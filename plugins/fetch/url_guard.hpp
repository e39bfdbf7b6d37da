// URL parsing and the SSRF guard of the fetch plugin: only http(s), no userinfo, and the address a
// name resolves to must be public (not loopback, private, link-local, CGNAT, multicast, reserved,
// unique-local IPv6, IPv4 embedded in IPv6 forms of those, or the metadata address) unless the host
// or address is allowlisted. The checked address is what the connection is pinned to.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fetch {

struct Url {
    std::string scheme;  // http | https
    std::string host;    // without brackets for IPv6
    int port = 0;
    std::string path;  // path + query, at least "/"
    std::string text() const;
};

// Parses an absolute http(s) URL; an error message when it is not one we fetch.
std::optional<Url> parse_url(const std::string& text, std::string& error);
// A Location header resolved against the URL it came from.
std::optional<Url> resolve_reference(const Url& base, const std::string& location, std::string& error);

// Whether a numeric address (IPv4 or IPv6 text) lies in a blocked range; `why` names the range.
bool blocked_address(const std::string& address, std::string& why);

// Resolves the URL's host and picks an address to connect to: the first one that is allowed.
// An error message when none is (or the name does not resolve).
std::optional<std::string> checked_address(const Url& url, const std::vector<std::string>& allow_hosts, std::string& error);

}  // namespace fetch
