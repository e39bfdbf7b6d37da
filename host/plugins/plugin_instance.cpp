#include "plugins/plugin_instance.hpp"

#include "common/bounded_json.hpp"
#include "plugins/crash_note.hpp"
#include "plugins/host_services.hpp"
#include "plugins/plugin_fault.hpp"
#include "plugins/status_words.hpp"
#include "plugins/tool_check.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <thread>

namespace agenthost::plugins {
using nlohmann::json;

namespace {

ah_str as_str(const std::string& s) { return ah_str{s.data(), s.size()}; }

// A receiver-owned writer appending to a std::string up to `limit` bytes, so a runaway plugin
// cannot exhaust memory.
struct BoundedText {
    explicit BoundedText(size_t limit) : limit(limit) {}
    std::string text;
    size_t limit;
    bool overflowed = false;  // the plugin tried to write more than `limit`
    ah_writer writer{sizeof(ah_writer), this, [](void* ctx, const char* data, size_t len) -> ah_status {
                         auto* self = static_cast<BoundedText*>(ctx);
                         if (!data && len) return AH_ERR_INVALID_ARGUMENT;
                         if (self->text.size() + len > self->limit) {
                             self->overflowed = true;
                             return AH_ERR_NO_MEMORY;
                         }
                         try {
                             self->text.append(data, len);
                         } catch (...) {
                             return AH_ERR_NO_MEMORY;
                         }
                         return AH_OK;
                     }};
};

// The ah_call borrows `in`'s strings: `in` must outlive it.
ah_call to_call(const CallInput& in) {
    ah_call c{};
    c.struct_size = sizeof c;
    c.call_id = as_str(in.call_id);
    c.tool_name = as_str(in.tool_name);
    c.arguments_json = as_str(in.arguments_json);
    c.conversation_id = as_str(in.conversation_id);
    c.request_context_json = as_str(in.request_context_json);
    c.cancel = in.cancel;
    return c;
}

// Plugin lists and documents: repaired and bounded, never thrown on.
Result<json> read_plugin_json(const BoundedText& out) { return json_io::parse(out.text, {out.limit, 64}, json_io::Utf8::repair); }

}  // namespace

Result<std::unique_ptr<PluginInstance>> PluginInstance::create(ah_plugin& descriptor, HostServices& services, ah_host* handle,
                                                               std::vector<std::string>& warnings) {
    BoundedText error(caps::create_error);
    ah_instance* instance = nullptr;
    handle->creating_thread = std::this_thread::get_id();
    ah_status status;
    {
        std::optional<CrashNote> note;
        if (!handle->isolation) note.emplace(handle->plugin, "create");
        status = descriptor.create(services.api(), handle, &instance, &error.writer);
    }
    handle->creating_thread = {};
    for (auto& w : handle->create_warnings) warnings.push_back(std::move(w));
    handle->create_warnings.clear();
    if (status != AH_OK || !instance) {
        handle->destroyed = true;
        handle->connections.close();
        std::string why = error.text.empty() ? "no message" : json_io::repair_utf8(error.text);
        return plugin_error(PluginFault::create_failed,
                            "plugin '" + handle->plugin + "' failed to start (" + status_words(status) + "): " + why);
    }
    if (handle->isolation) isolation::keep_present_slots(descriptor, instance);
    return std::make_unique<PluginInstance>(Key{}, descriptor, handle, instance);
}

PluginInstance::PluginInstance(Key, const ah_plugin& descriptor, ah_host* handle, ah_instance* instance)
    : descriptor_(descriptor), handle_(handle), instance_(instance) {}

const std::string& PluginInstance::plugin() const { return handle_->plugin; }
bool PluginInstance::isolated() const { return handle_->isolation != nullptr; }

PluginInstance::~PluginInstance() {
    descriptor_.destroy(instance_);
    handle_->destroyed = true;
    handle_->connections.close();
    say_dropped_log_lines(handle_->log_budget, handle_->plugin);
}

std::unique_lock<std::mutex> PluginInstance::lock() {
    if (descriptor_.flags & AH_PLUGIN_THREAD_SAFE) return {};
    return std::unique_lock(mutex_);
}

template <typename Slot>
ah_status PluginInstance::call_slot(const std::string& what, Slot&& slot) {
    auto held = lock();
    std::optional<CrashNote> note;
    if (!isolated()) note.emplace(plugin(), what);  // an isolated plugin's crash is its own process's
    return slot();
}

ListedTools PluginInstance::list_tools() {
    ListedTools listed;
    ah_tool_sink sink{sizeof(ah_tool_sink), &listed, [](void* ctx, const ah_tool_def* raw) -> ah_status {
                          auto* out = static_cast<ListedTools*>(ctx);
                          if (!raw) return AH_ERR_INVALID_ARGUMENT;
                          try {
                              std::vector<std::string> before;
                              for (const ToolInfo& t : out->tools) before.push_back(t.name);
                              CheckedTool checked = check_tool(*raw, before);
                              if (!checked.refusal.empty()) {
                                  out->refused.push_back({checked.name, std::move(checked.refusal)});
                                  return AH_ERR_INVALID_ARGUMENT;
                              }
                              out->tools.push_back(ToolInfo{std::move(checked.name), std::move(checked.description),
                                                            std::move(checked.input_schema_json), "", checked.hints, false,
                                                            std::move(checked.title), std::move(checked.output_schema_json)});
                              return AH_OK;
                          } catch (...) {
                              return AH_ERR_INTERNAL;
                          }
                      }};
    listed.status = call_slot("list_tools", [&] { return descriptor_.list_tools(instance_, &sink); });
    for (ToolInfo& tool : listed.tools) tool.plugin = plugin();
    for (const RefusedTool& r : listed.refused)
        spdlog::warn("plugin tool refused: plugin={} tool={} {}", plugin(), r.name, r.reason);
    return listed;
}

Result<std::string> PluginInstance::call_tool(const CallInput& input) {
    BoundedText result(caps::tool_result);
    ah_call call = to_call(input);
    ah_status status = call_slot(input.tool_name, [&] { return descriptor_.call_tool(instance_, &call, &result.writer); });
    if (result.overflowed) {
        spdlog::error("tool result too large: tool={} plugin={} limit_bytes={}", input.tool_name, plugin(), result.limit);
        return plugin_error(PluginFault::output_too_large, "the plugin '" + plugin() + "' answered '" + input.tool_name +
                                                               "' with more than " + std::to_string(result.limit >> 20) +
                                                               " MiB; the result was dropped");
    }
    if (status != AH_OK) {
        spdlog::error("tool call failed: tool={} plugin={} status={}", input.tool_name, plugin(), status);
        // An isolated plugin's process names its own failure (a crash, a timeout) in what it wrote.
        std::string detail = result.text.empty() ? "" : ": " + json_io::repair_utf8(result.text.substr(0, 1000));
        return plugin_error(PluginFault::plugin_failure, "the plugin '" + plugin() + "' failed while running '" +
                                                             input.tool_name + "' (" + status_words(status) + ")" + detail);
    }
    return std::move(result.text);
}

std::optional<std::string> PluginInstance::context(const CallInput& input) {
    if (!descriptor_.context) return std::nullopt;
    BoundedText out(caps::context);
    ah_call call = to_call(input);
    ah_status status = call_slot("context", [&] { return descriptor_.context(instance_, &call, &out.writer); });
    if (status != AH_OK) {
        spdlog::warn("context hook failed: plugin={} status={}", plugin(), status);
        return std::nullopt;
    }
    return json_io::repair_utf8(out.text);
}

std::optional<json> PluginInstance::list_resources(const CallInput& input) {
    if (!descriptor_.list_resources) return std::nullopt;
    BoundedText out(caps::resource_list);
    ah_call call = to_call(input);
    ah_status status = call_slot("list_resources", [&] { return descriptor_.list_resources(instance_, &call, &out.writer); });
    auto read = read_plugin_json(out);
    if (status != AH_OK || !read || !read->is_array()) {
        spdlog::warn("resource listing failed: plugin={} status={}", plugin(), status);
        return std::nullopt;
    }
    return std::move(*read);
}

Result<json> PluginInstance::read_resource(const std::string& uri, const CallInput& input) {
    if (!descriptor_.read_resource) return plugin_error(PluginFault::not_found, "plugin '" + plugin() + "' serves no resources");
    CallInput request = input;
    request.arguments_json = json{{"uri", uri}}.dump();
    BoundedText out(caps::resource);
    ah_call call = to_call(request);
    ah_status status = call_slot("read_resource", [&] { return descriptor_.read_resource(instance_, &call, &out.writer); });
    if (status == AH_ERR_NOT_FOUND)
        return plugin_error(PluginFault::not_found, "plugin '" + plugin() + "' does not serve " + uri);
    auto contents = read_plugin_json(out);
    if (status != AH_OK || !contents || !contents->is_object())
        return plugin_error(PluginFault::plugin_failure,
                            "plugin '" + plugin() + "' failed to read " + uri + " (" + status_words(status) + ")");
    return std::move(*contents);
}

namespace {

struct McpSlotRow {
    McpSlot slot;
    ah_status (*ah_plugin::*fn)(ah_instance*, const ah_call*, const ah_writer*);
    const char* name;
    bool answers_list;  // a JSON array, else an object
};
constexpr McpSlotRow kMcpSlots[] = {
    {McpSlot::list_prompts, &ah_plugin::list_prompts, "list_prompts", true},
    {McpSlot::get_prompt, &ah_plugin::get_prompt, "get_prompt", false},
    {McpSlot::list_resource_templates, &ah_plugin::list_resource_templates, "list_resource_templates", true},
    {McpSlot::complete, &ah_plugin::complete, "complete", false},
};

}  // namespace

Result<json> PluginInstance::mcp_slot(McpSlot slot, const CallInput& input) {
    const McpSlotRow& row =
        *std::find_if(std::begin(kMcpSlots), std::end(kMcpSlots), [&](const auto& r) { return r.slot == slot; });
    auto fn = descriptor_.*row.fn;
    if (!fn) return plugin_error(PluginFault::not_found, "plugin '" + plugin() + "' has no " + row.name);
    BoundedText out(caps::resource_list);
    ah_call call = to_call(input);
    ah_status status = call_slot(row.name, [&] { return fn(instance_, &call, &out.writer); });
    if (status == AH_ERR_NOT_FOUND) return plugin_error(PluginFault::not_found, "not plugin '" + plugin() + "''s");
    auto answer = read_plugin_json(out);
    if (status != AH_OK || !answer || answer->is_array() != row.answers_list || !(answer->is_array() || answer->is_object())) {
        spdlog::warn("plugin slot failed: plugin={} slot={} status={}", plugin(), row.name, status);
        return plugin_error(PluginFault::plugin_failure, "plugin '" + plugin() + "' failed in " + row.name + " (" +
                                                             status_words(status) + (answer ? "" : ", unreadable answer") + ")");
    }
    return std::move(*answer);
}

std::vector<HealthCheck> PluginInstance::health() {
    if (!descriptor_.health) return {};
    BoundedText out(caps::health);
    CallInput input;  // outlives the call: the ah_call borrows its strings
    ah_call call = to_call(input);
    ah_status status = call_slot("health", [&] { return descriptor_.health(instance_, &call, &out.writer); });
    auto report = read_plugin_json(out);
    if (status != AH_OK || !report || !report->is_object() || !report->contains("checks") || !(*report)["checks"].is_array())
        return {{"health check", false,
                 "the plugin's health check failed (" + status_words(status) + (report ? "" : ", unreadable answer") + ")"}};
    std::vector<HealthCheck> checks;
    for (const auto& c : (*report)["checks"]) {
        if (!c.is_object()) continue;
        checks.push_back(
            {json_io::get_string(c, "name", "check"), json_io::get_bool(c, "ok", false), json_io::get_string(c, "detail", "")});
    }
    return checks;
}

namespace {

// The host's side of a chat's events: it notes whether the provider reported a failure, and lifts
// the crash note while host code (the extractor, the terminal, SSE clients) handles each event, as
// a crash there is the host's.
struct ChatEvents {
    const ah_event_sink* inner;
    bool lift_crash_note;
    bool failed = false;

    static ah_status emit(void* ctx, int32_t type, ah_str payload) {
        auto* self = static_cast<ChatEvents*>(ctx);
        if (type == AH_EVENT_ERROR) self->failed = true;
        std::optional<CrashNote::Lifted> lifted;
        if (self->lift_crash_note) lifted.emplace();
        return self->inner->emit(self->inner->ctx, type, payload);
    }
};

}  // namespace

ah_status PluginInstance::chat(const CallInput& input, const ah_event_sink& events) {
    ah_call call = to_call(input);
    auto held = lock();
    ChatEvents seen{&events, !isolated()};
    ah_event_sink host_side{sizeof(ah_event_sink), &seen, &ChatEvents::emit};
    ah_status status;
    if (isolated()) {
        status = descriptor_.chat(instance_, &call, &host_side);
    } else {
        CrashNote note(plugin(), "chat");
        RunKv::Bound run_kv(input.run_kv);
        status = descriptor_.chat(instance_, &call, &host_side);
    }
    // A failure only the provider saw (a stream that ended early on a clean HTTP exchange): its
    // retry starts on a new connection too.
    if (seen.failed) handle_->connections.close_idle();
    return status;
}

Result<json> PluginInstance::list_models(const CallInput& input) {
    if (!descriptor_.list_models) return plugin_error(PluginFault::unsupported, "cannot list its models");
    BoundedText out(caps::model_list);
    ah_call call = to_call(input);
    ah_status status = call_slot("list_models", [&] { return descriptor_.list_models(instance_, &call, &out.writer); });
    if (status == AH_ERR_UNSUPPORTED) return plugin_error(PluginFault::unsupported, "cannot list its models");
    auto list = read_plugin_json(out);
    if (status != AH_OK || !list || !list->is_array()) {
        // The plugin's own words when it gave them ({"error": "…"}), else the status's.
        std::string why = list && list->is_object() ? json_io::get_string(*list, "error") : "";
        return plugin_error(PluginFault::model_list_failed,
                            "could not list its models: " +
                                (why.empty() ? status_words(status) + "; is the server at its base_url running?" : why));
    }
    return std::move(*list);
}

std::optional<isolation::BuiltAbi> PluginInstance::built_abi() const {
    if (isolated()) return isolation::built_abi(instance_);
    return isolation::BuiltAbi{descriptor_.abi_major, descriptor_.abi_minor};
}

std::optional<isolation::ProcessHealth> PluginInstance::process_health() const {
    if (!isolated()) return std::nullopt;
    return isolation::process_health(instance_);
}

}  // namespace agenthost::plugins
