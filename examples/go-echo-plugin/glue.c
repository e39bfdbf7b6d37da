/*
 * The C side of example_go: the static descriptor, the exported entry point and one small C
 * function per ABI slot that Go cannot be called through directly (C holds function pointers, Go
 * exports plain functions). Every slot copies what the host filled into a zeroed local of its own
 * size (ABI rule 1) before Go sees it. The tools themselves are written in Go (plugin.go).
 */
#include <agenthost/agenthost.h>
#include <agenthost/agenthost_helpers.h>

#include <string.h>

#include "_cgo_export.h"

struct ah_instance {
    int unused; /* the tools keep no state; one static instance serves every create() */
};

static struct ah_instance the_instance;

static ah_status go_plugin_create(const ah_host_api *api, ah_host *host, ah_instance **out_instance,
                                  const ah_writer *error) {
    (void)api;
    (void)host;
    (void)error;
    *out_instance = &the_instance;
    return AH_OK;
}

static void go_plugin_destroy(ah_instance *instance) {
    (void)instance;
}

static ah_status go_plugin_list_tools(ah_instance *instance, const ah_tool_sink *raw_sink) {
    ah_tool_sink sink;
    (void)instance;
    ah_struct_read(&sink, sizeof sink, raw_sink);
    return goListTools(&sink);
}

static ah_status go_plugin_call_tool(ah_instance *instance, const ah_call *raw_call,
                                     const ah_writer *result) {
    ah_call call;
    (void)instance;
    ah_struct_read(&call, sizeof call, raw_call);
    return goCallTool(&call, (ah_writer *)result);
}

/* Called from Go: C function pointers can only be called from C. */
ah_status example_go_add_tool(const ah_tool_sink *sink, const char *name, const char *description,
                              const char *schema, uint32_t hints) {
    ah_tool_def def;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.name = ah_str_from_cstr(name);
    def.description = ah_str_from_cstr(description);
    def.input_schema_json = ah_str_from_cstr(schema);
    def.hints = hints;
    return sink->add(sink->ctx, &def);
}

ah_status example_go_write(const ah_writer *out, const char *data, size_t len) {
    return out->write(out->ctx, data, len);
}

static const ah_plugin descriptor = {
    sizeof(ah_plugin),
    AH_ABI_MAJOR,
    AH_ABI_MINOR,
    AH_PLUGIN_KIND_TOOL,
    AH_PLUGIN_THREAD_SAFE, /* no shared mutable state: the Go runtime schedules concurrent calls */
    "example_go",
    "1.0.0",
    go_plugin_create,
    go_plugin_destroy,
    go_plugin_list_tools,
    go_plugin_call_tool,
    NULL, /* no context hook */
    NULL, /* not a provider */
    NULL,
    NULL, /* no resources */
    NULL,
    NULL, /* no health check */
};

AH_PLUGIN_ENTRY {
    *out_plugin = &descriptor;
    return AH_OK;
}
