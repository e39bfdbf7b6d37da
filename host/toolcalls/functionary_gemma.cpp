// Functionary v3.2 (>>>NAME\n{json}) and FunctionGemma / Gemma 4 (call:NAME{key:<escape>v<escape>}).
#include "toolcalls/format_parts.hpp"

#include <cctype>

namespace agenthost::toolcalls::formats {

namespace {

std::string recipient_name(std::string_view line) {
    std::string_view name = trim(line);
    if (name.empty() || name.size() > 64) return {};
    if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return {};
    for (char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return {};
    return std::string(name);
}

}  // namespace

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
        if (!add_call(out, name, *args, "functionary", tools, true)) keep_text("");
        return;
    }
    if (name == "python" && !args_text.empty()) {  // raw code for the python tool
        if (!add_call(out, name, json{{"code", std::string(args_text)}}, "functionary", tools, true)) keep_text("");
        return;
    }
    keep_text("the call to '" + name + "' after >>> has no JSON arguments");
}

namespace {

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

}  // namespace

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

bool is_functionary_recipient(std::string_view first_line, const ToolSet& tools) {
    std::string name = recipient_name(first_line);
    return !name.empty() && (name == "all" || name == "python" || tools.offers(name));
}

Parsed parse_functionary_first(std::string_view text, const ToolSet& tools) {
    Parsed out;
    take_functionary(out, text, true, tools, true);
    return out;
}

}  // namespace agenthost::toolcalls::formats
