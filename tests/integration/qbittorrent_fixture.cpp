#include "integration/qbittorrent_fixture.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <vector>

namespace test {

namespace {

std::string base64(const unsigned char* data, size_t size) {
    std::vector<unsigned char> out(4 * ((size + 2) / 3) + 1);
    int n = EVP_EncodeBlock(out.data(), data, static_cast<int>(size));
    return std::string(reinterpret_cast<char*>(out.data()), static_cast<size_t>(n));
}

}  // namespace

std::string qbt_password_hash(const std::string& password) {
    unsigned char salt[16], key[64];
    RAND_bytes(salt, sizeof salt);
    PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()), salt, sizeof salt, 100000, EVP_sha512(), sizeof key,
                      key);
    return "@ByteArray(" + base64(salt, sizeof salt) + ":" + base64(key, sizeof key) + ")";
}

Qbittorrent::Qbittorrent(const fs::path& dir, QbtOptions opts) : options(std::move(opts)) {
    port = free_port();
    downloads = dir / "downloads";
    fs::create_directories(dir / "qBittorrent" / "config");
    fs::create_directories(downloads);
    write_file(dir / "qBittorrent" / "config" / "qBittorrent.conf",
               "[LegalNotice]\nAccepted=true\n\n"
               "[BitTorrent]\nSession\\DefaultSavePath=" +
                   downloads.string() +
                   "\nSession\\Port=0\nSession\\DHTEnabled=false\nSession\\LSDEnabled=false\nSession\\PeXEnabled=false\n"
                   "Session\\Interface=lo\nSession\\InterfaceName=lo\nSession\\QueueingSystemEnabled=false\n\n"
                   "[Network]\nPortForwardingEnabled=false\n\n"
                   "[Preferences]\nConnection\\ResolvePeerCountries=false\nConnection\\UPnP=false\nWebUI\\Address=127.0.0.1\n"
                   "WebUI\\Port=" +
                   std::to_string(port) + "\nWebUI\\Username=admin\nWebUI\\Password_PBKDF2=\"" +
                   qbt_password_hash(options.password) +
                   "\"\nWebUI\\LocalHostAuth=" + std::string(options.local_host_auth ? "true" : "false") +
                   "\nWebUI\\MaxAuthenticationFailCount=" + std::to_string(options.max_auth_failures) +
                   "\nWebUI\\BanDuration=" + std::to_string(options.ban_seconds) +
                   "\nWebUI\\SessionTimeout=" + std::to_string(options.session_timeout_seconds) + "\nWebUI\\UseUPnP=false\n");
    process = std::make_unique<Process>(std::vector<std::string>{"qbittorrent-nox", "--profile=" + dir.string()});
    up = process->pid > 0 && process->wait_for_port(port);
}

// A one-file torrent for `data` (named `name`), as bencoded bytes.
std::string make_torrent(const std::string& name, const std::string& data) {
    const size_t piece = 16384;
    std::string pieces;
    for (size_t at = 0; at < data.size(); at += piece) {
        unsigned char digest[SHA_DIGEST_LENGTH];
        std::string chunk = data.substr(at, piece);
        SHA1(reinterpret_cast<const unsigned char*>(chunk.data()), chunk.size(), digest);
        pieces.append(reinterpret_cast<char*>(digest), SHA_DIGEST_LENGTH);
    }
    std::string info = "d6:lengthi" + std::to_string(data.size()) + "e4:name" + std::to_string(name.size()) + ":" + name +
                       "12:piece lengthi" + std::to_string(piece) + "e6:pieces" + std::to_string(pieces.size()) + ":" + pieces +
                       "e";
    return "d4:info" + info + "e";
}

}  // namespace test
