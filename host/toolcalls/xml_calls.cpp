// XML-shaped calls: Qwen3-Coder <function=…><parameter=…>, GLM key/value pairs, MiniMax and DSML
// <invoke name=…><parameter name=…>.
#include "toolcalls/format_parts.hpp"

namespace agenthost::toolcalls::formats {

std::string strip_one_newline(std::string_view v) {
    if (starts_with(v, "\r\n"))
        v.remove_prefix(2);
    else if (starts_with(v, "\n"))
        v.remove_prefix(1);
    if (v.size() >= 2 && v.substr(v.size() - 2) == "\r\n")
        v.remove_suffix(2);
    else if (!v.empty() && v.back() == '\n')
        v.remove_suffix(1);
    return std::string(v);
}

// <function=NAME><parameter=K>V</parameter>…</function>, possibly several (Qwen3-Coder, Nemotron).
void take_xml_functions(Parsed& out, std::string_view body, const ToolSet& tools) {
    size_t pos = 0;
    while ((pos = body.find("<function=", pos)) != npos) {
        size_t name_end = body.find('>', pos);
        size_t close = name_end == npos ? npos : body.find("</function>", name_end);
        if (close == npos) {
            out.incomplete = true;
            out.problems.push_back("a tool call was cut off before </function>");
            return;
        }
        std::string name(trim(body.substr(pos + 10, name_end - pos - 10)));
        std::string_view inner = body.substr(name_end + 1, close - name_end - 1);
        const json* schema = schema_of(tools, name);
        json args = json::object();
        size_t p = 0;
        while ((p = inner.find("<parameter=", p)) != npos) {
            size_t key_end = inner.find('>', p);
            if (key_end == npos) break;
            std::string key(trim(inner.substr(p + 11, key_end - p - 11)));
            size_t value_start = key_end + 1;
            size_t end_tag = inner.find("</parameter>", value_start);
            size_t next = std::min(end_tag, inner.find("<parameter=", value_start));  // </parameter> may be missing
            size_t value_end = std::min(next, inner.size());
            args[key] =
                from_text(strip_one_newline(inner.substr(value_start, value_end - value_start)), property_schema(schema, key));
            p = value_end == end_tag ? end_tag + 12 : value_end;
        }
        add_call(out, name, args, "qwen3_coder_xml", tools, true);
        pos = close + 11;
    }
}

// NAME<arg_key>K</arg_key><arg_value>V</arg_value>… (GLM 4.5–4.7).
void take_glm(Parsed& out, std::string_view body, bool terminated, const ToolSet& tools) {
    size_t first = body.find('<');
    std::string name(trim(body.substr(0, first)));
    if (name.size() > 64 || std::any_of(name.begin(), name.end(), [](unsigned char c) { return std::isspace(c); })) {
        out.prose = true;  // "wrap calls in a <tool_call> tag": words, not a tool name
        return;
    }
    if (name.empty() || name.find_first_of("{}[]\"") != std::string::npos) {
        out.problems.push_back("a <tool_call> block holds neither JSON nor a known call layout");
        return;
    }
    if (!terminated) {
        // Unclosed at the end: a cut-off call only if the name is (the start of) an offered tool.
        const auto& schemas = tools.impl().schemas;
        auto next = schemas.lower_bound(name);
        if (!tools.impl().any && (next == schemas.end() || next->first.compare(0, name.size(), name) != 0)) {
            out.prose = true;
            return;
        }
        out.incomplete = true;
        out.problems.push_back("the tool call '" + name + "' was cut off before </tool_call>");
        return;
    }
    const json* schema = schema_of(tools, name);
    json args = json::object();
    size_t p = first;
    while (p != npos && (p = body.find("<arg_key>", p)) != npos) {
        size_t key_end = body.find("</arg_key>", p);
        size_t value_start = key_end == npos ? npos : body.find("<arg_value>", key_end);
        size_t value_end = value_start == npos ? npos : body.find("</arg_value>", value_start);
        if (value_end == npos) {
            out.problems.push_back("the tool call '" + name + "' has an unclosed <arg_key>/<arg_value>");
            return;
        }
        std::string key(trim(body.substr(p + 9, key_end - p - 9)));
        args[key] = from_text(body.substr(value_start + 11, value_end - value_start - 11), property_schema(schema, key));
        p = value_end + 12;
    }
    add_call(out, name, args, "glm", tools, true);
}

// The value of attribute `key` in an XML-ish start tag (`name="x" string="true"`); empty when absent.
std::string attribute(std::string_view tag, std::string_view key) {
    for (size_t at = tag.find(key); at != npos; at = tag.find(key, at + 1)) {
        bool word_start = at == 0 || std::isspace(static_cast<unsigned char>(tag[at - 1]));
        size_t eq = at + key.size();
        if (!word_start || eq + 1 >= tag.size() || tag[eq] != '=' || tag[eq + 1] != '"') continue;
        size_t end = tag.find('"', eq + 2);
        return end == npos ? std::string() : std::string(tag.substr(eq + 2, end - eq - 2));
    }
    return {};
}

namespace {

// A DSML parameter value: string="false" marks JSON, string="true" raw text; the schema decides
// where the two disagree (as vLLM does).
json dsml_value(std::string_view raw, std::string_view string_attribute, const json* schema) {
    if (string_attribute == "false")
        if (auto j = parse_json(trim(raw)); j && (!schema || !j->is_string())) return fit_to_schema(std::move(*j), schema);
    return from_text(raw, schema);
}

}  // namespace

// <invoke name="NAME"><parameter name="K">V</parameter></invoke>: MiniMax-M2, DeepSeek V3.2/V4 DSML
// (after its tags are normalised) and Step-3 (steptml:). `format` names the call's source.
void take_invokes(Parsed& out, std::string_view body, const ToolSet& tools, const char* format) {
    const bool dsml = std::string_view(format) == "dsml";
    size_t pos = 0;
    while ((pos = body.find("<invoke", pos)) != npos) {
        size_t head_end = body.find('>', pos);
        size_t close = head_end == npos ? npos : body.find("</invoke>", head_end);
        if (close == npos) {
            out.incomplete = true;
            out.problems.push_back("a tool call was cut off before </invoke>");
            return;
        }
        std::string name = attribute(body.substr(pos, head_end - pos), "name");
        std::string_view inner = body.substr(head_end + 1, close - head_end - 1);
        const json* schema = schema_of(tools, name);
        json args = json::object();
        size_t p = 0;
        while ((p = inner.find("<parameter", p)) != npos) {
            size_t key_end = inner.find('>', p);
            size_t value_end = key_end == npos ? npos : inner.find("</parameter>", key_end);
            if (value_end == npos) break;
            std::string_view tag = inner.substr(p, key_end - p);
            std::string key = attribute(tag, "name");
            std::string value = strip_one_newline(inner.substr(key_end + 1, value_end - key_end - 1));
            args[key] = dsml ? dsml_value(value, attribute(tag, "string"), property_schema(schema, key))
                             : from_text(value, property_schema(schema, key));
            p = value_end + 12;
        }
        // DSML: a lone "arguments" or "input" parameter holding the object is the arguments (vLLM).
        if (dsml && args.size() == 1 && (args.contains("arguments") || args.contains("input")) &&
            !property_schema(schema, args.begin().key())) {
            json inside = args.begin().value();
            if (inside.is_string())
                if (auto j = parse_json(inside.get<std::string>())) inside = *j;
            if (inside.is_object()) args = std::move(inside);
        }
        add_call(out, name, args, format, tools, true);
        pos = close + 9;
    }
}

// DeepSeek R1/V3/V3.1 and Kimi-K2 call pieces between special tokens (already normalised).

}  // namespace agenthost::toolcalls::formats
