// The headers every answer of the server carries, whoever writes it: the HTTP library (its default
// headers) or the connection gate (refusals written before the library reads a byte).
#pragma once

#include <utility>

namespace agenthost::server {

// An API answer is data, never a page: nothing in it may load, frame or submit anything.
inline constexpr const char* kApiCsp = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

inline constexpr std::pair<const char*, const char*> kSecurityHeaders[] = {
    {"X-Content-Type-Options", "nosniff"},           {"Referrer-Policy", "no-referrer"},   {"X-Frame-Options", "DENY"},
    {"Cross-Origin-Resource-Policy", "same-origin"}, {"Content-Security-Policy", kApiCsp},
};

}  // namespace agenthost::server
