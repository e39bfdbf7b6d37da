// Calls between special tokens: DeepSeek / Kimi <|tool_call_begin|>…, Mistral [TOOL_CALLS].
#include "toolcalls/format_parts.hpp"

namespace agenthost::toolcalls::formats {

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
        add_call(out, name, *args, "special_tokens", tools, true);
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
        add_call(out, name, *args, "mistral", tools, true);
        out.leftover += std::string(rest.substr(end));
    }
}

// The name at the start of a Functionary v3.2 recipient line; empty when the line is not one.

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

}  // namespace agenthost::toolcalls::formats
