#include "search.hpp"

#include <expat.h>

#include <algorithm>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <set>

namespace torrent {

namespace {

using agenthost::sdk::Host;
using agenthost::sdk::HttpRequest;
using agenthost::sdk::HttpResponse;

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

bool is_hex_hash(const std::string& s) {
    return s.size() == 40 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c); });
}

// A field of a JSON object when it has the expected type; "" / 0 when missing, null or mistyped.
std::string text(const json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}
int64_t integer(const json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_number() ? it->get<int64_t>() : 0;
}

// Transport failures and HTTP error statuses, the same way for every backend.
std::optional<SearchError> http_error(const std::string& backend, const HttpResponse& r, int timeout_ms) {
    if (r.status == AH_ERR_TIMEOUT)
        return SearchError{"search_timeout", backend + " did not answer within " +
                                                 std::to_string(timeout_ms / 1000.0).substr(0, 4) +
                                                 " s; try again later or raise [plugins.torrent] timeout_ms"};
    if (r.status == AH_ERR_CANCELLED) return SearchError{"cancelled", "the search was cancelled"};
    if (r.status == AH_ERR_IO)
        return SearchError{"backend_error", backend +
                                                " could not be reached: the connection failed (refused, unreachable, or the "
                                                "name did not resolve); check its address and that it is up"};
    if (r.status == AH_ERR_UNSUPPORTED)
        return SearchError{"backend_error",
                           backend + " could not be asked: this agenthost cannot make HTTP requests (see its log)"};
    if (r.status != AH_OK)
        return SearchError{"backend_error", backend + " could not be asked: the request failed before an answer"};
    if (r.code == 429) {
        std::string after = r.headers.value("retry-after", "");
        return SearchError{"rate_limited",
                           backend + " is rate-limiting searches" +
                               (after.empty() ? std::string("; wait a minute") : "; retry after " + after + " s")};
    }
    if (r.code == 401 || r.code == 403)
        return SearchError{"auth_failed",
                           backend + " refused the request (HTTP " + std::to_string(r.code) + "): check the API key"};
    if (r.code >= 500)
        return SearchError{"backend_error", backend + " failed (HTTP " + std::to_string(r.code) + "); try again later"};
    if (r.code >= 400) return SearchError{"bad_request", backend + " rejected the search (HTTP " + std::to_string(r.code) + ")"};
    return std::nullopt;
}

// ---- Knaben ----

class Knaben : public Backend {
public:
    Knaben(Host host, std::string url, json categories, int timeout_ms)
        : host_(std::move(host)), url_(std::move(url)), categories_(std::move(categories)), timeout_ms_(timeout_ms) {}
    std::string name() const override { return "knaben"; }

    std::optional<SearchError> search(const Query& q, std::vector<Hit>& hits, const ah_cancel* cancel) override {
        json body{{"search_type", "score"},
                  {"search_field", "title"},
                  {"query", q.text},
                  {"order_by", "seeders"},
                  {"order_direction", "desc"},
                  {"from", 0},
                  {"size", std::clamp(q.wanted(), 10, 300)},
                  {"hide_unsafe", true},
                  {"hide_xxx", true}};
        if (q.category != "any" && categories_.contains(q.category)) body["categories"] = categories_[q.category];
        HttpRequest req;
        req.method = "POST";
        req.url = url_;
        req.headers = {{"Content-Type", "application/json"}, {"Accept", "application/json"}};
        req.body = body.dump();
        req.timeout_ms = static_cast<uint32_t>(timeout_ms_);
        auto r = host_.http(req, cancel);
        if (auto e = http_error("Knaben", r, timeout_ms_)) return e;
        json answer = json::parse(r.body, nullptr, false);
        if (!answer.is_object() || !answer.contains("hits") || !answer["hits"].is_array())
            return SearchError{"backend_error",
                               "Knaben answered with something that is not its search JSON (" + r.body.substr(0, 80) + ")"};
        for (const auto& h : answer["hits"]) {
            if (!h.is_object()) continue;
            Hit hit;
            hit.title = text(h, "title");
            hit.bytes = integer(h, "bytes");
            hit.seeders = integer(h, "seeders");
            hit.peers = integer(h, "peers");
            hit.date = text(h, "date");
            hit.source = "knaben" + (text(h, "tracker").empty() ? std::string() : "/" + text(h, "tracker"));
            hit.infohash = lower(text(h, "hash"));
            hit.magnet = text(h, "magnetUrl");  // null when Knaben has none
            hit.link = text(h, "link");
            if (hit.title.empty()) continue;
            hits.push_back(std::move(hit));
        }
        return std::nullopt;
    }

private:
    Host host_;
    std::string url_;
    json categories_;
    int timeout_ms_;
};

// ---- Torznab (RSS 2.0 + torznab:attr, parsed with expat) ----

struct TorznabDoc {
    std::vector<Hit> items;
    std::optional<std::pair<int, std::string>> error;  // <error code description>
    // From t=caps: the result limit, whether plain search is offered, the category ids.
    int max_results = 0;
    std::optional<bool> search_available;
    std::set<std::string> categories;
    bool in_item = false;
    std::string text;  // character data of the element being read
    Hit current;
    int64_t leechers = -1;
};

std::string local_name(const char* name) {
    std::string n(name);
    auto colon = n.rfind(':');
    return colon == std::string::npos ? n : n.substr(colon + 1);
}

const char* attr(const char** attrs, const char* wanted) {
    for (int i = 0; attrs[i]; i += 2)
        if (std::string(attrs[i]) == wanted) return attrs[i + 1];
    return nullptr;
}

int64_t number(const char* text) { return text ? std::strtoll(text, nullptr, 10) : 0; }

void XMLCALL on_start(void* user, const char* raw_name, const char** attrs) {
    auto* d = static_cast<TorznabDoc*>(user);
    std::string name(raw_name);
    d->text.clear();
    if (name == "error") {
        d->error = {static_cast<int>(number(attr(attrs, "code"))), attr(attrs, "description") ? attr(attrs, "description") : ""};
    } else if (name == "limits") {
        d->max_results = static_cast<int>(number(attr(attrs, "max")));
    } else if (name == "search" && !d->in_item) {
        const char* available = attr(attrs, "available");
        d->search_available = !available || std::string(available) == "yes";
    } else if ((name == "category" || name == "subcat") && !d->in_item && attr(attrs, "id")) {
        d->categories.insert(attr(attrs, "id"));
    } else if (name == "item") {
        d->in_item = true;
        d->current = Hit{};
        d->leechers = -1;
    } else if (d->in_item && name == "enclosure") {
        if (const char* url = attr(attrs, "url")) d->current.link = url;
        if (d->current.bytes == 0) d->current.bytes = number(attr(attrs, "length"));
    } else if (d->in_item && local_name(raw_name) == "attr" && name != "attr") {
        std::string key = attr(attrs, "name") ? attr(attrs, "name") : "";
        const char* value = attr(attrs, "value");
        if (!value) return;
        if (key == "seeders")
            d->current.seeders = number(value);
        else if (key == "peers")
            d->current.peers = number(value);
        else if (key == "leechers")
            d->leechers = number(value);
        else if (key == "infohash")
            d->current.infohash = lower(value);
        else if (key == "magneturl")
            d->current.magnet = value;
        else if (key == "size" && d->current.bytes == 0)
            d->current.bytes = number(value);
    }
}

void XMLCALL on_end(void* user, const char* name) {
    auto* d = static_cast<TorznabDoc*>(user);
    std::string n(name);
    if (n == "item" && d->in_item) {
        if (d->current.peers == 0 && d->leechers >= 0) d->current.peers = d->current.seeders + d->leechers;
        if (!d->current.title.empty()) d->items.push_back(std::move(d->current));
        d->in_item = false;
    } else if (d->in_item) {
        if (n == "title")
            d->current.title = d->text;
        else if (n == "pubDate")
            d->current.date = d->text;
        else if (n == "size" && d->current.bytes == 0)
            d->current.bytes = std::strtoll(d->text.c_str(), nullptr, 10);
        else if (n == "link" && d->current.link.empty())
            d->current.link = d->text;
    }
    d->text.clear();
}

void XMLCALL on_text(void* user, const char* s, int len) {
    static_cast<TorznabDoc*>(user)->text.append(s, static_cast<size_t>(len));
}

// Parses a Torznab answer; false with `why` when it is not XML.
bool parse_torznab(const std::string& xml, TorznabDoc& doc, std::string& why) {
    std::unique_ptr<XML_ParserStruct, void (*)(XML_Parser)> parser(XML_ParserCreate("UTF-8"), XML_ParserFree);
    XML_SetUserData(parser.get(), &doc);
    XML_SetElementHandler(parser.get(), on_start, on_end);
    XML_SetCharacterDataHandler(parser.get(), on_text);
    if (XML_Parse(parser.get(), xml.data(), static_cast<int>(xml.size()), 1) == XML_STATUS_ERROR) {
        why = std::string(XML_ErrorString(XML_GetErrorCode(parser.get()))) + " at line " +
              std::to_string(XML_GetCurrentLineNumber(parser.get()));
        return false;
    }
    return true;
}

// Newznab error codes, as advice.
SearchError torznab_error(const std::string& indexer, int code, const std::string& description, const std::string& key_env) {
    std::string what = indexer + " error " + std::to_string(code) + " (" + description + ")";
    if (code >= 100 && code < 200)
        return {"auth_failed", what + ": check the API key in the " + key_env + " environment variable"};
    if (code == 201 || code == 200) return {"bad_request", what + ": a search parameter was refused"};
    if (code == 202) return {"bad_request", what + ": the indexer does not know this search function"};
    if (code == 203) return {"bad_request", what + ": the indexer has this function switched off"};
    if (code == 429 || code == 500) return {"rate_limited", what + ": the indexer's request limit was reached; try later"};
    return {"backend_error", what};
}

class Torznab : public Backend {
public:
    Torznab(Host host, std::string name, std::string url, std::string key_env, int timeout_ms)
        : host_(std::move(host)),
          name_(std::move(name)),
          url_(std::move(url)),
          key_env_(std::move(key_env)),
          timeout_ms_(timeout_ms) {}
    std::string name() const override { return name_; }

    std::optional<SearchError> search(const Query& q, std::vector<Hit>& hits, const ah_cancel* cancel) override {
        static const std::map<std::string, std::string> cats{
            {"movies", "2000"}, {"tv", "5000"}, {"music", "3000"}, {"books", "7000"}};
        const TorznabDoc& caps = capabilities(cancel);
        if (caps.search_available == false)
            return SearchError{"bad_request", name_ + " does not offer plain search (t=caps says so)"};
        int limit = std::clamp(q.wanted(), 10, 100);
        if (caps.max_results > 0) limit = std::min(limit, caps.max_results);
        std::string query = "t=search&extended=1&q=" + url_encode(q.text) + "&limit=" + std::to_string(limit);
        // A category the indexer does not list would match nothing: search everything then.
        if (auto c = cats.find(q.category); c != cats.end() && (caps.categories.empty() || caps.categories.count(c->second)))
            query += "&cat=" + c->second;
        // Page through the indexer (its max per request is in t=caps) until enough are read, it
        // runs out, or five requests were made.
        for (int offset = 0, requests = 0; offset < q.wanted() && requests < 5; offset += limit, ++requests) {
            TorznabDoc doc;
            if (auto e = fetch(query + "&offset=" + std::to_string(offset), doc, cancel)) {
                if (hits.empty()) return e;
                break;  // keep the pages already read
            }
            size_t read = doc.items.size();
            for (auto& item : doc.items) {
                item.source = name_;
                hits.push_back(std::move(item));
            }
            if (read < static_cast<size_t>(limit)) break;
        }
        return std::nullopt;
    }

private:
    // GET <url>?<query>&apikey=… parsed into `doc`, or the failure.
    std::optional<SearchError> fetch(const std::string& query, TorznabDoc& doc, const ah_cancel* cancel) {
        std::string url = url_ + (url_.find('?') == std::string::npos ? "?" : "&") + query;
        const char* key = key_env_.empty() ? nullptr : std::getenv(key_env_.c_str());
        if (key) url += "&apikey=" + url_encode(key);
        HttpRequest req;
        req.url = url;
        req.timeout_ms = static_cast<uint32_t>(timeout_ms_);
        auto r = host_.http(req, cancel);
        if (auto e = http_error(name_, r, timeout_ms_)) {
            if (e->code == "auth_failed") e->message += " (" + key_env_ + ")";
            return e;
        }
        std::string why;
        if (!parse_torznab(r.body, doc, why)) return SearchError{"backend_error", name_ + " answered with malformed XML: " + why};
        if (doc.error) return torznab_error(name_, doc.error->first, doc.error->second, key_env_);
        return std::nullopt;
    }

    // The indexer's t=caps, asked once; an indexer that cannot answer it is searched without.
    const TorznabDoc& capabilities(const ah_cancel* cancel) {
        std::lock_guard lock(caps_mutex_);
        if (!caps_) {
            TorznabDoc doc;
            if (auto e = fetch("t=caps", doc, cancel)) {
                host_.warn("torrent: an indexer's capabilities are unknown; searching without them",
                           {{"indexer", name_}, {"cause", e->message}});
                doc = TorznabDoc{};
                if (e->code == "search_timeout" || e->code == "cancelled") return no_caps_;  // ask again next time
            }
            caps_ = std::move(doc);
        }
        return *caps_;
    }

    Host host_;
    std::string name_, url_, key_env_;
    int timeout_ms_;
    std::mutex caps_mutex_;
    std::optional<TorznabDoc> caps_;
    const TorznabDoc no_caps_{};
};

}  // namespace

std::string url_encode(const std::string& text) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
            out += static_cast<char>(c);
        else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

std::string magnet_from_hash(const std::string& infohash, const std::string& title) {
    return "magnet:?xt=urn:btih:" + infohash + "&dn=" + url_encode(title);
}

std::string hash_from_magnet(const std::string& magnet) {
    std::string m = lower(magnet);
    auto at = m.find("urn:btih:");
    if (at == std::string::npos) return "";
    std::string h = m.substr(at + 9, m.find('&', at) == std::string::npos ? std::string::npos : m.find('&', at) - at - 9);
    if (is_hex_hash(h)) return h;
    if (h.size() != 32) return "";
    // base32 → hex
    std::string bits;
    for (char c : h) {
        int v = c >= 'a' && c <= 'z' ? c - 'a' : c >= '2' && c <= '7' ? c - '2' + 26 : -1;
        if (v < 0) return "";
        for (int b = 4; b >= 0; --b) bits += ((v >> b) & 1) ? '1' : '0';
    }
    std::string out;
    static const char* hex = "0123456789abcdef";
    for (size_t i = 0; i + 4 <= bits.size(); i += 4) out += hex[std::stoi(bits.substr(i, 4), nullptr, 2)];
    return out;
}

std::vector<std::unique_ptr<Backend>> make_backends(const Host& host, const json& cfg, int timeout_ms,
                                                    std::vector<std::string>& problems) {
    std::vector<std::unique_ptr<Backend>> out;
    std::string kind = cfg.value("search", "knaben");
    if (kind == "knaben") {
        json categories = cfg.value("knaben_categories",
                                    json{{"music", {1000000}}, {"tv", {2000000}}, {"movies", {3000000}}, {"books", {9000000}}});
        out.push_back(
            std::make_unique<Knaben>(host, cfg.value("knaben_url", "https://api.knaben.org/v1"), categories, timeout_ms));
    } else if (kind == "torznab") {
        for (const auto& t : cfg.value("torznab", json::array())) {
            if (!t.is_object() || !t.contains("url") || !t["url"].is_string()) {
                problems.push_back(
                    "[plugins.torrent] torznab: each indexer needs a \"url\" (e.g. "
                    "http://127.0.0.1:9117/api/v2.0/indexers/all/results/torznab/api)");
                continue;
            }
            std::string env = t.value("api_key_env", "");
            if (!env.empty() && !std::getenv(env.c_str()))
                problems.push_back("[plugins.torrent] torznab \"" + t.value("name", t["url"].get<std::string>()) +
                                   "\": the environment variable " + env + " (its API key) is not set");
            out.push_back(std::make_unique<Torznab>(host, t.value("name", "torznab"), t["url"], env, timeout_ms));
        }
        if (out.empty())
            problems.push_back(
                "[plugins.torrent] search = \"torznab\" but no torznab = [{ name, url, api_key_env }] is configured");
    } else {
        problems.push_back("[plugins.torrent] search = \"" + kind + "\" is unknown: use \"knaben\" or \"torznab\"");
    }
    return out;
}

Found search_all(const std::vector<std::unique_ptr<Backend>>& backends, const Query& q, const ah_cancel* cancel) {
    std::vector<std::future<std::pair<std::vector<Hit>, std::optional<SearchError>>>> running;
    for (const auto& b : backends)
        running.push_back(std::async(std::launch::async, [&b, &q, cancel] {
            std::vector<Hit> hits;
            auto error = b->search(q, hits, cancel);
            return std::make_pair(std::move(hits), std::move(error));
        }));
    Found found;
    std::map<std::string, size_t> by_hash;  // infohash → index in found.hits
    for (auto& r : running) {
        auto [hits, error] = r.get();
        if (error) found.errors.push_back(*error);
        for (auto& h : hits) {
            if (h.infohash.empty() && !h.magnet.empty()) h.infohash = hash_from_magnet(h.magnet);
            if (h.magnet.empty() && is_hex_hash(h.infohash)) h.magnet = magnet_from_hash(h.infohash, h.title);
            if (h.seeders < q.min_seeders) continue;
            if (!h.infohash.empty()) {
                if (auto seen = by_hash.find(h.infohash); seen != by_hash.end()) {  // the same torrent from two indexers
                    Hit& kept = found.hits[seen->second];
                    kept.seeders = std::max(kept.seeders, h.seeders);
                    kept.peers = std::max(kept.peers, h.peers);
                    if (kept.source.find(h.source) == std::string::npos) kept.source += ", " + h.source;
                    continue;
                }
                by_hash[h.infohash] = found.hits.size();
            }
            found.hits.push_back(std::move(h));
        }
    }
    std::stable_sort(found.hits.begin(), found.hits.end(), [](const Hit& a, const Hit& b) { return a.seeders > b.seeders; });
    size_t first = static_cast<size_t>(q.page - 1) * static_cast<size_t>(q.limit);
    found.hits.erase(found.hits.begin(), found.hits.begin() + static_cast<std::ptrdiff_t>(std::min(first, found.hits.size())));
    if (found.hits.size() > static_cast<size_t>(q.limit)) found.hits.resize(static_cast<size_t>(q.limit));
    return found;
}

}  // namespace torrent
