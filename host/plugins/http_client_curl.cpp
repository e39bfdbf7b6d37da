// The http-client module (common/host_module.hpp): the only code that links libcurl.
#include "plugins/http_client.hpp"

#include "common/host_module.hpp"
#include "plugins/abi_text.hpp"

#include <curl/curl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace agenthost::plugins {
namespace {

using nlohmann::json;

constexpr long kDefaultTimeoutMs = 600'000;  // a long LLM stream fits; plugins set their own
constexpr long kDefaultConnectTimeoutMs = 10'000;

std::optional<HostPort> curl_url_host_port(const std::string& url, const char* reference = nullptr);

struct UrlDeleter {
    void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
struct CurlDeleter {
    void operator()(CURL* c) const { curl_easy_cleanup(c); }  // closes the connection it holds
};
struct SlistDeleter {
    void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;
using Clock = std::chrono::steady_clock;

// How many idle connections one plugin instance keeps. Their idle limit (30 s unless a test says
// otherwise) is shorter than the idle timeouts of load balancers and NAT (minutes), so a
// connection one of them dropped in silence is rarely met; a server that closed sooner (Node's
// 5 s) is seen by quiet_connection().
constexpr size_t kMaxKept = 4;

struct KeptHandle {
    CurlHandle curl;  // an easy handle holding at most one open connection (CURLOPT_MAXCONNECTS 1)
    std::string origin;
    Clock::time_point idle_since;
};

}  // namespace

// One plugin instance's kept connections (http_client.hpp). A handle is lent to one request at a
// time and comes back only after a clean exchange, so no two requests ever share a connection.
struct HttpConnections {
    explicit HttpConnections(std::chrono::milliseconds limit) : idle_limit(limit) {}

    const std::chrono::milliseconds idle_limit;
    std::mutex mutex;
    std::condition_variable changed;  // a handle was kept, or the pool closed
    bool closed = false;              // the instance is gone: nothing is kept any more
    std::vector<KeptHandle> idle;     // oldest first
    std::thread closer;               // closes each idle connection at its limit; from the first kept
};

namespace {

struct Transfer {
    const HttpCallbacks* callbacks;
    CURL* curl;
    json headers = json::object();
    bool head_sent = false;
    ah_status sink_status = AH_OK;
    std::string location;  // of the response being read, for may_connect
    // The connection's socket: a kept one's from lend(), a new one's from on_socket(). libcurl
    // tells it (CURLINFO_ACTIVESOCKET) only once the transfer is done. When IPv4 and IPv6 are
    // tried at once the last socket made is noted; a wrong one only misses the quick ACK.
    curl_socket_t socket = CURL_SOCKET_BAD;
    std::array<char, CURL_ERROR_SIZE> error{};  // libcurl's words for a failure

    ah_status send_head() {
        if (head_sent) return AH_OK;
        head_sent = true;
        long code = 0;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
        if (!callbacks->on_head) return AH_OK;
        return callbacks->on_head(static_cast<int32_t>(code), headers.dump());
    }
};

// Acknowledges what arrived now and leaves delayed-ACK mode. On a kept connection Linux delays
// ACKs (it saw request and answer alternate), and a server that writes its head and body apart
// without TCP_NODELAY holds the body until the head is acknowledged: 40 ms per answer.
void ack_at_once(curl_socket_t fd) {
    if (fd == CURL_SOCKET_BAD) return;
    int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    std::string_view line(data, size * count);
    if (line.rfind("HTTP/", 0) == 0) {
        ack_at_once(t->socket);
        t->headers = json::object();  // a new response (after a redirect or 100-continue)
        t->location.clear();
        return line.size();
    }
    if ((line == "\r\n" || line == "\n") && !t->location.empty() && t->callbacks->may_connect) {
        // The end of a response that redirects: its target must be allowed as well.
        long code = 0;
        char* current = nullptr;
        curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_getinfo(t->curl, CURLINFO_EFFECTIVE_URL, &current);
        if (code >= 300 && code < 400 && current) {
            auto target = curl_url_host_port(current, t->location.c_str());
            if (!target || !t->callbacks->may_connect(target->host, target->port)) {
                t->sink_status = AH_ERR_INVALID_ARGUMENT;
                return 0;
            }
        }
        return line.size();
    }
    auto colon = line.find(':');
    if (colon == std::string_view::npos) return line.size();
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.remove_suffix(1);
    std::string v(value);
    if (name == "location") t->location = v;
    if (t->headers.contains(name))
        t->headers[name] = t->headers[name].get<std::string>() + ", " + v;
    else
        t->headers[name] = v;
    return line.size();
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    size_t n = size * count;
    if ((t->sink_status = t->send_head()) != AH_OK) return 0;
    if (t->callbacks->on_body && (t->sink_status = t->callbacks->on_body(std::string_view(data, n))) != AH_OK) return 0;
    return n;
}

int on_socket(void* user, curl_socket_t fd, curlsocktype) {
    static_cast<Transfer*>(user)->socket = fd;
    return CURL_SOCKOPT_OK;
}

// Connected (TLS handshake included), the request about to go: the handshake's last message (a
// TLS 1.3 session ticket) may still wait for our delayed ACK, and a server without TCP_NODELAY
// would hold its answer's head behind it.
int on_connected(void* user, char*, char*, int, int) {
    ack_at_once(static_cast<Transfer*>(user)->socket);
    return CURL_PREREQFUNC_OK;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* t = static_cast<Transfer*>(user);
    return t->callbacks->cancelled && t->callbacks->cancelled() ? 1 : 0;
}

// The host and port `url` connects to (the scheme's port when it names none); `reference`, when
// given, is resolved against `url` first (a redirect's Location).
std::optional<HostPort> curl_url_host_port(const std::string& url, const char* reference) {
    std::unique_ptr<CURLU, UrlDeleter> parts(curl_url());
    if (!parts || curl_url_set(parts.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return std::nullopt;
    if (reference && curl_url_set(parts.get(), CURLUPART_URL, reference, 0) != CURLUE_OK) return std::nullopt;
    char* host = nullptr;
    char* port = nullptr;
    std::optional<HostPort> out;
    if (curl_url_get(parts.get(), CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(parts.get(), CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
        std::string h(host);
        if (h.size() > 1 && h.front() == '[') h = h.substr(1, h.size() - 2);
        out = HostPort{h, std::atoi(port)};
    }
    curl_free(host);
    curl_free(port);
    return out;
}

// The request's headers ({"Name": "value"}) as curl's list; a value that is not a string, or one
// that would inject a header (a line break), refuses the request.
ah_status header_lines(const ah_http_request& request, std::unique_ptr<curl_slist, SlistDeleter>& list) {
    if (!request.headers_json.len) return AH_OK;
    json headers = json::parse(view(request.headers_json), nullptr, false);
    if (!headers.is_object()) return AH_ERR_INVALID_ARGUMENT;
    for (const auto& [name, value] : headers.items()) {
        if (!value.is_string()) return AH_ERR_INVALID_ARGUMENT;
        std::string line = name + ": " + value.get<std::string>();
        if (line.find_first_of("\r\n") != std::string::npos) return AH_ERR_INVALID_ARGUMENT;  // header injection
        curl_slist* head = curl_slist_append(list.get(), line.c_str());
        if (!head) return AH_ERR_NO_MEMORY;
        (void)list.release();  // the list grew in place; `head` owns it all
        list.reset(head);
    }
    return AH_OK;
}

// RFC 9110's idempotent methods, and any request its plugin marked AH_HTTP_REPLAYABLE: only these
// may go out on a kept connection, because libcurl sends a request again, on a new connection, when
// a kept one turns out to be closed before any answer came.
bool replayable(const std::string& method, uint32_t flags) {
    static constexpr std::array<std::string_view, 5> kIdempotent{"GET", "HEAD", "OPTIONS", "PUT", "DELETE"};
    return (flags & AH_HTTP_REPLAYABLE) || std::find(kIdempotent.begin(), kIdempotent.end(), method) != kIdempotent.end();
}

// Whether a kept handle's connection may carry another request: open, and nothing waiting on it.
// Bytes a server sent after its answer (or its close) would otherwise be read as the next answer.
// Its socket when it may, else CURL_SOCKET_BAD.
curl_socket_t quiet_connection(CURL* curl) {
    curl_socket_t fd = CURL_SOCKET_BAD;
    if (curl_easy_getinfo(curl, CURLINFO_ACTIVESOCKET, &fd) != CURLE_OK || fd == CURL_SOCKET_BAD) return CURL_SOCKET_BAD;
    pollfd watched{fd, POLLIN | POLLPRI, 0};
    return ::poll(&watched, 1, 0) == 0 ? fd : CURL_SOCKET_BAD;
}

struct Lent {
    CurlHandle curl;
    curl_socket_t socket = CURL_SOCKET_BAD;  // a kept connection's
};

// A handle for a request to `origin`: the newest kept one whose connection is quiet, else a new one.
Lent lend(HttpConnections* kept, const std::string& origin) {
    if (kept) {
        std::vector<KeptHandle> closing;  // expired ones, closed after the lock is released
        std::optional<KeptHandle> found;
        {
            std::lock_guard lock(kept->mutex);
            const auto now = Clock::now();  // the closer may not have run yet
            for (auto& handle : kept->idle)
                if (now - handle.idle_since >= kept->idle_limit) closing.push_back(std::move(handle));
            std::erase_if(kept->idle, [](const KeptHandle& h) { return !h.curl; });
            auto newest =
                std::find_if(kept->idle.rbegin(), kept->idle.rend(), [&](const KeptHandle& h) { return h.origin == origin; });
            if (newest != kept->idle.rend()) {
                found = std::move(*newest);
                kept->idle.erase(std::next(newest).base());
            }
        }
        if (found)
            if (curl_socket_t fd = quiet_connection(found->curl.get()); fd != CURL_SOCKET_BAD) {
                curl_easy_reset(found->curl.get());  // options go, the open connection stays
                return {std::move(found->curl), fd};
            }
    }
    return {CurlHandle(curl_easy_init())};
}

// The closer's loop: each idle connection is closed when it reaches the pool's idle limit, so no
// socket stays open on the server's side while the host sits idle.
void close_when_idle(HttpConnections* kept) {
    std::unique_lock lock(kept->mutex);
    while (!kept->closed) {
        if (kept->idle.empty()) {
            kept->changed.wait(lock);
            continue;
        }
        const auto due = kept->idle.front().idle_since + kept->idle_limit;  // the oldest is due first
        if (Clock::now() < due) {
            kept->changed.wait_until(lock, due);
            continue;
        }
        KeptHandle expired = std::move(kept->idle.front());
        kept->idle.erase(kept->idle.begin());
        lock.unlock();
        expired.curl.reset();  // closes its connection, outside the lock
        lock.lock();
    }
}

// Keeps a handle after its request, for the next one to `origin`, or closes it.
void give_back(HttpConnections* kept, CurlHandle curl, std::string origin) {
    if (!kept) return;
    std::optional<KeptHandle> evicted;
    std::lock_guard lock(kept->mutex);
    if (kept->closed) return;
    kept->idle.push_back({std::move(curl), std::move(origin), Clock::now()});
    if (kept->idle.size() > kMaxKept) {
        evicted = std::move(kept->idle.front());
        kept->idle.erase(kept->idle.begin());
    }
    if (!kept->closer.joinable()) kept->closer = std::thread(close_when_idle, kept);
    kept->changed.notify_one();
}

// The request's options on `c`; the pinned address list is kept by the caller until the end.
ah_status set_options(CURL* c, const ah_http_request& request, const std::string& url, const std::string& method,
                      curl_slist* header_list, std::unique_ptr<curl_slist, SlistDeleter>& pinned, Transfer& transfer) {
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, (request.flags & AH_HTTP_NO_REDIRECTS) ? 0L : 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    // One connection per handle (the last one used); probes on idle connections, so a peer that
    // went away shows as an error on the socket before the next request is sent on it.
    curl_easy_setopt(c, CURLOPT_MAXCONNECTS, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 10L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 5L);
    // No Accept-Encoding by default: a compressing server would hold back a streamed (SSE) body.
    // The time limit is the whole request's, a resend on a new connection included.
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, request.timeout_ms ? static_cast<long>(request.timeout_ms) : kDefaultTimeoutMs);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     request.connect_timeout_ms ? static_cast<long>(request.connect_timeout_ms) : kDefaultConnectTimeoutMs);
    // A private CA (a model server on the LAN) is trusted the way OpenSSL, Python and Go are told.
    if (const char* file = std::getenv("SSL_CERT_FILE"); file && *file) curl_easy_setopt(c, CURLOPT_CAINFO, file);
    if (const char* dir = std::getenv("SSL_CERT_DIR"); dir && *dir) curl_easy_setopt(c, CURLOPT_CAPATH, dir);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
    if (method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (request.body.len) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.len));
    }
    if (header_list) curl_easy_setopt(c, CURLOPT_HTTPHEADER, header_list);
    // Pinning: connect to the address the plugin checked, for the URL's own host and port.
    if (request.resolve_to.len) {
        std::string address(view(request.resolve_to));
        if (address.find_first_of(",\r\n ") != std::string::npos) return AH_ERR_INVALID_ARGUMENT;
        auto target = curl_url_host_port(url);
        if (!target) return AH_ERR_INVALID_ARGUMENT;
        if (address.find(':') != std::string::npos) address = "[" + address + "]";
        pinned.reset(curl_slist_append(nullptr, (target->host + ":" + std::to_string(target->port) + ":" + address).c_str()));
        curl_easy_setopt(c, CURLOPT_RESOLVE, pinned.get());
    }
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &transfer);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &transfer);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &transfer);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, transfer.error.data());
    curl_easy_setopt(c, CURLOPT_PREREQFUNCTION, on_connected);
    curl_easy_setopt(c, CURLOPT_PREREQDATA, &transfer);
    curl_easy_setopt(c, CURLOPT_SOCKOPTFUNCTION, on_socket);
    curl_easy_setopt(c, CURLOPT_SOCKOPTDATA, &transfer);
    return AH_OK;
}

// Whether a finished exchange leaves its connection fit for the next request. Not after a failure
// or an answer that asks for a retry (408, 429, 5xx): a retry starts on a new connection, which a
// load balancer may send to another, healthier server.
bool fit_to_keep(CURLcode rc, CURL* c) {
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    return rc == CURLE_OK && code < 500 && code != 408 && code != 429;
}

// Why a transfer failed, in libcurl's words, and what to do when it is a certificate no trusted CA
// signed (retrying will not help).
std::string failure_words(CURLcode rc, const Transfer& transfer) {
    std::string words = transfer.error[0] ? transfer.error.data() : curl_easy_strerror(rc);
    if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE)
        words += " (a server with a private CA: set SSL_CERT_FILE to its CA's PEM file in agenthost's environment)";
    return words;
}

ah_status status_of(CURLcode rc, const Transfer& transfer) {
    switch (rc) {
        case CURLE_OK: return AH_OK;
        case CURLE_WRITE_ERROR: return transfer.sink_status != AH_OK ? transfer.sink_status : AH_ERR_IO;
        case CURLE_ABORTED_BY_CALLBACK: return AH_ERR_CANCELLED;
        case CURLE_OPERATION_TIMEDOUT: return AH_ERR_TIMEOUT;
        case CURLE_URL_MALFORMAT:
        case CURLE_UNSUPPORTED_PROTOCOL: return AH_ERR_INVALID_ARGUMENT;
        default: return AH_ERR_IO;
    }
}

ah_status curl_perform(const ah_http_request& request, const HttpCallbacks& callbacks, HttpConnections* kept) {
    static std::once_flag curl_ready;
    std::call_once(curl_ready, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });

    std::string url(view(request.url));
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) return AH_ERR_INVALID_ARGUMENT;
    std::string method(view(request.method));
    if (method.empty()) method = "GET";
    if (method.find_first_of(" \r\n\t") != std::string::npos) return AH_ERR_INVALID_ARGUMENT;
    auto target = curl_url_host_port(url);
    if (!target) return AH_ERR_INVALID_ARGUMENT;
    if (callbacks.may_connect) {
        if (!callbacks.may_connect(target->host, target->port)) return AH_ERR_INVALID_ARGUMENT;
        if (request.resolve_to.len && !callbacks.may_connect(std::string(view(request.resolve_to)), target->port))
            return AH_ERR_INVALID_ARGUMENT;
    }

    std::unique_ptr<curl_slist, SlistDeleter> header_list;
    if (ah_status read = header_lines(request, header_list); read != AH_OK) return read;

    // A pinned request never meets a kept connection (it was opened to what the name resolved to)
    // and is never kept (its handle remembers the pin); one that must not be sent twice takes a new
    // connection but may leave it for the next request.
    const bool pinned_request = request.resolve_to.len > 0;
    const std::string origin = url.substr(0, url.find(':')) + "://" + target->host + ":" + std::to_string(target->port);
    auto [curl, socket] = lend(pinned_request || !replayable(method, request.flags) ? nullptr : kept, origin);
    if (!curl) return AH_ERR_NO_MEMORY;
    Transfer transfer{&callbacks, curl.get(), json::object(), false, AH_OK, {}, socket};
    std::unique_ptr<curl_slist, SlistDeleter> pinned;
    if (ah_status set = set_options(curl.get(), request, url, method, header_list.get(), pinned, transfer); set != AH_OK)
        return set;

    CURLcode rc = curl_easy_perform(curl.get());
    ah_status status = status_of(rc, transfer);
    if (status == AH_ERR_IO && callbacks.on_io_failure) callbacks.on_io_failure(failure_words(rc, transfer));
    if (status == AH_OK) status = transfer.send_head();  // a response with no body still reports its head
    if (status == AH_OK && !pinned_request && fit_to_keep(rc, curl.get())) give_back(kept, std::move(curl), origin);
    return status;
}

HttpConnections* open_connections(std::chrono::milliseconds idle_limit) {
    return std::make_unique<HttpConnections>(idle_limit).release();
}

void close_connections(HttpConnections* kept, ConnectionsEnd end) {
    std::unique_ptr<HttpConnections> owned(end == ConnectionsEnd::and_free ? kept : nullptr);
    std::vector<KeptHandle> closing;
    {
        std::lock_guard lock(kept->mutex);
        if (end != ConnectionsEnd::idle_only) kept->closed = true;
        closing.swap(kept->idle);
    }
    kept->changed.notify_one();
    if (end != ConnectionsEnd::idle_only && kept->closer.joinable()) kept->closer.join();
}

const HttpClientModule kModule{
    {AGENTHOST_VERSION, sizeof(HttpClientModule)}, curl_perform, curl_url_host_port, open_connections, close_connections};

}  // namespace
}  // namespace agenthost::plugins

AGENTHOST_MODULE_ENTRY(agenthost_module_http_client, agenthost::plugins::kModule)
