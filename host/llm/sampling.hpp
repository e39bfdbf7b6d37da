// MCP sampling answered by one of the host's own providers: a plugin's sampling/createMessage
// request (the params MCP defines) becomes one chat request through the LLM queue, and the model's
// text becomes MCP's CreateMessageResult. Whether it may be asked at all is decided by the caller's
// channel (agent/person_channel.hpp), not here.
#pragma once

#include "llm/model_client.hpp"
#include "common/result.hpp"
#include "plugins/call_channels.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace agenthost::llm {

struct SamplingTarget {
    std::string provider;   // a provider instance name
    std::string model;      // empty: the provider's configured model
    int max_tokens = 1000;  // a request asking more gets this many
    const ah_cancel* cancel = nullptr;
};

// The chat request (the host's provider request JSON) for sampling params; an error naming the
// field when they are not what MCP defines.
Result<std::string> sampling_request(const nlohmann::json& params, const SamplingTarget& target);

// Asks the model; AH_OK with CreateMessageResult JSON, else a failure status and one line saying why.
plugins::CallerAnswer sample_with_model(ModelClient& model, const SamplingTarget& target, const nlohmann::json& params);

}  // namespace agenthost::llm
