#include "plugins/http_client.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

namespace agenthost::plugins {
namespace {

// Loaded once, on the first HTTP request or URL read; null (and logged) when it cannot be.
const HttpClientModule* http_module() {
    static const HttpClientModule* const module = [] {
        auto loaded = modules::load_table<HttpClientModule>("http-client");
        if (loaded) return *loaded;
        spdlog::error("plugin HTTP is unavailable: {}", loaded.error().message);
        return static_cast<const HttpClientModule*>(nullptr);
    }();
    return module;
}

bool all_of(std::string_view text, bool (*allowed)(unsigned char)) {
    for (unsigned char c : text)
        if (!allowed(c)) return false;
    return !text.empty();
}
bool digit(unsigned char c) { return std::isdigit(c) != 0; }
bool name_char(unsigned char c) { return std::isalnum(c) || c == '-'; }
bool url_char(unsigned char c) {  // RFC 3986's unreserved, reserved and '%': nothing libcurl rewrites or refuses
    return std::isalnum(c) || std::string_view("-._~:/?#[]@!$&'()*+,;=%").find(static_cast<char>(c)) != std::string_view::npos;
}

// A decimal number without a leading zero, at most `max`.
std::optional<int> plain_number(std::string_view text, int max) {
    int value = 0;
    if (text.empty() || text.size() > 5 || (text.size() > 1 && text[0] == '0') || !all_of(text, digit)) return std::nullopt;
    std::from_chars(text.data(), text.data() + text.size(), value);
    if (value > max) return std::nullopt;
    return value;
}

}  // namespace

std::optional<HostPort> plain_url_host_port(std::string_view url) {
    int port = 0;
    if (url.rfind("http://", 0) == 0)
        port = 80, url.remove_prefix(7);
    else if (url.rfind("https://", 0) == 0)
        port = 443, url.remove_prefix(8);
    else
        return std::nullopt;
    if (!all_of(url, url_char)) return std::nullopt;
    std::string_view authority = url.substr(0, url.find_first_of("/?#"));
    std::string_view host = authority.substr(0, authority.find(':'));
    if (host.size() < authority.size()) {
        auto number = plain_number(authority.substr(host.size() + 1), 65535);
        if (!number || *number == 0) return std::nullopt;
        port = *number;
    }
    std::vector<std::string_view> labels;
    for (size_t at = 0;;) {
        size_t dot = host.find('.', at);
        labels.push_back(host.substr(at, dot == std::string_view::npos ? std::string_view::npos : dot - at));
        if (dot == std::string_view::npos) break;
        at = dot + 1;
    }
    const bool quad = labels.size() == 4 && std::all_of(labels.begin(), labels.end(),
                                                        [](std::string_view l) { return plain_number(l, 255).has_value(); });
    const bool name = std::all_of(labels.begin(), labels.end(), [](std::string_view l) { return all_of(l, name_char); }) &&
                      std::isalpha(static_cast<unsigned char>(labels.back()[0]));
    if (!quad && !name) return std::nullopt;
    return HostPort{std::string(host), port};
}

std::optional<HostPort> url_host_port(const std::string& url, const char* reference) {
    if (!reference)
        if (auto plain = plain_url_host_port(url)) return plain;
    const HttpClientModule* module = http_module();
    return module ? module->url_host_port(url, reference) : std::nullopt;
}

KeptConnections::~KeptConnections() {
    if (connections_) http_module()->close_connections(connections_, ConnectionsEnd::and_free);  // made by a loaded module
}

HttpConnections* KeptConnections::get() {
    std::lock_guard lock(mutex_);
    if (connections_) return connections_;
    const HttpClientModule* module = http_module();
    if (module) connections_ = module->open_connections(idle_limit_);
    return connections_;
}

void KeptConnections::close() {
    std::lock_guard lock(mutex_);
    if (connections_) http_module()->close_connections(connections_, ConnectionsEnd::for_good);
}

void KeptConnections::close_idle() {
    std::lock_guard lock(mutex_);
    if (connections_) http_module()->close_connections(connections_, ConnectionsEnd::idle_only);
}

ah_status http_perform(const ah_http_request& request, const HttpCallbacks& callbacks, KeptConnections* kept) {
    const HttpClientModule* module = http_module();
    if (!module) return AH_ERR_UNSUPPORTED;
    return module->perform(request, callbacks, kept ? kept->get() : nullptr);
}

}  // namespace agenthost::plugins
