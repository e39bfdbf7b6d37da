/* The ABI surface, for abidw/abidiff: one exported function whose parameters reach every type and
 * enum of agenthost.h, so the recorded baseline (agenthost-abi-1.xml) covers the whole contract.
 * Built with debug info by the test suite; never shipped. */
#include <agenthost/agenthost.h>

AH_EXPORT void ah_abi_surface(ah_str s, ah_writer *writer, ah_http_request *request, ah_http_sink *http_sink,
                              ah_host_api *api, ah_tool_def *tool, ah_tool_sink *tool_sink, ah_call *call,
                              ah_event_sink *event_sink, ah_plugin *plugin, ah_plugin_init_v1_fn entry,
                              enum ah_status_code status, enum ah_log_level level, enum ah_tool_hint hint,
                              enum ah_event_type event, enum ah_plugin_kind kind, enum ah_plugin_flag flag);

AH_EXPORT void ah_abi_surface(ah_str s, ah_writer *writer, ah_http_request *request, ah_http_sink *http_sink,
                              ah_host_api *api, ah_tool_def *tool, ah_tool_sink *tool_sink, ah_call *call,
                              ah_event_sink *event_sink, ah_plugin *plugin, ah_plugin_init_v1_fn entry,
                              enum ah_status_code status, enum ah_log_level level, enum ah_tool_hint hint,
                              enum ah_event_type event, enum ah_plugin_kind kind, enum ah_plugin_flag flag) {
    (void)s;
    (void)writer;
    (void)request;
    (void)http_sink;
    (void)api;
    (void)tool;
    (void)tool_sink;
    (void)call;
    (void)event_sink;
    (void)plugin;
    (void)entry;
    (void)status;
    (void)level;
    (void)hint;
    (void)event;
    (void)kind;
    (void)flag;
}
