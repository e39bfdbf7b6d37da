// A loopback HTTP/1.1 server written on bare sockets, for the misbehaviours a real server library
// will not produce: bytes sent after an answer, a connection that goes silent, a reply written
// in two pieces without TCP_NODELAY. Each connection is numbered from 1 in the order accepted; a
// handler decides each answer from the connection's number and the request's. Stops (closing
// every connection and joining its threads) when it goes out of scope.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace test {

class RawHttpServer {
public:
    struct Request {
        int connection = 0;  // 1 for the first connection accepted
        int number = 0;      // 1 for the first request on its connection
        std::string head;    // the request line and headers
        std::string body;
    };
    // What the server does after writing `body` as a 200 answer (Content-Length set).
    enum class After { keep, close, stray_bytes, go_silent };
    struct Answer {
        std::string body;
        After after = After::keep;
        int status = 200;
        bool in_two_writes = false;  // the head, then the body, as separate writes
    };
    using Handler = std::function<Answer(const Request&)>;

    explicit RawHttpServer(Handler handler, bool tcp_nodelay = true) : handler_(std::move(handler)), nodelay_(tcp_nodelay) {
        listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof address;
        if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 && ::listen(listener_, 16) == 0 &&
            ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) == 0)
            port_ = ntohs(address.sin_port);
        acceptor_ = std::thread([this] { accept_loop(); });
    }
    ~RawHttpServer() {
        stopping_ = true;
        ::shutdown(listener_, SHUT_RDWR);
        acceptor_.join();
        {
            std::lock_guard lock(mutex_);
            for (int fd : open_) ::shutdown(fd, SHUT_RDWR);
        }
        for (auto& t : connections_) t.join();
        ::close(listener_);
    }
    RawHttpServer(const RawHttpServer&) = delete;
    RawHttpServer& operator=(const RawHttpServer&) = delete;

    std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
    int connections_accepted() const { return accepted_.load(); }
    // Connections whose client closed them (the server read the end of the stream).
    int connections_closed_by_client() const { return closed_by_client_.load(); }

private:
    void accept_loop() {
        while (!stopping_) {
            int fd = ::accept(listener_, nullptr, nullptr);
            if (fd < 0) return;
            int number = ++accepted_;
            if (nodelay_) {
                int one = 1;
                ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            }
            std::lock_guard lock(mutex_);
            open_.push_back(fd);
            connections_.emplace_back([this, fd, number] { serve(fd, number); });
        }
    }

    static bool write_all(int fd, const std::string& bytes) {
        for (size_t sent = 0; sent < bytes.size();) {
            ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
            if (n <= 0) return false;
            sent += static_cast<size_t>(n);
        }
        return true;
    }

    // Reads one request (head and a Content-Length body) from `pending` and the socket.
    static bool read_request(int fd, std::string& pending, Request& out) {
        char buffer[8192];
        for (;;) {
            size_t end = pending.find("\r\n\r\n");
            if (end != std::string::npos) {
                out.head = pending.substr(0, end);
                size_t length = 0, at = out.head.find("Content-Length: ");
                if (at == std::string::npos) at = out.head.find("content-length: ");
                if (at != std::string::npos) length = std::stoul(out.head.substr(at + 16));
                if (pending.size() >= end + 4 + length) {
                    out.body = pending.substr(end + 4, length);
                    pending.erase(0, end + 4 + length);
                    return true;
                }
            }
            ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
            if (n <= 0) return false;
            pending.append(buffer, static_cast<size_t>(n));
        }
    }

    void serve(int fd, int connection) {
        std::string pending;
        Request request;
        request.connection = connection;
        bool client_closed = true;  // unless the loop leaves for a reason of its own
        while (read_request(fd, pending, request)) {
            ++request.number;
            Answer answer = handler_(request);
            std::string head = "HTTP/1.1 " + std::to_string(answer.status) +
                               " X\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(answer.body.size()) +
                               (answer.after == After::close ? "\r\nConnection: close" : "") + "\r\n\r\n";
            bool written =
                answer.in_two_writes ? write_all(fd, head) && write_all(fd, answer.body) : write_all(fd, head + answer.body);
            if (!written || answer.after == After::close) {
                client_closed = false;
                break;
            }
            if (answer.after == After::stray_bytes) write_all(fd, "HTTP/1.1 200 X\r\nContent-Length: 5\r\n\r\nstray");
            if (answer.after == After::go_silent) {  // reads on, answers nothing, until the test ends
                char sink[4096];
                while (::recv(fd, sink, sizeof sink, 0) > 0) {
                }
                client_closed = false;
                break;
            }
        }
        if (client_closed && !stopping_) ++closed_by_client_;
        ::shutdown(fd, SHUT_RDWR);
        std::lock_guard lock(mutex_);
        std::erase(open_, fd);
        ::close(fd);
    }

    Handler handler_;
    bool nodelay_;
    int listener_ = -1;
    int port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<int> accepted_{0};
    std::atomic<int> closed_by_client_{0};
    std::mutex mutex_;
    std::vector<int> open_;
    std::vector<std::thread> connections_;
    std::thread acceptor_;
};

}  // namespace test
