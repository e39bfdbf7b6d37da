#include "server/question_slot.hpp"

#include "common/bounded_json.hpp"
#include "common/cancel.hpp"
#include "common/schema_validator.hpp"

#include <algorithm>

namespace agenthost::server {

using nlohmann::json;

namespace {
constexpr auto kPoll = std::chrono::milliseconds(100);  // how often a cancel or a withdrawal is noticed

bool stopped(const ah_cancel& cancel, const agent::PersonQuestion& q) {
    return cancel.cancelled() || (q.withdrawn && q.withdrawn->cancelled());
}
}  // namespace

plugins::CallerAnswer QuestionSlot::ask(const agent::PersonQuestion& question, const ah_cancel& cancel,
                                        std::chrono::milliseconds wait) {
    std::lock_guard turn(asking_);
    const auto deadline = std::chrono::steady_clock::now() + wait;
    std::unique_lock lock(mutex_);
    question_ = question;
    reply_.reset();
    while (!reply_ && !stopped(cancel, question) && std::chrono::steady_clock::now() < deadline) changed_.wait_for(lock, kPoll);
    std::optional<json> reply = std::move(reply_);
    question_.reset();
    reply_.reset();
    if (reply) return {AH_OK, json_io::dump(*reply)};
    if (stopped(cancel, question))
        return {AH_ERR_CANCELLED, "the question was withdrawn: the run was cancelled or the call ended"};
    return {AH_ERR_TIMEOUT, "nobody answered the question within " +
                                std::to_string(std::chrono::duration_cast<std::chrono::minutes>(wait).count()) + " minutes"};
}

std::optional<Error> QuestionSlot::answer(const json& reply) {
    static const char* const kActions[] = {"accept", "decline", "cancel"};
    const std::string action = json_io::get_string(reply, "action");
    if (std::none_of(std::begin(kActions), std::end(kActions), [&](const char* a) { return action == a; }))
        return Error{"invalid_answer", "\"action\" must be \"accept\", \"decline\" or \"cancel\""};
    std::lock_guard lock(mutex_);
    if (!question_ || reply_) return Error{"no_question", "no question of this run waits for an answer"};
    json out{{"action", action}};
    if (action == "accept") {
        if (!reply.contains("content") || !reply["content"].is_object())
            return Error{"invalid_answer", "an accepted answer needs \"content\": an object of the question's fields"};
        const json& params = question_->params;
        if (params.contains("requestedSchema") && params["requestedSchema"].is_object()) {
            auto problems = schema::validate_against_schema(reply["content"], params["requestedSchema"]);
            if (!problems.empty()) {
                std::string text;
                for (const auto& p : problems) text += (text.empty() ? "" : "; ") + p;
                return Error{"invalid_answer", "the answer does not fit the question: " + text};
            }
        }
        out["content"] = reply["content"];
    }
    reply_ = std::move(out);
    changed_.notify_all();
    return std::nullopt;
}

std::optional<json> QuestionSlot::waiting() const {
    std::lock_guard lock(mutex_);
    if (!question_ || reply_) return std::nullopt;
    const json& params = question_->params;
    return json{{"tool", question_->tool},
                {"call_id", question_->call_id},
                {"message", json_io::get_string(params, "message")},
                {"schema", params.contains("requestedSchema") ? params["requestedSchema"] : json::object()}};
}

}  // namespace agenthost::server
