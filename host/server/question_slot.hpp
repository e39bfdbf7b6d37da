// The question a plugin puts to the person during a run's call (agent/person_channel.hpp): it is
// announced as the run's "question" event and waits here until the person answers it through
// POST /api/runs/N/answer, the run is cancelled, the call ends, or the wait runs out. One question
// at a time per run: a second waits for the first to be answered.
#pragma once

#include "agent/person_channel.hpp"
#include "common/result.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

namespace agenthost::server {

class QuestionSlot {
public:
    // Puts the question and waits for its answer; `cancel` is the run's.
    plugins::CallerAnswer ask(const agent::PersonQuestion& question, const ah_cancel& cancel, std::chrono::milliseconds wait);
    // Answers the waiting question with {"action": accept|decline|cancel, "content": {...}}, the
    // content checked against the question's schema. Errors: no_question (nothing waits),
    // invalid_answer (with what is wrong).
    std::optional<Error> answer(const nlohmann::json& reply);
    // The waiting question as the "question" event shows it, if one waits.
    std::optional<nlohmann::json> waiting() const;

private:
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::mutex asking_;  // held by the question being asked: the next one waits
    std::optional<agent::PersonQuestion> question_;
    std::optional<nlohmann::json> reply_;
};

}  // namespace agenthost::server
