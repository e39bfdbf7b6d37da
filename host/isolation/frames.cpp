#include "isolation/frames.hpp"

#include "common/bounded_json.hpp"

#include <cerrno>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace agenthost::isolation {

namespace {

bool read_all(int fd, char* data, size_t size) {
    while (size > 0) {
        ssize_t n = ::read(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data += n;
        size -= static_cast<size_t>(n);
    }
    return true;
}

// send() with MSG_NOSIGNAL: a peer that died must not kill this process with SIGPIPE.
bool write_all(int fd, const char* data, size_t size) {
    while (size > 0) {
        ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK) n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data += n;
        size -= static_cast<size_t>(n);
    }
    return true;
}

}  // namespace

std::optional<nlohmann::json> read_frame(int fd) {
    unsigned char head[4];
    if (!read_all(fd, reinterpret_cast<char*>(head), 4)) return std::nullopt;
    uint32_t size = head[0] | (head[1] << 8) | (head[2] << 16) | (static_cast<uint32_t>(head[3]) << 24);
    if (size > kMaxFrameBytes) return std::nullopt;
    std::string body(size, '\0');
    if (!read_all(fd, body.data(), size)) return std::nullopt;
    // The other side may be a plugin's process: bounded and repaired like any plugin data.
    auto message = json_io::parse(body, {kMaxFrameBytes, 128}, json_io::Utf8::repair);
    if (!message || !message->is_object()) return std::nullopt;
    return std::move(*message);
}

bool FrameWriter::write(const nlohmann::json& message) {
    std::string body = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (body.size() > kMaxFrameBytes) return false;
    uint32_t size = static_cast<uint32_t>(body.size());
    unsigned char head[4] = {static_cast<unsigned char>(size), static_cast<unsigned char>(size >> 8), static_cast<unsigned char>(size >> 16),
                             static_cast<unsigned char>(size >> 24)};
    std::lock_guard lock(mutex_);
    return write_all(fd_, reinterpret_cast<char*>(head), 4) && write_all(fd_, body.data(), body.size());
}

void put_plugin_text(nlohmann::json& message, const std::string& key, std::string text) {
    if (json_io::valid_utf8(text)) message[key] = std::move(text);
    else message[key + "_b64"] = to_base64(text);
}

std::string get_plugin_text(const nlohmann::json& message, const std::string& key) {
    if (message.is_object())
        if (auto b64 = message.find(key + "_b64"); b64 != message.end() && b64->is_string()) return from_base64(b64->get<std::string>());
    return json_io::get_string(message, key);
}

std::string to_base64(std::string_view bytes) {
    static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (size_t i = 0; i < bytes.size(); i += 3) {
        uint32_t n = static_cast<unsigned char>(bytes[i]) << 16;
        if (i + 1 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
        if (i + 2 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 2]);
        out += alphabet[(n >> 18) & 63];
        out += alphabet[(n >> 12) & 63];
        out += i + 1 < bytes.size() ? alphabet[(n >> 6) & 63] : '=';
        out += i + 2 < bytes.size() ? alphabet[n & 63] : '=';
    }
    return out;
}

std::string from_base64(std::string_view text) {
    std::string out;
    uint32_t buffer = 0;
    int bits = 0;
    for (char c : text) {
        int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
              : c == '+' ? 62 : c == '/' ? 63 : -1;
        if (v < 0) continue;  // '=' and line breaks
        buffer = (buffer << 6) | static_cast<uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((buffer >> bits) & 0xff);
        }
    }
    return out;
}

}  // namespace agenthost::isolation
