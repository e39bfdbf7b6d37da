/* Compiled with -std=c11 -Wall -Wextra -pedantic -Werror: the ABI header and the C helpers must be
 * clean C. */
#include <agenthost/agenthost.h>
#include <agenthost/agenthost_helpers.h>

static const ah_str greeting = AH_STR_LIT("hello");

size_t header_check_c(const ah_plugin *plugin, const ah_host_api *api);
size_t header_check_c(const ah_plugin *plugin, const ah_host_api *api) {
    return plugin->struct_size + api->struct_size + greeting.len + sizeof(ah_tool_def) + sizeof(ah_call) +
           sizeof(ah_http_request) + sizeof(ah_http_sink) + sizeof(ah_event_sink) + sizeof(ah_tool_sink) +
           sizeof(ah_writer);
}
