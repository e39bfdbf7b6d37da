// Enumerated settings and the words that spell them: one table per enum, read by the config reader
// (a value not in the table is an error naming the ones that are), written back by reports, and
// parsed from the command line and HTTP requests. Adding a value is adding a row.
#pragma once

#include "common/spelling.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace agenthost {

template <class E>
struct Choice {
    E value;
    const char* name;     // as written in agenthost.toml, on the command line and in JSON
    const char* meaning;  // for the error that lists the choices: "the embedded file, one host"
};

template <class E>
std::optional<E> choice_from(std::span<const Choice<E>> table, std::string_view name) {
    for (const auto& c : table)
        if (name == c.name) return c.value;
    return std::nullopt;
}

template <class E>
const char* choice_name(std::span<const Choice<E>> table, E value) {
    for (const auto& c : table)
        if (c.value == value) return c.name;
    return "?";
}

template <class E>
const char* choice_meaning(std::span<const Choice<E>> table, E value) {
    for (const auto& c : table)
        if (c.value == value) return c.meaning;
    return "";
}

// "use \"sqlite\" (the embedded file, one host) or \"postgresql\" (a database several hosts share)".
template <class E>
std::string choices_text(std::span<const Choice<E>> table) {
    std::string out = "use ";
    for (size_t i = 0; i < table.size(); ++i) {
        if (i > 0) out += i + 1 == table.size() ? " or " : ", ";
        out += "\"" + std::string(table[i].name) + "\"";
        if (*table[i].meaning) out += " (" + std::string(table[i].meaning) + ")";
    }
    return out;
}

// The error for a word not in the table: "\"exec\" is unknown (did you mean 'execute'?): use …".
template <class E>
std::string unknown_choice(std::span<const Choice<E>> table, std::string_view word) {
    std::vector<std::string> words;
    for (const auto& c : table) words.emplace_back(c.name);
    return "\"" + std::string(word) + "\" is unknown" + spelling::did_you_mean(word, words) + ": " + choices_text(table);
}

// explore: read-only tools; plan: read-only tools plus planning; execute: every enabled tool.
enum class Mode { explore, plan, execute };
inline constexpr Choice<Mode> kModes[] = {
    {Mode::explore, "explore", "read-only tools"},
    {Mode::plan, "plan", "read-only tools and planning"},
    {Mode::execute, "execute", "every enabled tool"},
};
inline std::optional<Mode> parse_mode(std::string_view name) { return choice_from<Mode>(kModes, name); }
inline const char* mode_name(Mode mode) { return choice_name<Mode>(kModes, mode); }

// Where a plugin runs: loaded into the host; in its own process; in its own process confined by
// the kernel to the permissions it was granted (isolation/sandbox). Set per plugin in its
// [plugins.NAME] table and for third-party plugins by third_party_isolation.
enum class Isolation { in_process, process, sandbox };
inline constexpr Choice<Isolation> kIsolations[] = {
    {Isolation::in_process, "in-process", "the default: loaded into the host"},
    {Isolation::process, "process", "its own process"},
    {Isolation::sandbox, "sandbox", "its own process, confined by the kernel to its permissions"},
};

}  // namespace agenthost
