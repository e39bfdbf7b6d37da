// A cassette for runs whose effects are counted: for each tag "[<letter>N]" (N < tags), `steps`
// tool calls, each answered by the one before it (stateless "after" rules, so a run taken over or
// resumed continues exactly where it stopped, whatever the provider's own key-value data says),
// alternating an effect that must not repeat (append_line) and an idempotent one (put_line), each
// line naming its tag and step, then an answer. A run starts with the message "work [<letter>N]".
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace test {

inline std::string step_tag(char letter, int n) { return "[" + std::string(1, letter) + std::to_string(n) + "]"; }

inline nlohmann::json step_cassette(const std::string& effects, char letter, int tags, int steps, int delay_ms) {
    using nlohmann::json;
    json rules = json::array();
    for (int n = 0; n < tags; ++n) {
        std::string tag = step_tag(letter, n), escaped = "\\[" + std::string(1, letter) + std::to_string(n) + "\\]";
        auto call = [&](int i) {
            json args{{"path", effects}, {"text", tag + " step=" + std::to_string(i) + ";"}};
            if (i % 2) args["key"] = tag + std::to_string(i);
            return json{{"delay_ms", delay_ms},
                        {"text", "step " + std::to_string(i) + " of " + tag},
                        {"tool_calls", {{{"name", i % 2 ? "put_line" : "append_line"}, {"arguments", args}}}}};
        };
        rules.push_back({{"after", "^work " + escaped + "$"}, {"reply", call(0)}});
        for (int i = 0; i + 1 < steps; ++i)
            rules.push_back({{"after", escaped + " step=" + std::to_string(i) + ";"}, {"reply", call(i + 1)}});
        rules.push_back({{"after", escaped + " step=" + std::to_string(steps - 1) + ";"},
                         {"reply", {{"delay_ms", delay_ms}, {"text", "all done for " + tag}}}});
    }
    return {{"rules", rules}};
}

}  // namespace test
