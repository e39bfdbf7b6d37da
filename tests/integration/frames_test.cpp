// The isolation protocol's frames: whatever way the bytes arrive, each frame comes out whole and
// in order; a frame that breaks the protocol ends the stream.
#include "isolation/frames.hpp"

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace agenthost;
using nlohmann::json;

namespace {

struct SocketPair {
    SocketPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd) == 0); }
    ~SocketPair() {
        for (int f : fd)
            if (f >= 0) ::close(f);
    }
    void close_writer() {
        ::close(fd[1]);
        fd[1] = -1;
    }
    int fd[2] = {-1, -1};
};

std::string frame_bytes(const json& message) {
    std::string body = message.dump();
    auto n = static_cast<uint32_t>(body.size());
    std::string head{static_cast<char>(n), static_cast<char>(n >> 8), static_cast<char>(n >> 16), static_cast<char>(n >> 24)};
    return head + body;
}

}  // namespace

TEST_CASE("isolation frames: back to back, split at any byte, or larger than the read-ahead, each comes out whole",
          "[integration][isolation]") {
    const std::string big(size_t{700} * 1024, 'x');  // several read-aheads, and several of a large frame's reads
    const std::vector<json> sent{{{"id", 1}, {"op", "call"}}, {{"id", 2}, {"text", big}}, {{"id", 3}, {"text", "ünï"}}};
    std::string wire;
    for (const auto& m : sent) wire += frame_bytes(m);

    // Read straight (next() waits for each frame), or the way a waiting call reads: what is there,
    // then the frame once it is whole.
    for (bool by_what_is_there : {false, true})
        for (size_t piece : {wire.size(), size_t{1}, size_t{3}, size_t{4093}}) {  // all at once, a byte at a time, odd pieces
            INFO("written in pieces of " << piece << (by_what_is_there ? ", read by what is there" : ""));
            SocketPair pair;
            std::thread writer([&] {
                for (size_t at = 0; at < wire.size(); at += piece) {
                    size_t n = std::min(piece, wire.size() - at);
                    for (size_t done = 0; done < n;) {
                        ssize_t w = ::write(pair.fd[1], wire.data() + at + done, n - done);
                        if (w <= 0) return;
                        done += static_cast<size_t>(w);
                    }
                }
                pair.close_writer();
            });
            isolation::FrameReader reader(pair.fd[0]);
            auto take = [&]() -> std::optional<json> {
                if (!by_what_is_there) return reader.next();
                while (!reader.has_frame())
                    if (!reader.read_some()) return std::nullopt;
                return reader.next();
            };
            for (const auto& expected : sent) {
                auto got = take();
                REQUIRE(got);
                CHECK(*got == expected);
            }
            CHECK_FALSE(take());  // end of stream
            writer.join();
        }
}

TEST_CASE("isolation frames: a writer's frames arrive in one piece each, and a bad frame ends the stream",
          "[integration][isolation]") {
    SocketPair pair;
    isolation::FrameWriter writer(pair.fd[1]);
    REQUIRE(writer.write({{"id", 7}}));
    REQUIRE(writer.write({{"id", 8}, {"text", std::string(100000, 'y')}}));
    isolation::FrameReader reader(pair.fd[0]);
    CHECK((*reader.next())["id"] == 7);
    CHECK((*reader.next())["text"].get<std::string>().size() == 100000);

    // Not an object, then a length over the limit: the reader stops at the first.
    const std::string bad = frame_bytes(json::array({1, 2}));
    REQUIRE(::write(pair.fd[1], bad.data(), bad.size()) == static_cast<ssize_t>(bad.size()));
    CHECK_FALSE(reader.next());
    SocketPair second;
    const unsigned char huge[4] = {0xff, 0xff, 0xff, 0x7f};
    REQUIRE(::write(second.fd[1], huge, 4) == 4);
    isolation::FrameReader refused(second.fd[0]);
    CHECK_FALSE(refused.next());  // refused by its length, before anything is read or allocated
}
