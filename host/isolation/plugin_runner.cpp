// agenthost-plugin-runner: loads one plugin (.so, same ABI, no rebuild) in its own process and
// serves it to the host over stdin/stdout frames (isolation/frames.hpp). Requests from the host
// (create, list_tools, call_tool, chat …) each run on a thread of their own while another reads
// the next frames, so a call can be cancelled and host services (log, key-value, memory, events,
// HTTP) can be forwarded to the host while it runs. The plugin's own stdout goes to stderr, so it cannot corrupt the protocol.
//   agenthost-plugin-runner --manifest PLUGIN.toml [--memory-mb N] [--cpu-seconds N] [--sandbox RULES-JSON]
#include "common/base64.hpp"
#include "common/bounded_json.hpp"
#include "isolation/frames.hpp"
#include "isolation/protocol.hpp"
#include "plugins/abi_text.hpp"
#include "isolation/sandbox.hpp"
#include "plugins/loader.hpp"
#include "plugins/manifest.hpp"
#include "plugins/tool_check.hpp"

#include <agenthost/agenthost.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <thread>
#include <vector>

using nlohmann::json;
using namespace agenthost;
using isolation::kWriterSlots;
using isolation::Op;
using isolation::op_name;
using isolation::parse_op;
using isolation::writer_slot;
using isolation::WriterSlot;

struct ah_cancel {
    std::atomic<bool> fired{false};
    std::string call_id;  // the host's call, so a forwarded HTTP request uses its cancel token
};

namespace {

using agenthost::plugins::view;
ah_str str(std::string_view s) { return {s.data(), s.size()}; }

// Text for a frame: invalid UTF-8 repaired as the host repairs in-process output, so both read the same.

// What a plugin writes, up to what one frame can carry back to the host.
struct TextWriter {
    std::string text;
    bool overflowed = false;
    ah_writer writer{sizeof(ah_writer), this, [](void* ctx, const char* data, size_t len) -> ah_status {
                         auto* self = static_cast<TextWriter*>(ctx);
                         if (!data && len) return AH_ERR_INVALID_ARGUMENT;
                         if (self->text.size() + len > isolation::kMaxFrameBytes) {
                             self->overflowed = true;
                             return AH_ERR_NO_MEMORY;
                         }
                         self->text.append(data, len);
                         return AH_OK;
                     }};
};

class Runner;

}  // namespace

struct ah_host {
    Runner* runner;
};

namespace {

class Runner {
public:
    Runner(int in, int out, plugins::LoadedLibrary lib) : frames_(in), out_(out), lib_(std::move(lib)) {
        api_.struct_size = sizeof api_;
        api_.abi_major = AH_ABI_MAJOR;
        api_.abi_minor = AH_ABI_MINOR;
        api_.host_version = AGENTHOST_VERSION;
        api_.log = [](ah_host* h, int32_t level, ah_str message, ah_str fields) {
            h->runner->out_.write(
                {{"op", op_name(Op::log)}, {"level", level}, {"message", view(message)}, {"fields", view(fields)}});
        };
        api_.get_config = [](ah_host* h, const ah_writer* out) {
            return out->write(out->ctx, h->runner->config_.data(), h->runner->config_.size());
        };
        api_.kv_get = [](ah_host* h, ah_str key, const ah_writer* out) {
            return h->runner->text_service({{"op", op_name(Op::kv_get)}, {"key", view(key)}}, out);
        };
        api_.kv_set = [](ah_host* h, ah_str key, ah_str value) {
            return h->runner->status_service({{"op", op_name(Op::kv_set)}, {"key", view(key)}, {"value", view(value)}});
        };
        api_.kv_delete = [](ah_host* h, ah_str key) {
            return h->runner->status_service({{"op", op_name(Op::kv_delete)}, {"key", view(key)}});
        };
        api_.memory_get = [](ah_host* h, ah_str conversation, ah_str key, const ah_writer* out) {
            return h->runner->text_service(
                {{"op", op_name(Op::memory_get)}, {"conversation", view(conversation)}, {"key", view(key)}}, out);
        };
        api_.memory_set = [](ah_host* h, ah_str conversation, ah_str key, ah_str value) {
            return h->runner->status_service({{"op", op_name(Op::memory_set)},
                                              {"conversation", view(conversation)},
                                              {"key", view(key)},
                                              {"value", view(value)}});
        };
        api_.post_event = [](ah_host* h, ah_str conversation, ah_str event) {
            return h->runner->status_service(
                {{"op", op_name(Op::post_event)}, {"conversation", view(conversation)}, {"event", view(event)}});
        };
        api_.http_request = [](ah_host* h, const ah_http_request* request, const ah_http_sink* sink, const ah_cancel* cancel) {
            return h->runner->http(request, sink, cancel);
        };
        api_.data_dir = [](ah_host* h, const ah_writer* out) {
            return out->write(out->ctx, h->runner->data_dir_.data(), h->runner->data_dir_.size());
        };
        api_.is_cancelled = [](ah_host*, const ah_cancel* cancel) -> int32_t { return cancel && cancel->fired ? 1 : 0; };
        api_.tools_changed = [](ah_host* h) { return h->runner->status_service({{"op", op_name(Op::tools_changed)}}); };
        api_.progress = [](ah_host* h, ah_str call_id, double progress, double total, ah_str message) {
            return h->runner->status_service({{"op", op_name(Op::progress)},
                                              {"call_id", view(call_id)},
                                              {"progress", progress},
                                              {"total", total},
                                              {"message", view(message)}});
        };
        api_.sample = [](ah_host* h, ah_str call_id, ah_str request, const ah_writer* out) {
            return h->runner->text_service({{"op", op_name(Op::sample)}, {"call_id", view(call_id)}, {"request", view(request)}},
                                           out);
        };
        api_.elicit = [](ah_host* h, ah_str call_id, ah_str request, const ah_writer* out) {
            return h->runner->text_service({{"op", op_name(Op::elicit)}, {"call_id", view(call_id)}, {"request", view(request)}},
                                           out);
        };
        api_.resource_updated = [](ah_host* h, ah_str uri) {
            return h->runner->status_service({{"op", op_name(Op::resource_updated)}, {"uri", view(uri)}});
        };
    }

    // Reads the host's frames and runs its calls until it says destroy or goes away; never returns.
    // Threads take turns reading (leader and followers). The thread that reads a call runs it
    // itself and leaves the reading to the others without waking one: waking a thread costs about
    // as much as the rest of a short call's round trip, and a short call's thread is back to read
    // before anyone needs it. While calls come, waiting threads look every few milliseconds
    // whether the reading was left (so a long call holds back a cancel or a concurrent call by
    // that much at most); after a quiet second they sleep until a call wakes one. Threads are kept
    // for later calls.
    [[noreturn]] void serve() noexcept {
        try {
            for (;;) {
                auto [call, cancel] = next_call();
                handle(call, cancel);
                std::lock_guard lock(mutex_);
                --active_;
                replied_.notify_all();
            }
        } catch (const std::exception& e) {  // a frame not as the host writes them, or no thread to be had
            std::cerr << "agenthost-plugin-runner: " << e.what() << "\n";
            std::_Exit(1);
        }
    }

private:
    // Waits for the turn to read, then reads until a call arrives (answering the other frames on
    // the way) and hands the reading on.
    std::pair<json, std::shared_ptr<ah_cancel>> next_call() {
        {
            std::unique_lock lock(lead_mutex_);
            ++followers_;
            while (leading_) {
                if (std::chrono::steady_clock::now() - last_call_ < kFollowersWatch) {
                    lead_free_.wait_for(lock, kFollowersLook);
                } else {
                    ++sleepers_;
                    lead_free_.wait(lock);
                    --sleepers_;
                }
            }
            --followers_;
            leading_ = true;
        }
        while (auto message = frames_.next()) {
            json& m = *message;
            if (m.contains("reply")) {
                const int64_t id = m.value("reply", int64_t(0));
                std::lock_guard lock(mutex_);
                replies_[id] = std::move(m);  // (the key is read first: C++17 moves the right side before)
                replied_.notify_all();
            } else if (m.contains("part")) {  // a piece of a streamed service's answer, before its reply
                const int64_t id = m.value("part", int64_t(0));
                std::lock_guard lock(mutex_);
                parts_[id].push_back(std::move(m));
                replied_.notify_all();
            } else if (parse_op(m.value("op", "")) == Op::cancel) {
                std::lock_guard lock(mutex_);
                if (auto it = cancels_.find(m.value("call", int64_t(0))); it != cancels_.end()) it->second->fired = true;
            } else if (parse_op(m.value("op", "")) == Op::destroy) {
                destroy(m);
            } else {
                // The cancel token exists before the call starts, so a cancel frame that follows
                // at once is never lost.
                auto cancel = std::make_shared<ah_cancel>();
                cancel->call_id = std::to_string(m.value("id", int64_t(0)));
                {
                    std::lock_guard lock(mutex_);
                    ++active_;
                    cancels_[m.value("id", int64_t(0))] = cancel;
                }
                leave_reading();
                return {std::move(m), std::move(cancel)};
            }
        }
        // The host went away: stop without waiting for calls in flight.
        std::_Exit(0);
    }

    // Leaves the reading to the other threads, to the first that looks (woken when every one
    // sleeps; a new thread when none waits).
    void leave_reading() {
        std::lock_guard lock(lead_mutex_);
        leading_ = false;
        last_call_ = std::chrono::steady_clock::now();
        if (followers_ == 0 || sleepers_ == followers_) wake_reader();
    }

    // Someone reads from now on: a waiting thread woken, or a new one. Under lead_mutex_.
    void wake_reader() {
        if (followers_ == 0)
            std::thread([this] { serve(); }).detach();
        else
            lead_free_.notify_one();
    }

    [[noreturn]] void destroy(const json& m) {
        {
            std::unique_lock lock(mutex_);
            for (auto& [id, cancel] : cancels_) cancel->fired = true;
            replied_.wait_for(lock, std::chrono::seconds(5), [&] { return active_ == 0; });
        }
        if (instance_) lib_.descriptor.destroy(instance_);
        out_.write({{"reply", m["id"]}, {"status", AH_OK}});
        // A call that ignored cancellation may still run on its thread: nothing is torn down under
        // it; what the plugin printed is flushed.
        std::fflush(nullptr);
        std::_Exit(0);
    }

    // The plugin's tools for the host, in `reply`: every one goes to the host, which decides.
    ah_status list_tools(json& reply) {
        // Every tool goes to the host, which decides; add() answers here what the host will
        // decide (the same check), so an isolated plugin sees the statuses an in-process one does.
        struct Listing {
            json tools = json::array();
            std::vector<std::string> accepted;
        } listing;
        ah_tool_sink sink{sizeof(ah_tool_sink), &listing, [](void* ctx, const ah_tool_def* raw) -> ah_status {
                              if (!raw) return AH_ERR_INVALID_ARGUMENT;
                              auto* l = static_cast<Listing*>(ctx);
                              ah_tool_def def{};
                              std::memcpy(&def, raw, std::min(raw->struct_size, sizeof def));
                              l->tools.push_back({{"name", view(def.name)},
                                                  {"description", view(def.description)},
                                                  {"input_schema_json", view(def.input_schema_json)},
                                                  {"hints", def.hints},
                                                  {"title", view(def.title)},
                                                  {"output_schema_json", view(def.output_schema_json)}});
                              agenthost::plugins::CheckedTool checked = agenthost::plugins::check_tool(*raw, l->accepted);
                              if (!checked.refusal.empty()) return AH_ERR_INVALID_ARGUMENT;
                              l->accepted.push_back(std::move(checked.name));
                              return AH_OK;
                          }};
        ah_status status = lib_.descriptor.list_tools(instance_, &sink);
        reply["tools"] = std::move(listing.tools);
        return status;
    }

    // A chat call: the provider's events go to the host as frames while it runs.
    ah_status chat(int64_t id, const ah_call& call, ah_cancel* cancel) {
        struct Sink {
            Runner* runner;
            int64_t id;
            ah_cancel* cancel;
        } state{this, id, cancel};
        ah_event_sink sink{sizeof(ah_event_sink), &state, [](void* ctx, int32_t type, ah_str payload) -> ah_status {
                               auto* s = static_cast<Sink*>(ctx);
                               if (s->cancel->fired) return AH_ERR_CANCELLED;
                               json event{{"event", s->id}, {"type", type}};
                               isolation::put_plugin_text(event, "payload", std::string(view(payload)));
                               return s->runner->out_.write(event) ? AH_OK : AH_ERR_IO;
                           }};
        return lib_.descriptor.chat(instance_, &call, &sink);
    }

    void handle(const json& m, const std::shared_ptr<ah_cancel>& cancel) {
        const std::optional<Op> op = parse_op(m.value("op", ""));
        const int64_t id = m.value("id", int64_t(0));
        json reply{{"reply", id}};
        const ah_plugin& d = lib_.descriptor;
        // A plugin that is not thread-safe gets one call at a time, as in the host.
        std::unique_lock serial(serial_, std::defer_lock);
        if (!(d.flags & AH_PLUGIN_THREAD_SAFE)) serial.lock();
        std::string call_id = m.value("call_id", ""), tool = m.value("tool_name", ""), args = m.value("arguments_json", "{}"),
                    conversation = m.value("conversation_id", ""), context = m.value("request_context_json", "{}");
        ah_call call{sizeof(ah_call), str(call_id), str(tool), str(args), str(conversation), str(context), cancel.get()};
        TextWriter text;
        ah_status status = AH_ERR_UNSUPPORTED;
        if (op == Op::create) {
            config_ = m.value("config", "{}");
            data_dir_ = m.value("data_dir", "");
            status = d.create(&api_, &host_, &instance_, &text.writer);
            json slots{{op_name(Op::chat), d.chat != nullptr}};
            for (const auto& row : kWriterSlots) slots[std::string(op_name(row.op))] = d.*row.slot != nullptr;
            reply["slots"] = std::move(slots);
            reply["thread_safe"] = (d.flags & AH_PLUGIN_THREAD_SAFE) != 0;  // if not, the host sends one call at a time
            reply["abi"] = json::array({d.abi_major, d.abi_minor});         // what the library was built against
        } else if (op == Op::list_tools) {
            status = list_tools(reply);
        } else if (op == Op::call_tool) {
            status = d.call_tool(instance_, &call, &text.writer);
        } else if (op == Op::chat && d.chat) {
            status = chat(id, call, cancel.get());
        } else if (const WriterSlot* row = op ? writer_slot(*op) : nullptr; row && d.*row->slot) {
            status = (d.*row->slot)(instance_, &call, &text.writer);
        }
        {
            std::lock_guard lock(mutex_);
            cancels_.erase(id);
        }
        reply["status"] = status;
        // Sent as written: the host reads it as it reads an in-process plugin's output.
        isolation::put_plugin_text(reply, "text", std::move(text.text));
        // An answer too large for a frame fails the call at once with that cause (the host would
        // otherwise wait for a reply until its timeout).
        if (text.overflowed || !out_.write(reply))
            out_.write({{"reply", id}, {"status", AH_ERR_NO_MEMORY}, {"text", ""}, {"error", "output_too_large"}});
    }

    // A host service call: send the request, wait for the host's reply.
    // Asks the host for a service and waits for its reply; the parts of a streamed answer that
    // come before it are handed to on_part (with the request's id) as they arrive.
    std::optional<json> service(json request, const std::function<void(int64_t, const json&)>& on_part = {}) {
        int64_t id = next_id_++;
        request["id"] = id;
        if (!out_.write(request)) return std::nullopt;
        {
            std::lock_guard lead(lead_mutex_);  // the reply must be read: when the reading was left, at once
            if (!leading_) wake_reader();
        }
        std::unique_lock lock(mutex_);
        for (;;) {
            replied_.wait(lock, [&] {
                auto parts = parts_.find(id);
                return replies_.count(id) > 0 || (parts != parts_.end() && !parts->second.empty());
            });
            // The parts first: the host wrote them before its reply.
            for (auto parts = parts_.find(id); parts != parts_.end() && !parts->second.empty(); parts = parts_.find(id)) {
                json part = std::move(parts->second.front());
                parts->second.pop_front();
                lock.unlock();
                if (on_part) on_part(id, part);
                lock.lock();
            }
            if (replies_.count(id) > 0) break;
        }
        parts_.erase(id);
        json reply = std::move(replies_[id]);
        replies_.erase(id);
        return reply;
    }

    ah_status status_service(json request) {
        auto reply = service(std::move(request));
        return reply ? reply->value("status", AH_ERR_IO) : AH_ERR_IO;
    }

    ah_status text_service(json request, const ah_writer* out) {
        auto reply = service(std::move(request));
        if (!reply) return AH_ERR_IO;
        ah_status status = reply->value("status", AH_ERR_IO);
        if (status != AH_OK) return status;
        std::string text = reply->value("text", "");
        return out->write(out->ctx, text.data(), text.size());
    }

    ah_status http(const ah_http_request* raw, const ah_http_sink* raw_sink, const ah_cancel* cancel) {
        if (!raw) return AH_ERR_INVALID_ARGUMENT;
        ah_http_request r{};
        std::memcpy(&r, raw, std::min(raw->struct_size, sizeof r));
        ah_http_sink sink{};
        if (raw_sink) std::memcpy(&sink, raw_sink, std::min(raw_sink->struct_size, sizeof sink));
        json request{{"op", op_name(Op::http)},
                     {"method", view(r.method)},
                     {"url", view(r.url)},
                     {"headers_json", view(r.headers_json)},
                     {"body", to_base64(view(r.body))},
                     {"timeout_ms", r.timeout_ms},
                     {"connect_timeout_ms", r.connect_timeout_ms},
                     {"flags", r.flags},  // zero when the plugin's struct predates them (copied by struct_size)
                     {"resolve_to", view(r.resolve_to)},
                     {"call", cancel ? cancel->call_id : ""},
                     {"stream", true}};  // the head and the body's pieces as they arrive
        // The plugin's sink may stop the transfer: the host is told, and what still comes is dropped.
        ah_status stopped = AH_OK;
        auto deliver = [&](int64_t id, const json& part) {
            if (stopped != AH_OK) return;
            if (part.contains("code") && sink.on_head) {
                std::string headers = part.value("headers", "{}");
                stopped = sink.on_head(sink.ctx, part.value("code", 0), str(headers));
            }
            std::string body = part.contains("body") ? from_base64(part.value("body", "")) : std::string();
            if (stopped == AH_OK && !body.empty() && sink.on_body) stopped = sink.on_body(sink.ctx, body.data(), body.size());
            if (stopped != AH_OK) out_.write({{"op", op_name(Op::http_abort)}, {"service", id}});
        };
        auto reply = service(std::move(request), deliver);
        if (!reply) return AH_ERR_IO;
        if (stopped != AH_OK) return stopped;
        deliver(0, *reply);  // a host that did not stream sends the head and body in its reply
        if (stopped != AH_OK) return stopped;
        return reply->value("status", AH_ERR_IO);
    }

    isolation::FrameReader frames_;  // read by the leading thread only
    isolation::FrameWriter out_;
    plugins::LoadedLibrary lib_;
    ah_host_api api_{};
    ah_host host_{this};
    ah_instance* instance_ = nullptr;
    std::string config_ = "{}", data_dir_;
    std::atomic<int64_t> next_id_{1};
    std::mutex mutex_;
    std::condition_variable replied_;
    std::map<int64_t, json> replies_;
    std::map<int64_t, std::deque<json>> parts_;  // a streamed service's parts, before its reply
    std::map<int64_t, std::shared_ptr<ah_cancel>> cancels_;
    int active_ = 0;  // requests being handled
    std::mutex serial_;
    std::mutex lead_mutex_;  // whose turn it is to read …
    std::condition_variable lead_free_;
    bool leading_ = false;                                                // … a thread reads now
    int followers_ = 0;                                                   // threads waiting for their turn …
    int sleepers_ = 0;                                                    // … of which these wait until woken
    std::chrono::steady_clock::time_point last_call_{};                   // when the reading was last left to the followers
    static constexpr auto kFollowersWatch = std::chrono::seconds(1);      // followers look while calls come …
    static constexpr auto kFollowersLook = std::chrono::milliseconds(5);  // … this often
};

void limit(int resource, rlim_t value) {
    rlimit l{value, value};
    if (setrlimit(resource, &l) != 0)
        std::cerr << "agenthost-plugin-runner: cannot set a resource limit: " << std::strerror(errno) << "\n";
}

// Closes every descriptor from 3 up except `a` and `b`.
void close_all_but(int a, int b) {
    unsigned from = 3;
    for (int keep : {std::min(a, b), std::max(a, b)}) {
        if (keep < static_cast<int>(from)) continue;
        if (keep > static_cast<int>(from)) ::close_range(from, static_cast<unsigned>(keep) - 1, 0);
        from = static_cast<unsigned>(keep) + 1;
    }
    ::close_range(from, ~0U, 0);
}

// The host's lifeline: when the host's end of the channel closes (it exited, crashed or was
// killed), this process ends at once, even in the middle of a call, so no effect of the plugin
// lands after the host's next start has reported the call's outcome unknown. poll() asks for the
// hang-up alone and takes no byte of the protocol. The plugin's own children are sent SIGKILL with
// it (PR_SET_PDEATHSIG, set by the bridge's servers, follows this process's threads).
void watch_host(int channel) {
    std::thread([channel] {
        pollfd hangup{channel, POLLRDHUP, 0};
        for (;;) {
            int n = ::poll(&hangup, 1, -1);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return;  // cannot watch: the reading threads still see the end of the stream
            if (hangup.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) break;
        }
        std::_Exit(0);
    }).detach();
}

}  // namespace

int main(int argc, char** argv) {
    std::string manifest_file, sandbox_json;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string flag = argv[i];
        if (flag == "--manifest")
            manifest_file = argv[i + 1];
        else if (flag == "--memory-mb")
            limit(RLIMIT_AS, static_cast<rlim_t>(std::stoull(argv[i + 1])) << 20);
        else if (flag == "--cpu-seconds")
            limit(RLIMIT_CPU, static_cast<rlim_t>(std::stoull(argv[i + 1])));
        else if (flag == "--sandbox")
            sandbox_json = argv[i + 1];
    }
    std::signal(SIGPIPE, SIG_IGN);
    // The protocol keeps the original stdin/stdout (as fds 3 and 4); the plugin's prints go to
    // stderr. No other descriptor the host's own parent left open (a shell's `9< secret`) reaches
    // the plugin.
    int in = ::fcntl(0, F_DUPFD_CLOEXEC, 3), out = ::fcntl(1, F_DUPFD_CLOEXEC, 3);
    int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::dup2(2, 1);
    ::close(null);
    close_all_but(in, out);
    isolation::FrameWriter early(out);

    auto fail_create = [&](const std::string& message) {
        isolation::FrameReader frames(in);
        while (auto m = frames.next())
            if (auto op = parse_op(m->value("op", "")); op == Op::create || op == Op::destroy) {
                early.write({{"reply", (*m)["id"]}, {"status", AH_ERR_FAILED}, {"text", message}});
                if (op == Op::destroy) break;
            }
        return 1;
    };
    if (manifest_file.empty()) return fail_create("agenthost-plugin-runner needs --manifest PLUGIN.toml");
    auto manifest = plugins::read_manifest(manifest_file);
    if (!manifest) return fail_create(manifest.error().message);
    // Confined before the library is opened: none of the plugin's code runs outside the sandbox.
    if (!sandbox_json.empty()) {
        // Its own session: no controlling terminal to push keystrokes into, and the operator's
        // Ctrl-C reaches the host, which stops the plugin in order.
        ::setsid();
        auto rules = isolation::sandbox_rules_from_json(sandbox_json);
        if (!rules) return fail_create(rules.error().message);
        if (auto entered = isolation::enter_sandbox(*rules); !entered)
            return fail_create("plugin '" + manifest->name + "' could not be sandboxed: " + entered.error().message);
    }
    // A host that died before this line is seen here too (its end is already closed). Started once
    // the sandbox holds, so this thread is confined like the plugin's.
    watch_host(in);
    auto lib = plugins::load_library(*manifest);
    if (!lib) return fail_create(lib.error().message);
    Runner runner(in, out, std::move(*lib));
    runner.serve();
}
