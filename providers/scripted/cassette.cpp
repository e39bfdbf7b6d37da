#include "cassette.hpp"

#include <fstream>
#include <sstream>

namespace scripted {
namespace {

// Returns an error message for an invalid reply, or "" when it is valid.
std::string check_reply(const json& r, const std::string& where) {
    if (!r.is_object()) return where + " must be an object";
    static const char* known[] = {"text", "reasoning", "tool_calls", "error", "delay_ms", "usage", "stop"};
    for (const auto& [key, value] : r.items()) {
        if (std::none_of(std::begin(known), std::end(known), [&](const char* k) { return key == k; }))
            return where + "." + key + " is not a reply field (known: text, reasoning, tool_calls, error, delay_ms, usage, stop)";
    }
    if (r.contains("text") && !r["text"].is_string()) return where + ".text must be a string";
    if (r.contains("reasoning") && !r["reasoning"].is_string()) return where + ".reasoning must be a string";
    if (r.contains("stop") && !r["stop"].is_string()) return where + ".stop must be a string such as \"max_tokens\"";
    if (r.contains("usage") && (!r["usage"].is_object() || !r["usage"].value("input_tokens", json(0)).is_number_unsigned() ||
                                !r["usage"].value("output_tokens", json(0)).is_number_unsigned()))
        return where + ".usage must be {\"input_tokens\": N, \"output_tokens\": N}";
    if (r.contains("delay_ms") && !r["delay_ms"].is_number_unsigned()) return where + ".delay_ms must be a whole number";
    if (r.contains("tool_calls")) {
        if (!r["tool_calls"].is_array()) return where + ".tool_calls must be an array";
        for (size_t i = 0; i < r["tool_calls"].size(); ++i) {
            const json& c = r["tool_calls"][i];
            std::string at = where + ".tool_calls[" + std::to_string(i) + "]";
            if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) return at + " needs a string \"name\"";
            if (c.contains("arguments") && !c["arguments"].is_object() && !c["arguments"].is_string())
                return at + ".arguments must be an object (or a JSON string)";
        }
    }
    if (r.contains("error")) {
        const json& e = r["error"];
        static const char* types[] = {"auth",      "rate_limit", "model_unavailable", "context_too_large",
                                      "transient", "timeout",    "bad_request"};
        if (!e.is_object() || !e.contains("type") || !e["type"].is_string() ||
            std::none_of(std::begin(types), std::end(types), [&](const char* t) { return e["type"] == t; }))
            return where +
                   ".error.type must be one of auth, rate_limit, model_unavailable, context_too_large, "
                   "transient, timeout, bad_request";
        if (e.contains("retry_after") && !e["retry_after"].is_number()) return where + ".error.retry_after must be a number";
    }
    if (!r.contains("text") && !r.contains("tool_calls") && !r.contains("error") && !r.contains("reasoning"))
        return where + " has none of text, tool_calls, error";
    return "";
}

std::string check_list(const json& list, const std::string& where, std::vector<json>& out) {
    if (!list.is_array()) return where + " must be an array";
    for (size_t i = 0; i < list.size(); ++i) {
        if (auto e = check_reply(list[i], where + "[" + std::to_string(i) + "]"); !e.empty()) return e;
        out.push_back(list[i]);
    }
    return "";
}

}  // namespace

std::unique_ptr<Cassette> Cassette::load(const std::string& path, std::string& error) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        error = "cassette file " + path + " cannot be read; set [plugins.scripted] cassette to an existing file";
        return nullptr;
    }
    std::stringstream text;
    text << in.rdbuf();
    json doc;
    try {
        doc = json::parse(text.str());
    } catch (const json::parse_error& e) {  // the parser's own words carry the line and column
        error = "cassette " + path + " is not valid JSON: " + e.what();
        return nullptr;
    }
    if (!doc.is_object()) {
        error = "cassette " + path + " is not a JSON object; see docs/configuration.md for its shape";
        return nullptr;
    }
    auto cassette = std::make_unique<Cassette>();
    Cassette& c = *cassette;
    c.path_ = path;
    for (const auto& [key, value] : doc.items()) {
        if (key != "replies" && key != "rules" && key != "fallback" && key != "description" && key != "placeholder") {
            error =
                "cassette " + path + ": unknown key '" + key + "' (known: replies, rules, fallback, description, placeholder)";
            return nullptr;
        }
    }
    if (doc.contains("placeholder")) {
        if (!doc["placeholder"].is_string() || doc["placeholder"].get_ref<const std::string&>().empty()) {
            error = "cassette " + path + ": placeholder must be a non-empty string (what to do to configure a model)";
            return nullptr;
        }
        c.placeholder_ = doc["placeholder"].get<std::string>();
    }
    if (doc.contains("replies")) error = check_list(doc["replies"], "replies", c.replies_);
    if (error.empty() && doc.contains("rules")) {
        if (!doc["rules"].is_array()) error = "rules must be an array";
        for (size_t i = 0; error.empty() && i < doc["rules"].size(); ++i) {
            const json& r = doc["rules"][i];
            std::string at = "rules[" + std::to_string(i) + "]";
            bool after = r.is_object() && r.contains("after");
            if (after ? !r["after"].is_string() || !r.contains("reply")
                      : !r.is_object() || !r.contains("match") || !r["match"].is_string() || !r.contains("replies")) {
                error = at + " needs \"match\" (a regular expression) and \"replies\", or \"after\" and \"reply\"";
                break;
            }
            Rule rule;
            rule.after = after;
            rule.pattern = r[after ? "after" : "match"].get<std::string>();
            try {
                rule.match = std::regex(rule.pattern, std::regex::ECMAScript | std::regex::icase);
            } catch (const std::regex_error& e) {
                error = at + ".match is not a valid regular expression: " + e.what();
                break;
            }
            error = after ? check_list(json::array({r["reply"]}), at + ".reply", rule.replies)
                          : check_list(r["replies"], at + ".replies", rule.replies);
            c.rules_.push_back(std::move(rule));
        }
    }
    if (error.empty() && doc.contains("fallback")) {
        error = check_reply(doc["fallback"], "fallback");
        c.fallback_ = doc["fallback"];
    }
    if (!error.empty()) {
        error = "cassette " + path + ": " + error;
        return nullptr;
    }
    return cassette;
}

std::string Cassette::contents() const {
    auto count = [](size_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); };
    std::string out = count(replies_.size(), "reply", "replies");
    if (!rules_.empty()) {
        size_t in_rules = 0;
        for (const Rule& r : rules_) in_rules += r.replies.size();
        out += ", " + count(rules_.size(), "rule", "rules") + " (" + count(in_rules, "reply", "replies") + ")";
    }
    if (fallback_) out += ", a fallback";
    return out;
}

std::optional<json> Cassette::next(json& progress, std::string_view last_user_message, std::string_view last_message) const {
    if (!progress.is_object()) progress = json::object();
    for (const auto& rule : rules_)  // "after" rules answer the last message, whoever wrote it; they keep no progress
        if (rule.after && std::regex_search(last_message.begin(), last_message.end(), rule.match)) return rule.replies.front();
    auto advance = [&](const std::string& source, const std::vector<json>& replies) -> const json* {
        size_t at = progress.value(source, size_t{0});
        if (at >= replies.size()) return nullptr;
        progress[source] = at + 1;
        return &replies[at];
    };
    for (size_t i = 0; i < rules_.size(); ++i) {
        if (rules_[i].after || !std::regex_search(last_user_message.begin(), last_user_message.end(), rules_[i].match)) continue;
        if (const json* reply = advance("rule:" + std::to_string(i), rules_[i].replies)) return *reply;
    }
    if (const json* reply = advance("replies", replies_)) return *reply;
    return fallback_;
}

}  // namespace scripted
