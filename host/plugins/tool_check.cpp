#include "plugins/tool_check.hpp"

#include "plugins/abi_text.hpp"

#include "common/bounded_json.hpp"
#include "common/schema_validator.hpp"
#include "common/spelling.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

namespace agenthost::plugins {
namespace {

// A schema the tool declares, read within bounds and checked; nothing, with `refusal` set, when
// it cannot be used.
std::optional<nlohmann::json> checked_schema(ah_str text, const char* which, std::string& refusal) {
    auto schema = json_io::parse(view(text), {1u << 20, 64}, json_io::Utf8::repair);
    if (!schema) {
        refusal = std::string("its ") + which + " schema is not usable JSON: " + schema.error().message;
        return std::nullopt;
    }
    if (std::string problem = schema::check_tool_schema(*schema); !problem.empty()) {
        refusal = std::string("its ") + which + " schema is invalid: " + problem;
        return std::nullopt;
    }
    return std::move(*schema);
}

}  // namespace

CheckedTool check_tool(const ah_tool_def& raw, const std::vector<std::string>& listed_before) {
    CheckedTool out;
    try {
        ah_tool_def def{};
        std::memcpy(&def, &raw, std::min(raw.struct_size, sizeof def));
        out.name = json_io::repair_utf8(view(def.name).substr(0, 256));
        out.hints = def.hints;
        if (!spelling::is_name(out.name, 64, true)) {
            out.refusal = "its name must match ^[a-zA-Z][a-zA-Z0-9_]{0,63}$";
            return out;
        }
        if (std::find(listed_before.begin(), listed_before.end(), out.name) != listed_before.end()) {
            out.refusal = "the plugin lists a tool of this name twice (the first is kept)";
            return out;
        }
        auto schema = checked_schema(def.input_schema_json, "input", out.refusal);
        if (!schema) return out;
        if (def.output_schema_json.len) {
            auto output = checked_schema(def.output_schema_json, "output", out.refusal);
            if (!output) return out;
            out.output_schema_json = json_io::dump(*output);
        }
        out.description = json_io::repair_utf8(view(def.description).substr(0, 64 << 10));
        out.title = json_io::repair_utf8(view(def.title).substr(0, 256));
        out.input_schema_json = json_io::dump(*schema);
    } catch (const std::exception& e) {  // memory exhaustion: the tool is refused, the host goes on
        out.refusal = std::string("it could not be read: ") + e.what();
    }
    return out;
}

}  // namespace agenthost::plugins
