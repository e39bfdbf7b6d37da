#include "server/screened_server.hpp"

#include <spdlog/spdlog.h>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace agenthost::server {
namespace {

// The socket of the connection this thread serves: ScreenedServer serves one request per
// connection on one thread, from its head to its last byte, so a handler on that thread can ask
// whether its client is still there (Request::client_gone).
thread_local int served_connection = -1;
// Set when that connection's request came too slowly (ConnectionStream): the read failed on purpose.
thread_local bool too_slowly = false;

}  // namespace

bool served_client_gone() {
    if (served_connection < 0) return false;
    pollfd hangup{served_connection, POLLRDHUP, 0};
    return ::poll(&hangup, 1, 0) > 0 && (hangup.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

bool served_too_slowly() { return too_slowly; }

namespace {

// A connection's socket as cpp-httplib's Stream, with the library's own timeouts and a read buffer
// (its request parser reads a byte at a time). The library's socket stream is not part of its
// interface; this is what ScreenedServer hands to its protected process_request().
// The request (the one a connection carries) must keep coming: the gate has waited for its first
// kGateBodyBytes, and the rest must arrive within kReadGrace plus a second per kMinReadRate bytes,
// so a body that trickles holds a serving thread for seconds, not for as long as the client likes.
class ConnectionStream final : public httplib::Stream {
public:
    ConnectionStream(int sock, std::chrono::milliseconds read_timeout, std::chrono::milliseconds write_timeout)
        : sock_(sock),
          read_timeout_(read_timeout),
          write_timeout_(write_timeout),
          read_until_(std::chrono::steady_clock::now() + kReadGrace) {}

    bool is_readable() const override { return buffered() > 0 || wait(POLLIN, read_timeout_); }
    // Writable, and the client has not gone: a client that closed its end (it left a stream) makes
    // the next write fail instead of filling the socket.
    bool is_writable() const override { return wait(POLLOUT, write_timeout_) && alive(); }
    ssize_t read(char* out, size_t size) override {
        // The library reads a line (a chunk's size line, a trailer) a byte at a time and keeps it
        // whole, with no limit: a chunk extension of a gigabyte grew the server by a gigabyte.
        // Bytes asked for one at a time with no line end are counted, and past kMaxLine the read
        // fails (the request is refused unread). Body data is asked for in blocks.
        if (size == 1) {
            if (line_bytes_ > kMaxLine) return -1;
        } else {
            line_bytes_ = 0;
        }
        if (buffered() == 0) {
            auto left = std::chrono::ceil<std::chrono::milliseconds>(read_until_ - std::chrono::steady_clock::now());
            if (left.count() <= 0) {
                spdlog::info("request dropped: the client sent it slower than {} bytes a second", kMinReadRate);
                too_slowly = true;
                return -1;
            }
            if (!wait(POLLIN, std::min(read_timeout_, left))) {
                too_slowly = std::chrono::steady_clock::now() >= read_until_;
                if (too_slowly) spdlog::info("request dropped: the client sent it slower than {} bytes a second", kMinReadRate);
                return -1;
            }
            ssize_t n = ::recv(sock_, buffer_, sizeof buffer_, 0);
            if (n <= 0) return n;
            begin_ = 0;
            end_ = static_cast<size_t>(n);
            read_until_ += std::chrono::milliseconds(static_cast<int64_t>(end_) * 1000 / kMinReadRate);
        }
        size_t n = std::min(size, buffered());
        std::memcpy(out, buffer_ + begin_, n);
        begin_ += n;
        if (size == 1) line_bytes_ = out[0] == '\n' ? 0 : line_bytes_ + 1;
        return static_cast<ssize_t>(n);
    }
    ssize_t write(const char* data, size_t size) override {
        if (!wait(POLLOUT, write_timeout_)) return -1;
        return ::send(sock_, data, size, MSG_NOSIGNAL);
    }
    void get_remote_ip_and_port(std::string& ip, int& port) const override { address(::getpeername, ip, port); }
    void get_local_ip_and_port(std::string& ip, int& port) const override { address(::getsockname, ip, port); }
    socket_t socket() const override { return sock_; }

private:
    size_t buffered() const { return end_ - begin_; }
    bool wait(short event, std::chrono::milliseconds timeout) const {
        pollfd p{sock_, event, 0};
        for (;;) {
            int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
            if (n < 0 && errno == EINTR) continue;
            return n > 0 && (p.revents & event);
        }
    }
    bool alive() const {
        pollfd p{sock_, POLLIN, 0};
        if (::poll(&p, 1, 0) <= 0) return true;
        char byte;
        return ::recv(sock_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
    }
    template <typename Get>
    void address(Get get, std::string& ip, int& port) const {
        sockaddr_storage addr{};
        socklen_t length = sizeof addr;
        if (get(sock_, reinterpret_cast<sockaddr*>(&addr), &length) != 0) return;
        char host[NI_MAXHOST];
        if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), length, host, sizeof host, nullptr, 0, NI_NUMERICHOST) == 0)
            ip = host;
        if (addr.ss_family == AF_INET)
            port = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
        else if (addr.ss_family == AF_INET6)
            port = ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
    }

    static constexpr size_t kMaxLine = 64 << 10;  // as a request head: nothing legitimate is longer
    int sock_;
    std::chrono::milliseconds read_timeout_, write_timeout_;
    std::chrono::steady_clock::time_point read_until_;
    size_t line_bytes_ = 0;
    char buffer_[4096];
    size_t begin_ = 0, end_ = 0;
};

// cpp-httplib hands each accepted connection to its task queue; this one runs the hand-off on the
// accepting thread, where ScreenedServer gives the socket to the connection gate (never blocking).
class AcceptInline final : public httplib::TaskQueue {
public:
    void enqueue(std::function<void()> fn) override { fn(); }
    void shutdown() override {}
};

std::chrono::milliseconds timeout(time_t seconds, time_t microseconds) {
    return std::chrono::milliseconds(seconds * 1000 + microseconds / 1000);
}

}  // namespace

httplib::TaskQueue* make_accept_inline() { return new AcceptInline; }  // NOLINT: the library deletes it

void ScreenedServer::serve(int sock) {
    ConnectionStream stream(sock, timeout(read_timeout_sec_, read_timeout_usec_),
                            timeout(write_timeout_sec_, write_timeout_usec_));
    bool closed = false;
    served_connection = sock;
    too_slowly = false;
    process_request(stream, true, closed, nullptr);
    served_connection = -1;
}

}  // namespace agenthost::server
