#include "agent/context_window.hpp"

#include "common/bounded_json.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace agenthost::agent {

void ContextWindow::add(std::string message_json, int64_t id) {
    bool tool_result = json_io::get_string(nlohmann::json::parse(message_json, nullptr, false), "role") == "tool";
    working_.push_back({std::move(message_json), tool_result});
    working_ids_.push_back(id);
}

void ContextWindow::note_state(std::string_view state) {
    if (state.empty() && state_.empty()) return;
    if (state.empty()) state = "[agenthost] The agent's state is now empty: no goal, plan or memory.";  // not a stale one
    std::string message = json_io::dump({{"role", "user"}, {"content", std::string(state)}, {"agenthost_state", true}});
    if (message == state_) return;
    state_ = message;
    working_.push_back({std::move(message), false, true});
    working_ids_.push_back(working_ids_.empty() ? 0 : working_ids_.back());
}

size_t ContextWindow::prune(size_t keep) {
    if (working_.size() <= keep) return 0;
    size_t start = working_.size() - keep;
    while (start > 0 && working_[start].tool_result) --start;
    if (start == 0) return 0;
    // A state is not left first (working_from names a transcript message), and one dropped is
    // sent again from the next request on.
    while (start < working_.size() && working_[start].state) ++start;
    bool state_kept = std::any_of(working_.begin() + static_cast<std::ptrdiff_t>(start), working_.end(),
                                  [](const Message& m) { return m.state; });
    if (!state_kept) state_.clear();
    working_.erase(working_.begin(), working_.begin() + static_cast<std::ptrdiff_t>(start));
    working_ids_.erase(working_ids_.begin(), working_ids_.begin() + static_cast<std::ptrdiff_t>(start));
    return start;
}

std::string ContextWindow::prompt_message(std::string_view prompt) {
    std::string out;
    out.reserve(prompt.size() + prompt.size() / 16 + 32);
    append_prompt_message(out, prompt);
    return out;
}

void ContextWindow::append_prompt_message(std::string& out, std::string_view prompt) {
    out += "{\"content\":";
    json_io::append_json_string(out, prompt);
    out += ",\"role\":\"user\"}";
}

std::string ContextWindow::request_text(std::string_view system_json, std::string_view prompt, std::string_view model,
                                        std::string_view tools_text, int max_tokens) const {
    const std::string model_json = json_io::dump(nlohmann::json(std::string(model)));
    size_t size = system_json.size() + tools_text.size() + model_json.size() + 128;
    for (const auto& m : pinned_) size += m.size() + 1;
    size += prompt.size() + prompt.size() / 16 + 32;  // escapes are few
    for (const auto& m : working_) size += m.json.size() + 1;
    // The keys in the order a serialised object has them (sorted).
    std::string out;
    out.reserve(size);
    out += "{\"max_tokens\":";
    out += std::to_string(max_tokens);
    out += ",\"messages\":[";
    out += system_json;
    for (const auto& m : pinned_) (out += ',') += m;
    out += ',';
    append_prompt_message(out, prompt);
    for (const auto& m : working_) (out += ',') += m.json;
    out += "],\"model\":";
    out += model_json;
    out += ",\"stream\":true,\"tool_choice\":";
    out += tools_text == "[]" ? "\"none\"" : "\"auto\"";
    out += ",\"tools\":";
    out += tools_text;
    out += '}';
    return out;
}

}  // namespace agenthost::agent
