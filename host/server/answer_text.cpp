#include "server/answer_text.hpp"

#include "common/bounded_json.hpp"

#include <nlohmann/json.hpp>

namespace agenthost::server {
namespace {

std::string_view trimmed(std::string_view s) {
    const char* space = " \t\r\n";
    size_t first = s.find_first_not_of(space);
    if (first == std::string_view::npos) return {};
    return s.substr(first, s.find_last_not_of(space) - first + 1);
}

}  // namespace

std::string AnswerText::text(std::string_view piece) {
    if (piece.empty()) return {};
    std::string out;
    if (broken_) {
        broken_ = false;
        segment_.clear();
        if (!whole_.empty()) out = "\n\n";
    }
    out += piece;
    segment_ += piece;
    whole_ += out;
    return out;
}

void AnswerText::step_break() {
    if (!segment_.empty() || !whole_.empty()) broken_ = true;
}

std::string AnswerText::answer(std::string_view answer) {
    if (trimmed(answer).empty() || trimmed(answer) == trimmed(segment_)) return {};
    broken_ = true;
    return text(answer);
}

std::string answer_from_transcript(const std::vector<store::StoredMessage>& messages, std::string_view answer) {
    AnswerText out;
    for (const auto& m : messages) {
        if (m.kind == store::MessageKind::prompt) continue;
        nlohmann::json body = nlohmann::json::parse(m.body, nullptr, false);
        if (!body.is_object() || json_io::get_string(body, "role") != "assistant") continue;
        out.text(json_io::get_string(body, "content"));
        if (auto calls = body.find("tool_calls"); calls != body.end() && calls->is_array() && !calls->empty()) out.step_break();
    }
    out.answer(answer);
    return out.whole();
}

}  // namespace agenthost::server
