// A cassette: the recorded replies the scripted provider plays back.
//   {"replies": [REPLY…], "rules": [{"match": "<regex on the last user message>", "replies": [REPLY…]}],
//    "fallback": REPLY}
//   REPLY = {"text"?, "reasoning"?, "tool_calls"?: [{"name", "arguments", "id"?}],
//            "error"?: {"type", "message"?, "retry_after"?}, "delay_ms"?}
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace scripted {

using nlohmann::json;

struct Rule {
    std::string pattern;
    std::regex match;
    std::vector<json> replies;
};

class Cassette {
public:
    // Parses and validates a cassette; on failure returns nullopt and sets `error` to a message
    // naming the file and the JSON path of the fault.
    static std::unique_ptr<Cassette> load(const std::string& path, std::string& error);

    // The next reply for `conversation` given the last user message: the first matching rule with
    // replies left, else the next top-level reply, else the fallback; nullopt when none applies.
    // Progress is kept per conversation, so many clients can replay one cassette at once.
    std::optional<json> next(const std::string& conversation, const std::string& last_user_message);

    const std::string& path() const { return path_; }
    size_t reply_count() const { return replies_.size(); }

private:
    std::string path_;
    std::vector<json> replies_;
    std::vector<Rule> rules_;
    std::optional<json> fallback_;
    std::mutex mutex_;
    // conversation → (source → next index); source -1 is the top-level list, i ≥ 0 is rules_[i].
    std::map<std::string, std::map<int, size_t>> progress_;
};

}  // namespace scripted
