#include "isolation/frames.hpp"

#include "common/base64.hpp"

#include "common/bounded_json.hpp"

#include <algorithm>
#include <cerrno>
#include <string>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

namespace agenthost::isolation {

namespace {

constexpr size_t kReadAhead = size_t{64} * 1024;
// A large frame's buffer grows by at most this much per read(): grown to the whole frame at once,
// it was filled with zeros again at every read, gigabytes for a frame of 64 MiB.
constexpr size_t kReadChunk = size_t{256} * 1024;

// sendmsg() with MSG_NOSIGNAL (a peer that died must not kill this process with SIGPIPE): the
// length and the body leave in one call, and the peer wakes once per frame.
bool write_all(int fd, iovec* parts, int count) {
    while (count > 0) {
        msghdr message{};
        message.msg_iov = parts;
        message.msg_iovlen = static_cast<size_t>(count);
        ssize_t n = ::sendmsg(fd, &message, MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK) n = ::writev(fd, parts, count);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        for (auto left = static_cast<size_t>(n); left > 0;) {  // skip what was written
            const size_t taken = std::min(left, parts->iov_len);
            parts->iov_base = static_cast<char*>(parts->iov_base) + taken;
            parts->iov_len -= taken;
            left -= taken;
            if (parts->iov_len == 0) ++parts, --count;
        }
        while (count > 0 && parts->iov_len == 0) ++parts, --count;
    }
    return true;
}

// A frame's length, from its first 4 bytes (little-endian).
uint32_t frame_length(const char* head) {
    const auto* b = reinterpret_cast<const unsigned char*>(head);
    return b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
}

}  // namespace

ssize_t FrameReader::read_once(size_t end) {
    if (end > buffer_.capacity()) buffer_.reserve(end);
    const size_t have = buffer_.size();
    const size_t ask = std::max(kReadAhead, std::min(end > have ? end - have : 0, kReadChunk));
    buffer_.resize(have + ask);
    ssize_t n = ::read(fd_, buffer_.data() + have, ask);
    buffer_.resize(have + static_cast<size_t>(std::max<ssize_t>(n, 0)));
    return n;
}

void FrameReader::compact() {
    if (start_ == 0) return;
    buffer_.erase(0, start_);
    start_ = 0;
}

bool FrameReader::fill(size_t wanted) {
    if (buffer_.size() - start_ >= wanted) return true;
    compact();
    while (buffer_.size() < wanted) {
        ssize_t n = read_once(wanted);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
    }
    return true;
}

bool FrameReader::has_frame() const {
    const size_t unread = buffer_.size() - start_;
    if (unread < 4) return false;
    const uint32_t size = frame_length(buffer_.data() + start_);
    return size > kMaxFrameBytes || unread >= 4 + static_cast<size_t>(size);
}

bool FrameReader::read_some() {
    if (has_frame()) return true;
    compact();
    size_t end = 0;  // where the frame being read ends, once its length is known
    if (buffer_.size() >= 4) end = 4 + static_cast<size_t>(frame_length(buffer_.data()));
    ssize_t n = read_once(end);
    return n > 0 || (n < 0 && errno == EINTR);
}

std::optional<nlohmann::json> FrameReader::next() {
    if (!fill(4)) return std::nullopt;
    const uint32_t size = frame_length(buffer_.data() + start_);
    if (size > kMaxFrameBytes || !fill(4 + static_cast<size_t>(size))) return std::nullopt;
    std::string_view body(buffer_.data() + start_ + 4, size);
    start_ += 4 + size;
    // The other side may be a plugin's process: bounded and repaired like any plugin data.
    auto message = json_io::parse(body, {kMaxFrameBytes, 128}, json_io::Utf8::repair);
    if (start_ == buffer_.size()) {  // all read: start over, and give back a big frame's memory
        start_ = 0;
        buffer_.clear();
        if (buffer_.capacity() > 4 * kReadAhead) buffer_.shrink_to_fit();
    }
    if (!message || !message->is_object()) return std::nullopt;
    return std::move(*message);
}

bool FrameWriter::write(const nlohmann::json& message) {
    std::string body = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (body.size() > kMaxFrameBytes) return false;
    uint32_t size = static_cast<uint32_t>(body.size());
    unsigned char head[4] = {static_cast<unsigned char>(size), static_cast<unsigned char>(size >> 8),
                             static_cast<unsigned char>(size >> 16), static_cast<unsigned char>(size >> 24)};
    iovec parts[2] = {{head, 4}, {body.data(), body.size()}};
    std::lock_guard lock(mutex_);
    return write_all(fd_, parts, 2);
}

void put_plugin_text(nlohmann::json& message, const std::string& key, std::string text) {
    if (json_io::valid_utf8(text))
        message[key] = std::move(text);
    else
        message[key + "_b64"] = to_base64(text);
}

std::string get_plugin_text(const nlohmann::json& message, const std::string& key) {
    if (message.is_object())
        if (auto b64 = message.find(key + "_b64"); b64 != message.end() && b64->is_string())
            return from_base64(b64->get<std::string>());
    return json_io::get_string(message, key);
}

}  // namespace agenthost::isolation
