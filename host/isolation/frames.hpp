// Length-prefixed JSON frames over a pipe: 4 bytes little-endian length, then that many bytes of
// JSON. The protocol between the host and agenthost-plugin-runner (see isolated_plugin.hpp).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <sys/types.h>

namespace agenthost::isolation {

constexpr uint32_t kMaxFrameBytes = 64u << 20;  // a tool result of more is a protocol error

// Reads frames from one pipe, one thread at a time. It reads ahead (up to 64 KiB), so a frame and
// the ones behind it usually take one read(): a reader must be the only one of its descriptor.
class FrameReader {
public:
    explicit FrameReader(int fd) : fd_(fd) {}
    // The next frame; nothing on end of file, a broken pipe or a malformed frame.
    std::optional<nlohmann::json> next();
    // Whether next() returns without reading: a whole frame (or a malformed length) is buffered.
    bool has_frame() const;
    // One read() of what the descriptor holds, up to the rest of the frame being read (for a
    // reader that waits with poll() and must not block inside a frame a peer never finishes).
    // False on end of file or an error.
    bool read_some();

private:
    bool fill(size_t wanted);  // until `wanted` bytes past start_ are buffered
    // One read(), towards a buffer of `end` bytes (the frame being read, whole; 0: not known).
    ssize_t read_once(size_t end);
    void compact();  // moves the unread bytes to the front
    int fd_;
    std::string buffer_;
    size_t start_ = 0;  // where the unread bytes begin
};

// Writes whole frames, each with one system call; several threads may write to one pipe.
class FrameWriter {
public:
    explicit FrameWriter(int fd) : fd_(fd) {}
    bool write(const nlohmann::json& message);

private:
    int fd_;
    std::mutex mutex_;
};

// Plugin text crosses the frame byte for byte, so the host reads (and repairs, and warns about)
// exactly what an in-process plugin would have given it: valid UTF-8 as message[key], anything
// else as base64 in message[key + "_b64"].
void put_plugin_text(nlohmann::json& message, const std::string& key, std::string text);
std::string get_plugin_text(const nlohmann::json& message, const std::string& key);

}  // namespace agenthost::isolation
