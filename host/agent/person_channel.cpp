#include "agent/person_channel.hpp"

#include "common/bounded_json.hpp"
#include "common/cancel.hpp"
#include "llm/sampling.hpp"

#include <algorithm>
#include <mutex>

namespace agenthost::agent {

using nlohmann::json;
using plugins::CallerAnswer;
using plugins::CallerRequest;

// What the channel's questions share with close(): `announce` runs under the mutex, so none is
// under way once close() has returned.
struct PersonChannel::Shared {
    PersonCall call;
    std::mutex mutex;
    bool closed = false;
    ah_cancel withdrawn;  // fired by close(): a question still waiting ends

    CallerAnswer ask_person(const json& params, bool consent = false) {
        if (!call.ask) return {AH_ERR_UNSUPPORTED, "nobody can be asked here: run it at a terminal or in the web panel"};
        PersonQuestion question{call.tool, call.call_id, params, consent, &withdrawn};
        {
            std::lock_guard lock(mutex);
            if (closed) return {AH_ERR_CANCELLED, "the call has ended"};
            if (call.announce) call.announce(question);
        }
        return call.ask(question);
    }

    CallerAnswer sample(const json& params) {
        const auto policy = call.sampling.policy;
        if (policy == config::SamplingPolicy::deny || !call.model)
            return {AH_ERR_UNSUPPORTED,
                    "the host's model does not answer plugins here ([sampling] policy = \"deny\" in agenthost.toml)"};
        if (policy == config::SamplingPolicy::ask) {
            // Nobody to ask (no front end, or no terminal): the refusal says how to allow it.
            CallerAnswer answer = ask_person(sampling_consent_question(call.tool, params, call.sampling.max_tokens), true);
            if (answer.status == AH_ERR_UNSUPPORTED)
                answer.text += "; [sampling] policy = \"allow\" in agenthost.toml lets plugins use the model without asking";
            if (answer.status != AH_OK) return answer;
            if (!consented(answer)) return {AH_ERR_FAILED, "the person did not let " + call.tool + " use the model"};
        }
        llm::SamplingTarget target{call.sampling.provider.empty() ? call.provider : call.sampling.provider,
                                   call.sampling.provider.empty() ? call.model_name : std::string(), call.sampling.max_tokens,
                                   &withdrawn};
        return llm::sample_with_model(*call.model, target, params);
    }
};

PersonChannel::PersonChannel(PersonCall call) : shared_(std::make_shared<Shared>()) {
    shared_->call = std::move(call);
    if (shared_->call.cancel && shared_->call.cancel->cancelled()) shared_->withdrawn.cancel();
    channel_ = std::make_shared<plugins::CallChannel>();
    channel_->ask = [shared = shared_](CallerRequest request, const json& params) -> CallerAnswer {
        if (shared->call.cancel && shared->call.cancel->cancelled()) return {AH_ERR_CANCELLED, "the call was cancelled"};
        return request == CallerRequest::sample ? shared->sample(params) : shared->ask_person(params);
    };
}

void PersonChannel::close() {
    std::lock_guard lock(shared_->mutex);
    shared_->closed = true;
    shared_->withdrawn.cancel();
}

json sampling_consent_question(const std::string& tool, const json& params, int max_tokens) {
    std::string last;
    if (params.contains("messages") && params["messages"].is_array() && !params["messages"].empty()) {
        const json& m = params["messages"].back();
        const json& c = m.contains("content") ? m["content"] : json();
        last = c.is_object() ? json_io::get_string(c, "text") : std::string();
    }
    if (last.size() > 400) last = last.substr(0, 400) + "…";
    const int64_t asked = std::clamp<int64_t>(json_io::get_int(params, "maxTokens", max_tokens), 1, max_tokens);
    std::string message = "May the model answer this request (at most " + std::to_string(asked) + " tokens)?";
    if (!last.empty()) message += "\n" + last;
    return {{"message", message},
            {"requestedSchema",
             {{"type", "object"},
              {"properties",
               {{"allow",
                 {{"type", "boolean"},
                  {"title", "Let " + tool + " use the model"},
                  {"description", "Yes sends this request to the model once"},
                  {"default", false}}}}},
              {"required", json::array({"allow"})}}}};
}

bool consented(const CallerAnswer& answer) {
    json reply = json::parse(answer.text, nullptr, false);
    return json_io::get_string(reply, "action") == "accept" && reply.contains("content") &&
           json_io::get_bool(reply["content"], "allow", false);
}

}  // namespace agenthost::agent
