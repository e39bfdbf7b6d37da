// Compiled with -std=c++17 -Wall -Wextra -pedantic -Werror: the ABI header and the C++ helper must
// be clean C++17, and a plugin written with the helper must compile.
#include <agenthost/agenthost.h>
#include <agenthost/plugin.hpp>

namespace {
class HeaderCheck : public agenthost::sdk::ToolPlugin {
public:
    using ToolPlugin::ToolPlugin;
    std::vector<agenthost::sdk::Tool> tools() override { return {}; }
    agenthost::sdk::ToolResult call(const agenthost::sdk::Call&) override { return agenthost::sdk::ToolResult::ok(1); }
};
}  // namespace

// Not a plugin that gets loaded: only proves the macro expands cleanly.
AGENTHOST_PLUGIN(HeaderCheck, "header_check", "0.0.0", 0)
