// Benchmark: HTTP requests the size of a model call (4 KiB posted, 2 KiB answered) through the
// host's HTTP service, the one every provider plugin uses, to loopback servers: on a connection kept
// from the request before, and on a new connection each time; over plain HTTP and over TLS (a
// self-signed certificate made for the run, trusted through SSL_CERT_FILE), and to a server that
// writes its head and body apart without TCP_NODELAY. Beside them, the limit measured in the same
// run: the same bytes there and back over an open loopback TCP connection.
//   agenthost_http_bench [--requests N]
#include "plugins/http_client.hpp"
#include "support/raw_http_server.hpp"

#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

using Clock = std::chrono::steady_clock;
using agenthost::plugins::KeptConnections;

namespace {

constexpr size_t kPosted = 4096, kAnswered = 2048;

double us_per(Clock::time_point start, int n) {
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count() / n;
}

// Microseconds per replayable POST to `url`; a new pool per request when `kept` is null. Exits when
// one fails (a figure of failures means nothing).
double requests_us(const std::string& url, int n, KeptConnections* kept) {
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
    request.flags = AH_HTTP_REPLAYABLE;
    auto start = Clock::now();
    for (int i = 0; i < n; ++i) {
        received = 0;
        KeptConnections fresh;
        ah_status status = agenthost::plugins::http_perform(request, callbacks, kept ? kept : &fresh);
        if (status != AH_OK || received != kAnswered) {
            std::fprintf(stderr, "agenthost_http_bench: request %d to %s failed (status %d, %zu bytes)\n", i, url.c_str(), status,
                         received);
            std::exit(1);
        }
    }
    return us_per(start, n);
}

// Kept and new, in turn, twice, so neither has only the quiet or only the busy moments.
std::pair<double, double> kept_and_new(const std::string& url, int n) {
    KeptConnections kept;
    (void)requests_us(url, 5, &kept);  // warms up (and loads the http-client module)
    double on_kept = 0, on_new = 0;
    for (int round = 0; round < 2; ++round) {
        on_kept += requests_us(url, n / 2, &kept) / 2;
        on_new += requests_us(url, n / 2, nullptr) / 2;
    }
    return {on_kept, on_new};
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

// A self-signed certificate for 127.0.0.1 in `dir` (openssl's command line); false when it fails.
bool make_certificate(const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir);
    std::string command =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=127.0.0.1 "
        "-addext subjectAltName=IP:127.0.0.1 -keyout '" +
        (dir / "key.pem").string() + "' -out '" + (dir / "cert.pem").string() + "' >/dev/null 2>&1";
    return std::system(command.c_str()) == 0;
}

template <typename Server>
int serve(Server& server, std::thread& serving) {
    const std::string answer(kAnswered, 'y');
    server.Post("/", [answer](const httplib::Request&, httplib::Response& res) { res.set_content(answer, "application/json"); });
    server.set_keep_alive_max_count(1'000'000);
    server.set_tcp_nodelay(true);
    int port = server.bind_to_any_port("127.0.0.1");
    serving = std::thread([&server] { server.listen_after_bind(); });
    while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return port;
}

}  // namespace

int main(int argc, char** argv) {
    int n = 1000;
    for (int i = 1; i + 1 < argc; i += 2)
        if (std::string(argv[i]) == "--requests") n = std::max(2, std::atoi(argv[i + 1]));
    const auto certs = std::filesystem::temp_directory_path() / ("agenthost-http-bench-" + std::to_string(::getpid()));
    if (!make_certificate(certs)) {
        std::fprintf(stderr, "agenthost_http_bench: openssl could not make a test certificate\n");
        return 1;
    }
    ::setenv("SSL_CERT_FILE", (certs / "cert.pem").c_str(), 1);

    httplib::Server plain;
    httplib::SSLServer tls((certs / "cert.pem").c_str(), (certs / "key.pem").c_str());
    std::thread plain_thread, tls_thread;
    const std::string plain_url = "http://127.0.0.1:" + std::to_string(serve(plain, plain_thread)) + "/";
    const std::string tls_url = "https://127.0.0.1:" + std::to_string(serve(tls, tls_thread)) + "/";
    // A server that writes its head, then its body, with Nagle on: a kept connection whose client
    // delays its ACKs would wait 40 ms between them.
    test::RawHttpServer nagle(
        [](const test::RawHttpServer::Request&) {
            test::RawHttpServer::Answer a{std::string(kAnswered, 'y')};
            a.in_two_writes = true;
            return a;
        },
        false);

    auto [plain_kept, plain_new] = kept_and_new(plain_url, n);
    auto [tls_kept, tls_new] = kept_and_new(tls_url, n);
    KeptConnections nagle_kept;
    (void)requests_us(nagle.url("/"), 5, &nagle_kept);
    double nagle_us = requests_us(nagle.url("/"), std::min(n, 200), &nagle_kept);
    double nagle_new_us = requests_us(nagle.url("/"), std::min(n, 200), nullptr);
    double limit = tcp_round_trip_us(n);
    plain.stop();
    tls.stop();
    plain_thread.join();
    tls_thread.join();
    std::filesystem::remove_all(certs);

    std::printf("HTTP request of a model call's size (%zu B posted, %zu B answered), loopback, %d each:\n", kPosted, kAnswered,
                n);
    std::printf("  http,  kept connection:   %8.1f µs\n", plain_kept);
    std::printf("  http,  new connection:    %8.1f µs (the TCP handshake: %.1f µs more)\n", plain_new, plain_new - plain_kept);
    std::printf("  https, kept connection:   %8.1f µs\n", tls_kept);
    std::printf("  https, new connection:    %8.1f µs (TCP and TLS handshakes: %.1f µs more, %.1f× the kept one)\n", tls_new,
                tls_new - tls_kept, tls_new / tls_kept);
    std::printf("  http,  server without TCP_NODELAY writing head and body apart: kept %.1f µs, new %.1f µs\n", nagle_us,
                nagle_new_us);
    std::printf(
        "limit: the same bytes there and back on an open loopback TCP connection: %.1f µs -> http kept %.1f×, https kept %.1f×\n",
        limit, plain_kept / limit, tls_kept / limit);
    std::printf("over the internet each handshake is also a network round trip or two (tens of ms), which loopback hides\n");
    return 0;
}
