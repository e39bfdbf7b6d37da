// Torrent search behind one interface, with two backends: Knaben (JSON API, no key, the default)
// and Torznab (the XML standard of Jackett and Prowlarr; several indexers searched together).
// Results from all backends are merged, deduplicated by infohash and ordered by seeders.
#pragma once

#include <agenthost/plugin.hpp>

#include <memory>
#include <string>
#include <vector>

namespace torrent {

using nlohmann::json;

struct Hit {
    std::string title;
    int64_t bytes = 0;
    int64_t seeders = 0;
    int64_t peers = 0;
    std::string date;      // as the backend gives it (ISO 8601 or RFC 822)
    std::string source;    // backend / indexer / tracker name
    std::string infohash;  // lower-case hex, or empty when unknown
    std::string magnet;    // built from the infohash when the backend gives none
    std::string link;      // a .torrent URL, when there is one
};

struct Query {
    std::string text;
    std::string category = "any";  // movies | tv | music | books | any
    int64_t min_seeders = 0;
    int limit = 10;
    int page = 1;  // 1-based: page 2 holds results limit+1 … 2·limit
    // How many of the best hits a backend should read from the start: the pages so far plus room
    // for what merging and filtering drop.
    int wanted() const { return (page + 2) * limit; }
};

// A backend failure, in words a person can act on; `code` is the tool error code.
struct SearchError {
    std::string code;  // search_timeout | rate_limited | backend_error | auth_failed | bad_request
    std::string message;
};

struct Found {
    std::vector<Hit> hits;
    std::vector<SearchError> errors;  // one per failed backend; hits from the others still count
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    // Searches; fills `hits` or returns an error.
    virtual std::optional<SearchError> search(const Query& query, std::vector<Hit>& hits, const ah_cancel* cancel) = 0;
};

// Builds the backends from the plugin's config: search = "knaben" (knaben_url) or "torznab"
// (torznab = [{name, url, api_key_env}]). Config problems come back in `problems`.
std::vector<std::unique_ptr<Backend>> make_backends(const agenthost::sdk::Host& host, const json& config, int timeout_ms,
                                                    std::vector<std::string>& problems);

// Searches every backend (in parallel), merges by infohash, filters and orders the hits, and keeps
// the query's page of them.
Found search_all(const std::vector<std::unique_ptr<Backend>>& backends, const Query& query, const ah_cancel* cancel);

// magnet:?xt=urn:btih:<hash>&dn=<title>
std::string magnet_from_hash(const std::string& infohash, const std::string& title);
// The infohash in a magnet URI (hex, lower-case; base32 converted), or "".
std::string hash_from_magnet(const std::string& magnet);
std::string url_encode(const std::string& text);

}  // namespace torrent
