#include "agent/loop_state.hpp"

namespace agenthost::agent {

using nlohmann::json;

json inputs_to_json(const LoopState& s) {
    return {{"request_context", s.request_context}, {"notifications", s.notifications}, {"history", s.history}};
}

json to_json(const LoopState& s) {
    json pending = json::array();
    for (const ToolCall& c : s.pending) pending.push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
    json out{{"schema", LoopState::kSchema},
             {"conversation", s.conversation},
             {"run", s.run},
             {"turn", s.turn},
             {"mode", tools::mode_name(s.mode)},
             {"provider", s.provider},
             {"model", s.model},
             {"plugin_context", s.plugin_context},
             {"iteration", s.iteration},
             {"tool_calls", s.tool_calls},
             {"input_tokens", s.input_tokens},
             {"output_tokens", s.output_tokens},
             {"cached_input_tokens", s.cached_input_tokens},
             {"working_from", s.working_from},
             {"pending", std::move(pending)},
             {"rejected", s.rejected},
             {"guard",
              {{"last", s.guard.last}, {"count", s.guard.count}, {"blocked", s.guard.blocked}, {"refusals", s.guard.refusals}}},
             {"retried_cut", s.retried_cut},
             {"malformed", s.malformed},
             {"seq", s.seq}};
    if (s.awaiting) out["awaiting"] = *s.awaiting;
    if (!s.answered_by.empty()) out["answered_by"] = s.answered_by;
    return out;
}

namespace {

// Reads `key` into `into` when present; a present value of the wrong type throws json's type_error,
// which loop_state_from_json turns into an error naming the field.
template <typename T>
void read(const json& from, const char* key, T& into) {
    if (auto it = from.find(key); it != from.end() && !it->is_null()) into = it->get<T>();
}

}  // namespace

Result<LoopState> loop_state_from_json(const json& checkpoint, std::string_view inputs_json) {
    if (!checkpoint.is_object()) return Error{"store_corrupt", "the checkpoint is not a JSON object"};
    json saved = checkpoint;
    if (json inputs = json::parse(inputs_json.empty() ? "null" : inputs_json, nullptr, false); inputs.is_object())
        for (const auto& [key, value] : inputs.items()) saved[key] = value;
    const char* field = "schema";
    try {
        int schema = 1;
        read(saved, "schema", schema);
        if (schema > LoopState::kSchema)
            return Error{"store_newer", "the checkpoint was written by a newer agenthost (loop state version " +
                                            std::to_string(schema) + ", this one reads up to " +
                                            std::to_string(LoopState::kSchema) + "); resume it with that version"};
        LoopState s;
        std::string mode = "execute";
        auto each = [&](const char* key, auto& into) {
            field = key;
            read(saved, key, into);
        };
        each("conversation", s.conversation);
        each("run", s.run);
        each("turn", s.turn);
        each("mode", mode);
        each("provider", s.provider);
        each("model", s.model);
        each("prompt", s.prompt);
        each("request_context", s.request_context);
        each("plugin_context", s.plugin_context);
        each("notifications", s.notifications);
        each("history", s.history);
        each("iteration", s.iteration);
        each("tool_calls", s.tool_calls);
        each("input_tokens", s.input_tokens);
        each("output_tokens", s.output_tokens);
        each("cached_input_tokens", s.cached_input_tokens);
        each("working_from", s.working_from);
        each("rejected", s.rejected);
        each("retried_cut", s.retried_cut);
        each("malformed", s.malformed);
        each("seq", s.seq);
        each("answered_by", s.answered_by);
        field = "mode";
        s.mode = tools::parse_mode(mode).value_or(tools::Mode::execute);
        field = "awaiting";
        if (auto it = saved.find("awaiting"); it != saved.end() && it->is_string()) s.awaiting = it->get<std::string>();
        field = "guard";
        if (auto g = saved.find("guard"); g != saved.end() && g->is_object()) {
            read(*g, "last", s.guard.last);
            read(*g, "count", s.guard.count);
            read(*g, "blocked", s.guard.blocked);
            read(*g, "refusals", s.guard.refusals);
        }
        field = "pending";
        if (auto p = saved.find("pending"); p != saved.end())
            for (const json& c : *p) {
                ToolCall call;
                read(c, "id", call.id);
                read(c, "name", call.name);
                if (auto a = c.find("arguments"); a != c.end()) call.arguments = *a;
                s.pending.push_back(std::move(call));
            }
        if (!s.history.is_array()) s.history = json::array();
        return s;
    } catch (const json::exception& e) {
        return Error{"store_corrupt",
                     std::string("the checkpoint's field '") + field + "' has the wrong type (" + e.what() + ")"};
    }
}

}  // namespace agenthost::agent
