#include "qbittorrent.hpp"

#include "search.hpp"  // url_encode

#include <cstdlib>
#include <ctime>
#include <functional>
#include <random>

namespace torrent {

namespace {

std::string trim(std::string s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.erase(s.begin());
    while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\n')) s.pop_back();
    return s;
}

}  // namespace

std::string session_cookie(const std::string& set_cookie) {
    size_t start = 0;
    while (start <= set_cookie.size()) {
        size_t end = set_cookie.find(',', start);
        std::string part = set_cookie.substr(start, end == std::string::npos ? std::string::npos : end - start);
        std::string pair = trim(part.substr(0, part.find(';')));
        auto eq = pair.find('=');
        if (eq != std::string::npos && eq > 0 && pair.substr(0, eq).find("SID") != std::string::npos && eq + 1 < pair.size())
            return pair;
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return "";
}

Qbittorrent::Qbittorrent(agenthost::sdk::Host host, std::string url, std::string username, std::string password,
                         std::string password_env, int timeout_ms)
    : host_(std::move(host)),
      url_(std::move(url)),
      username_(std::move(username)),
      password_(std::move(password)),
      password_env_(std::move(password_env)),
      timeout_ms_(timeout_ms) {
    while (!url_.empty() && url_.back() == '/') url_.pop_back();
    // A password this server refused in an earlier process is not sent again: qBittorrent counts
    // failed logins per address across every command and service run (5, then a ban for an hour).
    json refusal = json::parse(host_.kv_get(kRefusalKey).value_or("{}"), nullptr, false);
    if (refusal.is_object() && refusal.value("url", "") == url_ && refusal.value("user", "") == username_ && !password_.empty() &&
        refusal.value("fingerprint", "") == fingerprint(refusal.value("salt", ""), password_)) {
        refused_ = "qBittorrent at " + url_ + " refused this username and password before (" + refusal.value("when", "earlier") +
                   "); not sending them again, as each refusal counts towards its ban. Fix [plugins.torrent] username or the "
                   "password (" +
                   password_env_ + ") and run again (restart the service if one runs)";
    }
}

// A salted digest of the password, so that a refused one is recognised without being stored.
std::string Qbittorrent::fingerprint(const std::string& salt, const std::string& password) {
    return std::to_string(std::hash<std::string>{}(salt + '\n' + password));
}

void Qbittorrent::remember_refusal() {
    std::random_device random;
    std::string salt = std::to_string(random()) + std::to_string(random());
    std::time_t now = std::time(nullptr);
    char when[32];
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    host_.kv_set(
        kRefusalKey,
        json{{"url", url_}, {"user", username_}, {"salt", salt}, {"fingerprint", fingerprint(salt, password_)}, {"when", when}}
            .dump());
}

QbtReply Qbittorrent::once(const std::string& method, const std::string& path, const std::vector<FormField>& fields,
                           const ah_cancel* cancel) {
    agenthost::sdk::HttpRequest req;
    req.method = method;
    req.url = url_ + "/api/v2/" + path;
    req.timeout_ms = static_cast<uint32_t>(timeout_ms_);
    req.connect_timeout_ms = 5000;
    bool multipart = false;
    for (const auto& f : fields) multipart = multipart || !f.filename.empty();
    std::string encoded;
    for (const auto& f : fields) encoded += (encoded.empty() ? "" : "&") + url_encode(f.name) + "=" + url_encode(f.value);
    if (method == "GET") {
        if (!encoded.empty()) req.url += "?" + encoded;
    } else if (multipart) {
        std::string boundary = "agenthost" + std::to_string(std::random_device{}());
        req.headers["Content-Type"] = "multipart/form-data; boundary=" + boundary;
        for (const auto& f : fields) {
            req.body += "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + f.name + "\"";
            if (!f.filename.empty()) req.body += "; filename=\"" + f.filename + "\"\r\nContent-Type: application/x-bittorrent";
            req.body += "\r\n\r\n" + f.value + "\r\n";
        }
        req.body += "--" + boundary + "--\r\n";
    } else {
        req.headers["Content-Type"] = "application/x-www-form-urlencoded";
        req.body = encoded;
    }
    {
        std::lock_guard lock(mutex_);
        if (!cookie_.empty()) req.headers["Cookie"] = cookie_;
    }
    auto r = host_.http(req, cancel);
    QbtReply reply;
    reply.code = r.code;
    reply.body = std::move(r.body);
    if (r.status == AH_ERR_CANCELLED) {
        reply.error = "cancelled";
        reply.error_code = "cancelled";
    } else if (r.status != AH_OK) {
        reply.error = "qBittorrent at " + url_ + " did not answer" + (r.status == AH_ERR_TIMEOUT ? " in time" : "") +
                      "; is qbittorrent-nox running with its WebUI on? ([plugins.torrent] qbittorrent_url)";
        reply.error_code = "qbittorrent_unreachable";
    } else {
        reply.ok = reply.code >= 200 && reply.code < 300;
        if (!reply.ok) {
            reply.error = "qBittorrent answered HTTP " + std::to_string(reply.code) +
                          (reply.body.empty() ? "" : ": " + trim(reply.body.substr(0, 200)));
            reply.error_code = reply.code == 404 ? "not_found" : "rejected";
        }
    }
    if (path == "auth/login") reply.body = reply.ok ? reply.body : "";  // never keep what a login answered on failure
    return reply;
}

QbtReply Qbittorrent::login(const ah_cancel* cancel) {
    QbtReply refused;
    refused.error_code = "auth_failed";
    if (!refused_.empty()) {
        refused.error = refused_;
        refused.error_code = refused_code_;
        return refused;
    }
    cookie_.clear();
    logged_in_ = false;
    auto unreachable = [&](const auto& r) {
        QbtReply reply;
        reply.code = r.code;
        reply.error = "qBittorrent at " + url_ +
                      " did not answer; is qbittorrent-nox running with its WebUI on? ([plugins.torrent] qbittorrent_url)";
        reply.error_code = r.status == AH_ERR_CANCELLED ? "cancelled" : "qbittorrent_unreachable";
        return reply;
    };
    agenthost::sdk::HttpRequest req;
    req.timeout_ms = static_cast<uint32_t>(timeout_ms_);
    req.connect_timeout_ms = 5000;
    if (password_.empty()) {
        // No password: only a qBittorrent that lets this address in without one (its WebUI's
        // "bypass authentication for clients on localhost" or an allowed subnet) can be used. An
        // empty password is never sent: each refused login counts towards qBittorrent's ban.
        req.method = "GET";
        req.url = url_ + "/api/v2/app/webapiVersion";
        auto r = host_.http(req, cancel);
        if (r.status != AH_OK) return unreachable(r);
        if (r.code == 200) {
            logged_in_ = true;
            return QbtReply{true, r.code, "", "", ""};
        }
        const bool set_but_empty = std::getenv(password_env_.c_str()) != nullptr;
        refused_ = password_env_ + (set_but_empty ? " is empty" : " is not set") + ", and qBittorrent at " + url_ +
                   " asks this address for a password: put its WebUI password in " + password_env_ +
                   " (or set [plugins.torrent] password_env) and run again (restart the service if one runs); `agenthost doctor` "
                   "checks it";
        refused_code_ = "password_unset";
        refused.error = refused_;
        refused.error_code = refused_code_;
        return refused;
    }
    req.method = "POST";
    req.url = url_ + "/api/v2/auth/login";
    req.headers["Content-Type"] = "application/x-www-form-urlencoded";
    req.body = "username=" + url_encode(username_) + "&password=" + url_encode(password_);
    auto r = host_.http(req, cancel);
    QbtReply reply;
    reply.code = r.code;
    if (r.status != AH_OK) return unreachable(r);
    if (r.code == 403) {
        refused_ =
            "qBittorrent has banned this address after too many failed logins; wait for the ban to end (WebUI ban duration), "
            "then fix the credentials and restart agenthost";
        refused_code_ = "banned";
        refused.error = refused_;
        refused.error_code = refused_code_;
        return refused;
    }
    std::string cookie = session_cookie(r.headers.value("set-cookie", ""));
    std::string body = trim(r.body);
    if ((r.code == 200 || r.code == 204) && body != "Fails." && (!cookie.empty() || body == "Ok.")) {
        cookie_ = cookie;  // empty when qBittorrent skips auth for this address (bypass_local_auth)
        logged_in_ = true;
        if (host_.kv_get(kRefusalKey)) host_.kv_set(kRefusalKey, "{}");  // this password works: nothing to remember
        reply.ok = true;
        host_.info("torrent: logged in to qBittorrent", {{"url", url_}, {"user", username_}});
        return reply;
    }
    // A refused password is not tried again, in this process or a later one: qBittorrent bans the IP
    // after a few failures.
    remember_refusal();
    refused_ = "qBittorrent refused the username or password for " + url_ +
               "; not trying again (it bans an address after repeated failures). Fix [plugins.torrent] username and the "
               "password (" +
               password_env_ + ") and run again (restart the service if one runs)";
    host_.warn("torrent: qBittorrent login refused; no further attempts", {{"url", url_}, {"user", username_}});
    refused.error = refused_;
    return refused;
}

QbtReply Qbittorrent::send(const std::string& method, const std::string& path, const std::vector<FormField>& fields,
                           const ah_cancel* cancel) {
    if (!configured())
        return {false, 0, "", "qBittorrent is not configured: set [plugins.torrent] qbittorrent_url", "not_configured"};
    {
        std::lock_guard lock(mutex_);
        if (!logged_in_ && refused_.empty()) {
            auto logged = login(cancel);
            if (!logged.ok) return logged;
        } else if (!refused_.empty()) {
            return {false, 0, "", refused_, refused_code_};
        }
    }
    auto reply = once(method, path, fields, cancel);
    if (reply.code == 403) {  // the session expired (or qBittorrent restarted): log in again, once
        {
            std::lock_guard lock(mutex_);
            auto logged = login(cancel);
            if (!logged.ok) return logged;
        }
        reply = once(method, path, fields, cancel);
    }
    return reply;
}

QbtReply Qbittorrent::get(const std::string& path, const std::vector<FormField>& query, const ah_cancel* cancel) {
    return send("GET", path, query, cancel);
}

QbtReply Qbittorrent::post(const std::string& path, const std::vector<FormField>& form, const ah_cancel* cancel) {
    return send("POST", path, form, cancel);
}

std::string Qbittorrent::api_version() {
    {
        std::lock_guard lock(mutex_);
        if (!api_version_.empty()) return api_version_;
    }
    auto r = get("app/webapiVersion");
    if (!r.ok) return "";
    std::lock_guard lock(mutex_);
    api_version_ = trim(r.body);
    return api_version_;
}

bool Qbittorrent::stop_start_names() {
    std::string v = api_version();
    int major = 0, minor = 0;
    if (std::sscanf(v.c_str(), "%d.%d", &major, &minor) < 2) return false;
    return major > 2 || (major == 2 && minor >= 11);
}

}  // namespace torrent
