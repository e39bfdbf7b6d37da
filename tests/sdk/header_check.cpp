// Compiled with -std=c++17 -Wall -Wextra -pedantic -Werror: the ABI header, the C helpers and the C++
// helper must be clean C++17, and a plugin written with the helper must compile.
#include <agenthost/agenthost.h>
#include <agenthost/agenthost_helpers.h>
#include <agenthost/plugin.hpp>

// The C helpers from C++: escaping into a writer and the struct-size checks.
ah_status header_check_helpers(const ah_host_api* api, const ah_writer* out);
ah_status header_check_helpers(const ah_host_api* api, const ah_writer* out) {
    if (!AH_HOST_HAS(api, tools_changed)) return AH_ERR_UNSUPPORTED;
    return ah_result_write_error(out, "not_found", ah_str_from_cstr("no \"such\" file"));
}

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
