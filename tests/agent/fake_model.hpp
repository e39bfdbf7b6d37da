// A model for tests of the agent loop, in process: each chat request takes the next scripted
// reply (text, native tool calls, or a provider error) and is recorded, so a test can check what
// the model was sent.
#pragma once

#include "llm/model_client.hpp"

#include <nlohmann/json.hpp>

#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace test {

struct FakeReply {
    std::string text;                                // streamed in two halves
    nlohmann::json calls = nlohmann::json::array();  // native calls: {"name", "arguments", "id"?}
    std::string error_type;                          // set: the request fails with this provider error
    std::string error_message = "the fake model failed";
    int64_t input_tokens = 10, output_tokens = 5;

    static FakeReply answer(std::string text) {
        FakeReply r;
        r.text = std::move(text);
        return r;
    }
    static FakeReply call(const std::string& tool, nlohmann::json arguments = nlohmann::json::object()) {
        FakeReply r;
        r.calls.push_back({{"name", tool}, {"arguments", std::move(arguments)}});
        return r;
    }
    static FakeReply failure(std::string type, std::string message = "the fake model failed") {
        FakeReply r;
        r.error_type = std::move(type);
        r.error_message = std::move(message);
        return r;
    }
};

class FakeModel final : public agenthost::llm::ModelClient {
public:
    void script(std::vector<FakeReply> replies) {
        std::lock_guard lock(mutex_);
        replies_.insert(replies_.end(), replies.begin(), replies.end());
    }
    // The requests received so far: {"model", "messages", "tools", …} as the provider would get them.
    std::vector<nlohmann::json> requests() {
        std::lock_guard lock(mutex_);
        return requests_;
    }

    agenthost::llm::ChatOutcome chat(std::string_view, const agenthost::plugins::CallInput& call,
                                     const agenthost::llm::ChatCallbacks& callbacks) override {
        FakeReply reply;
        {
            std::lock_guard lock(mutex_);
            requests_.push_back(nlohmann::json::parse(call.arguments_json));
            if (replies_.empty())
                reply = FakeReply::failure("bad_request", "the test scripted no more replies");
            else {
                reply = replies_.front();
                replies_.pop_front();
            }
        }
        agenthost::llm::ChatOutcome out;
        out.attempts = 1;
        if (!reply.error_type.empty()) {
            out.error_type = reply.error_type;
            out.error_message = reply.error_message;
            out.stop_reason = agenthost::provider_stop_reason(reply.error_type);  // as the LLM queue reads it
            return out;
        }
        size_t half = reply.text.size() / 2;
        if (!reply.text.empty()) {
            callbacks.on_event(AH_EVENT_TEXT, std::string_view(reply.text).substr(0, half));
            callbacks.on_event(AH_EVENT_TEXT, std::string_view(reply.text).substr(half));
        }
        for (const auto& c : reply.calls) callbacks.on_event(AH_EVENT_TOOL_CALL, c.dump());
        callbacks.on_event(AH_EVENT_STOP, nlohmann::json{{"reason", reply.calls.empty() ? "end_turn" : "tool_use"}}.dump());
        out.ok = true;
        out.input_tokens = reply.input_tokens;
        out.output_tokens = reply.output_tokens;
        return out;
    }

private:
    std::mutex mutex_;
    std::deque<FakeReply> replies_;
    std::vector<nlohmann::json> requests_;
};

}  // namespace test
