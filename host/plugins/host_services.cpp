#include "plugins/host_services.hpp"

#include "plugins/abi_text.hpp"

#include "plugins/http_client.hpp"
#include "plugins/permissions.hpp"

#include "common/bounded_json.hpp"

#include <nlohmann/json.hpp>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <spdlog/spdlog.h>

#ifndef AGENTHOST_VERSION
#define AGENTHOST_VERSION "0.0.0"
#endif

namespace agenthost::plugins {
namespace {

using nlohmann::json;

ah_status write(const ah_writer* out, std::string_view text) {
    if (!out || !out->write) return AH_ERR_INVALID_ARGUMENT;
    return out->write(out->ctx, text.data(), text.size());
}

// Every entry point catches everything: no exception may reach a plugin (ABI rule 3).
template <typename F>
ah_status guarded(ah_host* host, F&& body) noexcept {
    if (!host) return AH_ERR_INVALID_ARGUMENT;
    if (host->destroyed.load()) {
        if (!host->refusal_logged.exchange(true))
            spdlog::warn("host service refused: plugin={} called it after its destroy() (join the plugin's threads in destroy())",
                         host->plugin);
        return AH_ERR_UNSUPPORTED;
    }
    try {
        return body(*host);
    } catch (const std::bad_alloc&) {
        return AH_ERR_NO_MEMORY;
    } catch (const std::exception& e) {
        spdlog::error("host service failed: plugin={} error={}", host->plugin, e.what());
        return AH_ERR_INTERNAL;
    } catch (...) {
        return AH_ERR_INTERNAL;
    }
}

void say_dropped(const std::string& plugin, uint64_t dropped) {
    spdlog::warn("plugin={} dropped {} of its log lines: it logged more than {:.0f} a second (after a burst of {:.0f})", plugin,
                 dropped, LogBudget::kPerSecond, LogBudget::kBurst);
}

}  // namespace

bool admit_log_line(LogBudget& budget, const std::string& plugin) {
    LogBudget::Pass pass = budget.take();
    if (pass.dropped_before > 0) say_dropped(plugin, pass.dropped_before);
    return pass.allowed;
}

void say_dropped_log_lines(LogBudget& budget, const std::string& plugin) {
    if (uint64_t dropped = budget.take_dropped()) say_dropped(plugin, dropped);
}

namespace {

void log(ah_host* host, int32_t level, ah_str raw_message, ah_str raw_fields) {
    const std::string message = printable(view(raw_message)), fields = printable(view(raw_fields));
    (void)guarded(host, [&](ah_host& h) -> ah_status {
        auto lvl = level <= AH_LOG_TRACE   ? spdlog::level::trace
                   : level == AH_LOG_DEBUG ? spdlog::level::debug
                   : level == AH_LOG_INFO  ? spdlog::level::info
                   : level == AH_LOG_WARN  ? spdlog::level::warn
                                           : spdlog::level::err;
        const std::string& f = fields;
        if (level >= AH_LOG_WARN && std::this_thread::get_id() == h.creating_thread && h.create_warnings.size() < 20)
            h.create_warnings.push_back(message + (f.empty() || f == "{}" ? "" : " " + f));
        if (!spdlog::should_log(lvl) || !admit_log_line(h.log_budget, h.plugin)) return AH_OK;
        if (f.empty() || f == "{}")
            spdlog::log(lvl, "plugin={} {}", h.plugin, message);
        else
            spdlog::log(lvl, "plugin={} {} fields={}", h.plugin, message, f);
        return AH_OK;
    });
}

ah_status get_config(ah_host* host, const ah_writer* out) {
    return guarded(host, [&](ah_host& h) -> ah_status { return write(out, h.config_json); });
}

ah_status kv_get(ah_host* host, ah_str key, const ah_writer* out) {
    return guarded(host, [&](ah_host& h) -> ah_status {
        RunKvCopies& copies = h.services->run_kv();
        if (RunKv* run = copies.bound())
            if (auto mine = copies.written(*run, h.plugin, view(key))) {
                copies.count_read(true);
                return write(out, *mine);
            }
        copies.count_read(false);
        auto value = h.services->kv().get(h.plugin, view(key));
        if (!value) {  // never "not found": the key may have a value the store could not give
            spdlog::warn("plugin={} kv_get failed: {}", h.plugin, value.error().message);
            h.services->note_store_failure(value.error().message);
            return AH_ERR_IO;
        }
        return *value ? write(out, **value) : AH_ERR_NOT_FOUND;
    });
}

ah_status kv_set(ah_host* host, ah_str key, ah_str value) {
    return guarded(host, [&](ah_host& h) -> ah_status {
        auto store_write = [&] { return h.services->kv().set(h.plugin, view(key), view(value), h.kv_flush); };
        // Only a write held for the run's next step (a provider's) is kept in its copy: it costs
        // nothing under the copies' lock, where a write stored at once would hold it for a commit.
        RunKvCopies& copies = h.services->run_kv();
        RunKv* run = h.kv_flush == store::Flush::with_next_write ? copies.bound() : nullptr;
        Status stored = run ? copies.write_kept(*run, h.plugin, view(key), view(value), store_write)
                            : copies.write_around(h.plugin, view(key), store_write);
        if (stored) return AH_OK;
        spdlog::warn("plugin={} kv_set failed: {}", h.plugin, stored.error().message);
        h.services->note_store_failure(stored.error().message);
        return AH_ERR_IO;
    });
}

ah_status kv_delete(ah_host* host, ah_str key) {
    return guarded(host, [&](ah_host& h) -> ah_status {
        auto erased =
            h.services->run_kv().write_around(h.plugin, view(key), [&] { return h.services->kv().erase(h.plugin, view(key)); });
        return erased ? AH_OK : AH_ERR_IO;
    });
}

ah_status memory_get(ah_host* host, ah_str conversation, ah_str key, const ah_writer* out) {
    return guarded(host, [&](ah_host& h) -> ah_status {
        auto value = h.services->memory().get(view(conversation), view(key));
        if (!value) return AH_ERR_IO;  // a failed read is not "no such entry": the plugin must not write over it
        return *value ? write(out, **value) : AH_ERR_NOT_FOUND;
    });
}

ah_status memory_set(ah_host* host, ah_str conversation, ah_str key, ah_str value) {
    return guarded(host, [&](ah_host& h) -> ah_status {
        if (view(key).empty()) return AH_ERR_INVALID_ARGUMENT;
        if (value.len && !json::accept(view(value))) return AH_ERR_INVALID_ARGUMENT;
        return h.services->memory().set(view(conversation), view(key), view(value)) ? AH_OK : AH_ERR_IO;
    });
}

ah_status post_event(ah_host* host, ah_str conversation, ah_str event) {
    return guarded(host, [&](ah_host& h) -> ah_status {
        json body = json::parse(view(event), nullptr, false);
        if (!body.is_object() || !body.contains("message") || !body["message"].is_string()) return AH_ERR_INVALID_ARGUMENT;
        return h.services->memory().post_event(view(conversation), h.plugin, body.dump()) ? AH_OK : AH_ERR_IO;
    });
}

ah_status http_request(ah_host* host, const ah_http_request* request, const ah_http_sink* sink, const ah_cancel* cancel) {
    return guarded(host, [&](ah_host& h) -> ah_status {
        if (!request) return AH_ERR_INVALID_ARGUMENT;
        ah_http_request req{};
        std::memcpy(&req, request, std::min(request->struct_size, sizeof req));
        ah_http_sink s{};
        if (sink) std::memcpy(&s, sink, std::min(sink->struct_size, sizeof s));
        HttpCallbacks callbacks;
        if (s.on_head)
            callbacks.on_head = [&](int32_t code, std::string_view headers) {
                return s.on_head(s.ctx, code, ah_str{headers.data(), headers.size()});
            };
        if (s.on_body) callbacks.on_body = [&](std::string_view chunk) { return s.on_body(s.ctx, chunk.data(), chunk.size()); };
        callbacks.cancelled = [cancel] { return cancel && cancel->cancelled(); };
        if (h.grant)
            callbacks.may_connect = [&h](std::string_view to, int port) {
                if (allows_connect(*h.grant, to, port)) return true;
                spdlog::warn(
                    "plugin HTTP refused: plugin={} destination={}:{} reason=\"not in its permissions; grant it with "
                    "[plugins.{}] permissions = {{ network = [...] }} or in its plugin.toml\"",
                    h.plugin, to, port, h.plugin);
                return false;
            };
        callbacks.on_io_failure = [&h, &req](std::string_view why) {
            const std::string url = printable(view(req.url));  // without its query, which may hold a key
            spdlog::warn("plugin HTTP failed: plugin={} url={} cause=\"{}\"", h.plugin, url.substr(0, url.find('?')), why);
        };
        return http_perform(req, callbacks, &h.connections);
    });
}

ah_status data_dir(ah_host* host, const ah_writer* out) {
    return guarded(host, [&](ah_host& h) -> ah_status {
        std::error_code ec;
        std::filesystem::create_directories(h.data_dir, ec);
        if (ec) return AH_ERR_IO;
        return write(out, h.data_dir.string());
    });
}

int32_t is_cancelled(ah_host* host, const ah_cancel* cancel) {
    if (host && host->destroyed.load()) return 1;  // whatever it is doing, it should stop
    return cancel && cancel->cancelled() ? 1 : 0;
}

ah_status announce_tools_changed(ah_host* host) {
    return guarded(host, [&](ah_host& h) -> ah_status { return h.services->tools_changed(h.plugin); });
}

ah_status progress(ah_host* host, ah_str call_id, double progress, double total, ah_str message) {
    return guarded(host, [&](ah_host& h) -> ah_status {
        if (!std::isfinite(progress) || !std::isfinite(total)) return AH_ERR_INVALID_ARGUMENT;
        h.services->call_channels().report_progress(std::string(view(call_id)), ProgressFrom::plugin, progress,
                                                    total > 0 ? total : 0, printable(view(message).substr(0, 1000)));
        return AH_OK;
    });
}

// sample() and elicit(): the request goes to whoever made the call, if they take it.
ah_status ask_caller(ah_host* host, CallerRequest request, ah_str call_id, ah_str request_json, const ah_writer* out) {
    return guarded(host, [&](ah_host& h) -> ah_status {
        auto params = json_io::parse(view(request_json), {1u << 20, 32});
        if (!params || !params->is_object()) return AH_ERR_INVALID_ARGUMENT;
        auto channel = h.services->call_channels().find(std::string(view(call_id)));
        if (!channel || !channel->ask) return AH_ERR_UNSUPPORTED;
        CallerAnswer answer = channel->ask(request, *params);
        if (!answer.text.empty()) {
            if (ah_status written = write(out, answer.text); written != AH_OK) return written;
        }
        return answer.status;
    });
}

ah_status sample(ah_host* host, ah_str call_id, ah_str request_json, const ah_writer* out) {
    return ask_caller(host, CallerRequest::sample, call_id, request_json, out);
}

ah_status elicit(ah_host* host, ah_str call_id, ah_str request_json, const ah_writer* out) {
    return ask_caller(host, CallerRequest::elicit, call_id, request_json, out);
}

ah_status resource_updated(ah_host* host, ah_str uri) {
    return guarded(host, [&](ah_host& h) -> ah_status {
        if (uri.len == 0 || uri.len > 4096) return AH_ERR_INVALID_ARGUMENT;
        h.services->resource_updated(printable(view(uri)));
        return AH_OK;
    });
}

}  // namespace

void HostServices::note_store_failure(const std::string& why) {
    std::lock_guard lock(store_failure_mutex_);
    last_store_failure_ = why;
}

std::string HostServices::last_store_failure() {
    std::lock_guard lock(store_failure_mutex_);
    return last_store_failure_;
}

namespace {

// The services table plugins call through. Constant and of static storage: a plugin thread that
// outlives the host's services still reads valid function pointers (and is refused by them).
constexpr ah_host_api kHostApi{
    .struct_size = sizeof(ah_host_api),
    .abi_major = AH_ABI_MAJOR,
    .abi_minor = AH_ABI_MINOR,
    .host_version = AGENTHOST_VERSION,
    .log = &log,
    .get_config = &get_config,
    .kv_get = &kv_get,
    .kv_set = &kv_set,
    .kv_delete = &kv_delete,
    .memory_get = &memory_get,
    .memory_set = &memory_set,
    .post_event = &post_event,
    .http_request = &http_request,
    .data_dir = &data_dir,
    .is_cancelled = &is_cancelled,
    .tools_changed = &announce_tools_changed,
    .progress = &progress,
    .sample = &sample,
    .elicit = &elicit,
    .resource_updated = &resource_updated,
};

// Where the handles of services that are gone are kept, for the rest of the process: a plugin
// thread that outlived destroy() and then the services themselves (the host shutting down) still
// finds its handle, which refuses it in silence. Never destroyed on purpose (not even at exit,
// when such a thread may still run), so it is reached through a pointer that is never deleted.
class RetiredHandles {
public:
    static RetiredHandles& instance() {
        static RetiredHandles* const archive = new RetiredHandles();  // NOLINT: immortal by design
        return *archive;
    }
    void keep(std::vector<std::unique_ptr<ah_host>> handles) {
        std::lock_guard lock(mutex_);
        for (auto& handle : handles) {
            handle->refusal_logged = true;  // the logger may be gone before the last such call
            handle->destroyed = true;
            handle->services = nullptr;
            handle->config_json = {};  // kept small: only what a refusal reads stays
            kept_.push_back(std::move(handle));
        }
    }

private:
    std::mutex mutex_;
    std::vector<std::unique_ptr<ah_host>> kept_;
};

}  // namespace

const ah_host_api* HostServices::api() const { return &kHostApi; }

HostServices::HostServices(store::PluginKv& kv, memory::MemoryBackend& memory) : kv_(kv), memory_(memory) {}

HostServices::~HostServices() {
    std::lock_guard lock(handles_mutex_);
    RetiredHandles::instance().keep(std::move(handles_));
}

void HostServices::set_tools_changed_handler(std::function<void(const std::string&)> handler) {
    std::lock_guard lock(handler_mutex_);
    tools_changed_handler_ = std::move(handler);
}

ah_status HostServices::tools_changed(const std::string& plugin) {
    std::lock_guard lock(handler_mutex_);
    if (!tools_changed_handler_) return AH_ERR_UNSUPPORTED;
    tools_changed_handler_(plugin);
    return AH_OK;
}

int HostServices::add_resource_listener(std::function<void(const std::string& uri)> listener) {
    std::lock_guard lock(resource_listeners_mutex_);
    resource_listeners_[++next_resource_listener_] = std::move(listener);
    return next_resource_listener_;
}

void HostServices::remove_resource_listener(int id) {
    std::lock_guard lock(resource_listeners_mutex_);
    resource_listeners_.erase(id);
}

void HostServices::resource_updated(const std::string& uri) {
    std::lock_guard lock(resource_listeners_mutex_);
    for (const auto& [id, listener] : resource_listeners_) listener(uri);
}

ah_host* HostServices::new_handle(std::string plugin, std::string config_json, std::filesystem::path data_dir) {
    auto handle = std::make_unique<ah_host>();
    handle->plugin = std::move(plugin);
    handle->config_json = std::move(config_json);
    handle->data_dir = std::move(data_dir);
    handle->services = this;
    std::lock_guard lock(handles_mutex_);
    return handles_.emplace_back(std::move(handle)).get();
}

}  // namespace agenthost::plugins
