#include "tools/invoker.hpp"

#include "tools/content_blocks.hpp"

#include "tools/tool_families.hpp"

#include "common/bounded_json.hpp"
#include "common/json_fault.hpp"
#include "common/schema_validator.hpp"

#include <spdlog/spdlog.h>

namespace agenthost::tools {
namespace {

using nlohmann::json;

// A result deeper than this is not a tool result a model could read; it is kept as text.
constexpr int kResultDepth = 128;
constexpr size_t kResultBytes = 64u << 20;  // the registry's writer refuses more

// The members whose types the host relies on, and the type each must have.
struct Member {
    const char* name;
    bool (json::*is_type)() const noexcept;
    const char* type;
};
constexpr Member kTypedMembers[] = {
    {"is_error", &json::is_boolean, "a boolean"}, {"error_code", &json::is_string, "a string"},
    {"marker", &json::is_string, "a string"},     {"structured", &json::is_object, "an object"},
    {"summary", &json::is_string, "a string"},    {"reason", &json::is_string, "a string"},
    {"blocks", &json::is_array, "an array"},
};

}  // namespace

json error_result(const std::string& code, const std::string& message) {
    return {{"content", message}, {"is_error", true}, {"error_code", code}};
}

std::string_view content_view(const json& result, std::string& spill) {
    const json& c = result.is_object() && result.contains("content") ? result["content"] : result;
    if (c.is_string()) return c.get_ref<const std::string&>();
    spill = json_io::dump(c);
    return spill;
}

std::string content_text(const json& result) {
    std::string spill;
    std::string_view text = content_view(result, spill);
    return spill.empty() ? std::string(text) : spill;
}

std::optional<json> Invoker::check_arguments(const Tool& tool, const json& arguments) const {
    auto schema = json_io::parse(tool.input_schema_json, {kResultBytes, kResultDepth}, json_io::Utf8::repair);
    if (!schema)
        return error_result("plugin_failure", "the input schema of " + tool.name + " cannot be read: " + schema.error().message);
    auto problems = schema::validate_against_schema(arguments, *schema);
    if (problems.empty()) return std::nullopt;
    std::string text;
    for (const auto& p : problems) text += (text.empty() ? "" : "; ") + p;
    return error_result("invalid_arguments", "Invalid arguments for " + tool.name + ": " + text + ".");
}

json Invoker::call(const Tool& tool, const Invocation& in) {
    try {
        if (tool.source == Tool::Source::builtin && tool.name == kLoadToolsName)
            return call_load_tools(catalogue_, memory_, in.conversation_id, in.arguments);
        if (tool.source == Tool::Source::builtin) return call_builtin(memory_, in.conversation_id, tool.name, in.arguments);
        plugins::CallInput input;
        input.call_id = in.call_id;
        input.tool_name = tool.name;
        input.arguments_json = json_io::dump(in.arguments);
        input.conversation_id = in.conversation_id;
        json context = in.request_context.is_object() ? in.request_context : json::object();
        if (in.approved) context["approved"] = true;
        input.request_context_json = json_io::dump(context);
        input.cancel = in.cancel;
        auto raw = catalogue_.registry().call_tool(input);
        if (!raw) return error_result(raw.error().code, raw.error().message);
        return normalise(tool, *raw);
    } catch (const std::exception& e) {  // memory exhaustion or a host bug: the call fails, the host goes on
        spdlog::error("tool call failed in the host: tool={} error={}", tool.name, e.what());
        return error_result("plugin_failure", tool.name + " could not be run: " + e.what());
    }
}

json Invoker::normalise(const Tool& tool, std::string_view raw) {
    json_io::Repairs repairs;
    auto parsed = json_io::parse(raw, {kResultBytes, kResultDepth}, json_io::Utf8::repair, &repairs);
    if (parsed && repairs.any())
        warn_once(tool, "(result)",
                  "the result held " + repairs.describe() + "; it was read after mending them (U+FFFD, escapes, strings)");
    if (!parsed) {
        if (repairs.invalid_utf8 || raw.find('\0') != std::string_view::npos)
            warn_once(tool, "(text)", "the plain-text result held invalid UTF-8 or NUL bytes; they became U+FFFD");
        if (json_io::json_fault(parsed.error()) == json_io::JsonFault::too_deep)
            warn_once(tool, "(depth)",
                      "the result nests deeper than " + std::to_string(kResultDepth) + " levels; it is kept as text");
        // Plain text is a valid result: it is the content.
        return json{{"content", json_io::repair_utf8(raw)}, {"is_error", false}};
    }
    json body = std::move(*parsed);
    if (!body.is_object()) return json{{"content", std::move(body)}, {"is_error", false}};
    for (const Member& m : kTypedMembers) {
        auto it = body.find(m.name);
        if (it == body.end()) continue;
        if (((*it).*(m.is_type))()) continue;
        warn_once(tool, m.name,
                  std::string("the member ") + m.name + " must be " + m.type + ", not " + std::string(it->type_name()) +
                      "; it was ignored");
        body.erase(it);
    }
    if (body.contains("blocks")) read_blocks(tool, body);
    if (!body.contains("is_error")) body["is_error"] = false;
    return body;
}

// ABI 1.5 content blocks: those of a shape MCP clients read are kept (one warning for the others);
// a result without "content" gives the model the blocks' text.
void Invoker::read_blocks(const Tool& tool, json& body) {
    json kept = json::array();
    for (json& block : body["blocks"]) {
        if (std::string problem = content_block_problem(block); !problem.empty()) {
            warn_once(tool, "blocks", "a content block was dropped: " + problem);
            continue;
        }
        kept.push_back(std::move(block));
    }
    if (!body.contains("content")) {
        std::string text;
        for (const json& block : kept) {
            if (!text.empty()) text += '\n';
            text += content_block_text(block);
        }
        body["content"] = std::move(text);
    }
    body["blocks"] = std::move(kept);
}

void Invoker::warn_once(const Tool& tool, const std::string& member, const std::string& why) {
    {
        std::lock_guard lock(warned_mutex_);
        if (!warned_.insert(tool.plugin + "\n" + tool.name + "\n" + member).second) return;
    }
    spdlog::warn("plugin result not as documented: plugin={} tool={} {}", tool.plugin, tool.name, why);
}

}  // namespace agenthost::tools
