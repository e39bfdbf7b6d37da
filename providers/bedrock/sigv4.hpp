// AWS Signature Version 4 for one HTTP request (docs.aws.amazon.com, "Create a signed AWS API
// request"): the canonical request, the string to sign, the derived key and the Authorization
// header. Pure functions over OpenSSL's SHA-256 and HMAC, so the published test vectors check them.
#pragma once

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agenthost::providers::aws {

struct Credentials {
    std::string access_key_id;
    std::string secret_access_key;
    std::string session_token;  // empty for long-term keys
    bool usable() const { return !access_key_id.empty() && !secret_access_key.empty(); }
};

inline std::string hex(const unsigned char* bytes, size_t size) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(size * 2);
    for (size_t i = 0; i < size; ++i) {
        out += kDigits[bytes[i] >> 4];
        out += kDigits[bytes[i] & 0xF];
    }
    return out;
}

inline std::string sha256_hex(std::string_view data) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr);
    return hex(digest, size);
}

inline std::string hmac_sha256(std::string_view key, std::string_view data) {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()), data.size(),
         mac, &size);
    return std::string(reinterpret_cast<const char*>(mac), size);
}

// RFC 3986 percent-encoding as SigV4 wants it: everything but A-Z a-z 0-9 - _ . ~ (and '/' when
// `keep_slash`), upper-case hex.
inline std::string uri_encode(std::string_view text, bool keep_slash) {
    static constexpr char kDigits[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += kDigits[c >> 4];
            out += kDigits[c & 0xF];
        }
    }
    return out;
}

// "20261207T101500Z" for a moment.
inline std::string amz_date(std::time_t at) {
    std::tm tm{};
    gmtime_r(&at, &tm);
    char text[17];
    std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &tm);
    return text;
}

// One request as the signer sees it. `path` is as it goes on the wire (already percent-encoded
// once); `query` is the raw query string without '?'.
struct Request {
    std::string method;
    std::string host;  // as the Host header carries it: "name" or "name:port" for a port that is not the scheme's
    std::string path;
    std::string query;
    std::string body;
    std::map<std::string, std::string> headers;  // lower-case names; host is added by the signer
};

struct Scope {
    std::string region;
    std::string service;  // "bedrock" for both the runtime and the control plane
};

namespace detail {

// Every service but S3 encodes each path segment a second time in the canonical request.
inline std::string canonical_path(std::string_view path) { return path.empty() ? "/" : uri_encode(path, true); }

// Query parameters sorted by name then value, each encoded (decoded first: the wire form is
// already encoded once).
inline std::string canonical_query(std::string_view query) {
    auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10); };
    auto decode = [&](std::string_view s) {
        std::string out;
        for (size_t i = 0; i < s.size(); ++i) {
            if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
                std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
                out += static_cast<char>(digit(s[i + 1]) * 16 + digit(s[i + 2]));
                i += 2;
            } else {
                out += s[i];
            }
        }
        return out;
    };
    std::vector<std::pair<std::string, std::string>> pairs;
    size_t start = 0;
    while (start < query.size()) {
        size_t end = query.find('&', start);
        if (end == std::string_view::npos) end = query.size();
        std::string_view item = query.substr(start, end - start);
        if (!item.empty()) {
            size_t eq = item.find('=');
            std::string name = decode(item.substr(0, eq));
            std::string value = eq == std::string_view::npos ? "" : decode(item.substr(eq + 1));
            pairs.emplace_back(uri_encode(name, false), uri_encode(value, false));
        }
        start = end + 1;
    }
    std::sort(pairs.begin(), pairs.end());
    std::string out;
    for (const auto& [name, value] : pairs) out += (out.empty() ? "" : "&") + name + "=" + value;
    return out;
}

inline std::string trimmed(std::string_view value) {
    std::string out;
    bool space = false;
    for (char c : value) {
        if (c == ' ' || c == '\t') {
            space = !out.empty();
            continue;
        }
        if (space) out += ' ';
        space = false;
        out += c;
    }
    return out;
}

}  // namespace detail

struct Signed {
    std::string canonical_request;
    std::string string_to_sign;
    std::string authorization;
};

// Signs `request` at `date` ("YYYYMMDDTHHMMSSZ", which must also be its x-amz-date header) and
// returns the Authorization header with the steps that made it (for tests and error reports).
inline Signed sign(const Request& request, const Credentials& credentials, const Scope& scope, const std::string& date) {
    std::map<std::string, std::string> headers = request.headers;
    headers["host"] = request.host;
    std::string canonical_headers, signed_headers;
    for (const auto& [name, value] : headers) {
        canonical_headers += name + ":" + detail::trimmed(value) + "\n";
        signed_headers += (signed_headers.empty() ? "" : ";") + name;
    }
    Signed s;
    s.canonical_request = request.method + "\n" + detail::canonical_path(request.path) + "\n" +
                          detail::canonical_query(request.query) + "\n" + canonical_headers + "\n" + signed_headers + "\n" +
                          sha256_hex(request.body);
    const std::string day = date.substr(0, 8);
    const std::string credential_scope = day + "/" + scope.region + "/" + scope.service + "/aws4_request";
    s.string_to_sign = "AWS4-HMAC-SHA256\n" + date + "\n" + credential_scope + "\n" + sha256_hex(s.canonical_request);
    std::string key = hmac_sha256("AWS4" + credentials.secret_access_key, day);
    key = hmac_sha256(key, scope.region);
    key = hmac_sha256(key, scope.service);
    key = hmac_sha256(key, "aws4_request");
    const std::string mac = hmac_sha256(key, s.string_to_sign);
    s.authorization = "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" + credential_scope +
                      ", SignedHeaders=" + signed_headers +
                      ", Signature=" + hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
    return s;
}

}  // namespace agenthost::providers::aws
