/*
 * example_c — a tool plugin in plain C11 against agenthost.h alone.
 *
 * Tools:  echo(text: string)      returns its text unchanged
 *         add(a: number, b: number) returns a + b
 *
 * It shows the whole contract a C author deals with: the exported entry point, the static
 * descriptor, borrowed inputs (ah_str), receiver-owned outputs (ah_writer), tool errors as results
 * (status AH_OK, "is_error": true) and the host services table (logging, own config).
 * Results are written with agenthost_helpers.h (JSON escaping, tool results), so no JSON is written
 * by hand. Arguments arrive as JSON; a C plugin needs no JSON library for flat arguments like
 * these: the helpers' scanner (ah_json_member() and friends) reads them, never past their length.
 */
#include <agenthost/agenthost.h>
#include <agenthost/agenthost_helpers.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ah_instance {
    const ah_host_api *api;
    ah_host *host;
};

/* ---- the plugin ------------------------------------------------------------------------------ */

static ah_status example_create(const ah_host_api *api, ah_host *host, ah_instance **out,
                                const ah_writer *error) {
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) {
        ah_write_cstr(error, "example_c: out of memory");
        return AH_ERR_NO_MEMORY;
    }
    self->api = api;
    self->host = host;
    if (api->log) {
        ah_str message = AH_STR_LIT("example_c plugin created");
        ah_str fields = AH_STR_LIT("{\"tools\":[\"echo\",\"add\"]}");
        api->log(host, AH_LOG_DEBUG, message, fields);
    }
    *out = self;
    return AH_OK;
}

static void example_destroy(ah_instance *self) {
    free(self);
}

static ah_status add_tool(const ah_tool_sink *tools, const char *name, const char *description,
                          const char *schema) {
    ah_tool_def def;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.name.data = name;
    def.name.len = strlen(name);
    def.description.data = description;
    def.description.len = strlen(description);
    def.input_schema_json.data = schema;
    def.input_schema_json.len = strlen(schema);
    def.hints = AH_TOOL_READ_ONLY | AH_TOOL_IDEMPOTENT;
    return tools->add(tools->ctx, &def);
}

static ah_status example_list_tools(ah_instance *self, const ah_tool_sink *tools) {
    ah_status status;
    (void)self;
    status = add_tool(tools, "echo", "Returns the given text unchanged.",
                      "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\","
                      "\"description\":\"The text to return\"}},\"required\":[\"text\"],"
                      "\"additionalProperties\":false}");
    if (status != AH_OK) return status;
    return add_tool(tools, "add", "Adds two numbers and returns the sum.",
                    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},"
                    "\"b\":{\"type\":\"number\"}},\"required\":[\"a\",\"b\"],"
                    "\"additionalProperties\":false}");
}

static ah_status call_echo(const ah_call *call, const ah_writer *result) {
    ah_str token, text;
    ah_status status;
    char *decoded;
    if (!ah_json_member(call->arguments_json, "text", &token) || token.data[0] != '"')
        return ah_result_write_error(result, "invalid_arguments",
                                     ah_str_from_cstr("echo needs a string argument 'text'"));
    decoded = (char *)malloc(token.len); /* a decoded string is never longer than its token */
    if (!decoded) return AH_ERR_NO_MEMORY;
    if (!ah_json_string_decode(token, decoded, token.len, &text.len)) {
        free(decoded);
        return ah_result_write_error(result, "invalid_arguments",
                                     ah_str_from_cstr("'text' is not a valid JSON string"));
    }
    text.data = decoded;
    status = ah_result_write_text(result, text, 0); /* escaped again by the helper */
    free(decoded);
    return status;
}

/* Reads a number member of the arguments; returns 1 on success. */
static int number_member(ah_str arguments, const char *key, double *out) {
    ah_str token;
    return ah_json_member(arguments, key, &token) && ah_json_number(token, out);
}

static ah_status call_add(const ah_call *call, const ah_writer *result) {
    double a, b, sum;
    char text[64], structured[96];
    ah_status status;
    if (!number_member(call->arguments_json, "a", &a) || !number_member(call->arguments_json, "b", &b))
        return ah_result_write_error(result, "invalid_arguments",
                                     ah_str_from_cstr("add needs two numbers 'a' and 'b'"));
    sum = a + b;
    if (!isfinite(sum))
        return ah_result_write_error(result, "out_of_range",
                                     ah_str_from_cstr("the sum does not fit a double"));
    /* The text for the model, and the exact value for programs (MCP structuredContent). */
    snprintf(text, sizeof text, "%.15g", sum);
    snprintf(structured, sizeof structured, ",\"is_error\":false,\"structured\":{\"sum\":%.17g}}", sum);
    status = ah_write_cstr(result, "{\"content\":");
    if (status == AH_OK) status = ah_json_write_string(result, ah_str_from_cstr(text));
    if (status == AH_OK) status = ah_write_cstr(result, structured);
    return status;
}

static ah_status example_call_tool(ah_instance *self, const ah_call *raw_call, const ah_writer *result) {
    ah_call call;
    (void)self;
    /* Rule 1: copy what the host filled into a zeroed local of our own size. */
    ah_struct_read(&call, sizeof call, raw_call);
    if (ah_str_equals(call.tool_name, "echo")) return call_echo(&call, result);
    if (ah_str_equals(call.tool_name, "add")) return call_add(&call, result);
    return ah_result_write_error(result, "unknown_tool", ah_str_from_cstr("example_c has no such tool"));
}

static const ah_plugin descriptor = {
    sizeof(ah_plugin),
    AH_ABI_MAJOR,
    AH_ABI_MINOR,
    AH_PLUGIN_KIND_TOOL,
    AH_PLUGIN_THREAD_SAFE, /* no shared mutable state */
    "example_c",
    "1.0.0",
    example_create,
    example_destroy,
    example_list_tools,
    example_call_tool,
    NULL, /* no context hook */
    NULL, /* not a provider */
    NULL,
    NULL, /* no resources (ABI 1.2) */
    NULL,
    NULL, /* no health check (ABI 1.4): its create() is its readiness */
};

AH_PLUGIN_ENTRY {
    *out_plugin = &descriptor;
    return AH_OK;
}
