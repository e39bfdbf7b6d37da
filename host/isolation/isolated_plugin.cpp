#include "isolation/isolated_plugin.hpp"

#include "isolation/plugin_process.hpp"

#include "plugins/abi_text.hpp"

#include "isolation/protocol.hpp"
#include "common/bounded_json.hpp"
#include "common/install_layout.hpp"
#include "plugins/host_services.hpp"
#include "plugins/manifest.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <utility>

namespace agenthost::isolation {

namespace {

using plugins::view;

ah_status write_text(const ah_writer* out, const std::string& text) {
    return out && out->write ? out->write(out->ctx, text.data(), text.size()) : AH_OK;
}

PluginProcess* self(ah_instance* instance) { return reinterpret_cast<PluginProcess*>(instance); }

json call_fields(const ah_call* raw) {
    ah_call c{};
    std::memcpy(&c, raw, std::min(raw->struct_size, sizeof c));
    return {{"call_id", view(c.call_id)},
            {"tool_name", view(c.tool_name)},
            {"arguments_json", view(c.arguments_json)},
            {"conversation_id", view(c.conversation_id)},
            {"request_context_json", view(c.request_context_json)}};
}

const ah_cancel* call_cancel(const ah_call* raw) { return raw->struct_size >= sizeof(ah_call) ? raw->cancel : nullptr; }

// The child's answer as the plugin gave it: its text (written even with a failing status, as the
// in-process path keeps it) and its status.
ah_status write_reply(const ah_writer* out, const PluginProcess::Outcome& outcome) {
    std::string text = get_plugin_text(outcome.reply, "text");
    if (!text.empty()) {
        ah_status written = write_text(out, text);
        if (outcome.status == AH_OK) return written;
    }
    return outcome.status;
}

// A text-answering slot (the rows of kWriterSlots, and list_models).
ah_status text_slot(ah_instance* instance, Op op, const ah_call* call, const ah_writer* out) {
    json message = call_fields(call);
    message["op"] = op_name(op);
    auto outcome = self(instance)->request(std::move(message), call_cancel(call));
    if (!outcome.failure.empty()) return outcome.status == AH_OK ? AH_ERR_FAILED : outcome.status;
    return write_reply(out, outcome);
}

// Each row of kWriterSlots, forwarded to the plugin's process as the op of its name.
template <Op op>
ah_status forward(ah_instance* instance, const ah_call* call, const ah_writer* out) {
    return text_slot(instance, op, call, out);
}
template <size_t... I>
constexpr std::array<WriterSlotFn, sizeof...(I)> writer_forwarders(std::index_sequence<I...> /*rows*/) {
    return {&forward<kWriterSlots[I].op>...};
}
constexpr auto kWriterForwarders = writer_forwarders(std::make_index_sequence<std::size(kWriterSlots)>());

}  // namespace

ProcessHealth process_health(ah_instance* instance) { return self(instance)->health(); }
std::optional<BuiltAbi> built_abi(ah_instance* instance) { return self(instance)->built_abi(); }

ah_plugin isolated_descriptor(const plugins::Manifest& m) {
    ah_plugin d{};
    d.struct_size = sizeof d;
    d.abi_major = AH_ABI_MAJOR;
    d.abi_minor = AH_ABI_MINOR;
    d.flags = AH_PLUGIN_THREAD_SAFE;  // calls may overlap here; the registry still serialises a plugin that is not thread-safe
    d.kind = m.kind == plugins::PluginKind::provider ? AH_PLUGIN_KIND_PROVIDER : AH_PLUGIN_KIND_TOOL;
    d.create = [](const ah_host_api* api, ah_host* host, ah_instance** out, const ah_writer* error) -> ah_status {
        if (!host || !host->isolation) return AH_ERR_INVALID_ARGUMENT;
        auto plugin = std::make_unique<PluginProcess>(api, host, *host->isolation);
        std::string why;
        if (ah_status started = plugin->start(why); started != AH_OK) {
            write_text(error, why + " (in its own process)");
            return started;  // the plugin's own status when its create() refused, as in process
        }
        *out = reinterpret_cast<ah_instance*>(plugin.release());  // owned by the registry until destroy()
        return AH_OK;
    };
    d.destroy = [](ah_instance* instance) { std::unique_ptr<PluginProcess> owned(self(instance)); };
    d.list_tools = [](ah_instance* instance, const ah_tool_sink* sink) -> ah_status {
        auto outcome = self(instance)->request({{"op", op_name(Op::list_tools)}}, nullptr);
        if (outcome.status != AH_OK) return outcome.status;
        const json& listed = outcome.reply.contains("tools") ? outcome.reply["tools"] : json::array();
        if (!listed.is_array()) return AH_ERR_INVALID_ARGUMENT;
        for (const auto& t : listed) {
            std::string name = json_io::get_string(t, "name"), description = json_io::get_string(t, "description"),
                        schema = json_io::get_string(t, "input_schema_json", "{}"), title = json_io::get_string(t, "title"),
                        output_schema = json_io::get_string(t, "output_schema_json");
            ah_tool_def def{sizeof(ah_tool_def),
                            str(name),
                            str(description),
                            str(schema),
                            static_cast<uint32_t>(json_io::get_int(t, "hints", 0)),
                            str(title),
                            str(output_schema)};
            sink->add(sink->ctx, &def);
        }
        return AH_OK;
    };
    d.call_tool = [](ah_instance* instance, const ah_call* call, const ah_writer* result) -> ah_status {
        json message = call_fields(call);
        message["op"] = op_name(Op::call_tool);
        auto outcome = self(instance)->request(std::move(message), call_cancel(call));
        if (!outcome.failure.empty())  // the process failed: a clear tool error, the host goes on
            return write_text(result, json{{"content", "the process of plugin '" + self(instance)->plugin_name() + "' running '" +
                                                           std::string(view(call->tool_name)) + "' " + outcome.failure +
                                                           (outcome.final ? "" : "; it is restarted for the next call")},
                                           {"is_error", true},
                                           {"error_code", "plugin_failure"}}
                                          .dump());
        if (json_io::get_string(outcome.reply, "error") == "output_too_large")
            return write_text(result,
                              json{{"content", "plugin '" + self(instance)->plugin_name() + "' answered '" +
                                                   std::string(view(call->tool_name)) + "' with more than " +
                                                   std::to_string(kMaxFrameBytes >> 20) +
                                                   " MiB (the limit of one answer from its process); the result was dropped"},
                                   {"is_error", true},
                                   {"error_code", "output_too_large"}}
                                  .dump());
        if (outcome.status == AH_ERR_CANCELLED && outcome.reply.is_null())
            return write_text(result, json{{"content", "cancelled"}, {"is_error", true}, {"error_code", "cancelled"}}.dump());
        return write_reply(result, outcome);
    };
    for (size_t i = 0; i < std::size(kWriterSlots); ++i) d.*kWriterSlots[i].slot = kWriterForwarders[i];
    d.list_models = [](ah_instance* i, const ah_call* c, const ah_writer* o) { return text_slot(i, Op::list_models, c, o); };
    d.chat = [](ah_instance* instance, const ah_call* call, const ah_event_sink* events) -> ah_status {
        json message = call_fields(call);
        message["op"] = op_name(Op::chat);
        auto outcome = self(instance)->request(
            std::move(message), call_cancel(call),
            [events](int32_t type, std::string_view payload) { return events->emit(events->ctx, type, str(payload)); });
        if (!outcome.failure.empty()) {
            std::string error =
                json{{"type", "provider_failure"}, {"message", "the provider plugin's process " + outcome.failure}}.dump();
            events->emit(events->ctx, AH_EVENT_ERROR, str(error));
            return AH_OK;
        }
        return outcome.status;
    };
    return d;
}

void keep_present_slots(ah_plugin& d, ah_instance* instance) {
    const json& slots = self(instance)->slots();
    for (const auto& row : kWriterSlots)
        if (!json_io::get_bool(slots, op_name(row.op), false)) d.*row.slot = nullptr;
    if (!json_io::get_bool(slots, op_name(Op::chat), false)) d.chat = nullptr;
}

std::filesystem::path default_runner() { return layout::install_layout().runner; }

}  // namespace agenthost::isolation
