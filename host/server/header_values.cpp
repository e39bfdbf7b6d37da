#include "server/header_values.hpp"

#include "server/replies.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <string>

namespace agenthost::server {

bool constant_time_equal(std::string_view given, std::string_view secret) {
    if (secret.empty()) return false;
    size_t n = std::max(given.size(), secret.size());
    unsigned char diff = given.size() == secret.size() ? 0 : 1;
    for (size_t i = 0; i < n; ++i)
        diff |= static_cast<unsigned char>((i < given.size() ? given[i] : 0) ^ (i < secret.size() ? secret[i] : 0));
    return diff == 0;
}

bool ip_literal(const std::string& name) {
    unsigned char buf[16];
    if (name.size() > 2 && name.front() == '[' && name.back() == ']')
        return inet_pton(AF_INET6, name.substr(1, name.size() - 2).c_str(), buf) == 1;
    return inet_pton(AF_INET, name.c_str(), buf) == 1;
}

std::string host_name(const std::string& header) {
    std::string host = lower(trim(header)), port;
    std::string name;
    if (!host.empty() && host[0] == '[') {
        size_t close = host.find(']');
        if (close == std::string::npos) return "";
        name = host.substr(0, close + 1);
        port = host.substr(close + 1);
        if (!port.empty() && port[0] != ':') return "";
    } else {
        size_t colon = host.find(':');
        name = host.substr(0, colon);
        if (colon != std::string::npos) port = host.substr(colon);
    }
    if (!port.empty() && (port.size() == 1 || port.find_first_not_of("0123456789", 1) != std::string::npos)) return "";
    return name;
}

bool is_json_type(const std::string& content_type) {
    return lower(trim(content_type.substr(0, content_type.find(';')))) == "application/json";
}

bool is_form_type(const std::string& content_type) {
    return lower(trim(content_type.substr(0, content_type.find(';')))) == "application/x-www-form-urlencoded";
}

std::string form_value(const std::string& body, const std::string& key) {
    for (size_t at = 0; at <= body.size();) {
        size_t end = body.find('&', at);
        std::string pair = body.substr(at, end == std::string::npos ? std::string::npos : end - at);
        size_t eq = pair.find('=');
        if (eq != std::string::npos && pair.substr(0, eq) == key) {
            std::string out;
            for (size_t i = eq + 1; i < pair.size(); ++i) {
                if (pair[i] == '+') {
                    out += ' ';
                } else if (pair[i] == '%' && i + 2 < pair.size() && std::isxdigit(static_cast<unsigned char>(pair[i + 1])) &&
                           std::isxdigit(static_cast<unsigned char>(pair[i + 2]))) {
                    out += static_cast<char>(std::stoi(pair.substr(i + 1, 2), nullptr, 16));
                    i += 2;
                } else {
                    out += pair[i];
                }
            }
            return out;
        }
        if (end == std::string::npos) break;
        at = end + 1;
    }
    return "";
}

std::string loggable(const std::string& value) {
    std::string out;
    for (unsigned char c : value.substr(0, 200)) {
        if (c >= 0x20 && c != 0x7f) {
            out += static_cast<char>(c);
            continue;
        }
        out += "\\x";
        out += "0123456789abcdef"[c >> 4];
        out += "0123456789abcdef"[c & 15];
    }
    return out;
}

bool has_control_character(const std::string& value) {
    for (unsigned char c : value)
        if (c < 0x20 && c != '\t') return true;
    return false;
}

}  // namespace agenthost::server
