// The segmenter: one pass over the reply, byte by byte, cutting it into content, reasoning and
// call regions (the markers that open and close them: markers.cpp). A region is parsed once, when
// it closes (regions.cpp). Bytes that might begin a marker wait in `pending` until they are known
// to be one or not, so how the reply was split into deltas never changes the outcome.
#include "toolcalls/extractor.hpp"

#include "toolcalls/format_parts.hpp"
#include "toolcalls/markers.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace agenthost::toolcalls {

using formats::Region;
using formats::trim;
using nlohmann::json;
using namespace markers;  // the marker tables the segmenter walks

// ---- The segmenter ------------------------------------------------------------------------------

namespace {

enum class Mode { content, reasoning, region, fence_lang, fence, candidate, harmony_header, harmony_body };

}  // namespace

struct ToolCallStream::State {
    ToolSet tools;
    Mode mode = Mode::content;
    Extraction result;
    bool saw_reasoning = false;
    bool at_eof = false;
    bool replaying = false;  // re-reading an abandoned JSON candidate: no new candidate may start
    std::string pending;     // bytes that may be the start of a marker
    size_t shown_content = 0, shown_reasoning = 0;

    // The open block: its closing markers and what has been collected.
    std::vector<std::string_view> close;
    bool close_is_token = false;
    std::vector<Marker> literal_closes;
    FirstBytes close_first_bytes{};  // of literal_closes
    FirstBytes close_plain_bytes{};  // neither one of those nor '<' (special tokens)
    // A call region opened inside reasoning (Kimi-K2-Thinking) returns to it with its closes.
    bool region_in_reasoning = false;
    std::vector<std::string_view> reasoning_close;
    bool reasoning_close_is_token = false;
    bool saw_functionary = false;      // a ">>>" recipient was seen: the reply is Functionary v3.2
    bool recipient_confirmed = false;  // the open ">>>" region's first line named a recipient
    Region region = Region::hermes;
    std::string opener;  // the raw opening marker (kept to restore non-call text)
    std::string body;
    std::string fence_lang;

    // A '{' or '[' in prose that may be a bare JSON call or a pythonic list.
    std::string candidate;
    std::string brackets;
    char quote = 0;
    bool escaped = false;
    bool significant = false;

    // gpt-oss harmony
    std::string header, channel, recipient;

    // A piece of the reply. In text with nothing pending, a run of bytes that can begin neither a
    // marker nor a JSON candidate is content as it stands, copied in one go.
    void put_all(std::string_view text) {
        size_t at = 0;
        while (at < text.size()) {
            if (std::string* sink = plain_sink(); sink && pending.empty() && !replaying) {
                const FirstBytes& plain = mode == Mode::content ? plain_content_bytes() : close_plain_bytes;
                size_t end = at;
                while (end < text.size() && plain[static_cast<unsigned char>(text[end])]) ++end;
                sink->append(text.data() + at, end - at);
                at = end;
                if (at == text.size()) break;
            }
            put(text[at++]);
        }
    }

    // Where a plain byte goes in this mode, when ordinary() would only append it there.
    std::string* plain_sink() {
        switch (mode) {
            case Mode::content: return &result.content;
            case Mode::reasoning: return &result.reasoning;
            case Mode::fence: return &body;
            case Mode::region: return region == Region::functionary ? nullptr : &body;  // it reads each byte of its first line
            default: return nullptr;
        }
    }

    void put(char c) {
        if (mode == Mode::candidate) return candidate_byte(c);
        if (mode == Mode::fence_lang) return fence_lang_byte(c);
        pending += c;
        resolve();
    }

    // Decides what the pending bytes are: a whole marker, a marker still arriving, or plain text.
    void resolve() {
        if (pending.empty()) return;
        // Most bytes cannot begin a marker or a special token: they are text without comparing them
        // with every marker (the same outcome as below, found with one table look-up).
        if (pending.size() == 1 && !may_begin_marker(pending[0])) {
            char c = pending[0];
            pending.clear();
            return ordinary(c);
        }
        const Marker* full = nullptr;
        std::string token_name;
        bool maybe = false;
        for (const Marker& m : active_literals()) {
            if (m.text.empty() || m.text[0] != pending[0]) continue;  // most markers differ at once
            if (m.text == pending)
                full = &m;
            else if (m.text.substr(0, pending.size()) == pending)
                maybe = true;
        }
        if (!full && (pending[0] == '<')) {
            formats::TokenScan token = formats::scan_special_token(pending);
            if (token.kind == formats::TokenScan::partial)
                maybe = true;
            else if (token.kind == formats::TokenScan::yes && token.length == pending.size() && token_accepted(token.name))
                token_name = token.name;
        }
        if (full || !token_name.empty()) {
            std::string raw = std::move(pending);
            pending.clear();
            if (full)
                on_literal(*full, raw);
            else
                on_token(token_name, raw);
            return;
        }
        if (maybe && !at_eof) return;
        std::string rest = pending.substr(1);
        char first = pending[0];
        pending.clear();
        ordinary(first);
        for (char c : rest) put(c);
    }

    bool may_begin_marker(char c) const {
        if (c == '<') return true;  // special tokens
        const auto u = static_cast<unsigned char>(c);
        if (mode == Mode::content) return content_first_bytes()[u];
        if (mode == Mode::reasoning || mode == Mode::region || mode == Mode::fence) return close_first_bytes[u];
        return false;
    }

    // The literal markers that mean something in the current mode.
    const std::vector<Marker>& active_literals() const {
        static const std::vector<Marker> none;
        if (mode == Mode::content) return literal_markers();
        if (mode == Mode::reasoning || mode == Mode::region || mode == Mode::fence) return literal_closes;
        return none;
    }

    void expect_close(const std::vector<std::string_view>& markers, bool tokens) {
        close = markers;
        close_is_token = tokens;
        literal_closes.clear();
        close_first_bytes.fill(false);
        close_plain_bytes.fill(true);
        close_plain_bytes['<'] = false;
        if (!tokens)
            for (auto c : markers) {
                literal_closes.push_back({c, Action::drop});
                if (c.empty()) continue;
                close_first_bytes[static_cast<unsigned char>(c[0])] = true;
                close_plain_bytes[static_cast<unsigned char>(c[0])] = false;
            }
    }

    bool token_accepted(const std::string& name) {
        switch (mode) {
            case Mode::content: return true;  // known tokens act, framing tokens are dropped, others are text
            case Mode::reasoning:
                if (name == kCallTokenInReasoning) return true;
                return close_is_token && std::find(close.begin(), close.end(), name) != close.end();
            case Mode::region: return close_is_token && std::find(close.begin(), close.end(), name) != close.end();
            case Mode::harmony_header: return name == "message" || name == "channel" || name == "constrain" || name == "start";
            case Mode::harmony_body:
                return name == "end" || name == "call" || name == "return" || name == "start" || name == "channel";
            default: return false;
        }
    }

    void on_literal(const Marker& m, const std::string& raw) {
        if (mode != Mode::content) return close_block(raw);
        open(m, raw);
    }

    void on_token(const std::string& name, const std::string& raw) {
        switch (mode) {
            case Mode::content: {
                for (const Marker& m : token_markers())
                    if (m.text == name) return open(m, raw);
                if (!is_dropped_token(name)) append_content(raw);  // an unknown token stays as text
                return;
            }
            case Mode::harmony_header:
                if (name == "message") {
                    parse_harmony_header();
                    mode = Mode::harmony_body;
                    body.clear();
                } else if (name == "start") {
                    header.clear();
                } else {
                    header += " <|" + name + "|> ";
                }
                return;
            case Mode::harmony_body:
                finish_harmony_message();
                if (name == "start" || name == "channel") {
                    mode = Mode::harmony_header;
                    header = name == "channel" ? " <|channel|> " : "";
                }
                return;
            case Mode::reasoning:
                if (name == kCallTokenInReasoning) {
                    reasoning_close = close;
                    reasoning_close_is_token = close_is_token;
                    open(marker_for_token(name), raw);
                    region_in_reasoning = true;
                    return;
                }
                return close_block(raw);
            default: close_block(raw);
        }
    }

    void open(const Marker& m, const std::string& raw) {
        switch (m.action) {
            case Action::reasoning_open:
                mode = Mode::reasoning;
                saw_reasoning = true;
                expect_close(m.close, m.close_is_token);
                break;
            case Action::reasoning_close:
                if (!saw_reasoning) {  // thinking was forced open by the prompt: all before is reasoning
                    result.reasoning += result.content;
                    result.content.clear();
                }
                saw_reasoning = true;
                break;
            case Action::region_open:
                recipient_confirmed = false;
                mode = Mode::region;
                region = m.region;
                region_in_reasoning = false;
                expect_close(m.close, m.close_is_token);
                opener = raw;
                body = (region == Region::function_tag || m.text == "tool_call_begin") ? raw : "";
                break;
            case Action::fence_open:
                mode = Mode::fence_lang;
                expect_close({"```"}, false);
                opener = raw;
                fence_lang.clear();
                body.clear();
                break;
            case Action::harmony_header:
                mode = Mode::harmony_header;
                header = m.text == "channel" ? " <|channel|> " : "";
                break;
            case Action::drop: break;
        }
    }

    void close_block(const std::string& raw) {
        switch (mode) {
            case Mode::reasoning: mode = Mode::content; break;
            case Mode::region:
                if (region == Region::functionary) {  // ">>>" ends one recipient and starts the next
                    if (recipient_confirmed) {
                        finish_region(true, "");
                    } else {  // the last ">>>" named no recipient: it was text
                        mode = Mode::content;
                        append_content(opener + body);
                        body.clear();
                    }
                    open(literal_markers_by_text(">>>"), raw);
                    break;
                }
                finish_region(true, raw);
                break;
            case Mode::fence: finish_fence(true); break;
            default: break;
        }
    }

    // A byte that is not part of a marker.
    void ordinary(char c) {
        switch (mode) {
            case Mode::content:
                if ((c == '{' || c == '[') && !replaying) return start_candidate(c);
                result.content += c;
                return;
            case Mode::reasoning: result.reasoning += c; return;
            case Mode::region:
                body += c;
                if (region == Region::functionary && !recipient_confirmed) confirm_recipient(c);
                return;
            case Mode::fence:
            case Mode::harmony_body: body += c; return;
            case Mode::harmony_header: header += c; return;
            default: return;
        }
    }

    // Functionary v3.2: ">>>" starts a recipient only when its first line names one; otherwise the
    // ">>>" was prose (a REPL prompt, a shift operator) and everything is read again as text.
    void confirm_recipient(char c) {
        constexpr size_t kLongestLine = 80;
        if (c != '\n' && body.size() <= kLongestLine) return;
        if (c == '\n' && formats::is_functionary_recipient(std::string_view(body).substr(0, body.size() - 1), tools)) {
            recipient_confirmed = true;
            if (!saw_functionary) first_functionary_recipient();
            return;
        }
        mode = Mode::content;
        std::string text = std::move(body);
        body.clear();
        append_content(opener);
        for (char b : text) put(b);
    }

    void append_content(const std::string& text) { result.content += text; }

    // ---- fences ----
    void fence_lang_byte(char c) {
        if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') {
            fence_lang += c;
            return;
        }
        mode = Mode::fence;
        opener += fence_lang;
        if (c == '\n')
            opener += c;
        else
            put(c);
    }

    void finish_fence(bool terminated) {
        mode = Mode::content;
        formats::Parsed p = formats::parse_fence(fence_lang, body, terminated, tools);
        if (!p.calls.empty()) {
            std::string_view before = trim(result.content);
            if (before.ends_with("Action:")) result.content.resize(result.content.rfind("Action:"));  // Command R
        } else {
            append_content(opener + body + (terminated ? "```" : ""));
        }
        merge(p);
    }

    // ---- call regions ----
    void finish_region(bool terminated, const std::string& close_raw) {
        mode = Mode::content;
        formats::Parsed p = formats::parse_region(region, body, terminated, tools);
        std::string text;
        if (p.calls.empty() && !p.replaces_text) {
            bool body_has_opener = region == Region::function_tag || body.rfind(opener, 0) == 0;
            text = (body_has_opener ? "" : opener) + body + close_raw;
        } else {
            text = p.leftover;
        }
        if (region_in_reasoning) {  // back into the reasoning the calls interrupted
            region_in_reasoning = false;
            mode = Mode::reasoning;
            expect_close(reasoning_close, reasoning_close_is_token);
            result.reasoning += text;
        } else {
            append_content(text);
        }
        merge(p);
    }

    // Functionary v3.2 names its first recipient without ">>>": at the first ">>>", the content so
    // far is read as that recipient ("all\n…" text, or NAME\n{json} for an offered tool).
    void first_functionary_recipient() {
        saw_functionary = true;
        formats::Parsed p = formats::parse_functionary_first(result.content, tools);
        result.content = p.leftover;
        merge(p);
    }

    static const Marker& literal_markers_by_text(std::string_view text) {
        for (const Marker& m : literal_markers())
            if (m.text == text) return m;
        return literal_markers().front();
    }

    void merge(const formats::Parsed& p) {
        result.calls.insert(result.calls.end(), p.calls.begin(), p.calls.end());
        result.problems.insert(result.problems.end(), p.problems.begin(), p.problems.end());
        result.incomplete = result.incomplete || p.incomplete;
    }

    // ---- harmony ----
    void parse_harmony_header() {
        channel.clear();
        recipient.clear();
        std::string_view h = header;
        if (size_t c = h.find("<|channel|>"); c != std::string_view::npos) {
            std::string_view rest = trim(h.substr(c + 11));
            size_t end = 0;
            while (end < rest.size() && std::isalpha(static_cast<unsigned char>(rest[end]))) ++end;
            channel = std::string(rest.substr(0, end));
        }
        if (size_t t = h.find("to="); t != std::string_view::npos) {
            size_t end = t + 3;
            while (end < h.size() && !std::isspace(static_cast<unsigned char>(h[end])) && h[end] != '<') ++end;
            recipient = std::string(h.substr(t + 3, end - t - 3));
        }
    }

    void finish_harmony_message() {
        mode = Mode::content;
        if (!recipient.empty()) {
            formats::Parsed p = formats::parse_harmony_call(recipient, body, tools);
            if (p.calls.empty() && !p.incomplete) append_content(body);
            merge(p);
        } else if (channel == "analysis") {
            result.reasoning += body;
        } else {
            append_content(body);
        }
        body.clear();
        recipient.clear();
        channel.clear();
    }

    // ---- bare JSON / pythonic candidates ----
    void start_candidate(char c) {
        mode = Mode::candidate;
        candidate.assign(1, c);
        brackets.assign(1, c);
        quote = 0;
        escaped = false;
        significant = false;
    }

    void candidate_byte(char c) {
        candidate += c;
        if (quote) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == quote)
                quote = 0;
            else if (c == '\n')
                abandon_candidate();  // a string never spans lines: this is prose
            return;
        }
        unsigned char u = static_cast<unsigned char>(c);
        if (std::isspace(u)) return;
        if (!significant) {  // what may follow the opening bracket of a call
            significant = true;
            bool ok = brackets[0] == '{'
                          ? (c == '"' || c == '\'' || c == '}')
                          : (c == '{' || c == '[' || c == '"' || c == '\'' || c == ']' || std::isalpha(u) || c == '_');
            if (!ok) return abandon_candidate();
        }
        if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == '{' || c == '[' || c == '(') {
            brackets += c;
        } else if (c == '}' || c == ']' || c == ')') {
            char want = c == '}' ? '{' : c == ']' ? '[' : '(';
            if (brackets.empty() || brackets.back() != want) return abandon_candidate();
            brackets.pop_back();
            if (brackets.empty()) close_candidate();
        } else if (!(std::isalnum(u) || u >= 0x80 || std::string_view(",:=.-+_").find(c) != std::string_view::npos)) {
            abandon_candidate();
        }
    }

    void close_candidate() {
        mode = Mode::content;
        formats::Parsed p = formats::parse_bare(candidate, tools);
        if (p.calls.empty()) {
            append_content(candidate);
            return;
        }
        // Words that introduce a bare call: Phi-4-mini's functools[…], granite-20b's <function_call> {…}.
        for (std::string_view prefix : {std::string_view("functools"), std::string_view("<function_call>")})
            if (std::string_view before = result.content; trim(before).ends_with(prefix)) {
                result.content.resize(result.content.rfind(prefix));
                break;
            }
        merge(p);
    }

    // Not JSON after all: the bracket is text, and what followed it is read again as text (markers
    // included), without starting another candidate inside it.
    void abandon_candidate() {
        mode = Mode::content;
        std::string text = std::move(candidate);
        candidate.clear();
        append_content(text.substr(0, 1));
        char last = text.back();
        bool was_replaying = replaying;
        replaying = true;
        for (size_t i = 1; i + 1 < text.size(); ++i) put(text[i]);
        replaying = was_replaying;
        if (text.size() > 1) put(last);
    }

    // ---- end of the reply ----
    Extraction finish() {
        at_eof = true;
        resolve();
        switch (mode) {
            case Mode::candidate:
                append_content(candidate);
                if (candidate.find("\"name\"") != std::string::npos ||
                    (candidate[0] == '[' && candidate.find('(') != std::string::npos &&
                     candidate.find('=') != std::string::npos)) {
                    result.incomplete = true;
                    result.problems.push_back("a tool call was cut off before its closing bracket");
                }
                break;
            case Mode::fence_lang:
                mode = Mode::fence;
                opener += fence_lang;
                finish_fence(false);
                break;
            case Mode::fence: finish_fence(false); break;
            case Mode::region:
                if (region == Region::functionary && !recipient_confirmed)
                    append_content(opener + body);  // prose ">>>"
                else
                    finish_region(false, "");
                break;
            case Mode::harmony_body: finish_harmony_message(); break;
            default: break;
        }
        mode = Mode::content;
        Extraction out = std::move(result);
        out.content = std::string(trim(out.content));
        out.reasoning = std::string(trim(out.reasoning));
        result = Extraction{};
        return out;
    }

    VisibleDelta visible() {
        VisibleDelta d;
        if (result.content.size() < shown_content) shown_content = result.content.size();
        if (result.reasoning.size() < shown_reasoning) shown_reasoning = result.reasoning.size();
        d.content = result.content.substr(shown_content);
        d.reasoning = result.reasoning.substr(shown_reasoning);
        shown_content = result.content.size();
        shown_reasoning = result.reasoning.size();
        return d;
    }
};

ToolCallStream::ToolCallStream(ToolSet tools) : state_(std::make_unique<State>()) { state_->tools = std::move(tools); }
ToolCallStream::~ToolCallStream() = default;
ToolCallStream::ToolCallStream(ToolCallStream&&) noexcept = default;
ToolCallStream& ToolCallStream::operator=(ToolCallStream&&) noexcept = default;

VisibleDelta ToolCallStream::feed(std::string_view delta) {
    state_->put_all(delta);
    return state_->visible();
}

Extraction ToolCallStream::finish() { return state_->finish(); }

Extraction extract_tool_calls(std::string_view text, const ToolSet& tools) {
    ToolCallStream stream(tools);
    stream.feed(text);
    return stream.finish();
}

}  // namespace agenthost::toolcalls
