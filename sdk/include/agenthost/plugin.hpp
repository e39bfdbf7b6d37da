// plugin.hpp — header-only C++17 helpers for writing agenthost plugins on top of agenthost.h.
//
// What it gives a plugin author:
//  - agenthost::sdk::Host   : the host services table as C++ calls (json in, json out);
//  - ToolPlugin / ProviderPlugin : base classes to derive from;
//  - AGENTHOST_PLUGIN : defines the descriptor and the exported entry point; every trampoline
//    catches every exception, so none ever crosses the ABI.
//
// Needs nlohmann/json (Debian: nlohmann-json3-dev). Build plugins with -fvisibility=hidden.
#ifndef AGENTHOST_PLUGIN_HPP
#define AGENTHOST_PLUGIN_HPP

#include <agenthost/agenthost.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agenthost::sdk {

using json = nlohmann::json;

inline std::string_view view(ah_str s) { return s.data ? std::string_view(s.data, s.len) : std::string_view(); }
inline ah_str str(std::string_view s) { return ah_str{s.data(), s.size()}; }

// Appends whatever the other side writes to a std::string this side owns.
class StringWriter {
public:
    StringWriter() : writer_{sizeof(ah_writer), this, &StringWriter::append} {}
    StringWriter(const StringWriter&) = delete;
    StringWriter& operator=(const StringWriter&) = delete;
    const ah_writer* get() const { return &writer_; }
    std::string& text() { return text_; }

private:
    static ah_status append(void* ctx, const char* data, size_t len) {
        try {
            static_cast<StringWriter*>(ctx)->text_.append(data, len);
            return AH_OK;
        } catch (...) {
            return AH_ERR_NO_MEMORY;
        }
    }
    ah_writer writer_;
    std::string text_;
};

// Sends text to a writer the other side owns.
inline ah_status write(const ah_writer* out, std::string_view text) {
    if (!out || !out->write) return AH_ERR_INVALID_ARGUMENT;
    return out->write(out->ctx, text.data(), text.size());
}

// Copies a struct the other side filled into a zeroed local of this side's size (rule 1).
template <typename T>
T read_versioned(const T* from) {
    T local;
    std::memset(&local, 0, sizeof local);
    if (from) std::memcpy(&local, from, std::min(from->struct_size, sizeof local));
    return local;
}

struct HttpResponse {
    ah_status status = AH_OK;  // transport outcome
    int code = 0;              // HTTP status code
    json headers = json::object();
    std::string body;  // empty when a body callback consumed it
};

struct HttpRequest {
    std::string method = "GET";
    std::string url;
    json headers = json::object();
    std::string body;
    uint32_t timeout_ms = 0;
    uint32_t connect_timeout_ms = 0;
    uint32_t flags = 0;      // AH_HTTP_* (ABI 1.1)
    std::string resolve_to;  // connect to this IP for the URL's host (ABI 1.1)
};

// The host services, as C++. Cheap to copy; valid between create() and destroy().
class Host {
public:
    Host(const ah_host_api* api, ah_host* host) : api_(read_versioned(api)), host_(host) {}

    const ah_host_api& api() const { return api_; }

    void log(int32_t level, std::string_view message, const json& fields = json::object()) const {
        if (!api_.log) return;
        std::string f = fields.dump();
        api_.log(host_, level, str(message), str(f));
    }
    void info(std::string_view m, const json& f = json::object()) const { log(AH_LOG_INFO, m, f); }
    void warn(std::string_view m, const json& f = json::object()) const { log(AH_LOG_WARN, m, f); }
    void error(std::string_view m, const json& f = json::object()) const { log(AH_LOG_ERROR, m, f); }

    json config() const {
        if (!api_.get_config) return json::object();
        StringWriter w;
        if (api_.get_config(host_, w.get()) != AH_OK) return json::object();
        return json::parse(w.text(), nullptr, false);
    }

    // The value, or nullopt when there is none — or when the store could not be read: use the
    // overload below where telling the two apart matters (state that must not start over).
    std::optional<std::string> kv_get(std::string_view key) const {
        std::string value;
        if (kv_get(key, value) != AH_OK) return std::nullopt;
        return value;
    }
    // AH_OK with `value` set, AH_ERR_NOT_FOUND when the key has none, AH_ERR_IO when the store
    // could not be read just now (the key may have a value).
    ah_status kv_get(std::string_view key, std::string& value) const {
        if (!api_.kv_get) return AH_ERR_UNSUPPORTED;
        StringWriter w;
        ah_status status = api_.kv_get(host_, str(key), w.get());
        if (status == AH_OK) value = std::move(w.text());
        return status;
    }
    ah_status kv_set(std::string_view key, std::string_view value) const {
        return api_.kv_set ? api_.kv_set(host_, str(key), str(value)) : AH_ERR_UNSUPPORTED;
    }
    ah_status kv_delete(std::string_view key) const {
        return api_.kv_delete ? api_.kv_delete(host_, str(key)) : AH_ERR_UNSUPPORTED;
    }

    // conversation "" means long-term memory.
    std::optional<json> memory_get(std::string_view conversation, std::string_view key) const {
        if (!api_.memory_get) return std::nullopt;
        StringWriter w;
        if (api_.memory_get(host_, str(conversation), str(key), w.get()) != AH_OK) return std::nullopt;
        json value = json::parse(w.text(), nullptr, false);
        if (value.is_discarded()) return std::nullopt;
        return value;
    }
    ah_status memory_set(std::string_view conversation, std::string_view key, const json& value) const {
        if (!api_.memory_set) return AH_ERR_UNSUPPORTED;
        std::string v = value.dump();
        return api_.memory_set(host_, str(conversation), str(key), str(v));
    }
    ah_status post_event(std::string_view conversation, const json& event) const {
        if (!api_.post_event) return AH_ERR_UNSUPPORTED;
        std::string e = event.dump();
        return api_.post_event(host_, str(conversation), str(e));
    }

    // Performs a request. With on_body set, chunks go to it (return false to abort) and
    // HttpResponse::body stays empty; otherwise the body is collected. on_head, when set, sees the
    // status code and headers before the first chunk (e.g. to read an error body differently).
    HttpResponse http(const HttpRequest& request, const ah_cancel* cancel = nullptr,
                      std::function<bool(std::string_view)> on_body = {},
                      std::function<void(int code, const json& headers)> on_head = {}) const {
        HttpResponse response;
        if (!api_.http_request) {
            response.status = AH_ERR_UNSUPPORTED;
            return response;
        }
        struct State {
            HttpResponse* response;
            std::function<bool(std::string_view)>* on_body;
            std::function<void(int, const json&)>* on_head;
        } state{&response, &on_body, &on_head};
        ah_http_sink sink{};
        sink.struct_size = sizeof sink;
        sink.ctx = &state;
        sink.on_head = [](void* ctx, int32_t code, ah_str headers) -> ah_status {
            auto* s = static_cast<State*>(ctx);
            s->response->code = code;
            s->response->headers = json::parse(view(headers), nullptr, false);
            if (!s->response->headers.is_object()) s->response->headers = json::object();
            try {
                if (*s->on_head) (*s->on_head)(code, s->response->headers);
                return AH_OK;
            } catch (...) {
                return AH_ERR_INTERNAL;
            }
        };
        sink.on_body = [](void* ctx, const char* data, size_t len) -> ah_status {
            auto* s = static_cast<State*>(ctx);
            try {
                if (*s->on_body) return (*s->on_body)(std::string_view(data, len)) ? AH_OK : AH_ERR_CANCELLED;
                s->response->body.append(data, len);
                return AH_OK;
            } catch (...) {
                return AH_ERR_INTERNAL;
            }
        };
        std::string headers = request.headers.dump();
        ah_http_request req{};
        req.struct_size = sizeof req;
        req.method = str(request.method);
        req.url = str(request.url);
        req.headers_json = str(headers);
        req.body = str(request.body);
        req.timeout_ms = request.timeout_ms;
        req.connect_timeout_ms = request.connect_timeout_ms;
        req.flags = request.flags;
        req.resolve_to = str(request.resolve_to);
        response.status = api_.http_request(host_, &req, &sink, cancel);
        return response;
    }

    std::string data_dir() const {
        if (!api_.data_dir) return {};
        StringWriter w;
        return api_.data_dir(host_, w.get()) == AH_OK ? std::move(w.text()) : std::string();
    }

    // Asks the host to call list_tools() again (ABI 1.3); see ah_host_api.tools_changed.
    ah_status tools_changed() const { return api_.tools_changed ? api_.tools_changed(host_) : AH_ERR_UNSUPPORTED; }

    // ABI 1.5 (AH_ERR_UNSUPPORTED from an older host). How far the call `call_id` has come; see
    // ah_host_api.progress.
    ah_status progress(std::string_view call_id, double done, double total = 0, std::string_view message = {}) const {
        return has(&ah_host_api::progress) ? api_.progress(host_, str(call_id), done, total, str(message)) : AH_ERR_UNSUPPORTED;
    }
    // Asks the caller of `call_id` for a model's answer (MCP sampling/createMessage params in,
    // its result in `answer`); see ah_host_api.sample.
    ah_status sample(std::string_view call_id, const json& request, json& answer) const {
        return ask(&ah_host_api::sample, call_id, request, answer);
    }
    // Asks the person at the caller of `call_id` (MCP elicitation/create params in, {"action",
    // "content"?} in `answer`); see ah_host_api.elicit.
    ah_status elicit(std::string_view call_id, const json& request, json& answer) const {
        return ask(&ah_host_api::elicit, call_id, request, answer);
    }
    // Says that the resource `uri` reads differently now; see ah_host_api.resource_updated.
    ah_status resource_updated(std::string_view uri) const {
        return has(&ah_host_api::resource_updated) ? api_.resource_updated(host_, str(uri)) : AH_ERR_UNSUPPORTED;
    }

    bool cancelled(const ah_cancel* cancel) const { return cancel && api_.is_cancelled && api_.is_cancelled(host_, cancel) != 0; }

private:
    // Whether the host's table has a slot: api_ is a zeroed copy at the host's struct_size, so a
    // slot an older host lacks reads NULL.
    template <typename Slot>
    bool has(Slot ah_host_api::*slot) const {
        return api_.*slot != nullptr;
    }
    using AskFn = ah_status (*)(ah_host*, ah_str, ah_str, const ah_writer*);
    ah_status ask(AskFn ah_host_api::*slot, std::string_view call_id, const json& request, json& answer) const {
        if (!has(slot)) return AH_ERR_UNSUPPORTED;
        StringWriter w;
        std::string body = request.dump(-1, ' ', false, json::error_handler_t::replace);
        ah_status status = (api_.*slot)(host_, str(call_id), str(body), w.get());
        answer = status == AH_OK ? json::parse(w.text(), nullptr, false) : json(w.text());
        return status;
    }

    ah_host_api api_;
    ah_host* host_;
};

// One call into the plugin, with its JSON already parsed.
struct Call {
    std::string_view id;
    std::string_view tool;
    std::string_view conversation;
    json arguments = json::object();
    std::string_view arguments_json;  // the arguments as the host sent them (valid during the call)
    json request_context = json::object();
    const ah_cancel* cancel = nullptr;

    // `parse_arguments` false leaves `arguments` empty for a plugin that reads arguments_json itself.
    static Call from(const ah_call* raw, bool parse_arguments = true) {
        ah_call c = read_versioned(raw);
        Call call;
        call.id = view(c.call_id);
        call.arguments_json = view(c.arguments_json);
        call.tool = view(c.tool_name);
        call.conversation = view(c.conversation_id);
        if (parse_arguments && c.arguments_json.len) call.arguments = json::parse(view(c.arguments_json));
        if (c.request_context_json.len) {
            call.request_context = json::parse(view(c.request_context_json), nullptr, false);
            if (call.request_context.is_discarded()) call.request_context = json::object();
        }
        call.cancel = c.cancel;
        return call;
    }
};

struct Tool {
    std::string name;
    std::string description;
    json input_schema = json{{"type", "object"}};
    uint32_t hints = 0;
    std::string title{};           // ABI 1.5: a short name for people; empty for none
    json output_schema = nullptr;  // ABI 1.5: schema of the result's "structured"; null for none
};

// The tool result object (see THE TOOL RESULT in agenthost.h).
struct ToolResult {
    json body = json::object();

    static ToolResult ok(json content) {
        ToolResult r;
        r.body["content"] = std::move(content);
        return r;
    }
    // A result of MCP content blocks (ABI 1.5): text, image, audio, resource, resource_link; see
    // "blocks" under THE TOOL RESULT in agenthost.h.
    static ToolResult of_blocks(json blocks) {
        ToolResult r;
        r.body["blocks"] = std::move(blocks);
        return r;
    }
    static ToolResult error(std::string_view code, std::string_view message) {
        ToolResult r;
        r.body["content"] = std::string(message);
        r.body["is_error"] = true;
        r.body["error_code"] = std::string(code);
        return r;
    }
};

// One entry of a plugin's health report: what was checked, whether it is fine, and what was found
// or what to fix ("QBITTORRENT_PASSWORD is not set: put the WebUI password in it").
inline json health_check(std::string_view name, bool ok, std::string_view detail) {
    return json{{"name", std::string(name)}, {"ok", ok}, {"detail", std::string(detail)}};
}

class ToolPlugin {
public:
    explicit ToolPlugin(Host host) : host_(std::move(host)) {}
    virtual ~ToolPlugin() = default;
    virtual std::vector<Tool> tools() = 0;
    virtual ToolResult call(const Call& call) = 0;
    // Text for the system prompt; empty adds nothing.
    virtual std::string context(const Call&) { return {}; }
    // Resources ([{"uri", "name", "description"?, "mimeType"?}]); null: none.
    virtual json resources(const Call&) { return nullptr; }
    // One resource's contents ({"contents": [{"uri", "mimeType", "text"}]}); null: not served here.
    virtual json read_resource(const Call&, const std::string& /*uri*/) { return nullptr; }
    // What `agenthost doctor` reports (ABI 1.4): health_check() entries; empty: nothing to check.
    virtual std::vector<json> health(const Call&) { return {}; }
    // ABI 1.5, for MCP clients (see ah_plugin's slots of the same names). Prompts ([{"name",
    // "description", "arguments"?}]); null: none.
    virtual json prompts(const Call&) { return nullptr; }
    // One prompt filled in ({"messages": [...]}); null: not this plugin's.
    virtual json get_prompt(const Call&, const std::string& /*name*/, const json& /*arguments*/) { return nullptr; }
    // Resource templates ([{"uriTemplate", "name", …}]); null: none.
    virtual json resource_templates(const Call&) { return nullptr; }
    // Suggestions ({"values": [...]}) for the completion request (its ref, argument, context);
    // null: not this plugin's prompt or template.
    virtual json complete(const Call&, const json& /*request*/) { return nullptr; }

protected:
    const Host& host() const { return host_; }

private:
    Host host_;
};

// Emits provider events; every method returns false once the host asked to stop.
class Emitter {
public:
    explicit Emitter(const ah_event_sink* sink) : sink_(read_versioned(sink)) {}
    bool text(std::string_view delta) { return emit(AH_EVENT_TEXT, delta); }
    bool reasoning(std::string_view delta) { return emit(AH_EVENT_REASONING, delta); }
    // provider_data, when not null, comes back with the call in later requests (see AH_EVENT_TOOL_CALL).
    bool tool_call(std::string_view id, std::string_view name, const json& arguments, const json& provider_data = nullptr) {
        json call{{"id", id}, {"name", name}, {"arguments", arguments}};
        if (!provider_data.is_null()) call["provider_data"] = provider_data;
        return emit(AH_EVENT_TOOL_CALL, call.dump());
    }
    // input_tokens counts the whole prompt, cached_input_tokens the part of it a prompt cache served.
    bool usage(long long input_tokens, long long output_tokens, long long cached_input_tokens = 0) {
        json u{{"input_tokens", input_tokens}, {"output_tokens", output_tokens}};
        if (cached_input_tokens > 0) u["cached_input_tokens"] = cached_input_tokens;
        return emit(AH_EVENT_USAGE, u.dump());
    }
    bool stop(std::string_view reason) { return emit(AH_EVENT_STOP, json{{"reason", reason}}.dump()); }
    bool error(std::string_view type, std::string_view message, std::optional<double> retry_after = {}) {
        json e{{"type", type}, {"message", message}};
        if (retry_after) e["retry_after"] = *retry_after;
        return emit(AH_EVENT_ERROR, e.dump());
    }
    bool stopped() const { return stopped_; }

private:
    bool emit(int32_t type, std::string_view payload) {
        if (stopped_ || !sink_.emit) return false;
        stopped_ = sink_.emit(sink_.ctx, type, str(payload)) != AH_OK;
        return !stopped_;
    }
    ah_event_sink sink_;
    bool stopped_ = false;
};

class ProviderPlugin {
public:
    explicit ProviderPlugin(Host host) : host_(std::move(host)) {}
    virtual ~ProviderPlugin() = default;
    // Answers call.arguments (the canonical chat request) through `out`.
    virtual void chat(const Call& call, Emitter& out) = 0;
    // True for a provider that reads the request from call.arguments_json itself (with a faster
    // reader, or only the part it needs): the SDK then skips parsing it, and call.arguments is an
    // empty object in chat(). A request is tens of kilobytes; parsing it is most of a fast
    // provider's work per reply.
    virtual bool reads_arguments_json() const { return false; }
    // The models this provider serves, as [{"id": …}]; null when unknown; {"error": "why"} when the
    // server could not be asked (the host shows the words).
    virtual json models(const Call&) { return nullptr; }
    // What `agenthost doctor` reports (ABI 1.4): health_check() entries; empty: nothing to check.
    virtual std::vector<json> health(const Call&) { return {}; }

protected:
    const Host& host() const { return host_; }

private:
    Host host_;
};

namespace detail {

// Runs `body`, turning any escaping exception into a status (rule 3: nothing crosses the ABI).
template <typename Body>
ah_status guarded(Body&& body) noexcept {
    try {
        return body();
    } catch (const json::exception&) {
        return AH_ERR_INVALID_ARGUMENT;
    } catch (const std::bad_alloc&) {
        return AH_ERR_NO_MEMORY;
    } catch (...) {
        return AH_ERR_INTERNAL;
    }
}

template <typename Plugin>
struct Instance {
    std::unique_ptr<Plugin> plugin;
};

template <typename Plugin>
Plugin& of(ah_instance* instance) {
    return *reinterpret_cast<Instance<Plugin>*>(instance)->plugin;
}

template <typename Plugin>
ah_status create(const ah_host_api* api, ah_host* host, ah_instance** out, const ah_writer* error) noexcept {
    try {
        auto instance = std::make_unique<Instance<Plugin>>();
        instance->plugin = std::make_unique<Plugin>(Host(api, host));
        *out = reinterpret_cast<ah_instance*>(instance.release());
        return AH_OK;
    } catch (const std::exception& e) {
        write(error, e.what());
        return AH_ERR_FAILED;
    } catch (...) {
        write(error, "unknown exception in plugin constructor");
        return AH_ERR_INTERNAL;
    }
}

template <typename Plugin>
void destroy(ah_instance* instance) noexcept {
    try {
        std::unique_ptr<Instance<Plugin>> owned(reinterpret_cast<Instance<Plugin>*>(instance));
    } catch (...) {
    }
}

template <typename Plugin>
ah_status list_tools(ah_instance* instance, const ah_tool_sink* raw) noexcept {
    return guarded([&] {
        ah_tool_sink sink = read_versioned(raw);
        ah_status first_refusal = AH_OK;  // a tool the host refuses does not keep the others out
        for (const Tool& tool : of<Plugin>(instance).tools()) {
            std::string schema = tool.input_schema.dump();
            ah_tool_def def{};
            def.struct_size = sizeof def;
            def.name = str(tool.name);
            def.description = str(tool.description);
            def.input_schema_json = str(schema);
            def.hints = tool.hints;
            std::string output_schema = tool.output_schema.is_null() ? std::string() : tool.output_schema.dump();
            def.title = str(tool.title);
            def.output_schema_json = str(output_schema);
            if (ah_status s = sink.add(sink.ctx, &def); s != AH_OK && first_refusal == AH_OK) first_refusal = s;
        }
        return first_refusal;
    });
}

template <typename Plugin>
ah_status call_tool(ah_instance* instance, const ah_call* raw, const ah_writer* result) noexcept {
    return guarded([&] {
        Call call = Call::from(raw);
        ToolResult r;
        try {
            r = of<Plugin>(instance).call(call);
        } catch (const std::exception& e) {
            // A tool that threw still produced an answer the model can act on.
            r = ToolResult::error("tool_exception", std::string("the tool failed: ") + e.what());
        }
        return write(result, r.body.dump(-1, ' ', false, json::error_handler_t::replace));
    });
}

template <typename Plugin>
ah_status context(ah_instance* instance, const ah_call* raw, const ah_writer* out) noexcept {
    return guarded([&] {
        std::string text = of<Plugin>(instance).context(Call::from(raw));
        return text.empty() ? static_cast<ah_status>(AH_OK) : write(out, text);
    });
}

template <typename Plugin>
ah_status chat(ah_instance* instance, const ah_call* raw, const ah_event_sink* sink) noexcept {
    return guarded([&] {
        Plugin& plugin = of<Plugin>(instance);
        Call call = Call::from(raw, !plugin.reads_arguments_json());
        Emitter emitter(sink);
        plugin.chat(call, emitter);
        return emitter.stopped() ? static_cast<ah_status>(AH_ERR_CANCELLED) : static_cast<ah_status>(AH_OK);
    });
}

template <typename Plugin>
ah_status list_models(ah_instance* instance, const ah_call* raw, const ah_writer* out) noexcept {
    return guarded([&] {
        json models = of<Plugin>(instance).models(Call::from(raw));
        if (models.is_null()) return static_cast<ah_status>(AH_ERR_UNSUPPORTED);
        if (models.is_object() && models.contains("error")) {  // why the list could not be had, for the host to show
            write(out, models.dump(-1, ' ', false, json::error_handler_t::replace));
            return static_cast<ah_status>(AH_ERR_FAILED);
        }
        return write(out, models.dump());
    });
}

template <typename Plugin>
ah_status list_resources(ah_instance* instance, const ah_call* raw, const ah_writer* out) noexcept {
    return guarded([&] {
        json list = of<Plugin>(instance).resources(Call::from(raw));
        return write(out, (list.is_array() ? list : json::array()).dump(-1, ' ', false, json::error_handler_t::replace));
    });
}

template <typename Plugin>
ah_status read_resource(ah_instance* instance, const ah_call* raw, const ah_writer* out) noexcept {
    return guarded([&] {
        Call call = Call::from(raw);
        json contents = of<Plugin>(instance).read_resource(call, call.arguments.value("uri", ""));
        if (contents.is_null()) return static_cast<ah_status>(AH_ERR_NOT_FOUND);
        return write(out, contents.dump(-1, ' ', false, json::error_handler_t::replace));
    });
}

// A 1.5 slot: null from the class is "none" (a list slot) or "not mine" (the others).
template <typename Answer>
ah_status json_answer(const ah_writer* out, Answer&& answer_of, bool list) noexcept {
    return guarded([&] {
        json answer = answer_of();
        if (answer.is_null()) return list ? write(out, "[]") : static_cast<ah_status>(AH_ERR_NOT_FOUND);
        return write(out, answer.dump(-1, ' ', false, json::error_handler_t::replace));
    });
}

template <typename Plugin>
ah_status list_prompts(ah_instance* instance, const ah_call* raw, const ah_writer* out) noexcept {
    return json_answer(
        out, [&] { return of<Plugin>(instance).prompts(Call::from(raw)); }, true);
}

template <typename Plugin>
ah_status get_prompt(ah_instance* instance, const ah_call* raw, const ah_writer* out) noexcept {
    return json_answer(
        out,
        [&] {
            Call call = Call::from(raw);
            json arguments = call.arguments.contains("arguments") ? call.arguments["arguments"] : json::object();
            return of<Plugin>(instance).get_prompt(call, call.arguments.value("name", ""), arguments);
        },
        false);
}

template <typename Plugin>
ah_status list_resource_templates(ah_instance* instance, const ah_call* raw, const ah_writer* out) noexcept {
    return json_answer(
        out, [&] { return of<Plugin>(instance).resource_templates(Call::from(raw)); }, true);
}

template <typename Plugin>
ah_status complete(ah_instance* instance, const ah_call* raw, const ah_writer* out) noexcept {
    return json_answer(
        out,
        [&] {
            Call call = Call::from(raw);
            return of<Plugin>(instance).complete(call, call.arguments);
        },
        false);
}

template <typename Plugin>
ah_status health(ah_instance* instance, const ah_call* raw, const ah_writer* out) noexcept {
    return guarded([&] {
        json checks = json::array();
        for (auto& check : of<Plugin>(instance).health(Call::from(raw))) checks.push_back(std::move(check));
        return write(out, json{{"checks", checks}}.dump(-1, ' ', false, json::error_handler_t::replace));
    });
}

// The descriptor of a plugin class: its kind follows from its base class.
template <typename Plugin>
ah_plugin descriptor(const char* name, const char* version, uint32_t flags) {
    static_assert(std::is_base_of_v<ToolPlugin, Plugin> || std::is_base_of_v<ProviderPlugin, Plugin>,
                  "a plugin class derives from agenthost::sdk::ToolPlugin or ProviderPlugin");
    ah_plugin d{};
    d.struct_size = sizeof d;
    d.abi_major = AH_ABI_MAJOR;
    d.abi_minor = AH_ABI_MINOR;
    d.flags = flags;
    d.name = name;
    d.version = version;
    d.create = &create<Plugin>;
    d.destroy = &destroy<Plugin>;
    d.health = &health<Plugin>;
    if constexpr (std::is_base_of_v<ToolPlugin, Plugin>) {
        d.kind = AH_PLUGIN_KIND_TOOL;
        d.list_tools = &list_tools<Plugin>;
        d.call_tool = &call_tool<Plugin>;
        d.context = &context<Plugin>;
        d.list_resources = &list_resources<Plugin>;
        d.read_resource = &read_resource<Plugin>;
        d.list_prompts = &list_prompts<Plugin>;
        d.get_prompt = &get_prompt<Plugin>;
        d.list_resource_templates = &list_resource_templates<Plugin>;
        d.complete = &complete<Plugin>;
    } else {
        d.kind = AH_PLUGIN_KIND_PROVIDER;
        d.chat = &chat<Plugin>;
        d.list_models = &list_models<Plugin>;
    }
    return d;
}

}  // namespace detail
}  // namespace agenthost::sdk

// Defines the descriptor and the exported entry point of a plugin whose class derives from
// agenthost::sdk::ToolPlugin or agenthost::sdk::ProviderPlugin and has a constructor taking
// agenthost::sdk::Host (throw from it to refuse to start). `flags` is 0 or AH_PLUGIN_THREAD_SAFE
// (the class then guards its own state). Use it once per library, at namespace scope.
#define AGENTHOST_PLUGIN(Class, name_literal, version_literal, flags)                                                          \
    AH_PLUGIN_ENTRY {                                                                                                          \
        static const ah_plugin descriptor = agenthost::sdk::detail::descriptor<Class>(name_literal, version_literal, (flags)); \
        *out_plugin = &descriptor;                                                                                             \
        return AH_OK;                                                                                                          \
    }

#endif  // AGENTHOST_PLUGIN_HPP
