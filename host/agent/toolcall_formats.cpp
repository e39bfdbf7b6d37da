#include "agent/toolcall_formats.hpp"

#include "common/bounded_json.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>

namespace agenthost::agent::toolcall {
namespace {

constexpr size_t npos = std::string_view::npos;

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

using json_io::dump;

// End (exclusive) of the JSON value opening at s[pos] ('{' or '['); npos when it never closes.
// String- and escape-aware, so braces inside string values do not count.
size_t json_end(std::string_view s, size_t pos) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (size_t i = pos; i < s.size(); ++i) {
        char c = s[i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"')
            in_string = true;
        else if (c == '{' || c == '[')
            ++depth;
        else if ((c == '}' || c == ']') && --depth == 0)
            return i + 1;
    }
    return npos;
}

std::optional<json> parse_json(std::string_view s) {
    json j = json::parse(s.begin(), s.end(), nullptr, false);
    if (j.is_discarded()) return std::nullopt;
    return j;
}

// ---- JSON Schema driven typing of values written as text --------------------------------------

const json* property_schema(const json* schema, const std::string& key) {
    if (!schema || !schema->is_object()) return nullptr;
    auto props = schema->find("properties");
    if (props == schema->end() || !props->is_object()) return nullptr;
    auto s = props->find(key);
    return s == props->end() ? nullptr : &*s;
}

std::vector<std::string> schema_types(const json& schema) {
    std::vector<std::string> types;
    if (!schema.is_object()) return types;
    if (auto t = schema.find("type"); t != schema.end()) {
        if (t->is_string())
            types.push_back(*t);
        else if (t->is_array())
            for (const auto& x : *t)
                if (x.is_string()) types.push_back(x);
    }
    for (const char* key : {"anyOf", "oneOf"})
        if (auto alt = schema.find(key); alt != schema.end() && alt->is_array())
            for (const auto& sub : *alt)
                for (auto& t : schema_types(sub)) types.push_back(t);
    return types;
}

bool has(const std::vector<std::string>& v, std::string_view x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::optional<json> python_literal(std::string_view text);

// A value the model wrote as raw text (XML parameter), typed by its schema. Strings stay strings
// even when they look like numbers; the literal null is null for any type; no schema: a string.
json from_text(std::string_view raw, const json* schema) {
    if (!schema) return std::string(raw);
    std::vector<std::string> types = schema_types(*schema);
    std::string_view t = trim(raw);
    if (t == "null" && !types.empty()) return nullptr;
    if (has(types, "string") || types.empty()) return std::string(raw);
    std::string text(t);
    if (has(types, "integer")) {
        char* end = nullptr;
        long long v = std::strtoll(text.c_str(), &end, 10);
        if (!text.empty() && end && *end == '\0') return v;
    }
    if (has(types, "number") || has(types, "integer")) {
        char* end = nullptr;
        double v = std::strtod(text.c_str(), &end);
        if (!text.empty() && end && *end == '\0' && std::isfinite(v)) {
            if (v == std::floor(v) && std::fabs(v) < 9e15) return static_cast<long long>(v);
            return v;
        }
    }
    if (has(types, "boolean")) {
        std::string lower = text;
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        if (lower == "true") return true;
        if (lower == "false") return false;
    }
    if (has(types, "object") || has(types, "array")) {
        if (auto j = parse_json(t)) return *j;
        if (auto p = python_literal(t)) return *p;
    }
    return std::string(raw);  // left as written; argument validation will say what is wrong
}

// A value that already has a type (pythonic literal), adjusted to its schema where that is lossless.
json fit_to_schema(json value, const json* schema) {
    if (!schema) return value;
    std::vector<std::string> types = schema_types(*schema);
    if (types.empty()) return value;
    if (value.is_string() && !has(types, "string")) return from_text(value.get<std::string>(), schema);
    if ((value.is_number() || value.is_boolean()) && types.size() == 1 && types[0] == "string") return dump(value);
    return value;
}

// Nesting deeper than this in a model's call text is not a call: the readers stop there instead of
// recursing into a 32 MiB reply of brackets.
constexpr int kMaxValueDepth = 64;

// Counts one level of nesting for as long as it lives.
class DepthGuard {
public:
    explicit DepthGuard(int& depth) : depth_(depth) { ++depth_; }
    ~DepthGuard() { --depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    bool too_deep() const { return depth_ > kMaxValueDepth; }

private:
    int& depth_;
};

// ---- Python literals and pythonic calls ---------------------------------------------------------

// A position in call text, for the hand-written value readers below.
class TextCursor {
public:
    explicit TextCursor(std::string_view s) : s_(s) {}

    void ws() {
        while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    bool eat(char c) {
        ws();
        if (i_ < s_.size() && s_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }

protected:
    std::string_view s_;
    size_t i_ = 0;
    int depth_ = 0;  // nesting, for DepthGuard
};

class Pythonic : public TextCursor {
public:
    using TextCursor::TextCursor;
    bool at_end() {
        ws();
        return i_ >= s_.size();
    }

    std::optional<std::string> identifier(bool dotted) {
        ws();
        size_t start = i_;
        while (i_ < s_.size()) {
            unsigned char c = s_[i_];
            if (std::isalnum(c) || c == '_' || (dotted && c == '.' && i_ > start) || c >= 0x80)
                ++i_;
            else
                break;
        }
        if (i_ == start || std::isdigit(static_cast<unsigned char>(s_[start]))) return std::nullopt;
        return std::string(s_.substr(start, i_ - start));
    }

    std::optional<json> value() {
        ws();
        if (i_ >= s_.size()) return std::nullopt;
        char c = s_[i_];
        if (c == '\'' || c == '"') return string();
        if (c == '[' || c == '(') return sequence(c == '[' ? ']' : ')');
        if (c == '{') return dict();
        if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.') return number();
        auto word = identifier(false);
        if (!word) return std::nullopt;
        if (*word == "True" || *word == "true") return true;
        if (*word == "False" || *word == "false") return false;
        if (*word == "None" || *word == "null") return nullptr;
        return std::nullopt;
    }

    // NAME(k=v, …) with keyword arguments only; `f()` has no arguments.
    bool call(std::string& name, json& args) {
        auto n = identifier(true);
        if (!n || !eat('(')) return false;
        name = *n;
        args = json::object();
        if (eat(')')) return true;
        while (true) {
            auto key = identifier(false);
            if (!key || !eat('=')) return false;
            auto v = value();
            if (!v) return false;
            args[*key] = std::move(*v);
            if (eat(')')) return true;
            if (!eat(',')) return false;
            if (eat(')')) return true;  // trailing comma
        }
    }

private:
    std::optional<json> string() {
        char quote = s_[i_++];
        std::string out;
        while (i_ < s_.size()) {
            char c = s_[i_++];
            if (c == quote) return out;
            if (c == '\n') return std::nullopt;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (i_ >= s_.size()) return std::nullopt;
            char e = s_[i_++];
            switch (e) {
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case 'r': out += '\r'; break;
                case '0': out += '\0'; break;
                case 'u': {
                    if (i_ + 4 > s_.size()) return std::nullopt;
                    auto j = parse_json("\"\\u" + std::string(s_.substr(i_, 4)) + "\"");
                    if (!j) return std::nullopt;
                    out += j->get<std::string>();
                    i_ += 4;
                    break;
                }
                default: out += e;  // \\, \', \" and anything else: the character itself
            }
        }
        return std::nullopt;
    }

    std::optional<json> number() {
        size_t start = i_;
        while (i_ < s_.size() &&
               (std::isalnum(static_cast<unsigned char>(s_[i_])) || std::string_view("+-._").find(s_[i_]) != npos))
            ++i_;
        std::string text(s_.substr(start, i_ - start));
        text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
        char* end = nullptr;
        long long v = std::strtoll(text.c_str(), &end, 10);
        if (!text.empty() && *end == '\0') return v;
        double d = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(d)) return std::nullopt;  // 1e999: unconvertible
        return d;
    }

    std::optional<json> sequence(char close) {
        DepthGuard guard(depth_);
        if (guard.too_deep()) return std::nullopt;
        ++i_;
        json arr = json::array();
        if (eat(close)) return arr;
        while (true) {
            auto v = value();
            if (!v) return std::nullopt;
            arr.push_back(std::move(*v));
            if (eat(close)) return arr;
            if (!eat(',')) return std::nullopt;
            if (eat(close)) return arr;
        }
    }

    std::optional<json> dict() {
        DepthGuard guard(depth_);
        if (guard.too_deep()) return std::nullopt;
        ++i_;
        json obj = json::object();
        if (eat('}')) return obj;
        while (true) {
            auto k = value();
            if (!k || !eat(':')) return std::nullopt;
            auto v = value();
            if (!v) return std::nullopt;
            obj[k->is_string() ? k->get<std::string>() : dump(*k)] = std::move(*v);
            if (eat('}')) return obj;
            if (!eat(',')) return std::nullopt;
            if (eat('}')) return obj;
        }
    }
};

std::optional<json> python_literal(std::string_view text) {
    Pythonic p(text);
    auto v = p.value();
    if (!v || !p.at_end()) return std::nullopt;
    return v;
}

// ---- Turning parsed shapes into calls -----------------------------------------------------------

const json* schema_of(const ToolSet& tools, std::string_view name) {
    const auto& schemas = tools.impl().schemas;
    auto it = schemas.find(name);
    return it == schemas.end() ? nullptr : &it->second;
}

// Adds a call when its name is offered; `report` says whether a refusal is worth telling the model.
bool add_call(Parsed& out, const std::string& name, json args, const char* format, const ToolSet& tools, bool report) {
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
    return add_call(out, name->get<std::string>(), std::move(value), format, tools, report);
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
bool take_json_sequence(Parsed& out, std::string_view body, const char* format, const ToolSet& tools, bool terminated = false) {
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
bool take_pythonic_list(Parsed& out, std::string_view text, const char* format, const ToolSet& tools, bool report) {
    Pythonic p(text);
    if (!p.eat('[')) return false;
    Parsed local;
    if (p.eat(']')) return false;
    while (true) {
        std::string name;
        json args;
        if (!p.call(name, args)) return false;
        if (!add_call(local, name, fit_arguments(std::move(args), tools, name), format, tools, report)) {
            out.problems.insert(out.problems.end(), local.problems.begin(), local.problems.end());
            return false;
        }
        if (p.eat(']')) break;
        if (!p.eat(',')) return false;
    }
    if (!p.at_end()) return false;
    out.calls.insert(out.calls.end(), local.calls.begin(), local.calls.end());
    return true;
}

// f(a=1) calls separated by newlines, commas or semicolons (OLMo 3, <|python_tag|>NAME.call(...)).
bool take_pythonic_calls(Parsed& out, std::string_view text, const char* format, const ToolSet& tools) {
    Pythonic p(text);
    bool any = false;
    while (!p.at_end()) {
        std::string name;
        json args;
        if (!p.call(name, args)) {
            out.problems.push_back("a " + std::string(format) + " tool call is not a well-formed name(key=value, …) call");
            return any;
        }
        if (name.size() > 5 && name.compare(name.size() - 5, 5, ".call") == 0) name.resize(name.size() - 5);
        if (add_call(out, name, fit_arguments(std::move(args), tools, name), format, tools, true)) any = true;
        p.eat(',') || p.eat(';');
    }
    return any;
}

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
        add_call(out, name, std::move(args), "qwen3_coder_xml", tools, true);
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
    add_call(out, name, std::move(args), "glm", tools, true);
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

// A DSML parameter value: string="false" marks JSON, string="true" raw text; the schema decides
// where the two disagree (as vLLM does).
json dsml_value(std::string_view raw, std::string_view string_attribute, const json* schema) {
    if (string_attribute == "false")
        if (auto j = parse_json(trim(raw)); j && (!schema || !j->is_string())) return fit_to_schema(std::move(*j), schema);
    return from_text(raw, schema);
}

// <invoke name="NAME"><parameter name="K">V</parameter></invoke>: MiniMax-M2, DeepSeek V3.2/V4 DSML
// (after its tags are normalised) and Step-3 (steptml:). `format` names the call's source.
void take_invokes(Parsed& out, std::string_view body, const ToolSet& tools, const char* format = "invoke_xml") {
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
        add_call(out, name, std::move(args), format, tools, true);
        pos = close + 9;
    }
}

// DeepSeek R1/V3/V3.1 and Kimi-K2 call pieces between special tokens (already normalised).
void take_special_token_calls(Parsed& out, std::string_view body, bool terminated, const ToolSet& tools) {
    std::vector<std::string_view> pieces;
    const std::string_view begin = "<|tool_call_begin|>";
    if (body.find(begin) == npos) {
        pieces.push_back(body);
    } else {
        size_t p = body.find(begin);
        while (p != npos) {
            size_t next = body.find(begin, p + begin.size());
            pieces.push_back(body.substr(p + begin.size(), next == npos ? npos : next - p - begin.size()));
            p = next;
        }
    }
    for (size_t k = 0; k < pieces.size(); ++k) {
        std::string_view piece = pieces[k];
        size_t end_token = piece.find("<|tool_call_end|>");
        bool closed = end_token != npos;
        if (closed) piece = piece.substr(0, end_token);
        if (trim(piece).empty()) continue;
        std::string name;
        std::string_view args_text;
        if (size_t a = piece.find("<|tool_call_argument_begin|>"); a != npos) {  // Kimi: functions.NAME:IDX
            std::string_view head = trim(piece.substr(0, a));
            size_t colon = head.rfind(':');
            if (colon != npos) head = head.substr(0, colon);
            size_t dot = head.rfind('.');
            name = std::string(dot == npos ? head : head.substr(dot + 1));
            args_text = piece.substr(a + 28);
        } else if (size_t sep = piece.find("<|tool_sep|>"); sep != npos) {
            std::string_view left = trim(piece.substr(0, sep)), right = piece.substr(sep + 12);
            if ((left == "function" || left.empty()) && trim(right).substr(0, 15) == "<steptml:invoke") {  // Step-3
                std::string invokes(trim(right));
                for (size_t at; (at = invokes.find("steptml:")) != npos;) invokes.erase(at, 8);
                take_invokes(out, invokes, tools, "step3");
                continue;
            }
            if (left == "function" || left.empty()) {  // R1/V3: function<sep>NAME\n```json\n{…}\n```
                size_t nl = right.find('\n');
                name = std::string(trim(right.substr(0, nl)));
                args_text = nl == npos ? std::string_view() : right.substr(nl + 1);
            } else {  // V3.1: NAME<sep>{…}
                name = std::string(left);
                args_text = right;
            }
        } else {
            out.problems.push_back("a tool call between DeepSeek tool tokens has no <｜tool▁sep｜>");
            continue;
        }
        size_t brace = args_text.find('{');
        size_t end = brace == npos ? npos : json_end(args_text, brace);
        if (end == npos) {
            if (!closed && !terminated) {
                out.incomplete = true;
                out.problems.push_back("the tool call '" + name + "' was cut off before its JSON closed");
            } else {
                out.problems.push_back("the tool call '" + name + "' has no JSON arguments");
            }
            continue;
        }
        auto args = parse_json(args_text.substr(brace, end - brace));
        if (!args || !args->is_object()) {
            out.problems.push_back("the arguments of '" + name + "' are not a valid JSON object");
            continue;
        }
        add_call(out, name, std::move(*args), "special_tokens", tools, true);
    }
}

// [TOOL_CALLS][{…}] (pre-v11) or [TOOL_CALLS]NAME[ARGS]{…} per call (v11+), or NAME{…}.
void take_mistral(Parsed& out, std::string_view body, const ToolSet& tools) {
    const std::string_view marker = "[TOOL_CALLS]";
    size_t p = 0;
    while (p <= body.size()) {
        size_t next = body.find(marker, p);
        std::string_view piece = trim(body.substr(p, next == npos ? npos : next - p));
        p = next == npos ? body.size() + 1 : next + marker.size();
        if (piece.empty()) continue;
        if (piece[0] == '[' || piece[0] == '{') {
            take_json_sequence(out, piece, "mistral", tools);
            continue;
        }
        size_t name_end = 0;
        while (name_end < piece.size() && (std::isalnum(static_cast<unsigned char>(piece[name_end])) ||
                                           std::string_view("_-.").find(piece[name_end]) != npos))
            ++name_end;
        std::string name(piece.substr(0, name_end));
        std::string_view rest = trim(piece.substr(name_end));
        if (starts_with(rest, "[ARGS]")) rest = trim(rest.substr(6));
        if (name.empty() || rest.empty() || rest[0] != '{') {
            out.problems.push_back("text after [TOOL_CALLS] is not a tool call");
            out.leftover += std::string(piece);
            continue;
        }
        size_t end = json_end(rest, 0);
        if (end == npos) {
            out.incomplete = true;
            out.problems.push_back("the tool call '" + name + "' was cut off before its JSON closed");
            continue;
        }
        auto args = parse_json(rest.substr(0, end));
        if (!args || !args->is_object()) {
            out.problems.push_back("the arguments of '" + name + "' are not a valid JSON object");
            continue;
        }
        add_call(out, name, std::move(*args), "mistral", tools, true);
        out.leftover += std::string(rest.substr(end));
    }
}

// The name at the start of a Functionary v3.2 recipient line; empty when the line is not one.
std::string recipient_name(std::string_view line) {
    std::string_view name = trim(line);
    if (name.empty() || name.size() > 64) return {};
    if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return {};
    for (char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return {};
    return std::string(name);
}

// One Functionary v3.2 recipient segment: "NAME\n{json}", "python\nCODE" or "all\nTEXT".
// `first`: the segment before any ">>>", a call only when it names an offered tool of a given list.
// The leftover is the segment's text as it should read (replaces_text): "all" gives its text,
// anything that is not a call stays as written.
void take_functionary(Parsed& out, std::string_view segment, bool terminated, const ToolSet& tools, bool first) {
    out.replaces_text = true;
    const std::string as_written = (first ? "" : ">>>") + std::string(segment);
    auto keep_text = [&](std::string problem) {
        if (!problem.empty()) out.problems.push_back(std::move(problem));
        out.leftover += as_written;
    };
    size_t newline = segment.find('\n');
    std::string name = newline == npos ? std::string() : recipient_name(segment.substr(0, newline));
    std::string_view rest = newline == npos ? std::string_view() : segment.substr(newline + 1);
    if (name == "all") {
        out.leftover += std::string(rest);
        return;
    }
    std::string_view args_text = trim(rest);
    if (name.empty()) return keep_text(first || !terminated ? "" : "the text after >>> names no recipient");
    if (first && (tools.impl().any || !tools.offers(name) || args_text.empty() || args_text[0] != '{')) return keep_text("");
    if (!args_text.empty() && args_text[0] == '{') {
        size_t end = json_end(args_text, 0);
        if (end == npos && !terminated) {
            out.incomplete = true;
            return keep_text("the tool call '" + name + "' was cut off before its JSON closed");
        }
        auto args = end == npos ? std::nullopt : parse_json(args_text.substr(0, end));
        if (!args || !args->is_object()) return keep_text("the arguments of '" + name + "' are not a valid JSON object");
        if (!add_call(out, name, std::move(*args), "functionary", tools, true)) keep_text("");
        return;
    }
    if (name == "python" && !args_text.empty()) {  // raw code for the python tool
        if (!add_call(out, name, json{{"code", std::string(args_text)}}, "functionary", tools, true)) keep_text("");
        return;
    }
    keep_text("the call to '" + name + "' after >>> has no JSON arguments");
}

// FunctionGemma / Gemma 4: call:NAME{key:<escape>text<escape>,n:42,flag:true,nested:{…},list:[…]}.
class GemmaArguments : public TextCursor {
public:
    using TextCursor::TextCursor;

    std::optional<json> object() {
        DepthGuard guard(depth_);
        if (guard.too_deep() || !eat('{')) return std::nullopt;
        json obj = json::object();
        ws();
        if (eat('}')) return obj;
        while (true) {
            ws();
            size_t colon = s_.find(':', i_);
            if (colon == npos) return std::nullopt;
            std::string key(trim(s_.substr(i_, colon - i_)));
            if (key.size() >= 2 && key.front() == '"' && key.back() == '"') key = key.substr(1, key.size() - 2);
            i_ = colon + 1;
            auto v = value();
            if (!v || key.empty()) return std::nullopt;
            obj[key] = std::move(*v);
            ws();
            if (eat('}')) return obj;
            if (!eat(',')) return std::nullopt;
        }
    }

private:
    static constexpr std::string_view kDelimiters[] = {"<escape>", "<|\"|>"};

    std::optional<json> value() {
        ws();
        for (std::string_view d : kDelimiters)
            if (s_.substr(i_, d.size()) == d) {
                size_t end = s_.find(d, i_ + d.size());
                if (end == npos) return std::nullopt;
                std::string text(s_.substr(i_ + d.size(), end - i_ - d.size()));
                i_ = end + d.size();
                return text;
            }
        if (i_ < s_.size() && s_[i_] == '{') return object();
        if (i_ < s_.size() && s_[i_] == '[') {
            DepthGuard guard(depth_);
            if (guard.too_deep()) return std::nullopt;
            ++i_;
            json arr = json::array();
            ws();
            if (eat(']')) return arr;
            while (true) {
                auto v = value();
                if (!v) return std::nullopt;
                arr.push_back(std::move(*v));
                ws();
                if (eat(']')) return arr;
                if (!eat(',')) return std::nullopt;
            }
        }
        size_t start = i_;
        while (i_ < s_.size() && std::string_view(",}]").find(s_[i_]) == npos) ++i_;
        std::string_view word = trim(s_.substr(start, i_ - start));
        if (word.empty()) return std::nullopt;
        if (auto j = parse_json(word); j && !j->is_object() && !j->is_array()) return *j;
        return std::string(word);
    }
};

void take_gemma(Parsed& out, std::string_view body, bool terminated, const ToolSet& tools) {
    std::string_view t = trim(body);
    if (t.substr(0, 5) != "call:") {
        out.problems.push_back("a Gemma function call does not start with call:NAME{…}");
        return;
    }
    size_t brace = t.find('{');
    std::string name(trim(t.substr(5, brace == npos ? npos : brace - 5)));
    GemmaArguments reader(brace == npos ? std::string_view() : t.substr(brace));
    auto args = brace == npos ? std::nullopt : reader.object();
    if (!args) {
        out.incomplete = !terminated;
        out.problems.push_back("the Gemma call to '" + name + "' has no complete {key:value} arguments");
        return;
    }
    add_call(out, name, fit_arguments(std::move(*args), tools, name), "gemma", tools, true);
}

// A wrapper tag models put around a call inside a fence: <function_call>{…}</function_call>.
std::string_view unwrap_fence_tag(std::string_view t) {
    static constexpr std::string_view kTags[] = {"tool_call", "function_call", "tool", "tools",
                                                 "response",  "json",          "xml",  "JSON"};
    for (std::string_view tag : kTags) {
        std::string open = "<" + std::string(tag) + ">", close = "</" + std::string(tag) + ">";
        if (starts_with(t, open) && t.size() >= open.size() + close.size() && t.substr(t.size() - close.size()) == close)
            return trim(t.substr(open.size(), t.size() - open.size() - close.size()));
    }
    return t;
}

}  // namespace

std::string normalize_token_name(std::string_view inner) {
    std::string out;
    for (size_t i = 0; i < inner.size(); ++i) {
        if (inner.substr(i, 3) == "\xE2\x96\x81") {  // '▁' (U+2581)
            out += '_';
            i += 2;
        } else if (inner[i] == ' ') {
            out += '_';
        } else if (inner[i] == '\\' && i + 1 < inner.size() && inner[i + 1] == '_') {
            out += '_';
            ++i;
        } else {
            out += inner[i];
        }
    }
    return out;
}

TokenScan scan_special_token(std::string_view text) {
    static constexpr std::string_view wide_open = "<\xEF\xBD\x9C", wide_close = "\xEF\xBD\x9C>";  // <｜ ｜>
    static constexpr size_t max_length = 96;
    size_t open = 0;
    if (starts_with(text, "<|"))
        open = 2;
    else if (starts_with(text, wide_open))
        open = wide_open.size();
    else if (starts_with("<|", text) || starts_with(wide_open, text))
        return {TokenScan::partial};
    else
        return {TokenScan::no};
    for (size_t j = open; j < text.size() && j < max_length; ++j) {
        if (text[j] == '<' || text[j] == '\n') return {TokenScan::no};
        size_t close = starts_with(text.substr(j), "|>") ? 2 : starts_with(text.substr(j), wide_close) ? wide_close.size() : 0;
        if (close) return {TokenScan::yes, normalize_token_name(text.substr(open, j - open)), j + close};
        // a close split in the middle ("|" or the first bytes of "｜") is still a possible token
    }
    return {text.size() < max_length ? TokenScan::partial : TokenScan::no};
}

namespace {

// Rewrites every <｜…｜> / <|…|> token in `text` to <|normalised|>.
std::string normalize_tokens(std::string_view text) {
    std::string out;
    size_t i = 0;
    while (i < text.size()) {
        if (text[i] == '<') {
            TokenScan token = scan_special_token(text.substr(i));
            if (token.kind == TokenScan::yes) {
                out += "<|" + token.name + "|>";
                i += token.length;
                continue;
            }
        }
        out += text[i++];
    }
    return out;
}

}  // namespace

Parsed parse_region(Region kind, std::string_view body, bool terminated, const ToolSet& tools) {
    Parsed out;
    std::string_view t = trim(body);
    switch (kind) {
        case Region::hermes:
            if (t.empty()) {
                out.problems.push_back("an empty <tool_call> block");
            } else if (t[0] == '{' || t[0] == '[') {
                take_json_sequence(out, t, "hermes", tools, terminated);
            } else if (starts_with(t, "<function=")) {
                take_xml_functions(out, t, tools);
            } else {
                take_glm(out, t, terminated, tools);
            }
            break;
        case Region::function_tag: {  // the text from "<function"
            if (starts_with(t, "<function=") && t.find("<parameter=") != npos) {
                take_xml_functions(out, std::string(t) + (terminated ? "</function>" : ""), tools);
                break;
            }
            size_t head_end = t.find('>');
            if (head_end == npos) {
                out.incomplete = true;
                out.problems.push_back("a <function=…> tool call was cut off");
                break;
            }
            std::string_view head = t.substr(9, head_end - 9);  // after "<function"
            std::string name;
            if (starts_with(head, "="))
                name = std::string(trim(head.substr(1)));
            else if (size_t q = head.find('"'); q != npos)
                name = std::string(head.substr(q + 1, head.find('"', q + 1) - q - 1));
            std::string_view args_text = trim(t.substr(head_end + 1));
            size_t end = args_text.empty() ? npos : json_end(args_text, 0);
            if (args_text.empty() || args_text[0] != '{' || end == npos) {
                out.incomplete = !terminated;
                out.problems.push_back("the <function=" + name + "> call has no complete JSON arguments");
                break;
            }
            auto args = parse_json(args_text.substr(0, end));
            if (!args || !args->is_object())
                out.problems.push_back("the arguments of '" + name + "' are not a valid JSON object");
            else
                add_call(out, name, std::move(*args), "function_tag", tools, true);
            break;
        }
        case Region::python_tag:
            if (!t.empty() && (t[0] == '{' || t[0] == '[')) {
                take_json_sequence(out, t, "python_tag", tools);
            } else if (!t.empty()) {
                // NAME.call(k=v) (Llama builtins), else raw code for the python tool (Functionary v3.1).
                Parsed calls;
                take_pythonic_calls(calls, t, "python_tag", tools);
                if (!calls.calls.empty() && calls.problems.empty())
                    out = std::move(calls);
                else if (tools.offers("python"))
                    add_call(out, "python", json{{"code", std::string(t)}}, "python_tag", tools, true);
                else
                    out = std::move(calls);
            }
            break;
        case Region::mistral: take_mistral(out, body, tools); break;
        case Region::special_tokens: take_special_token_calls(out, normalize_tokens(body), terminated, tools); break;
        case Region::call_list:
            if (t.empty()) break;
            if (t[0] == '<') {
                Extraction nested = extract_tool_calls(t, tools);
                out.calls = nested.calls;
                out.problems = nested.problems;
                out.incomplete = nested.incomplete;
            } else if (t[0] == '[' && !parse_json(t) && json_end(t, 0) == npos && t.find('(') == npos) {
                out.incomplete = true;
                out.problems.push_back("a list of tool calls was cut off before it closed");
            } else if (t[0] == '[' && !parse_json(t.substr(0, json_end(t, 0)))) {
                if (!take_pythonic_list(out, t, "pythonic", tools, true))
                    out.problems.push_back("a list of tool calls is malformed");
            } else {
                take_json_sequence(out, t, "json_list", tools);
            }
            break;
        case Region::pythonic_lines:
            if (!t.empty() && t[0] == '[') {
                if (!take_pythonic_list(out, t, "pythonic", tools, true))
                    out.problems.push_back("a list of tool calls is malformed");
            } else {
                take_pythonic_calls(out, t, "pythonic", tools);
            }
            break;
        case Region::invoke_xml: take_invokes(out, t, tools); break;
        case Region::dsml: {
            std::string normal(t);
            for (std::string_view tag : {"\xEF\xBD\x9C"
                                         "DSML"
                                         "\xEF\xBD\x9C",
                                         "|DSML|"})
                for (size_t at; (at = normal.find(tag)) != npos;) normal.erase(at, tag.size());
            take_invokes(out, normal, tools, "dsml");
            break;
        }
        case Region::functionary:
            take_functionary(out, body, terminated, tools, false);
            return out;  // its leftover is the text as it should read, cut off or not
        case Region::gemma_call: take_gemma(out, t, terminated, tools); break;
    }
    if (!terminated && out.calls.empty() && !out.incomplete && out.problems.empty() && !out.prose && !t.empty()) {
        out.incomplete = true;
        out.problems.push_back("a tool call was cut off");
    }
    return out;
}

bool is_functionary_recipient(std::string_view first_line, const ToolSet& tools) {
    std::string name = recipient_name(first_line);
    return !name.empty() && (name == "all" || name == "python" || tools.offers(name));
}

Parsed parse_functionary_first(std::string_view text, const ToolSet& tools) {
    Parsed out;
    take_functionary(out, text, true, tools, true);
    return out;
}

Parsed parse_harmony_call(std::string_view recipient, std::string_view body, const ToolSet& tools) {
    Parsed out;
    std::string name(recipient);
    if (starts_with(name, "functions.")) name = name.substr(10);
    if (!tools.offers(name)) {
        // Servers may have renamed tools to identifier form (my-tool → my_tool); map back.
        for (const auto& offered : tools.names()) {
            std::string ident = offered;
            for (char& c : ident)
                if (c == '-' || c == '.' || c == ' ') c = '_';
            if (ident == name) name = offered;
        }
    }
    std::string_view t = trim(body);
    json args = json::object();
    if (!t.empty()) {
        size_t end = t[0] == '{' ? json_end(t, 0) : npos;
        if (t[0] == '{' && end == npos) {
            out.incomplete = true;
            out.problems.push_back("the tool call '" + name + "' was cut off before its JSON closed");
            return out;
        }
        auto parsed = end == npos ? std::nullopt : parse_json(t.substr(0, end));
        if (!parsed || !parsed->is_object()) {
            out.problems.push_back("the body of the call to '" + name + "' is not a JSON object");
            return out;
        }
        args = std::move(*parsed);
    }
    add_call(out, name, std::move(args), "harmony", tools, true);
    return out;
}

Parsed parse_fence(std::string_view lang, std::string_view body, bool terminated, const ToolSet& tools) {
    Parsed out;
    static const std::vector<std::string_view> call_languages{"", "json", "xml", "tool_call", "tool_code", "javascript"};
    std::string lower(lang);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (std::find(call_languages.begin(), call_languages.end(), lower) == call_languages.end()) return out;
    // A wrapper tag around the whole fence is dropped; several tagged blocks are read one by one below.
    std::string_view t = trim(body);
    if (std::string_view inner = unwrap_fence_tag(t); inner.find("</") == npos) t = inner;
    if (t.empty()) return out;
    if (t[0] == '<') {
        Extraction nested = extract_tool_calls(t, tools);
        if (!nested.calls.empty() && trim(nested.content).empty()) {
            out.calls = nested.calls;
            out.problems = nested.problems;
        }
        out.incomplete = nested.incomplete && !terminated;
        return out;
    }
    if (t[0] != '{' && t[0] != '[') return out;
    size_t end = json_end(t, 0);
    if (end == npos) {
        if (!terminated && t.find("\"name\"") != npos) {
            out.incomplete = true;
            out.problems.push_back("a fenced tool call was cut off before its JSON closed");
        }
        return out;
    }
    if (trim(t.substr(end)).empty()) {
        if (auto j = parse_json(t.substr(0, end)))
            take_json_calls(out, *j, "json_fence", tools, true, false);
        else if (t[0] == '[')
            take_pythonic_list(out, t, "pythonic", tools, false);
    } else {
        take_json_sequence(out, t, "json_fence", tools);
        if (!out.leftover.empty() || !out.problems.empty()) out = Parsed{};  // a fence of data, not calls
    }
    return out;
}

Parsed parse_bare(std::string_view text, const ToolSet& tools) {
    Parsed out;
    if (auto j = parse_json(text)) {
        take_json_calls(out, *j, "json", tools, true, false);
        return out;
    }
    if (!text.empty() && text[0] == '[') take_pythonic_list(out, text, "pythonic", tools, false);
    return out;
}

}  // namespace agenthost::agent::toolcall
