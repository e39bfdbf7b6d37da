// The AWS event stream (application/vnd.amazon.eventstream) Bedrock streams its answers in: binary
// messages of [total length][headers length][prelude CRC32][headers][payload][message CRC32], all
// integers big-endian, each CRC32 checked before anything in the message is believed. Bytes may
// arrive cut anywhere; a message larger than the bound is refused before it is buffered.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace agenthost::providers::aws {

struct EventMessage {
    std::map<std::string, std::string> headers;  // the string-valued ones (":event-type", ":message-type", …)
    std::string_view payload;                    // valid during the callback only
};

class EventStreamDecoder {
public:
    enum class Fault { none, too_large, corrupt };

    explicit EventStreamDecoder(size_t max_message_bytes) : max_(max_message_bytes) {}

    // Feeds bytes; calls on_message(const EventMessage&) -> bool for each whole message (false
    // stops). Returns false when stopped or when the stream is broken (see fault()).
    template <typename OnMessage>
    bool feed(std::string_view chunk, OnMessage&& on_message) {
        if (fault_ != Fault::none) return false;
        buffer_.append(chunk);
        size_t at = 0;
        bool going = true;
        while (going && buffer_.size() - at >= kPrelude) {
            const auto* p = reinterpret_cast<const unsigned char*>(buffer_.data() + at);
            const uint32_t total = be32(p), headers_size = be32(p + 4);
            if (be32(p + 8) != crc(p, 8) || total < kPrelude + 4 || headers_size > total - kPrelude - 4) {
                fault_ = Fault::corrupt;
                return false;
            }
            if (total > max_) {
                fault_ = Fault::too_large;
                return false;
            }
            if (buffer_.size() - at < total) break;
            if (be32(p + total - 4) != crc(p, total - 4)) {
                fault_ = Fault::corrupt;
                return false;
            }
            EventMessage message;
            if (!read_headers(p + kPrelude, headers_size, message.headers)) {
                fault_ = Fault::corrupt;
                return false;
            }
            message.payload =
                std::string_view(buffer_.data() + at + kPrelude + headers_size, total - kPrelude - headers_size - 4);
            going = on_message(message);
            at += total;
        }
        buffer_.erase(0, at);
        return going;
    }

    Fault fault() const { return fault_; }
    bool idle() const { return buffer_.empty(); }  // no message begun and not ended

private:
    static constexpr size_t kPrelude = 12;

    static uint32_t be32(const unsigned char* p) {
        return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
    }
    static uint32_t crc(const unsigned char* p, size_t size) {
        return static_cast<uint32_t>(crc32(0L, p, static_cast<uInt>(size)));
    }

    // Header: [name length][name][type][value]. Strings (7) are kept; other types are skipped by
    // their fixed or stated sizes.
    static bool read_headers(const unsigned char* p, size_t size, std::map<std::string, std::string>& out) {
        size_t i = 0;
        auto need = [&](size_t n) { return size - i >= n; };
        while (i < size) {
            if (!need(1)) return false;
            const size_t name_size = p[i++];
            if (!need(name_size + 1)) return false;
            std::string name(reinterpret_cast<const char*>(p + i), name_size);
            i += name_size;
            const unsigned char type = p[i++];
            static constexpr size_t kFixed[] = {0, 0, 1, 2, 4, 8};  // true, false, byte, short, int, long
            if (type <= 5) {
                if (!need(kFixed[type])) return false;
                i += kFixed[type];
            } else if (type == 6 || type == 7) {  // bytes, string: a 2-byte length first
                if (!need(2)) return false;
                const size_t value_size = (size_t{p[i]} << 8) | p[i + 1];
                i += 2;
                if (!need(value_size)) return false;
                if (type == 7) out[name] = std::string(reinterpret_cast<const char*>(p + i), value_size);
                i += value_size;
            } else if (type == 8 || type == 9) {  // timestamp (8 bytes), uuid (16)
                const size_t value_size = type == 8 ? 8 : 16;
                if (!need(value_size)) return false;
                i += value_size;
            } else {
                return false;
            }
        }
        return true;
    }

    size_t max_;
    std::string buffer_;
    Fault fault_ = Fault::none;
};

}  // namespace agenthost::providers::aws
