#include "url_guard.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace fetch {
namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

bool blocked_v4(uint32_t a, std::string& why) {  // a in host byte order
    struct Range {
        uint32_t net, mask;
        const char* name;
    };
    static const Range ranges[] = {
        {0x00000000, 0xFF000000, "this network (0.0.0.0/8)"},
        {0x0A000000, 0xFF000000, "private (10.0.0.0/8)"},
        {0x64400000, 0xFFC00000, "carrier-grade NAT (100.64.0.0/10)"},
        {0x7F000000, 0xFF000000, "loopback (127.0.0.0/8)"},
        {0xA9FE0000, 0xFFFF0000, "link-local / cloud metadata (169.254.0.0/16)"},
        {0xAC100000, 0xFFF00000, "private (172.16.0.0/12)"},
        {0xC0000000, 0xFFFFFF00, "IETF protocol assignments (192.0.0.0/24)"},
        {0xC0A80000, 0xFFFF0000, "private (192.168.0.0/16)"},
        {0xC6120000, 0xFFFE0000, "benchmarking (198.18.0.0/15)"},
        {0xE0000000, 0xF0000000, "multicast (224.0.0.0/4)"},
        {0xF0000000, 0xF0000000, "reserved (240.0.0.0/4)"},
    };
    for (const auto& r : ranges)
        if ((a & r.mask) == r.net) {
            why = r.name;
            return true;
        }
    return false;
}

bool blocked_v6(const unsigned char b[16], std::string& why) {
    static const unsigned char zero[16] = {};
    auto v4_at = [&](int offset) {
        return (uint32_t(b[offset]) << 24) | (uint32_t(b[offset + 1]) << 16) | (uint32_t(b[offset + 2]) << 8) | b[offset + 3];
    };
    if (std::memcmp(b, zero, 15) == 0 && (b[15] == 0 || b[15] == 1)) {
        why = b[15] ? "loopback (::1)" : "unspecified (::)";
        return true;
    }
    bool mapped = std::memcmp(b, zero, 10) == 0 && b[10] == 0xFF && b[11] == 0xFF;  // ::ffff:a.b.c.d
    bool compatible = std::memcmp(b, zero, 12) == 0;                                // ::a.b.c.d
    bool nat64 =
        b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xFF && b[3] == 0x9B && std::memcmp(b + 4, zero, 8) == 0;  // 64:ff9b::/96
    if (mapped || compatible || nat64) {
        if (blocked_v4(v4_at(12), why)) {
            why = "IPv4 inside IPv6, " + why;
            return true;
        }
        return false;
    }
    if (b[0] == 0x20 && b[1] == 0x02) {  // 6to4 2002:a.b.c.d::/48
        if (blocked_v4(v4_at(2), why)) {
            why = "6to4, " + why;
            return true;
        }
        return false;
    }
    if ((b[0] & 0xFE) == 0xFC) return why = "unique local (fc00::/7)", true;
    if (b[0] == 0xFE && (b[1] & 0xC0) == 0x80) return why = "link-local (fe80::/10)", true;
    if (b[0] == 0xFE && (b[1] & 0xC0) == 0xC0) return why = "site-local (fec0::/10)", true;
    if (b[0] == 0xFF) return why = "multicast (ff00::/8)", true;
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0D && b[3] == 0xB8) return why = "documentation (2001:db8::/32)", true;
    return false;
}

}  // namespace

std::string Url::text() const {
    bool v6 = host.find(':') != std::string::npos;
    bool default_port = (scheme == "http" && port == 80) || (scheme == "https" && port == 443);
    return scheme + "://" + (v6 ? "[" + host + "]" : host) + (default_port ? "" : ":" + std::to_string(port)) + path;
}

std::optional<Url> parse_url(const std::string& text, std::string& error) {
    if (text.find_first_of(std::string("\r\n\t \0", 5)) != std::string::npos) {
        error = "the URL contains whitespace or control characters";
        return std::nullopt;
    }
    size_t colon = text.find("://");
    if (colon == std::string::npos) {
        error = "not an absolute URL (expected http:// or https://)";
        return std::nullopt;
    }
    Url url;
    url.scheme = lower(text.substr(0, colon));
    if (url.scheme != "http" && url.scheme != "https") {
        error = "the scheme '" + url.scheme + "' is not fetched; only http and https are";
        return std::nullopt;
    }
    size_t start = colon + 3;
    size_t end = text.find_first_of("/?#", start);
    std::string authority = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (authority.find('@') != std::string::npos) {
        error = "URLs with user info (user@host) are refused: they hide the real host";
        return std::nullopt;
    }
    std::string port_text;
    if (!authority.empty() && authority[0] == '[') {
        size_t close = authority.find(']');
        if (close == std::string::npos) {
            error = "an IPv6 address is missing its closing ']'";
            return std::nullopt;
        }
        url.host = authority.substr(1, close - 1);
        if (close + 1 < authority.size()) {
            if (authority[close + 1] != ':') {
                error = "unexpected text after the IPv6 address";
                return std::nullopt;
            }
            port_text = authority.substr(close + 2);
        }
    } else {
        size_t p = authority.rfind(':');
        url.host = authority.substr(0, p);
        if (p != std::string::npos) port_text = authority.substr(p + 1);
    }
    url.host = lower(url.host);
    while (!url.host.empty() && url.host.back() == '.') url.host.pop_back();  // "localhost." is localhost
    if (url.host.empty()) {
        error = "the URL has no host";
        return std::nullopt;
    }
    // A name is letters, digits, '-', '_' and '.' (and UTF-8 for international names); an address
    // in brackets must be IPv6. Anything else would reach the resolver as garbage.
    bool bracketed = !authority.empty() && authority[0] == '[';
    in6_addr v6{};
    bool host_ok = bracketed ? inet_pton(AF_INET6, url.host.c_str(), &v6) == 1
                             : std::all_of(url.host.begin(), url.host.end(), [](unsigned char c) {
                                   return std::isalnum(c) || c == '-' || c == '_' || c == '.' || c >= 0x80;
                               });
    if (!host_ok) {
        error = "the host '" + url.host + "' is not a valid name or address";
        return std::nullopt;
    }
    url.port = url.scheme == "https" ? 443 : 80;
    if (!port_text.empty()) {
        if (port_text.size() > 5 || !std::all_of(port_text.begin(), port_text.end(), ::isdigit) || std::stoi(port_text) < 1 ||
            std::stoi(port_text) > 65535) {
            error = "the port '" + port_text + "' is not a number from 1 to 65535";
            return std::nullopt;
        }
        url.port = std::stoi(port_text);
    }
    std::string rest = end == std::string::npos ? "" : text.substr(end);
    if (size_t hash = rest.find('#'); hash != std::string::npos) rest.resize(hash);
    url.path = rest.empty() || rest[0] != '/' ? "/" + rest : rest;
    return url;
}

std::optional<Url> resolve_reference(const Url& base, const std::string& location, std::string& error) {
    if (location.find("://") != std::string::npos) return parse_url(location, error);
    if (location.rfind("//", 0) == 0) return parse_url(base.scheme + ":" + location, error);
    Url next = base;
    if (!location.empty() && location[0] == '/') {
        next.path = location;
    } else {
        std::string dir = base.path.substr(0, base.path.find('?'));
        dir = dir.substr(0, dir.rfind('/') + 1);
        next.path = dir + location;
    }
    if (size_t hash = next.path.find('#'); hash != std::string::npos) next.path.resize(hash);
    return parse_url(next.text(), error);
}

bool blocked_address(const std::string& address, std::string& why) {
    in_addr v4{};
    in6_addr v6{};
    if (inet_pton(AF_INET, address.c_str(), &v4) == 1) return blocked_v4(ntohl(v4.s_addr), why);
    if (inet_pton(AF_INET6, address.c_str(), &v6) == 1) return blocked_v6(v6.s6_addr, why);
    why = "not an IP address";
    return true;
}

std::optional<std::string> checked_address(const Url& url, const std::vector<std::string>& allow_hosts, std::string& error) {
    auto allowed = [&](const std::string& name) {
        return std::find(allow_hosts.begin(), allow_hosts.end(), name) != allow_hosts.end();
    };
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    // getaddrinfo reads every IPv4 spelling (2130706433, 0177.0.0.1, 0x7f.1, 127.1) as inet_aton does,
    // so the address checked is the address the connection would reach.
    if (int rc = getaddrinfo(url.host.c_str(), nullptr, &hints, &found); rc != 0) {
        error = "the host '" + url.host + "' does not resolve (" + gai_strerror(rc) + ")";
        return std::nullopt;
    }
    std::optional<std::string> chosen;
    std::string refusal;
    for (addrinfo* a = found; a && !chosen; a = a->ai_next) {
        char text[INET6_ADDRSTRLEN] = {};
        const void* raw = a->ai_family == AF_INET
                              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
                              : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
        if (!inet_ntop(a->ai_family, raw, text, sizeof text)) continue;
        std::string address = text, why;
        if (allowed(url.host) || allowed(address) || !blocked_address(address, why))
            chosen = address;
        else if (refusal.empty())
            refusal = url.host + " resolves to " + address + ", a " + why + " address";
    }
    freeaddrinfo(found);
    if (!chosen)
        error = (refusal.empty() ? "no usable address for " + url.host : refusal) +
                "; fetching it is refused (add the host to [plugins.fetch] allow_hosts to permit it)";
    return chosen;
}

}  // namespace fetch
