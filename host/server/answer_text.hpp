// The content of an OpenAI-style answer (/v1/chat/completions): what the model said in each step
// of the run, the steps' texts kept apart by a blank line (a tool call between them), then the
// run's answer when no step said it (agent_done's summary). A streamed answer feeds it the run's
// events as they come; a whole one (or a replay) feeds it the stored transcript. Both go through
// these rules, so the two hold the same content.
#pragma once

#include "store/run_journal.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace agenthost::server {

class AnswerText {
public:
    // Text the model said; returns what to send (a blank line first when a step ended before it).
    // Blanks at a segment's ends are left out (a reply's text around a tool call written in it
    // ends in blanks the stored step does not keep): trailing ones wait for more text.
    std::string text(std::string_view piece);
    // A tool call ended the step: the next text is a segment of its own.
    void step_break();
    // The run's answer; returns what to send: nothing when the last segment said it.
    std::string answer(std::string_view answer);
    const std::string& whole() const { return whole_; }

private:
    std::string whole_;
    std::string segment_;   // the text of the current (or last) step
    std::string held_;      // blanks at the end of the current step, sent if more text follows
    bool in_step_ = false;  // false before the first text and after a step ended
};

// The content of a finished run's answer from its stored messages and its answer.
std::string answer_from_transcript(const std::vector<store::StoredMessage>& messages, std::string_view answer);

}  // namespace agenthost::server
