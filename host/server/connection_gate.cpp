#include "server/connection_gate.hpp"

#include "server/worker_pool.hpp"

#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace agenthost::server {
namespace {

using Clock = std::chrono::steady_clock;

// A refused connection is read and dropped for this long (at most kDrainBytes) before it is closed:
// closing with unread bytes would reset it, and the client might never see the answer.
constexpr std::chrono::milliseconds kDrainFor{500};
constexpr size_t kDrainBytes = 1 << 20;
constexpr size_t kProbeThreads = 4;
// The watcher wakes at least this often, so a connection admitted while it sleeps is timed out
// at most this late.
constexpr int kLongestSleepMs = 1000;

// The peer's address without its port, as bytes (an IPv4-mapped IPv6 address counts as the IPv4
// one), and the same in words for the log.
struct Peer {
    std::string key;
    std::string text;
};

Peer peer_of(int sock) {
    sockaddr_storage addr{};
    socklen_t length = sizeof addr;
    if (::getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &length) != 0) return {"?", "unknown"};
    char text[INET6_ADDRSTRLEN] = "";
    if (addr.ss_family == AF_INET) {
        const auto& v4 = reinterpret_cast<const sockaddr_in&>(addr).sin_addr;
        ::inet_ntop(AF_INET, &v4, text, sizeof text);
        return {std::string(reinterpret_cast<const char*>(&v4), sizeof v4), text};
    }
    if (addr.ss_family == AF_INET6) {
        const auto& v6 = reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(&v6)) {
            ::inet_ntop(AF_INET, v6.s6_addr + 12, text, sizeof text);
            return {std::string(reinterpret_cast<const char*>(v6.s6_addr + 12), 4), text};
        }
        ::inet_ntop(AF_INET6, &v6, text, sizeof text);
        return {std::string(reinterpret_cast<const char*>(&v6), sizeof v6), text};
    }
    return {"?", "unknown"};
}

// GET (or HEAD) /health or /readyz: answered on the probes' own threads.
bool is_probe(std::string_view head) {
    for (std::string_view method : {"GET ", "HEAD "}) {
        if (head.substr(0, method.size()) != method) continue;
        std::string_view target = head.substr(method.size());
        for (std::string_view path : {"/health", "/readyz"})
            if (target.substr(0, path.size()) == path && target.size() > path.size() &&
                (target[path.size()] == ' ' || target[path.size()] == '?'))
                return true;
    }
    return false;
}

// Wakes the watcher only when more than `bytes` - 1 have arrived (TCP honours it for epoll too).
// Returns the mark the kernel took: it caps it at what the socket's buffer may hold.
size_t set_low_water(int sock, size_t bytes) {
    int value = static_cast<int>(bytes);
    ::setsockopt(sock, SOL_SOCKET, SO_RCVLOWAT, &value, sizeof value);
    socklen_t length = sizeof value;
    if (::getsockopt(sock, SOL_SOCKET, SO_RCVLOWAT, &value, &length) != 0 || value < 1) return bytes;
    return static_cast<size_t>(value);
}

// Bytes that have arrived and wait to be read.
size_t unread_bytes(int sock) {
    int n = 0;
    return ::ioctl(sock, FIONREAD, &n) == 0 && n > 0 ? static_cast<size_t>(n) : 0;
}

// The event said so, but it may be a closed socket's whose number was reused: asked again.
bool still_hung_up(int sock) {
    pollfd now{sock, POLLRDHUP, 0};
    return ::poll(&now, 1, 0) > 0 && (now.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

// Best effort, never blocking: a refusal is small and the socket's buffer is empty.
void send_now(int sock, const std::string& response) {
    for (size_t sent = 0; sent < response.size();) {
        ssize_t n = ::send(sock, response.data() + sent, response.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
    }
}

}  // namespace

struct ConnectionGate::State {
    enum class Phase { head, body, draining };
    struct Waiting {
        Phase phase = Phase::head;
        Clock::time_point deadline;
        size_t seen = 0;     // head bytes already judged incomplete
        size_t dropped = 0;  // bytes read and dropped while draining
        Peer peer;
        // Phase::body: the head's framing, and the bytes (head and body) to wait for.
        BodyFraming framing = {};
        size_t needed = 0;
    };

    State(GateLimits l, Serve s)
        : limits(l),
          serve(std::move(s)),
          serving(8, limits.max_served),
          probes(0, kProbeThreads),
          peek(limits.head.max_bytes + kGateBodyBytes + 1) {}

    const GateLimits limits;
    const Serve serve;
    int epoll = -1;
    int wake = -1;  // eventfd: stop() wakes the watcher through it
    mutable std::mutex mutex;
    std::unordered_map<int, Waiting> waiting;
    std::set<std::pair<Clock::time_point, int>> deadlines;       // of every waiting connection, both phases
    std::unordered_map<std::string, size_t> open_per_address;    // waiting, queued and served
    std::unordered_map<std::string, size_t> served_per_address;  // queued and served
    size_t heads = 0;                                            // connections waiting for their request
    bool stopping = false;
    WorkerPool serving;
    WorkerPool probes;
    std::vector<char> peek;  // the watcher's buffer for peeking at heads and chunked bodies
    std::thread watcher;

    // ---- bookkeeping, all with `mutex` held ----

    void release(const Peer& peer) {
        auto it = open_per_address.find(peer.key);
        if (it != open_per_address.end() && --it->second == 0) open_per_address.erase(it);
    }

    // Takes a waiting connection out of the gate (the socket stays open).
    Waiting forget(int sock) {
        auto it = waiting.find(sock);
        Waiting w = std::move(it->second);
        waiting.erase(it);
        deadlines.erase({w.deadline, sock});
        if (w.phase != Phase::draining) --heads;
        ::epoll_ctl(epoll, EPOLL_CTL_DEL, sock, nullptr);
        return w;
    }

    void close_waiting(int sock) {
        Waiting w = forget(sock);
        ::close(sock);
        release(w.peer);
    }

    void watch(int sock, Waiting w) {
        if (w.phase != Phase::draining) ++heads;
        deadlines.insert({w.deadline, sock});
        waiting.emplace(sock, std::move(w));
    }

    // Answers a connection with `response` and keeps it a moment to drop what the client still sends.
    void refuse(int sock, const std::string& response) {
        Waiting w = forget(sock);
        drain(sock, std::move(w.peer), response);
    }

    // The same for a connection not yet waiting here (its address already counts it).
    void drain(int sock, Peer peer, const std::string& response) {
        send_now(sock, response);
        ::shutdown(sock, SHUT_WR);
        set_low_water(sock, 1);
        epoll_event interest{EPOLLIN | EPOLLRDHUP | EPOLLET, {}};
        interest.data.fd = sock;
        if (::epoll_ctl(epoll, EPOLL_CTL_ADD, sock, &interest) != 0) {
            ::close(sock);
            release(peer);
            return;
        }
        watch(sock, {Phase::draining, Clock::now() + kDrainFor, 0, 0, std::move(peer)});
    }

    // The connection is no longer served (it may still be open: draining).
    void unserve(const Peer& peer) {
        auto it = served_per_address.find(peer.key);
        if (it != served_per_address.end() && --it->second == 0) served_per_address.erase(it);
    }

    void release_served(const Peer& peer) {
        unserve(peer);
        release(peer);
    }

    // The head is whole: the connection goes to a serving thread (a probe's own, for a probe),
    // unless its address has max_per_address being served already: 503 then. A probe is always
    // answered, so one local client holding its address's share cannot fail another's /health.
    void hand_over(int sock, bool probe) {
        size_t& busy = served_per_address[waiting.at(sock).peer.key];
        if (!probe && busy >= limits.max_per_address) {
            spdlog::warn("connection refused: too_many_connections client={} served={} limit={}", waiting.at(sock).peer.text,
                         busy, limits.max_per_address);
            return refuse(sock, too_many_connections_refusal(limits.max_per_address));
        }
        ++busy;
        Waiting w = forget(sock);
        set_low_water(sock, 1);  // the HTTP library reads as usual from here
        auto job = [this, sock, peer = w.peer] {
            serve(sock);
            std::lock_guard lock(mutex);
            if (stopping) {
                ::close(sock);
                release_served(peer);
                return;
            }
            unserve(peer);
            // A request refused before its body was read (413, 503 for memory) leaves that body
            // unread: closing at once would reset the connection, and the client might never see
            // the answer. What it still sends is read and dropped a moment first, on the gate's
            // thread; a client that read its answer closes, and so does the gate then.
            drain(sock, peer, {});
        };
        if (!(probe ? probes : serving).enqueue(job)) {  // stopping
            ::close(sock);
            release_served(w.peer);
        }
    }

    // The head is whole and says a body follows: the connection waits here for the body too (its
    // first kGateBodyBytes), with a deadline of its own. A client that waits for "100 Continue"
    // before it sends the body is sent one (the HTTP library sends another later: a client takes
    // any number of 1xx answers).
    void wait_for_body(int sock, const BodyFraming& framing) {
        Waiting& w = waiting.at(sock);
        deadlines.erase({w.deadline, sock});
        w.phase = Phase::body;
        w.deadline = Clock::now() + limits.head.deadline;
        deadlines.insert({w.deadline, sock});
        w.framing = framing;
        w.needed = framing.head_bytes + std::min(framing.chunked ? kGateBodyBytes : framing.length, kGateBodyBytes);
        if (framing.expects_continue) send_now(sock, "HTTP/1.1 100 Continue\r\n\r\n");
        on_body(sock, 0);  // it may be here already
    }

    void on_body(int sock, uint32_t events) {
        Waiting& w = waiting.at(sock);
        bool whole = false;
        size_t got = 0;
        if (w.framing.chunked) {
            ssize_t n = ::recv(sock, peek.data(), w.needed, MSG_PEEK | MSG_DONTWAIT);
            got = n > 0 ? static_cast<size_t>(n) : 0;
            whole = got >= w.needed || (got > w.framing.head_bytes &&
                                        chunked_body_progress(std::string_view(peek.data(), got).substr(w.framing.head_bytes)) !=
                                            ChunkedBody::incomplete);
        } else {
            got = unread_bytes(sock);
            whole = got >= w.needed;
        }
        if (whole) return hand_over(sock, false);
        if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && still_hung_up(sock)) return close_waiting(sock);
        // The kernel holds at most so much unread: past that mark no more comes, so that is enough.
        size_t mark = set_low_water(sock, w.framing.chunked ? got + 1 : w.needed);
        if (!w.framing.chunked && mark < w.needed) {
            w.needed = mark;
            if (got >= w.needed) return hand_over(sock, false);
        }
    }

    // The connection of `key` that has waited longest for its request, if any.
    std::optional<int> oldest_head(const std::string* key) const {
        std::optional<std::pair<Clock::time_point, int>> oldest;
        for (const auto& [sock, w] : waiting)
            if (w.phase != Phase::draining && (!key || w.peer.key == *key) && (!oldest || w.deadline < oldest->first))
                oldest = std::pair{w.deadline, sock};
        if (!oldest) return std::nullopt;
        return oldest->second;
    }

    // ---- the watcher ----

    void on_ready(int sock, uint32_t events) {
        Waiting& w = waiting.at(sock);
        const bool hung_up = events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR);
        if (w.phase == Phase::draining) {
            for (;;) {
                ssize_t n = ::recv(sock, peek.data(), peek.size(), MSG_DONTWAIT);
                if (n < 0 && errno == EINTR) continue;
                if (n < 0 && errno == EAGAIN) return;
                if (n <= 0 || (w.dropped += static_cast<size_t>(n)) > kDrainBytes) return close_waiting(sock);
            }
        }
        if (w.phase == Phase::body) return on_body(sock, events);
        ssize_t got = ::recv(sock, peek.data(), peek.size(), MSG_PEEK | MSG_DONTWAIT);
        // Nothing to read: an event of a socket closed meanwhile whose number was reused.
        if (got < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (got <= 0) return close_waiting(sock);
        std::string_view bytes(peek.data(), static_cast<size_t>(got));
        std::optional<HeadVerdict> verdict = judge_request_head(bytes, limits.head);
        if (verdict == HeadVerdict::complete) {
            if (is_probe(bytes)) return hand_over(sock, true);
            BodyFraming framing = body_framing(bytes);
            // A body over the limit is refused (413) by the library without being read: no wait.
            if (!framing.awaited || framing.length > limits.max_body_bytes) return hand_over(sock, false);
            return wait_for_body(sock, framing);
        }
        if (verdict) {
            spdlog::warn("request refused before parsing: {} client={} limit_bytes={} limit_fields={}",
                         head_verdict_name(*verdict), w.peer.text, limits.head.max_bytes, limits.head.max_fields);
            return refuse(sock, head_refusal(*verdict, limits.head));
        }
        if (hung_up && still_hung_up(sock)) return close_waiting(sock);  // the client stopped sending, head unfinished
        w.seen = static_cast<size_t>(got);
        set_low_water(sock, w.seen + 1);
    }

    // Heads and bodies past their deadline get 408; drained connections are closed.
    void expire(Clock::time_point now) {
        while (!deadlines.empty() && deadlines.begin()->first <= now) {
            int sock = deadlines.begin()->second;
            const Phase phase = waiting.at(sock).phase;
            if (phase == Phase::draining) {
                close_waiting(sock);
                continue;
            }
            const HeadVerdict verdict = phase == Phase::head ? HeadVerdict::timed_out : HeadVerdict::body_timed_out;
            spdlog::debug("request refused before parsing: {} client={}", head_verdict_name(verdict), waiting.at(sock).peer.text);
            refuse(sock, head_refusal(verdict, limits.head));
        }
    }

    int sleep_ms(Clock::time_point now) const {
        if (deadlines.empty()) return kLongestSleepMs;
        auto left = std::chrono::ceil<std::chrono::milliseconds>(deadlines.begin()->first - now).count();
        return static_cast<int>(std::clamp<int64_t>(left, 0, kLongestSleepMs));
    }

    void run() {
        std::vector<epoll_event> events(256);
        int sleep = kLongestSleepMs;
        for (;;) {
            int n = ::epoll_wait(epoll, events.data(), static_cast<int>(events.size()), sleep);
            std::lock_guard lock(mutex);
            if (stopping) return;
            for (int i = 0; i < n; ++i) {
                int sock = events[static_cast<size_t>(i)].data.fd;
                if (sock == wake || !waiting.count(sock)) continue;  // stop(), or closed meanwhile
                on_ready(sock, events[static_cast<size_t>(i)].events);
            }
            auto now = Clock::now();
            expire(now);
            sleep = sleep_ms(now);
        }
    }
};

ConnectionGate::ConnectionGate(GateLimits limits, Serve serve) : state_(std::make_unique<State>(limits, std::move(serve))) {
    State& s = *state_;
    s.epoll = ::epoll_create1(EPOLL_CLOEXEC);
    s.wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_event interest{EPOLLIN, {}};
    interest.data.fd = s.wake;
    ::epoll_ctl(s.epoll, EPOLL_CTL_ADD, s.wake, &interest);
    s.watcher = std::thread([&s] { s.run(); });
}

ConnectionGate::~ConnectionGate() {
    stop();
    ::close(state_->epoll);
    ::close(state_->wake);
}

void ConnectionGate::admit(int sock) {
    State& s = *state_;
    std::lock_guard lock(s.mutex);
    if (s.stopping) {
        ::close(sock);
        return;
    }
    Peer peer = peer_of(sock);
    if (size_t open = s.open_per_address[peer.key]; open >= s.limits.max_per_address) {
        // The address is at its cap: its oldest connection still waiting for a head goes (an idle
        // client loses its idle connections first). With none waiting this one waits for its head
        // all the same: a probe is answered, anything else refused (hand_over).
        if (auto oldest = s.oldest_head(&peer.key)) {
            spdlog::debug("idle connection closed: client={} has {} open ([server] max_connections_per_address)", peer.text,
                          open);
            s.close_waiting(*oldest);
        }
    }
    if (s.heads >= s.limits.max_waiting)
        if (auto oldest = s.oldest_head(nullptr)) {
            spdlog::debug("idle connection closed: {} connections wait for their head", s.heads);
            s.close_waiting(*oldest);
        }
    ++s.open_per_address[peer.key];
    s.watch(sock, {State::Phase::head, Clock::now() + s.limits.head.deadline, 0, 0, std::move(peer)});
    // Edge-triggered: with the low-water mark, the watcher wakes when bytes past those it judged
    // arrive, not again and again for the same ones. Bytes already here are reported at once.
    epoll_event interest{EPOLLIN | EPOLLRDHUP | EPOLLET, {}};
    interest.data.fd = sock;
    if (::epoll_ctl(s.epoll, EPOLL_CTL_ADD, sock, &interest) != 0) s.close_waiting(sock);
}

void ConnectionGate::stop() {
    State& s = *state_;
    {
        std::lock_guard lock(s.mutex);
        if (s.stopping) return;
        s.stopping = true;
        uint64_t one = 1;
        (void)!::write(s.wake, &one, sizeof one);
    }
    if (s.watcher.joinable()) s.watcher.join();
    {
        std::lock_guard lock(s.mutex);
        while (!s.waiting.empty()) s.close_waiting(s.waiting.begin()->first);
    }
    s.serving.shutdown();
    s.probes.shutdown();
}

}  // namespace agenthost::server
