// A client for the qBittorrent WebUI API v2, through the host's HTTP service. It logs in with the
// session cookie (whatever its name: SID in 4.x, QBT_SID_<port> in 5.2), logs in again once when a
// call gets 403 (the session expired), and never retries a refused password: qBittorrent bans the
// IP after a few failures, so the client stops and says what to fix. No Origin or Referer header is
// sent (qBittorrent answers a foreign one with 401). The password never appears in an error, and an
// unset one is never sent: without it, only a qBittorrent that lets this address in is used.
#pragma once

#include <agenthost/plugin.hpp>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace torrent {

using nlohmann::json;

struct QbtReply {
    bool ok = false;
    int code = 0;  // HTTP status (0: no answer)
    std::string body;
    std::string error;  // why it failed, for a person
    std::string
        error_code;  // tool error code: qbittorrent_unreachable | auth_failed | password_unset | banned | not_found | rejected
};

// One field of a form: a plain value, or a file (name + content) for multipart uploads.
struct FormField {
    std::string name;
    std::string value;
    std::string filename;  // set: sent as a file part
};

class Qbittorrent {
public:
    // `password_env`: the variable the password comes from, named when it is unset and needed.
    Qbittorrent(agenthost::sdk::Host host, std::string url, std::string username, std::string password, std::string password_env,
                int timeout_ms);

    bool configured() const { return !url_.empty(); }
    const std::string& url() const { return url_; }

    // GET api/v2/<path>?<query fields>.
    QbtReply get(const std::string& path, const std::vector<FormField>& query = {}, const ah_cancel* cancel = nullptr);
    // POST api/v2/<path>, urlencoded (or multipart when a field is a file).
    QbtReply post(const std::string& path, const std::vector<FormField>& form, const ah_cancel* cancel = nullptr);

    // The WebUI API version (e.g. 2.8.19), read once after login; 5.x renamed pause/resume to
    // stop/start from API 2.11.
    bool stop_start_names();
    std::string api_version();

private:
    QbtReply send(const std::string& method, const std::string& path, const std::vector<FormField>& fields,
                  const ah_cancel* cancel);
    QbtReply login(const ah_cancel* cancel);  // the caller holds mutex_
    QbtReply once(const std::string& method, const std::string& path, const std::vector<FormField>& fields,
                  const ah_cancel* cancel);
    void remember_refusal();  // in the plugin's key-value store, for later processes
    static std::string fingerprint(const std::string& salt, const std::string& password);
    static constexpr const char* kRefusalKey = "qbittorrent_refused_login";

    agenthost::sdk::Host host_;
    std::string url_, username_, password_, password_env_;
    int timeout_ms_;
    std::mutex mutex_;
    std::string cookie_;  // "NAME=VALUE" of the session cookie
    bool logged_in_ = false;
    std::string refused_;                       // set once the password was refused: no more attempts
    std::string refused_code_ = "auth_failed";  // and why: auth_failed | banned | password_unset
    std::string api_version_;
};

// "SID=abc" from Set-Cookie header text (several cookies may be folded with ", ").
std::string session_cookie(const std::string& set_cookie);

}  // namespace torrent
