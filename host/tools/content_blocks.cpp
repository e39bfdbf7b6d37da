#include "tools/content_blocks.hpp"

#include "common/bounded_json.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string_view>

namespace agenthost::tools {
namespace {

using nlohmann::json;

// Each block type and the string members it must have.
struct BlockShape {
    std::string_view type;
    std::initializer_list<const char*> required;
};
const BlockShape kShapes[] = {
    {"text", {"text"}},
    {"image", {"data", "mimeType"}},
    {"audio", {"data", "mimeType"}},
    {"resource", {}},  // its "resource" object is checked below
    {"resource_link", {"uri", "name"}},
};

bool has_string(const json& object, const char* key) { return object.contains(key) && object[key].is_string(); }

// About how many bytes base64 text decodes to, for the model's note.
std::string decoded_size(const json& block, const char* key) {
    size_t encoded = has_string(block, key) ? block[key].get_ref<const std::string&>().size() : 0;
    double bytes = static_cast<double>(encoded) * 3 / 4;
    char out[32];
    if (bytes < 1024)
        std::snprintf(out, sizeof out, "%.0f bytes", bytes);
    else if (bytes < 1024 * 1024)
        std::snprintf(out, sizeof out, "%.1f KiB", bytes / 1024);
    else
        std::snprintf(out, sizeof out, "%.1f MiB", bytes / (1024 * 1024));
    return out;
}

}  // namespace

std::string content_block_problem(const json& block) {
    if (!block.is_object()) return "a block is a JSON object";
    std::string type = json_io::get_string(block, "type");
    for (const BlockShape& shape : kShapes) {
        if (shape.type != type) continue;
        for (const char* key : shape.required)
            if (!has_string(block, key)) return "a " + type + " block needs \"" + key + "\", a string";
        if (type != "resource") return {};
        if (!block.contains("resource") || !block["resource"].is_object())
            return "a resource block needs \"resource\", an object";
        const json& r = block["resource"];
        if (!has_string(r, "uri")) return "a resource block's resource needs \"uri\", a string";
        if (!has_string(r, "text") && !has_string(r, "blob"))
            return "a resource block's resource needs \"text\" or \"blob\" (base64), a string";
        return {};
    }
    return "unknown block type '" + type + "' (text, image, audio, resource, resource_link)";
}

std::string content_block_text(const json& block) {
    std::string type = json_io::get_string(block, "type");
    if (type == "text") return json_io::get_string(block, "text");
    if (type == "image" || type == "audio")
        return "[" + json_io::get_string(block, "mimeType") + " " + type + ", " + decoded_size(block, "data") + "]";
    if (type == "resource_link")
        return "[link to resource " + json_io::get_string(block, "uri") + " (" + json_io::get_string(block, "name") + ")]";
    const json& r = block.contains("resource") && block["resource"].is_object() ? block["resource"] : block;
    std::string head = "[resource " + json_io::get_string(r, "uri") + " (" + json_io::get_string(r, "mimeType", "no type") + ")";
    if (has_string(r, "text")) return head + "]: " + r["text"].get<std::string>();
    return head + ", " + decoded_size(r, "blob") + "]";
}

}  // namespace agenthost::tools
