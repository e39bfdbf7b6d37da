#include "server/answer_text.hpp"

#include "common/bounded_json.hpp"

#include <nlohmann/json.hpp>

namespace agenthost::server {
namespace {

constexpr std::string_view kBlanks = " \t\r\n";

std::string_view trimmed(std::string_view s) {
    size_t first = s.find_first_not_of(kBlanks);
    if (first == std::string_view::npos) return {};
    return s.substr(first, s.find_last_not_of(kBlanks) - first + 1);
}

}  // namespace

std::string AnswerText::text(std::string_view piece) {
    size_t last = piece.find_last_not_of(kBlanks);
    if (last == std::string_view::npos) {
        if (in_step_) held_ += piece;
        return {};
    }
    std::string_view body = piece.substr(0, last + 1), tail = piece.substr(last + 1);
    std::string out;
    if (!in_step_) {
        body.remove_prefix(body.find_first_not_of(kBlanks));
        if (!whole_.empty()) out = "\n\n";
        in_step_ = true;
        segment_.clear();
        held_.clear();
    }
    out += held_;
    out += body;
    segment_ += held_;
    segment_ += body;
    held_ = tail;
    whole_ += out;
    return out;
}

void AnswerText::step_break() {
    in_step_ = false;
    held_.clear();
}

std::string AnswerText::answer(std::string_view answer) {
    if (trimmed(answer).empty() || trimmed(answer) == trimmed(segment_)) return {};
    step_break();
    return text(answer);
}

std::string answer_from_transcript(const std::vector<store::StoredMessage>& messages, std::string_view answer) {
    AnswerText out;
    for (const auto& m : messages) {
        if (m.kind == store::MessageKind::prompt) continue;
        nlohmann::json body = nlohmann::json::parse(m.body, nullptr, false);
        if (!body.is_object() || json_io::get_string(body, "role") != "assistant") continue;
        // The stored answer is the run's answer: said once, whether a step said it or not.
        if (m.kind == store::MessageKind::answer) {
            out.answer(json_io::get_string(body, "content"));
            continue;
        }
        out.text(json_io::get_string(body, "content"));
        if (auto calls = body.find("tool_calls"); calls != body.end() && calls->is_array() && !calls->empty()) out.step_break();
    }
    out.answer(answer);
    return out.whole();
}

}  // namespace agenthost::server
