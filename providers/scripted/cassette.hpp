// A cassette: the recorded replies the scripted provider plays back.
//   {"replies": [REPLY…], "rules": [RULE…], "fallback": REPLY}
//   RULE = {"match": "<regex on the last user message>", "replies": [REPLY…]}   (played in order)
//        | {"after": "<regex on the last message of any role>", "reply": REPLY} (stateless: the same
//          request always gets the same reply, so a run resumed after a crash continues exactly)
//   REPLY = {"text"?, "reasoning"?, "tool_calls"?: [{"name", "arguments", "id"?}],
//            "error"?: {"type", "message"?, "retry_after"?}, "delay_ms"?,
//            "usage"?: {"input_tokens", "output_tokens"} (default: estimated from the sizes),
//            "stop"?: the stop reason to report, e.g. "max_tokens" (default: "tool_calls" or "end")}
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace scripted {

using nlohmann::json;

struct Rule {
    bool after = false;  // matches the last message of any role; replies[0] is its one reply
    std::string pattern;
    std::regex match;
    std::vector<json> replies;
};

class Cassette {
public:
    // Parses and validates a cassette; on failure returns nullopt and sets `error` to a message
    // naming the file and the JSON path of the fault.
    static std::unique_ptr<Cassette> load(const std::string& path, std::string& error);

    // The next reply: an "after" rule matching the last message, else the first "match" rule that
    // matches the last user message and has replies left, else
    // the next top-level reply, else the fallback; nullopt when none applies. `progress` records
    // how far each list has been played ({"replies": N, "rule:I": N}) and is advanced.
    std::optional<json> next(json& progress, std::string_view last_user_message, std::string_view last_message) const;

    const std::string& path() const { return path_; }
    // What it holds, as doctor shows it: "2 replies, 3 rules (5 replies), a fallback".
    std::string contents() const;
    // Set when the cassette stands in for a model not yet configured (the package's welcome
    // cassette): what to do about it. Such a provider answers, but is not ready.
    const std::string& placeholder() const { return placeholder_; }

private:
    std::string path_;
    std::string placeholder_;
    std::vector<json> replies_;
    std::vector<Rule> rules_;
    std::optional<json> fallback_;
};

}  // namespace scripted
