// What MCP clients list as prompts and complete as a person types: the host's own prompts (one
// per mode, so a client's model works the way agenthost's modes do) and every plugin's (ABI 1.5).
#pragma once

#include "app/host_app.hpp"
#include "common/result.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace agenthost::mcp {

// The host's own resource template: memory://conversations/{conversation}, a conversation's memory
// (app/memory_report.hpp); its ids complete as they are typed.
inline constexpr const char* kConversationMemoryPrefix = "memory://conversations/";

// prompts/list's entries: [{"name", "title", "description", "arguments"}].
nlohmann::json prompt_list(app::HostApp& app);
// prompts/get's result for `name` with string `arguments`. Errors: unknown_prompt,
// missing_argument (naming it), plugin_failure.
Result<nlohmann::json> prompt_get(app::HostApp& app, const std::string& name, const nlohmann::json& arguments);
// completion/complete's result for its params ({"ref", "argument", "context"?}): {"completion":
// {"values", "total", "hasMore"}}, values empty when nobody has suggestions. The host completes
// its own template's conversation ids; the plugins everything else.
nlohmann::json complete(app::HostApp& app, const nlohmann::json& params);

}  // namespace agenthost::mcp
