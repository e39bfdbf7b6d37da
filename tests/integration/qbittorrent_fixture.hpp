// A real qbittorrent-nox for tests: a fresh profile in a temp dir (legal notice accepted, a known
// PBKDF2 password, WebUI on 127.0.0.1 at a free port, DHT/LSD/PeX/UPnP off, listening on lo only),
// started as a child process and stopped (SIGTERM, waited for) when the fixture goes.
#pragma once

#include "support/test_support.hpp"

#include <memory>
#include <string>

namespace test {

struct QbtOptions {
    std::string password = "test-pass-123";
    int max_auth_failures = 5;
    int ban_seconds = 10;
    int session_timeout_seconds = 3600;
    bool local_host_auth = true;  // false: loopback clients need no password (the WebUI's bypass)
};

class Qbittorrent {
public:
    explicit Qbittorrent(const fs::path& dir, QbtOptions options = {});
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
    bool running() const { return up; }
    fs::path downloads;
    int port = 0;
    QbtOptions options;

private:
    std::unique_ptr<Process> process;
    bool up = false;
};

// qBittorrent's WebUI\Password_PBKDF2 value for `password`: "@ByteArray(<b64 salt>:<b64 key>)".
std::string qbt_password_hash(const std::string& password);

// A one-file torrent for `data` (named `name`), as bencoded bytes: qBittorrent finds it complete when
// the file is already in its save folder.
std::string make_torrent(const std::string& name, const std::string& data);

}  // namespace test
