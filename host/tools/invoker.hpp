// Runs a tool the policy allowed: checks the arguments against its schema, calls the built-in or
// the plugin (the only caller of Registry::call_tool), and reads whatever came back into a result
// object whose fields have their documented types. Nothing a plugin returns can throw from here.
#pragma once

#include "memory/agent_memory.hpp"
#include "tools/catalogue.hpp"

#include <agenthost/agenthost.h>
#include <nlohmann/json.hpp>

#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace agenthost::tools {

struct Invocation {
    std::string call_id;
    std::string conversation_id;
    nlohmann::json arguments = nlohmann::json::object();  // an object (the policy checked)
    nlohmann::json request_context = nlohmann::json::object();
    bool approved = false;  // told to the plugin as request_context.approved
    const ah_cancel* cancel = nullptr;
};

// A tool result: {"content": text or JSON, "is_error": bool, "error_code"?: string, "marker"?:
// string, "structured"?: object, "summary"?: string, "reason"?: string, "blocks"?: [MCP content
// blocks, each checked], …}. Members of other
// names pass through untouched.
nlohmann::json error_result(const std::string& code, const std::string& message);
// The text of a result the model reads: its content as text (JSON content serialised).
std::string content_text(const nlohmann::json& result);
// The same without a copy when the content is a string: a view of it (valid while `result` is),
// else of its JSON written into `spill`.
std::string_view content_view(const nlohmann::json& result, std::string& spill);

class Invoker {
public:
    Invoker(Catalogue& catalogue, memory::AgentMemory& memory) : catalogue_(catalogue), memory_(memory) {}

    // Empty when the arguments fit the tool's schema; else an invalid_arguments error result.
    std::optional<nlohmann::json> check_arguments(const Tool& tool, const nlohmann::json& arguments) const;
    // Runs the tool and returns its normalised result (an error result when the plugin failed).
    nlohmann::json call(const Tool& tool, const Invocation& invocation);

    // Reads a plugin's raw result text: invalid UTF-8 repaired, size and depth bounded, plain text
    // taken as content, optional members of the wrong type dropped with one warning per plugin,
    // tool and member.
    nlohmann::json normalise(const Tool& tool, std::string_view raw);

private:
    void warn_once(const Tool& tool, const std::string& member, const std::string& why);
    void read_blocks(const Tool& tool, nlohmann::json& body);

    Catalogue& catalogue_;
    memory::AgentMemory& memory_;
    std::mutex warned_mutex_;
    std::set<std::string> warned_;
};

}  // namespace agenthost::tools
