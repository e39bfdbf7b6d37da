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
 * these, only the small scanner below, which never reads past the given length.
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

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Reads 4 hex digits at p (p + 4 <= end checked by the caller); -1 when they are not hex. */
static long hex4(const char *p) {
    long value = 0;
    int i;
    for (i = 0; i < 4; ++i) {
        int digit = hex_value(p[i]);
        if (digit < 0) return -1;
        value = value * 16 + digit;
    }
    return value;
}

static size_t put_utf8(char *out, unsigned long cp) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/*
 * Decodes the JSON string token [v, v_end) (quotes included) into a new buffer that the caller
 * frees; *out_len is its length (the text is not NUL-terminated and may hold NULs). A decoded
 * string is never longer than its token. Returns NULL for a malformed token or when out of memory.
 * A lone UTF-16 surrogate becomes U+FFFD.
 */
static char *decode_string(const char *v, const char *v_end, size_t *out_len) {
    char *text, *o;
    const char *p = v + 1, *end = v_end - 1; /* inside the quotes */
    if (v_end - v < 2 || *v != '"' || *end != '"') return NULL;
    text = (char *)malloc((size_t)(end - p) + 1);
    if (!text) return NULL;
    for (o = text; p < end; ++p) {
        unsigned long cp;
        long unit;
        if (*p != '\\') {
            *o++ = *p;
            continue;
        }
        if (++p >= end) break;
        switch (*p) {
        case '"': *o++ = '"'; continue;
        case '\\': *o++ = '\\'; continue;
        case '/': *o++ = '/'; continue;
        case 'b': *o++ = '\b'; continue;
        case 'f': *o++ = '\f'; continue;
        case 'n': *o++ = '\n'; continue;
        case 'r': *o++ = '\r'; continue;
        case 't': *o++ = '\t'; continue;
        case 'u': break;
        default: free(text); return NULL;
        }
        if (end - p < 5 || (unit = hex4(p + 1)) < 0) {
            free(text);
            return NULL;
        }
        p += 4;
        cp = (unsigned long)unit;
        if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 7 && p[1] == '\\' && p[2] == 'u') {
            long low = hex4(p + 3); /* a surrogate pair: \uD83D\uDE42 is one emoji */
            if (low >= 0xDC00 && low <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((unsigned long)low - 0xDC00);
                p += 6;
            }
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
        /* a \uXXXX escape is 6 bytes and its UTF-8 at most 3; a pair is 12 bytes and 4 */
        o += put_utf8(o, cp);
    }
    *out_len = (size_t)(o - text);
    return text;
}

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
    const char *v, *v_end;
    ah_str text;
    ah_status status;
    char *decoded;
    if (!find_member(call->arguments_json, "text", &v, &v_end) || *v != '"')
        return ah_result_write_error(result, "invalid_arguments",
                                     ah_str_from_cstr("echo needs a string argument 'text'"));
    decoded = decode_string(v, v_end, &text.len);
    if (!decoded)
        return ah_result_write_error(result, "invalid_arguments",
                                     ah_str_from_cstr("'text' is not a valid JSON string"));
    text.data = decoded;
    status = ah_result_write_text(result, text, 0); /* escaped again by the helper */
    free(decoded);
    return status;
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
