// Benchmark: an HTTP request the size of a model call (4 KiB posted, 2 KiB answered) through the
// host's HTTP service (the one every provider plugin uses), to a loopback server: on a connection
// kept from the request before, and on a new connection each time (the server closes each one).
// Beside them, the limit measured in the same run: the same bytes there and back over an open
// loopback TCP connection, between two threads. Over https the kept connection also saves a TLS
// handshake, which this loopback run does not measure.
//   agenthost_http_bench [--requests N]
#include "plugins/http_client.hpp"

#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kPosted = 4096, kAnswered = 2048;

double us_per(Clock::time_point start, int n) {
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / n;
}

// Microseconds per request to `url`; exits when one fails (a figure of failures means nothing).
double requests_us(const std::string& url, int n) {
    const std::string body(kPosted, 'x');
    agenthost::plugins::HttpCallbacks callbacks;
    size_t received = 0;
    callbacks.on_body = [&](std::string_view chunk) {
        received += chunk.size();
        return AH_OK;
    };
    ah_http_request request{};
    request.struct_size = sizeof request;
    request.method = {"POST", 4};
    request.url = {url.data(), url.size()};
    request.body = {body.data(), body.size()};
    auto start = Clock::now();
    for (int i = 0; i < n; ++i) {
        received = 0;
        ah_status status = agenthost::plugins::http_perform(request, callbacks);
        if (status != AH_OK || received != kAnswered) {
            std::fprintf(stderr, "agenthost_http_bench: request %d to %s failed (status %d, %zu bytes)\n", i, url.c_str(), status,
                         received);
            std::exit(1);
        }
    }
    return us_per(start, n);
}

// The same bytes there and back over one open loopback TCP connection, between two threads.
double tcp_round_trip_us(int n) {
    int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener, 1) != 0 ||
        ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0)
        return 0;
    auto read_all = [](int fd, char* out, size_t size) {
        for (size_t got = 0; got < size;) {
            ssize_t r = ::read(fd, out + got, size - got);
            if (r <= 0) return false;
            got += static_cast<size_t>(r);
        }
        return true;
    };
    std::thread server([&] {
        int fd = ::accept(listener, nullptr, nullptr);
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        std::string in(kPosted, '\0'), out(kAnswered, 'y');
        while (read_all(fd, in.data(), in.size())) (void)!::write(fd, out.data(), out.size());
        ::close(fd);
    });
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return 0;
    std::string out(kPosted, 'x'), in(kAnswered, '\0');
    auto start = Clock::now();
    for (int i = 0; i < n; ++i) {
        (void)!::write(fd, out.data(), out.size());
        if (!read_all(fd, in.data(), in.size())) break;
    }
    double us = us_per(start, n);
    ::close(fd);
    server.join();
    ::close(listener);
    return us;
}

}  // namespace

int main(int argc, char** argv) {
    int n = 2000;
    for (int i = 1; i + 1 < argc; i += 2)
        if (std::string(argv[i]) == "--requests") n = std::max(1, std::atoi(argv[i + 1]));
    httplib::Server server;
    const std::string answer(kAnswered, 'y');
    server.Post("/kept", [&](const httplib::Request&, httplib::Response& res) { res.set_content(answer, "application/json"); });
    server.Post("/closed", [&](const httplib::Request&, httplib::Response& res) {
        res.set_header("Connection", "close");
        res.set_content(answer, "application/json");
    });
    server.set_keep_alive_max_count(1'000'000);
    // As model servers do (llama.cpp, Ollama, uvicorn). Without it this server's reply on a kept
    // connection waits for the client's delayed ACK between its head and its body: 44 ms here.
    server.set_tcp_nodelay(true);
    int port = server.bind_to_any_port("127.0.0.1");
    std::thread serving([&] { server.listen_after_bind(); });
    while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const std::string base = "http://127.0.0.1:" + std::to_string(port);

    (void)requests_us(base + "/kept", 10);  // loads the http-client module and warms up
    // In turn, twice, so neither side alone has the quiet or the busy moments of the machine.
    double kept = 0, fresh = 0;
    for (int round = 0; round < 2; ++round) {
        kept += requests_us(base + "/kept", n / 2);
        fresh += requests_us(base + "/closed", n / 2);
    }
    kept /= 2;
    fresh /= 2;
    double limit = tcp_round_trip_us(n);
    server.stop();
    serving.join();
    std::printf("HTTP request of a model call's size (%zu B posted, %zu B answered), loopback, %d each way:\n", kPosted,
                kAnswered, n);
    std::printf("  on a kept connection:        %8.1f µs\n", kept);
    std::printf("  on a new connection each:    %8.1f µs (%.1f µs more; over https a TLS handshake more again)\n", fresh,
                fresh - kept);
    std::printf("limit: the same bytes there and back on an open loopback TCP connection: %.1f µs -> kept %.1f×, new %.1f×\n",
                limit, kept / limit, fresh / limit);
    return 0;
}
