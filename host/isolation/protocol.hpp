// The isolation protocol's vocabulary: every operation a host and its plugin runner send each
// other (frames.hpp carries them), named once here. Both sides write op_name(Op::…) and read with
// parse_op, so a misspelt operation is a compile error, not a message the other side ignores.
// The optional slots a runner reports after create use the same names (context … health, chat).
#pragma once

#include <agenthost/agenthost.h>

#include <optional>
#include <string_view>
#include <utility>

namespace agenthost::isolation {

enum class Op {
    // host → runner: the plugin's lifecycle and slots
    create,
    destroy,
    cancel,
    list_tools,
    call_tool,
    context,
    list_models,
    list_resources,
    read_resource,
    health,
    list_prompts,
    get_prompt,
    list_resource_templates,
    complete,
    chat,
    // runner → host: the host services a plugin calls
    log,
    kv_get,
    kv_set,
    kv_delete,
    memory_get,
    memory_set,
    post_event,
    tools_changed,
    http,
    progress,
    sample,
    elicit,
    resource_updated,
    http_abort,  // the plugin's sink stopped a streamed http request: the host stops the transfer
};

inline constexpr std::pair<Op, std::string_view> kOps[] = {
    {Op::create, "create"},
    {Op::destroy, "destroy"},
    {Op::cancel, "cancel"},
    {Op::list_tools, "list_tools"},
    {Op::call_tool, "call_tool"},
    {Op::context, "context"},
    {Op::list_models, "list_models"},
    {Op::list_resources, "list_resources"},
    {Op::read_resource, "read_resource"},
    {Op::health, "health"},
    {Op::list_prompts, "list_prompts"},
    {Op::get_prompt, "get_prompt"},
    {Op::list_resource_templates, "list_resource_templates"},
    {Op::complete, "complete"},
    {Op::chat, "chat"},
    {Op::log, "log"},
    {Op::kv_get, "kv_get"},
    {Op::kv_set, "kv_set"},
    {Op::kv_delete, "kv_delete"},
    {Op::memory_get, "memory_get"},
    {Op::memory_set, "memory_set"},
    {Op::post_event, "post_event"},
    {Op::tools_changed, "tools_changed"},
    {Op::http, "http"},
    {Op::progress, "progress"},
    {Op::sample, "sample"},
    {Op::elicit, "elicit"},
    {Op::resource_updated, "resource_updated"},
    {Op::http_abort, "http_abort"},
};

constexpr std::string_view op_name(Op op) {
    for (const auto& [value, name] : kOps)
        if (value == op) return name;
    return {};
}

constexpr std::optional<Op> parse_op(std::string_view name) {
    for (const auto& [value, text] : kOps)
        if (text == name) return value;
    return std::nullopt;
}

// The descriptor's optional slots that take a call and write text, each sent as the op of its
// name. The runner reports which of them (and chat) a plugin has after create and runs them; the
// host keeps only those in the descriptor it stands in for. Adding a slot of this shape is a row.
using WriterSlotFn = ah_status (*)(ah_instance*, const ah_call*, const ah_writer*);
struct WriterSlot {
    Op op;
    WriterSlotFn ah_plugin::*slot;
};
inline constexpr WriterSlot kWriterSlots[] = {
    {Op::context, &ah_plugin::context},
    {Op::list_models, &ah_plugin::list_models},
    {Op::list_resources, &ah_plugin::list_resources},
    {Op::read_resource, &ah_plugin::read_resource},
    {Op::health, &ah_plugin::health},
    {Op::list_prompts, &ah_plugin::list_prompts},
    {Op::get_prompt, &ah_plugin::get_prompt},
    {Op::list_resource_templates, &ah_plugin::list_resource_templates},
    {Op::complete, &ah_plugin::complete},
};

constexpr const WriterSlot* writer_slot(Op op) {
    for (const auto& row : kWriterSlots)
        if (row.op == op) return &row;
    return nullptr;
}

}  // namespace agenthost::isolation
