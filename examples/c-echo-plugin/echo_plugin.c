/*
 * example_c — a tool plugin in plain C11 against agenthost.h alone.
 *
 * Tools:  echo(text: string)      returns its text unchanged
 *         add(a: number, b: number) returns a + b
 *
 * It shows the whole contract a C author deals with: the exported entry point, the static
 * descriptor, borrowed inputs (ah_str), receiver-owned outputs (ah_writer), tool errors as results
 * (status AH_OK, "is_error": true) and the host services table (logging, own config).
 * Arguments arrive as JSON; a C plugin needs no JSON library for flat arguments like these, only the
 * small scanner below, which never reads past the given length.
 */
#include <agenthost/agenthost.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ah_instance {
    const ah_host_api *api;
    ah_host *host;
};

/* ---- output helpers ------------------------------------------------------------------------- */

static ah_status put(const ah_writer *out, const char *text) {
    return out->write(out->ctx, text, strlen(text));
}

static ah_status put_error(const ah_writer *out, const char *code, const char *message) {
    char buffer[512];
    /* message and code are our own literals: no characters needing JSON escapes */
    snprintf(buffer, sizeof buffer, "{\"content\":\"%s\",\"is_error\":true,\"error_code\":\"%s\"}",
             message, code);
    return put(out, buffer);
}

/* ---- a minimal JSON scanner: finds a top-level member's raw value ---------------------------- */

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) ++p;
    return p;
}

/* p points at '"'; returns the position after the closing quote, or NULL when unterminated. */
static const char *skip_string(const char *p, const char *end) {
    for (++p; p < end; ++p) {
        if (*p == '\\') {
            ++p;
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return NULL;
}

/* Returns the position after the JSON value starting at p, or NULL when malformed. */
static const char *skip_value(const char *p, const char *end) {
    int depth = 0;
    p = skip_ws(p, end);
    if (p >= end) return NULL;
    do {
        if (p >= end) return NULL;
        if (*p == '"') {
            p = skip_string(p, end);
            if (!p) return NULL;
            continue;
        }
        if (*p == '{' || *p == '[') {
            ++depth;
        } else if (*p == '}' || *p == ']') {
            if (--depth < 0) return NULL;
        } else if (depth == 0) {
            /* a scalar: number, true, false, null */
            const char *start = p;
            while (p < end && strchr(",}] \t\r\n", *p) == NULL) ++p;
            return p > start ? p : NULL;
        }
        ++p;
    } while (depth > 0);
    return p;
}

/* Finds `key` among the members of the object in `json`; sets [*value, *value_end). */
static int find_member(ah_str json, const char *key, const char **value, const char **value_end) {
    const char *p = json.data, *end = json.data + json.len;
    size_t key_len = strlen(key);
    p = skip_ws(p, end);
    if (p >= end || *p != '{') return 0;
    p = skip_ws(p + 1, end);
    while (p < end && *p == '"') {
        const char *name = p + 1, *name_end = skip_string(p, end);
        if (!name_end) return 0;
        p = skip_ws(name_end, end);
        if (p >= end || *p != ':') return 0;
        p = skip_ws(p + 1, end);
        const char *v_end = skip_value(p, end);
        if (!v_end) return 0;
        if ((size_t)(name_end - 1 - name) == key_len && memcmp(name, key, key_len) == 0) {
            *value = p;
            *value_end = v_end;
            return 1;
        }
        p = skip_ws(v_end, end);
        if (p < end && *p == ',') p = skip_ws(p + 1, end);
    }
    return 0;
}

/* Reads a JSON number member; returns 1 on success. */
static int number_member(ah_str json, const char *key, double *out) {
    const char *v, *v_end;
    char buffer[64];
    char *parsed_end;
    if (!find_member(json, key, &v, &v_end)) return 0;
    if ((size_t)(v_end - v) >= sizeof buffer) return 0;
    if (!(*v == '-' || (*v >= '0' && *v <= '9'))) return 0; /* JSON numbers only: no "inf", no hex */
    memcpy(buffer, v, (size_t)(v_end - v));
    buffer[v_end - v] = '\0';
    *out = strtod(buffer, &parsed_end);
    return *parsed_end == '\0';
}

/* ---- the plugin ------------------------------------------------------------------------------ */

static ah_status example_create(const ah_host_api *api, ah_host *host, ah_instance **out,
                                const ah_writer *error) {
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) {
        put(error, "example_c: out of memory");
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

static void example_destroy(ah_instance *self) { free(self); }

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

static int name_is(ah_str name, const char *expected) {
    return name.len == strlen(expected) && memcmp(name.data, expected, name.len) == 0;
}

static ah_status example_call_tool(ah_instance *self, const ah_call *raw_call, const ah_writer *result) {
    ah_call call;
    (void)self;
    /* Rule 1: copy what the host filled into a zeroed local of our own size. */
    memset(&call, 0, sizeof call);
    memcpy(&call, raw_call, raw_call->struct_size < sizeof call ? raw_call->struct_size : sizeof call);

    if (name_is(call.tool_name, "echo")) {
        const char *v, *v_end;
        ah_status status;
        if (!find_member(call.arguments_json, "text", &v, &v_end) || *v != '"')
            return put_error(result, "invalid_arguments", "echo needs a string argument 'text'");
        /* The raw JSON string token is already valid JSON: pass it through, escapes and all. */
        status = put(result, "{\"content\":");
        if (status == AH_OK) status = result->write(result->ctx, v, (size_t)(v_end - v));
        if (status == AH_OK) status = put(result, "}");
        return status;
    }
    if (name_is(call.tool_name, "add")) {
        double a, b, sum;
        char buffer[160];
        if (!number_member(call.arguments_json, "a", &a) || !number_member(call.arguments_json, "b", &b))
            return put_error(result, "invalid_arguments", "add needs two numbers 'a' and 'b'");
        sum = a + b;
        if (!isfinite(sum)) return put_error(result, "out_of_range", "the sum does not fit a double");
        snprintf(buffer, sizeof buffer, "{\"content\":\"%.15g\",\"structured\":{\"sum\":%.17g}}", sum, sum);
        return put(result, buffer);
    }
    return put_error(result, "unknown_tool", "example_c has no such tool");
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
};

AH_PLUGIN_ENTRY {
    *out_plugin = &descriptor;
    return AH_OK;
}
