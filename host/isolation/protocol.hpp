// The isolation protocol's vocabulary: every operation a host and its plugin runner send each
// other (frames.hpp carries them), named once here. Both sides write op_name(Op::…) and read with
// parse_op, so a misspelt operation is a compile error, not a message the other side ignores.
// The optional slots a runner reports after create use the same names (context … health, chat).
#pragma once

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

}  // namespace agenthost::isolation
