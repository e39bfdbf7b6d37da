// fetch(url): a web page as readable text. Every request goes through the host's HTTP service
// (cancellable, the host's proxy/TLS settings) with the connection pinned to an address the SSRF
// guard checked, redirects followed one hop at a time (each hop checked), and the body cut at a
// byte limit while it streams.
#include "html_text.hpp"
#include "url_guard.hpp"

#include <agenthost/plugin.hpp>

#include <algorithm>
#include <sstream>

namespace {

using agenthost::sdk::Call;
using agenthost::sdk::HttpRequest;
using agenthost::sdk::Tool;
using agenthost::sdk::ToolResult;
using nlohmann::json;

constexpr const char* kUserAgent = "agenthost-fetch/1.0 (+https://github.com/agenthost/agenthost)";

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

bool textual(const std::string& type) {
    return type.empty() || type.rfind("text/", 0) == 0 || type.find("json") != std::string::npos ||
           type.find("xml") != std::string::npos || type == "application/javascript" ||
           type == "application/x-www-form-urlencoded";
}

// Cuts at a UTF-8 character boundary at or before `n`.
size_t utf8_floor(const std::string& s, size_t n) {
    if (n >= s.size()) return s.size();
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    return n;
}

struct Response {
    int code = 0;
    json headers = json::object();
    std::string body;
    bool truncated = false;
    ah_status status = AH_OK;
};

class FetchPlugin : public agenthost::sdk::ToolPlugin {
public:
    explicit FetchPlugin(agenthost::sdk::Host host) : ToolPlugin(host) {
        json cfg = host.config();
        for (const auto& h : cfg.value("allow_hosts", json::array()))
            if (h.is_string()) allow_hosts_.push_back(lower(h.get<std::string>()));
        max_bytes_ = cfg.value("max_bytes", max_bytes_);
        max_bytes_limit_ = std::max(max_bytes_, cfg.value("max_bytes_limit", max_bytes_limit_));
        max_redirects_ = cfg.value("max_redirects", max_redirects_);
        page_chars_ = std::max<size_t>(500, cfg.value("page_chars", page_chars_));
        timeout_ms_ = cfg.value("timeout_ms", timeout_ms_);
        respect_robots_ = cfg.value("respect_robots", false);
    }

    std::vector<Tool> tools() override {
        return {{"fetch",
                 "Fetch a web page (http/https) and return its title and content as readable Markdown (or text, or the raw "
                 "body). Long content comes in pages: call again with start_index to read on.",
                 {{"type", "object"},
                  {"properties",
                   {{"url", {{"type", "string"}, {"minLength", 1}, {"maxLength", 8192}}},
                    {"max_bytes", {{"type", "integer"}, {"minimum", 1}, {"description", "download at most this many bytes"}}},
                    {"format", {{"type", "string"}, {"enum", {"markdown", "text", "raw"}}}},
                    {"start_index", {{"type", "integer"}, {"minimum", 0}, {"description", "where to continue reading"}}}}},
                  {"required", {"url"}},
                  {"additionalProperties", false}},
                 AH_TOOL_READ_ONLY | AH_TOOL_IDEMPOTENT | AH_TOOL_OPEN_WORLD}};
    }

    ToolResult call(const Call& call) override {
        const json& a = call.arguments;
        std::string format = a.value("format", "markdown");
        size_t limit = std::min<size_t>(a.value("max_bytes", max_bytes_), max_bytes_limit_);
        size_t start = a.value("start_index", size_t{0});
        std::string error;
        auto url = fetch::parse_url(a.value("url", ""), error);
        if (!url) return ToolResult::error("invalid_url", error);
        if (host().api().abi_minor < 1)
            return ToolResult::error("unsupported",
                                     "this host is too old for safe fetching (it cannot pin addresses); upgrade agenthost");

        if (respect_robots_)
            if (auto refused = robots_refusal(*url, call)) return *refused;

        Response response;
        for (int hop = 0;; ++hop) {
            auto fetched = get(*url, limit, call, response);
            if (fetched) return *fetched;
            if (response.code < 300 || response.code >= 400 || response.code == 304) break;
            std::string location = response.headers.value("location", "");
            if (location.empty()) break;
            if (hop >= max_redirects_)
                return ToolResult::error("too_many_redirects", "more than " + std::to_string(max_redirects_) + " redirects");
            auto next = fetch::resolve_reference(*url, location, error);
            if (!next) return ToolResult::error("forbidden", "a redirect leads to a URL that is not fetched: " + error);
            url = next;
        }
        if (response.code >= 400)
            return ToolResult::error("http_error", "HTTP " + std::to_string(response.code) + " from " + url->text() +
                                                       (response.body.empty() ? "" : ": " + response.body.substr(0, 300)));

        std::string type = lower(response.headers.value("content-type", ""));
        std::string media = type.substr(0, type.find(';'));
        while (!media.empty() && media.back() == ' ') media.pop_back();
        if (!textual(media))
            return ToolResult::error("binary_content", url->text() + " is " + media + ", which is not text; it was not fetched");

        std::string title, content;
        if (format == "raw") {
            content = response.body;
        } else if (media.find("html") != std::string::npos ||
                   (media.empty() && response.body.find("<html") != std::string::npos)) {
            auto page = fetch::html_to_text(response.body, url->text(), format == "markdown");
            title = page.title;
            content = page.text;
        } else if (media.find("json") != std::string::npos) {
            json j = json::parse(response.body, nullptr, false);
            content = j.is_discarded() ? response.body : j.dump(2, ' ', false, json::error_handler_t::replace);
        } else {
            content = response.body;
        }
        if (!json::accept(json(content).dump(-1, ' ', false, json::error_handler_t::replace)))
            return ToolResult::error("decode_failed", "the content could not be read as text");
        content = json(content).dump(-1, ' ', false, json::error_handler_t::replace);  // invalid UTF-8 replaced …
        content = json::parse(content).get<std::string>();                             // … and back to text

        if (start > content.size())
            return ToolResult::error("validation_failed", "start_index " + std::to_string(start) + " is past the end (" +
                                                              std::to_string(content.size()) + " characters)");
        size_t from = utf8_floor(content, start);
        size_t to = utf8_floor(content, from + page_chars_);
        std::string page = content.substr(from, to - from);
        std::string text = (title.empty() ? "" : "# " + title + "\n\n") + page;
        if (to < content.size())
            text += "\n\n[more: " + std::to_string(content.size() - to) +
                    " characters left; fetch again with start_index=" + std::to_string(to) + "]";
        if (response.truncated) text += "\n\n[the download stopped at " + std::to_string(limit) + " bytes (max_bytes)]";
        ToolResult result = ToolResult::ok(text);
        result.body["structured"] = {{"url", url->text()},
                                     {"title", title},
                                     {"content_type", media},
                                     {"start_index", from},
                                     {"next_index", to < content.size() ? json(to) : json(nullptr)},
                                     {"length", content.size()},
                                     {"truncated", response.truncated}};
        return result;
    }

private:
    // One request to one checked, pinned address, not following redirects. A failure result, or nothing.
    std::optional<ToolResult> get(const fetch::Url& url, size_t limit, const Call& call, Response& out) {
        std::string error;
        auto address = fetch::checked_address(url, allow_hosts_, error);
        if (!address) return ToolResult::error("forbidden", error);
        HttpRequest request;
        request.url = url.text();
        request.headers = {{"User-Agent", kUserAgent}, {"Accept", "text/html, application/json, text/plain;q=0.9, */*;q=0.5"}};
        request.timeout_ms = timeout_ms_;
        request.flags = AH_HTTP_NO_REDIRECTS;
        request.resolve_to = *address;
        out = Response{};
        auto response = host().http(
            request, call.cancel,
            [&](std::string_view chunk) {
                size_t room = limit - std::min(limit, out.body.size());
                out.body.append(chunk.substr(0, room));
                if (chunk.size() > room) {
                    out.truncated = true;
                    return false;  // stops the transfer: a huge body is cut, not downloaded
                }
                return true;
            },
            [&](int code, const json& headers) {
                out.code = code;
                out.headers = headers;
            });
        out.status = response.status;
        if (out.truncated) return std::nullopt;
        if (host().cancelled(call.cancel) || response.status == AH_ERR_CANCELLED)
            return ToolResult::error("cancelled", "the fetch was cancelled");
        if (response.status == AH_ERR_TIMEOUT)
            return ToolResult::error("timeout",
                                     "no complete answer from " + url.text() + " within " + std::to_string(timeout_ms_) + " ms");
        if (response.status == AH_ERR_IO)
            return ToolResult::error(
                "unreachable",
                "could not fetch " + url.text() + ": the connection failed (refused, unreachable, or the name did not resolve)");
        if (response.status == AH_ERR_UNSUPPORTED)
            return ToolResult::error(
                "unavailable", "could not fetch " + url.text() + ": this agenthost cannot make HTTP requests (see its log)");
        if (response.status != AH_OK)
            return ToolResult::error("unreachable", "could not fetch " + url.text() + ": the request failed before an answer");
        return std::nullopt;
    }

    // robots.txt: the Disallow rules of the groups for "*" and for agenthost.
    std::optional<ToolResult> robots_refusal(const fetch::Url& url, const Call& call) {
        fetch::Url robots = url;
        robots.path = "/robots.txt";
        Response r;
        if (get(robots, 256 * 1024, call, r) || r.code != 200) return std::nullopt;  // no robots.txt: allowed
        bool applies = false;
        std::string line;
        std::istringstream in(r.body);
        while (std::getline(in, line)) {
            line = line.substr(0, line.find('#'));
            size_t colon = line.find(':');
            if (colon == std::string::npos) continue;
            std::string key = lower(line.substr(0, colon)), value = line.substr(colon + 1);
            value.erase(0, value.find_first_not_of(" \t"));
            while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) value.pop_back();
            if (key == "user-agent")
                applies = value == "*" || lower(value).find("agenthost") != std::string::npos;
            else if (key == "disallow" && applies && !value.empty() && url.path.rfind(value, 0) == 0)
                return ToolResult::error("robots_disallowed",
                                         url.text() + " is disallowed by " + robots.text() + " (Disallow: " + value + ")");
        }
        return std::nullopt;
    }

    std::vector<std::string> allow_hosts_;
    size_t max_bytes_ = 1 << 20;
    size_t max_bytes_limit_ = 10 << 20;
    int max_redirects_ = 5;
    size_t page_chars_ = 20000;
    uint32_t timeout_ms_ = 30000;
    bool respect_robots_ = false;
};

}  // namespace

// Thread-safe: no state changes after start.
AGENTHOST_PLUGIN(FetchPlugin, "fetch", "1.0.0", AH_PLUGIN_THREAD_SAFE)
