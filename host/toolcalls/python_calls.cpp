// Python literals and pythonic calls: [f(a=1), g(b="x")], NAME.call(k=v).
#include "toolcalls/format_parts.hpp"

#include <cctype>

namespace agenthost::toolcalls::formats {

using json_io::dump;

// ---- Python literals and pythonic calls ---------------------------------------------------------

namespace {

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

}  // namespace

std::optional<json> python_literal(std::string_view text) {
    Pythonic p(text);
    auto v = p.value();
    if (!v || !p.at_end()) return std::nullopt;
    return v;
}

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

}  // namespace agenthost::toolcalls::formats
