#include "mcp/prompts.hpp"

#include "common/bounded_json.hpp"
#include "common/choices.hpp"
#include "tools/content_blocks.hpp"

#include <algorithm>

namespace agenthost::mcp {
namespace {

using nlohmann::json;

// The host's prompts: one per mode, each asking the client's model to work as that mode does.
struct ModePrompt {
    Mode mode;
    const char* title;
    const char* text;  // "{task}" is replaced by the argument
};
constexpr ModePrompt kModePrompts[] = {
    {Mode::explore, "Explore (read only)",
     "Look into the following using only tools marked read-only; change nothing anywhere. Report what you found "
     "and what you would do next.\n\nTask: {task}"},
    {Mode::plan, "Plan first",
     "Make a plan for the following before changing anything: the steps in order, the tool each step would call "
     "and with what arguments. Use read-only tools to check facts; run nothing that changes something.\n\nTask: {task}"},
    {Mode::execute, "Execute",
     "Carry out the following with the tools you need. After each change, say what you changed; when done, say so "
     "in one paragraph.\n\nTask: {task}"},
};

std::string mode_prompt_name(Mode mode) { return std::string("agenthost_") + mode_name(mode); }

const ModePrompt* find_mode_prompt(const std::string& name) {
    for (const auto& p : kModePrompts)
        if (mode_prompt_name(p.mode) == name) return &p;
    return nullptr;
}

json mode_prompt_entry(const ModePrompt& p) {
    return {{"name", mode_prompt_name(p.mode)},
            {"title", p.title},
            {"description", std::string("agenthost's ") + mode_name(p.mode) + " mode: " + choice_meaning<Mode>(kModes, p.mode) +
                                " (the client's model keeps to it)"},
            {"arguments", json::array({{{"name", "task"}, {"description", "what to do"}, {"required", true}}})}};
}

// A plugin's prompt, as it listed it; nullopt when none is called `name`.
std::optional<json> plugin_prompt(app::HostApp& app, const std::string& name) {
    plugins::CallInput input;
    for (auto& p : app.registry().list_from_plugins(plugins::McpSlot::list_prompts, input))
        if (json_io::get_string(p, "name") == name) return p;
    return std::nullopt;
}

// Why a prompt message cannot go out: a role MCP has no word for, or content that is not one block.
std::string message_problem(const json& m) {
    std::string role = json_io::get_string(m, "role");
    if (role != "user" && role != "assistant") return "of role '" + role + "'";
    const json& content = m.is_object() && m.contains("content") ? m["content"] : json();
    if (std::string problem = tools::content_block_problem(content); !problem.empty()) return "that MCP cannot carry: " + problem;
    return {};
}

// Only what MCP clients can read goes out: each message a role and one content block.
Result<json> checked_prompt(const json& answer, const std::string& plugin) {
    if (!answer.contains("messages") || !answer["messages"].is_array())
        return Error{"plugin_failure", "plugin '" + plugin + "' answered the prompt without \"messages\""};
    json messages = json::array();
    auto refused = [&](const std::string& why) {
        return Error{"plugin_failure", "plugin '" + plugin + "' gave a prompt message " + why};
    };
    for (const auto& m : answer["messages"]) {
        if (std::string why = message_problem(m); !why.empty()) return refused(why);
        messages.push_back({{"role", m["role"]}, {"content", m["content"]}});
    }
    json out{{"messages", std::move(messages)}};
    if (answer.contains("description") && answer["description"].is_string()) out["description"] = answer["description"];
    return out;
}

}  // namespace

json prompt_list(app::HostApp& app) {
    json list = json::array();
    for (const auto& p : kModePrompts) list.push_back(mode_prompt_entry(p));
    plugins::CallInput input;
    for (auto& p : app.registry().list_from_plugins(plugins::McpSlot::list_prompts, input)) {
        if (find_mode_prompt(json_io::get_string(p, "name"))) continue;  // the host's names are its own
        p.erase("plugin");
        if (!p.contains("description")) p["description"] = "";
        list.push_back(std::move(p));
    }
    return list;
}

Result<json> prompt_get(app::HostApp& app, const std::string& name, const json& arguments) {
    auto argument = [&](const std::string& key) { return json_io::get_string(arguments, key); };
    if (const ModePrompt* p = find_mode_prompt(name)) {
        std::string task = argument("task");
        if (task.empty()) return Error{"missing_argument", "the prompt " + name + " needs the argument \"task\""};
        std::string text = p->text;
        text.replace(text.find("{task}"), 6, task);
        return json{{"description", mode_prompt_entry(*p)["description"]},
                    {"messages", json::array({{{"role", "user"}, {"content", {{"type", "text"}, {"text", text}}}}})}};
    }
    auto listed = plugin_prompt(app, name);
    if (!listed) return Error{"unknown_prompt", "no prompt is called '" + name + "' (prompts/list names them)"};
    // MCP's prompt arguments are strings; a required one is not empty.
    auto not_a_string = [&](const std::string& key) {
        return Error{"invalid_argument", "the argument \"" + key + "\" of " + name + " must be a string"};
    };
    for (const auto& [key, value] : arguments.items())
        if (!value.is_string()) return not_a_string(key);
    if (listed->contains("arguments") && (*listed)["arguments"].is_array())
        for (const auto& a : (*listed)["arguments"])
            if (json_io::get_bool(a, "required", false) && argument(json_io::get_string(a, "name")).empty())
                return Error{"missing_argument",
                             "the prompt " + name + " needs the argument \"" + json_io::get_string(a, "name") + "\""};
    plugins::CallInput input;
    input.arguments_json = json_io::dump({{"name", name}, {"arguments", arguments}});
    std::string plugin = json_io::get_string(*listed, "plugin");
    auto answer = app.registry().ask_plugins(plugins::McpSlot::get_prompt, input);
    if (!answer) return Error{"plugin_failure", answer.error().message};
    return checked_prompt(*answer, plugin);
}

json complete(app::HostApp& app, const json& params) {
    json values = json::array();
    const json& ref = params.contains("ref") ? params["ref"] : json();
    // The host's own template: conversation ids, newest first, that start with what is typed.
    if (json_io::get_string(ref, "uri") == std::string(kConversationMemoryPrefix) + "{conversation}") {
        const std::string typed = params.contains("argument") ? json_io::get_string(params["argument"], "value") : "";
        if (auto conversations = app.runs().conversations(500))
            for (const auto& c : *conversations)
                if (c.id.rfind(typed, 0) == 0 && values.size() < 100) values.push_back(c.id);
        return {{"completion", {{"values", values}, {"total", values.size()}, {"hasMore", false}}}};
    }
    const bool host_prompt =
        json_io::get_string(ref, "type") == "ref/prompt" && find_mode_prompt(json_io::get_string(ref, "name"));
    if (!host_prompt) {  // the host's prompts take free text; the plugins' may have suggestions
        plugins::CallInput input;
        input.arguments_json = json_io::dump(params);
        if (auto answer = app.registry().ask_plugins(plugins::McpSlot::complete, input);
            answer && answer->contains("values") && (*answer)["values"].is_array())
            for (const auto& v : (*answer)["values"])
                if (v.is_string() && values.size() < 100) values.push_back(v);
    }
    return {{"completion", {{"values", values}, {"total", values.size()}, {"hasMore", false}}}};
}

}  // namespace agenthost::mcp
