// A region's text to calls: one parser per region kind, in a table, and the harmony, fenced and
// bare forms the extractor finds outside regions.
#include "toolcalls/format_parts.hpp"

#include "toolcalls/extractor.hpp"

#include <algorithm>
#include <iterator>

namespace agenthost::toolcalls::formats {

namespace {

// A fence body wrapped in one more tag (<tool_call>…</tool_call> inside ```json): the inside.
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

// One region kind's parser: `body` as the extractor cut it, `t` the same trimmed.
struct RegionText {
    std::string_view body, t;
    bool terminated;
};
using RegionParser = void (*)(Parsed& out, const RegionText& r, const ToolSet& tools);

// <tool_call>…</tool_call>: JSON, Qwen3-Coder XML or GLM key/value pairs.
void hermes(Parsed& out, const RegionText& r, const ToolSet& tools) {
    if (r.t.empty())
        out.problems.push_back("an empty <tool_call> block");
    else if (r.t[0] == '{' || r.t[0] == '[')
        take_json_sequence(out, r.t, "hermes", tools, r.terminated);
    else if (starts_with(r.t, "<function="))
        take_xml_functions(out, r.t, tools);
    else
        take_glm(out, r.t, r.terminated, tools);
}

// <function=NAME>{json}</function> or <function="NAME">, or Qwen3-Coder's XML parameters.
void function_tag(Parsed& out, const RegionText& r, const ToolSet& tools) {
    std::string_view t = r.t;  // the text from "<function"
    if (starts_with(t, "<function=") && t.find("<parameter=") != npos)
        return take_xml_functions(out, std::string(t) + (r.terminated ? "</function>" : ""), tools);
    size_t head_end = t.find('>');
    if (head_end == npos) {
        out.incomplete = true;
        out.problems.push_back("a <function=…> tool call was cut off");
        return;
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
        out.incomplete = !r.terminated;
        out.problems.push_back("the <function=" + name + "> call has no complete JSON arguments");
        return;
    }
    auto args = parse_json(args_text.substr(0, end));
    if (!args || !args->is_object())
        out.problems.push_back("the arguments of '" + name + "' are not a valid JSON object");
    else
        add_call(out, name, *args, "function_tag", tools, true);
}

// <|python_tag|>: JSON objects separated by ';', NAME.call(k=v) (Llama built-ins), else raw code
// for the python tool (Functionary v3.1).
void python_tag(Parsed& out, const RegionText& r, const ToolSet& tools) {
    if (r.t.empty()) return;
    if (r.t[0] == '{' || r.t[0] == '[') return void(take_json_sequence(out, r.t, "python_tag", tools));
    Parsed calls;
    take_pythonic_calls(calls, r.t, "python_tag", tools);
    const bool were_calls = !calls.calls.empty() && calls.problems.empty();
    if (!were_calls && tools.offers("python"))
        add_call(out, "python", json{{"code", std::string(r.t)}}, "python_tag", tools, true);
    else
        out = std::move(calls);
}

void mistral(Parsed& out, const RegionText& r, const ToolSet& tools) { take_mistral(out, r.body, tools); }

void special_tokens(Parsed& out, const RegionText& r, const ToolSet& tools) {
    take_special_token_calls(out, normalize_tokens(r.body), r.terminated, tools);
}

// <TOOLCALL>, <tool_calls>, <|START_ACTION|> …: nested markup, a JSON list or a pythonic one.
void call_list(Parsed& out, const RegionText& r, const ToolSet& tools) {
    std::string_view t = r.t;
    if (t.empty()) return;
    if (t[0] == '<') {
        Extraction nested = extract_tool_calls(t, tools);
        out.calls = nested.calls;
        out.problems = nested.problems;
        out.incomplete = nested.incomplete;
    } else if (t[0] == '[' && !parse_json(t) && json_end(t, 0) == npos && t.find('(') == npos) {
        out.incomplete = true;
        out.problems.push_back("a list of tool calls was cut off before it closed");
    } else if (t[0] == '[' && !parse_json(t.substr(0, json_end(t, 0)))) {
        if (!take_pythonic_list(out, t, "pythonic", tools, true)) out.problems.push_back("a list of tool calls is malformed");
    } else {
        take_json_sequence(out, t, "json_list", tools);
    }
}

// <function_calls>f(a=1)\ng(b=2)</function_calls>, or a pythonic list.
void pythonic_lines(Parsed& out, const RegionText& r, const ToolSet& tools) {
    if (!r.t.empty() && r.t[0] == '[') {
        if (!take_pythonic_list(out, r.t, "pythonic", tools, true)) out.problems.push_back("a list of tool calls is malformed");
    } else {
        take_pythonic_calls(out, r.t, "pythonic", tools);
    }
}

void invoke_xml(Parsed& out, const RegionText& r, const ToolSet& tools) { take_invokes(out, r.t, tools); }

// DeepSeek V3.2/V4: the DSML markers taken out, the invokes are MiniMax's.
void dsml(Parsed& out, const RegionText& r, const ToolSet& tools) {
    std::string normal(r.t);
    for (std::string_view tag : {"\xEF\xBD\x9C"
                                 "DSML"
                                 "\xEF\xBD\x9C",
                                 "|DSML|"})
        for (size_t at; (at = normal.find(tag)) != npos;) normal.erase(at, tag.size());
    take_invokes(out, normal, tools, "dsml");
}

void functionary(Parsed& out, const RegionText& r, const ToolSet& tools) {
    take_functionary(out, r.body, r.terminated, tools, false);
}

void gemma_call(Parsed& out, const RegionText& r, const ToolSet& tools) { take_gemma(out, r.t, r.terminated, tools); }

struct RegionFormat {
    Region kind;
    RegionParser parse;
    // Its leftover is the text as it should read, cut off or not: no "cut off" judgement after it.
    bool judges_itself = false;
};

constexpr RegionFormat kRegionFormats[] = {
    {Region::hermes, hermes},
    {Region::function_tag, function_tag},
    {Region::python_tag, python_tag},
    {Region::mistral, mistral},
    {Region::special_tokens, special_tokens},
    {Region::call_list, call_list},
    {Region::pythonic_lines, pythonic_lines},
    {Region::invoke_xml, invoke_xml},
    {Region::dsml, dsml},
    {Region::functionary, functionary, true},
    {Region::gemma_call, gemma_call},
};

}  // namespace

Parsed parse_region(Region kind, std::string_view body, bool terminated, const ToolSet& tools) {
    Parsed out;
    const RegionText r{body, trim(body), terminated};
    const auto* format =
        std::find_if(std::begin(kRegionFormats), std::end(kRegionFormats), [&](const RegionFormat& f) { return f.kind == kind; });
    if (format == std::end(kRegionFormats)) return out;
    format->parse(out, r, tools);
    if (format->judges_itself) return out;
    if (!terminated && out.calls.empty() && !out.incomplete && out.problems.empty() && !out.prose && !r.t.empty()) {
        out.incomplete = true;
        out.problems.push_back("a tool call was cut off");
    }
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
    add_call(out, name, args, "harmony", tools, true);
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

}  // namespace agenthost::toolcalls::formats
