// Calls written as JSON: {"name", "arguments"} objects, lists and sequences of them.
#include "toolcalls/format_parts.hpp"

namespace agenthost::toolcalls::formats {

using json_io::dump;

// ---- Turning parsed shapes into calls -----------------------------------------------------------

const json* schema_of(const ToolSet& tools, std::string_view name) {
    const auto& schemas = tools.impl().schemas;
    auto it = schemas.find(name);
    return it == schemas.end() ? nullptr : &it->second;
}

// Adds a call when its name is offered; `report` says whether a refusal is worth telling the model.
bool add_call(Parsed& out, const std::string& name, const json& args, const char* format, const ToolSet& tools, bool report) {
    if (!tools.offers(name)) {
        if (report) out.problems.push_back("'" + name + "' is not one of the offered tools");
        return false;
    }
    out.calls.push_back({name, dump(args), format});
    return true;
}

// Typed values (pythonic) fitted to the tool's schema.
json fit_arguments(json args, const ToolSet& tools, const std::string& name) {
    const json* schema = schema_of(tools, name);
    for (auto& [key, value] : args.items()) value = fit_to_schema(std::move(value), property_schema(schema, key));
    return args;
}

// {"name", "arguments"|"parameters"} and its wrappers. `strict`: the arguments key is required (bare
// JSON in prose); otherwise a missing one means no arguments.
bool take_json_call(Parsed& out, const json& j, const char* format, const ToolSet& tools, bool strict, bool report) {
    if (!j.is_object()) return false;
    if (auto f = j.find("function"); f != j.end() && f->is_object() && !j.contains("name"))
        return take_json_call(out, *f, format, tools, strict, report);
    if (auto t = j.find("tool_call"); t != j.end() && j.size() == 1)
        return take_json_call(out, *t, format, tools, strict, report);
    const json* name = nullptr;
    for (const char* key : {"name", "tool_name"})
        if (auto n = j.find(key); n != j.end() && n->is_string() && !n->get<std::string>().empty()) name = &*n;
    if (!name && !strict && j.size() == 1 && j.begin().value().is_object() && tools.offers(j.begin().key()))
        return add_call(out, j.begin().key(), j.begin().value(), format, tools, report);  // Apertus {"NAME": {args}}
    if (!name) return false;
    const json* args = nullptr;
    for (const char* key : {"arguments", "parameters"})
        if (auto a = j.find(key); a != j.end()) args = &*a;
    json value = json::object();
    if (args) {
        value = *args;
        if (value.is_string()) {  // arguments given as JSON text: decode once; "" means none
            std::string text = value.get<std::string>();
            auto decoded = trim(text).empty() ? std::optional<json>(json::object()) : parse_json(text);
            if (!decoded) {
                if (report) out.problems.push_back("the arguments of '" + name->get<std::string>() + "' are not valid JSON");
                return false;
            }
            value = *decoded;
        }
        if (value.is_null()) value = json::object();
    } else if (strict) {
        return false;
    }
    if (!value.is_object()) {
        if (report) out.problems.push_back("the arguments of '" + name->get<std::string>() + "' must be a JSON object");
        return false;
    }
    return add_call(out, name->get<std::string>(), value, format, tools, report);
}

// A JSON document holding one call, a list of calls or {"tool_calls": [...]}; all or nothing.
bool take_json_calls(Parsed& out, const json& j, const char* format, const ToolSet& tools, bool strict, bool report) {
    Parsed local;
    const json* list = &j;
    if (j.is_object() && j.contains("tool_calls") && j["tool_calls"].is_array()) list = &j["tool_calls"];
    if (list->is_array()) {
        if (list->empty()) return false;
        for (const auto& item : *list)
            if (!take_json_call(local, item, format, tools, strict, report)) {
                out.problems.insert(out.problems.end(), local.problems.begin(), local.problems.end());
                return false;
            }
    } else if (!take_json_call(local, j, format, tools, strict, report)) {
        out.problems.insert(out.problems.end(), local.problems.begin(), local.problems.end());
        return false;
    }
    out.calls.insert(out.calls.end(), local.calls.begin(), local.calls.end());
    return true;
}

// One or more JSON values in a row, separated by whitespace, ';' or ','. Returns false on text
// that is not JSON; a value that never closes marks the region incomplete.
bool take_json_sequence(Parsed& out, std::string_view body, const char* format, const ToolSet& tools, bool terminated) {
    size_t i = 0;
    bool any = false;
    while (true) {
        while (i < body.size() && (std::isspace(static_cast<unsigned char>(body[i])) || body[i] == ';' || body[i] == ',')) ++i;
        if (i >= body.size()) return any;
        if (body[i] != '{' && body[i] != '[') {
            out.leftover += std::string(body.substr(i));
            return any;
        }
        size_t end = json_end(body, i);
        if (end == npos) {
            if (terminated) {  // its block closed, so the JSON is broken rather than cut off
                out.problems.push_back("a " + std::string(format) + " tool call holds JSON whose brackets never close");
                return any;
            }
            out.incomplete = true;
            out.problems.push_back("a " + std::string(format) + " tool call was cut off before its JSON closed");
            return any;
        }
        auto j = parse_json(body.substr(i, end - i));
        if (!j) {
            out.problems.push_back("a " + std::string(format) + " tool call holds invalid JSON");
            return any;
        }
        if (take_json_calls(out, *j, format, tools, false, true)) any = true;
        i = end;
    }
}

// [f(a=1), g(b="x")] — all calls or nothing.

}  // namespace agenthost::toolcalls::formats
