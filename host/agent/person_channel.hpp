// The channel of a call made for a person, by the agent or by `agenthost tool`: what a plugin asks
// during such a call (ABI 1.5's sample and elicit) is decided here, in one place.
//  - Elicitation goes to the person through the front end's AskPerson (the terminal, the web
//    panel); with none, it is unsupported.
//  - Sampling is answered by the host's own model under [sampling] policy: deny refuses; ask puts
//    a yes/no question to the person first (refused when nobody can be asked); allow answers.
// A call made by an MCP client has the MCP server's channel instead (mcp/mcp_server.cpp): that
// client is asked both.
#pragma once

#include "config/config.hpp"
#include "llm/model_client.hpp"
#include "plugins/call_channels.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>

namespace agenthost::agent {

// A question for the person: MCP elicitation/create params ("message", "requestedSchema").
struct PersonQuestion {
    std::string tool;     // the tool whose plugin asks
    std::string call_id;  // the call it asks during
    nlohmann::json params;
    bool consent = false;                  // a yes/no question of consent ("allow"), which --yes answers yes
    const ah_cancel* withdrawn = nullptr;  // fired when the call ends: stop waiting for the answer
};
// Puts the question to the person and waits: AH_OK with {"action": accept|decline|cancel,
// "content": {...}}, or a failure status with one line (nobody answered, cancelled …).
using AskPerson = std::function<plugins::CallerAnswer(const PersonQuestion&)>;

struct PersonCall {
    std::string tool;
    std::string call_id;
    AskPerson ask;                                        // empty: nobody can be asked
    std::function<void(const PersonQuestion&)> announce;  // told before each question (a turn's event); may be empty
    llm::ModelClient* model = nullptr;                    // answers sampling
    config::SamplingSettings sampling;
    std::string provider;    // the run's provider (the default one outside a run)
    std::string model_name;  // the run's model; empty: the provider's
    const ah_cancel* cancel = nullptr;
};

// The channel, and a way to close it when the call ends: after close() returns, `announce` is
// never called again and a question still waiting is answered AH_ERR_CANCELLED.
class PersonChannel {
public:
    explicit PersonChannel(PersonCall call);
    std::shared_ptr<plugins::CallChannel> channel() const { return channel_; }
    void close();

private:
    struct Shared;
    std::shared_ptr<Shared> shared_;
    std::shared_ptr<plugins::CallChannel> channel_;
};

// The yes/no question put to the person before sampling under policy ask.
nlohmann::json sampling_consent_question(const std::string& tool, const nlohmann::json& params, int max_tokens);
// Whether an answer to a question of sampling_consent_question() said yes.
bool consented(const plugins::CallerAnswer& answer);

}  // namespace agenthost::agent
