/*
 * example_provider_c — a provider plugin in plain C11 against agenthost.h alone.
 *
 * It answers the host's chat requests by asking a model server over the host's HTTP service, and
 * shows the whole provider contract (docs/providers.md, "Writing a provider plugin"):
 *   - create() reads its settings (a provider table's base_url, model, api_key, timeouts) and
 *     refuses to start, in words, when one it needs is missing;
 *   - chat() sends one request, streams the answer into events as it arrives, and ends every
 *     exchange with exactly one STOP or one typed ERROR, whatever the server did;
 *   - list_models() asks the server what it serves, so `agenthost doctor` can check the model.
 *
 * The server's wire format is made up for this example and kept tiny, so the code is about the
 * ABI and not about a vendor's JSON: the request body is the canonical chat request itself (the
 * model in an X-Model header), and the answer is one JSON object per line (NDJSON):
 *     {"text": "Hel"}            a piece of the answer          -> AH_EVENT_TEXT
 *     {"reasoning": "…"}         a piece of thinking            -> AH_EVENT_REASONING
 *     {"tool_call": {"id": "c1", "name": "echo", "arguments": {"text": "hi"}}}
 *                                one complete tool call         -> AH_EVENT_TOOL_CALL
 *     {"usage": {"input_tokens": 12, "output_tokens": 3}}       -> AH_EVENT_USAGE
 *     {"stop": "end"}            the answer is complete         -> AH_EVENT_STOP
 *     {"error": "overloaded"}    the server gave up mid-answer  -> AH_EVENT_ERROR, "transient"
 * GET {base_url}/models answers [{"id": "tiny"}, …]. A real provider maps its vendor's format the
 * same way, in the same places (the bundled ones, in C++, are under providers/).
 *
 * No JSON library: agenthost_helpers.h reads the members (ah_json_member() and friends) and
 * writes escaped strings; a tool call's object is passed on as the server wrote it, since the
 * host checks every event it is given.
 */
#include <agenthost/agenthost.h>
#include <agenthost/agenthost_helpers.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds on what the server may send: beyond them the answer is an error, never a bigger buffer. */
enum {
    MAX_LINE_BYTES = 1024 * 1024,  /* one NDJSON line */
    MAX_ERROR_BODY_BYTES = 4096,   /* the body of a non-2xx answer, quoted in the error */
    MAX_MODELS_BYTES = 1024 * 1024 /* the /models answer */
};

/* ---- a growable byte buffer, also usable as an ah_writer ---------------------------------------- */

typedef struct byte_buffer {
    char *data;
    size_t len, cap;
    size_t limit; /* writes beyond it fail with AH_ERR_NO_MEMORY */
} byte_buffer;

static ah_status buffer_append(byte_buffer *b, const char *data, size_t len) {
    if (len > b->limit - b->len) return AH_ERR_NO_MEMORY;
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *grown;
        while (cap < b->len + len + 1) cap *= 2;
        grown = (char *)realloc(b->data, cap);
        if (!grown) return AH_ERR_NO_MEMORY;
        b->data = grown;
        b->cap = cap;
    }
    if (len > 0) memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0'; /* kept NUL-terminated, for the settings read as C strings */
    return AH_OK;
}

static ah_status buffer_write(void *ctx, const char *data, size_t len) {
    return buffer_append((byte_buffer *)ctx, data, len);
}

static ah_writer buffer_writer(byte_buffer *b) {
    ah_writer w;
    w.struct_size = sizeof w;
    w.ctx = b;
    w.write = buffer_write;
    return w;
}

static ah_str buffer_str(const byte_buffer *b) {
    ah_str s;
    s.data = b->data;
    s.len = b->len;
    return s;
}

/* ---- the instance: settings read once in create(), never changed after ------------------------ */

struct ah_instance {
    const ah_host_api *api;
    ah_host *host;
    char *base_url; /* without a trailing '/' */
    char *model;    /* "" when the operator set none */
    char *api_key;  /* "" when none */
    uint32_t timeout_ms;
    uint32_t connect_timeout_ms;
};

/* A string setting, decoded into a new NUL-terminated string; "" when absent. NULL when invalid. */
static char *string_setting(ah_str config, const char *key) {
    ah_str token;
    char *text;
    size_t len = 0;
    if (!ah_json_member(config, key, &token)) return (char *)calloc(1, 1);
    text = (char *)malloc(token.len + 1);
    if (!text) return NULL;
    if (token.data[0] != '"' || !ah_json_string_decode(token, text, token.len, &len) ||
        memchr(text, '\0', len)) {
        free(text);
        return NULL;
    }
    text[len] = '\0';
    return text;
}

static uint32_t integer_setting(ah_str config, const char *key, uint32_t fallback) {
    ah_str token;
    double value;
    if (!ah_json_member(config, key, &token) || !ah_json_number(token, &value)) return fallback;
    if (value < 1 || value > 4294967295.0) return fallback;
    return (uint32_t)value;
}

static void provider_destroy(ah_instance *self) {
    if (!self) return;
    free(self->base_url);
    free(self->model);
    free(self->api_key);
    free(self);
}

static ah_status provider_create(const ah_host_api *api, ah_host *host, ah_instance **out,
                                 const ah_writer *error) {
    byte_buffer config = {NULL, 0, 0, 1024 * 1024};
    ah_writer config_writer = buffer_writer(&config);
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) return AH_ERR_NO_MEMORY;
    self->api = api;
    self->host = host;
    /* The provider table it was created from, laid over [plugins.example_provider_c]. */
    if (api->get_config(host, &config_writer) != AH_OK || config.len == 0) {
        ah_write_cstr(error, "example_provider_c: the host did not hand over its settings");
        free(config.data);
        provider_destroy(self);
        return AH_ERR_FAILED;
    }
    self->base_url = string_setting(buffer_str(&config), "base_url");
    self->model = string_setting(buffer_str(&config), "model");
    self->api_key = string_setting(buffer_str(&config), "api_key");
    self->timeout_ms = integer_setting(buffer_str(&config), "timeout_ms", 120000);
    self->connect_timeout_ms = integer_setting(buffer_str(&config), "connect_timeout_ms", 10000);
    free(config.data);
    if (!self->base_url || !self->model || !self->api_key) {
        ah_write_cstr(error, "example_provider_c: base_url, model and api_key must be strings");
        provider_destroy(self);
        return AH_ERR_INVALID_ARGUMENT;
    }
    if (self->base_url[0] == '\0') {
        /* The one-line cause the host shows the operator: what is missing and where it goes. */
        ah_write_cstr(error,
                      "example_provider_c: base_url is not set: add base_url = \"http://host:port\" to "
                      "[provider] (or the [providers.NAME] table that uses it) in agenthost.toml");
        provider_destroy(self);
        return AH_ERR_INVALID_ARGUMENT;
    }
    {
        size_t n = strlen(self->base_url);
        while (n > 0 && self->base_url[n - 1] == '/') self->base_url[--n] = '\0';
    }
    *out = self;
    return AH_OK;
}

/* ---- one model call ------------------------------------------------------------------------------ */

typedef struct stream_state {
    const ah_event_sink *events;
    int32_t status_code;
    long retry_after;       /* seconds, from a Retry-After header; -1 when none */
    byte_buffer line;       /* the line being received */
    byte_buffer error_body; /* a non-2xx answer's body */
    int ended;              /* a STOP or an ERROR was emitted: the exchange is over */
    int failed;             /* it was an ERROR: the rest of the transfer is not wanted */
    ah_status emit_status;  /* what emit() said when it asked us to stop */
} stream_state;

/* Emits one event; remembers when the host wants no more (the caller then aborts the transfer). */
static ah_status emit(stream_state *st, int32_t type, const char *payload, size_t len) {
    ah_str p;
    ah_status status;
    p.data = payload;
    p.len = len;
    status = st->events->emit(st->events->ctx, type, p);
    if (status != AH_OK) st->emit_status = status;
    if (type == AH_EVENT_STOP || type == AH_EVENT_ERROR) st->ended = 1;
    return status;
}

/*
 * Emits the typed ERROR that ends the exchange: {"type":…,"message":…[,"status":N][,"retry_after":N]}.
 * `type` decides what the host does (retry a "transient", stop at "auth"); the message is for people.
 */
static ah_status emit_error(stream_state *st, const char *type, const char *message, ah_str detail) {
    byte_buffer json = {NULL, 0, 0, 64 * 1024};
    ah_writer w = buffer_writer(&json);
    char numbers[64];
    ah_status status = ah_write_cstr(&w, "{\"type\":\"");
    if (status == AH_OK) status = ah_write_cstr(&w, type);
    if (status == AH_OK) status = ah_write_cstr(&w, "\",\"message\":\"");
    if (status == AH_OK) status = ah_json_write_escaped(&w, ah_str_from_cstr(message));
    if (status == AH_OK && detail.len > 0) status = ah_write_cstr(&w, ": ");
    if (status == AH_OK) status = ah_json_write_escaped(&w, detail);
    if (status == AH_OK) status = ah_write_cstr(&w, "\"");
    if (status == AH_OK && st->status_code > 0) {
        snprintf(numbers, sizeof numbers, ",\"status\":%d", (int)st->status_code);
        status = ah_write_cstr(&w, numbers);
    }
    if (status == AH_OK && st->retry_after >= 0) {
        snprintf(numbers, sizeof numbers, ",\"retry_after\":%ld", st->retry_after);
        status = ah_write_cstr(&w, numbers);
    }
    if (status == AH_OK) status = ah_write_cstr(&w, "}");
    if (status == AH_OK) status = emit(st, AH_EVENT_ERROR, json.data, json.len);
    st->failed = 1;
    free(json.data);
    return status;
}

/* The string member's text, decoded into a new buffer the caller frees; NULL when not a string. */
static char *decoded_string(ah_str token, size_t *len) {
    char *text;
    if (token.len == 0 || token.data[0] != '"') return NULL;
    text = (char *)malloc(token.len);
    if (text && !ah_json_string_decode(token, text, token.len, len)) {
        free(text);
        return NULL;
    }
    return text;
}

/* One handler per line kind: `token` is the member's raw value. Returns emit()'s status. */
typedef ah_status (*line_handler)(stream_state *st, ah_str token);

static ah_status emit_text_kind(stream_state *st, ah_str token, int32_t type, const char *what) {
    size_t len = 0;
    char *text = decoded_string(token, &len);
    ah_status status;
    if (!text) return emit_error(st, "transient", what, token);
    status = len > 0 ? emit(st, type, text, len) : AH_OK;
    free(text);
    return status;
}

static ah_status on_text(stream_state *st, ah_str token) {
    return emit_text_kind(st, token, AH_EVENT_TEXT, "the server sent a \"text\" that is not a string");
}

static ah_status on_reasoning(stream_state *st, ah_str token) {
    return emit_text_kind(st, token, AH_EVENT_REASONING,
                          "the server sent a \"reasoning\" that is not a string");
}

static ah_status on_object_event(stream_state *st, ah_str token, int32_t type, const char *what) {
    if (token.data[0] != '{') return emit_error(st, "transient", what, token);
    return emit(st, type, token.data, token.len); /* the host checks and bounds it */
}

static ah_status on_tool_call(stream_state *st, ah_str token) {
    return on_object_event(st, token, AH_EVENT_TOOL_CALL,
                           "the server sent a \"tool_call\" that is not an object");
}

static ah_status on_usage(stream_state *st, ah_str token) {
    return on_object_event(st, token, AH_EVENT_USAGE, "the server sent a \"usage\" that is not an object");
}

static ah_status on_stop(stream_state *st, ah_str token) {
    static const char *const reasons[] = {"\"end\"", "\"tool_calls\"", "\"max_tokens\"",
                                          "\"content_filter\""};
    char payload[64];
    size_t i;
    for (i = 0; i < sizeof reasons / sizeof reasons[0]; ++i) {
        if (token.len == strlen(reasons[i]) && memcmp(token.data, reasons[i], token.len) == 0) {
            int n = snprintf(payload, sizeof payload, "{\"reason\":%s}", reasons[i]);
            return emit(st, AH_EVENT_STOP, payload, (size_t)n);
        }
    }
    return emit_error(st, "transient", "the server sent an unknown stop reason", token);
}

static ah_status on_server_error(stream_state *st, ah_str token) {
    size_t len = 0;
    char *text = decoded_string(token, &len);
    ah_str detail;
    ah_status status;
    detail.data = text ? text : token.data;
    detail.len = text ? len : token.len;
    status = emit_error(st, "transient", "the model server gave up mid-answer", detail);
    free(text);
    return status;
}

static const struct {
    const char *member;
    line_handler handle;
} line_kinds[] = {
    {"text", on_text},   {"reasoning", on_reasoning}, {"tool_call", on_tool_call},
    {"usage", on_usage}, {"stop", on_stop},           {"error", on_server_error},
};

static ah_status handle_line(stream_state *st, ah_str line) {
    size_t i;
    ah_str token, shown;
    while (line.len > 0 && (line.data[line.len - 1] == '\r' || line.data[line.len - 1] == ' ')) --line.len;
    if (line.len == 0) return AH_OK; /* blank lines are keep-alives */
    for (i = 0; i < sizeof line_kinds / sizeof line_kinds[0]; ++i)
        if (ah_json_member(line, line_kinds[i].member, &token)) return line_kinds[i].handle(st, token);
    /* Never end in silence: a line we cannot read ends the exchange with its first bytes quoted. */
    shown.data = line.data;
    shown.len = line.len < 200 ? line.len : 200;
    return emit_error(st, "transient", "the server sent a line this provider cannot read", shown);
}

static ah_status on_head(void *ctx, int32_t status_code, ah_str headers_json) {
    stream_state *st = (stream_state *)ctx;
    ah_str token;
    double seconds;
    st->status_code = status_code;
    /* Header names arrive in lower case; Retry-After in seconds (an HTTP date is left to the host's backoff).
     */
    if (ah_json_member(headers_json, "retry-after", &token) && token.len > 2 && token.len < 16) {
        ah_str inner;
        inner.data = token.data + 1;
        inner.len = token.len - 2;
        if (ah_json_number(inner, &seconds) && seconds >= 0) st->retry_after = (long)seconds;
    }
    return AH_OK;
}

static ah_status on_body(void *ctx, const char *data, size_t len) {
    stream_state *st = (stream_state *)ctx;
    if (st->status_code < 200 || st->status_code > 299) {
        size_t room = MAX_ERROR_BODY_BYTES - st->error_body.len;
        return buffer_append(&st->error_body, data, len < room ? len : room);
    }
    while (len > 0 && !st->ended) {
        const char *newline = (const char *)memchr(data, '\n', len);
        size_t piece = newline ? (size_t)(newline - data) : len;
        ah_status status;
        if (buffer_append(&st->line, data, piece) != AH_OK) {
            emit_error(st, "transient", "the server sent a line longer than 1 MiB", ah_str_from_cstr(""));
            return AH_ERR_CANCELLED; /* stops the transfer; chat() sees st->ended */
        }
        if (!newline) break;
        status = handle_line(st, buffer_str(&st->line));
        st->line.len = 0;
        if (status != AH_OK) return AH_ERR_CANCELLED;
        data += piece + 1;
        len -= piece + 1;
    }
    /* After an ERROR the transfer stops; after the STOP line the rest is read and ignored, so the
       connection ends cleanly and may carry the next call. */
    return st->failed ? AH_ERR_CANCELLED : AH_OK;
}

/* A non-2xx answer as the SDK's typed error; the table decides, in one place. */
static const char *error_type_of(int32_t status_code) {
    static const struct {
        int32_t code;
        const char *type;
    } table[] = {{401, "auth"},
                 {403, "auth"},
                 {404, "model_unavailable"},
                 {408, "timeout"},
                 {413, "context_too_large"},
                 {429, "rate_limit"}};
    size_t i;
    for (i = 0; i < sizeof table / sizeof table[0]; ++i)
        if (table[i].code == status_code) return table[i].type;
    return status_code >= 500 ? "transient" : "bad_request";
}

/* The canonical request's model, or the configured one; a new string the caller frees. */
static char *model_of(const ah_instance *self, ah_str request) {
    char *model = string_setting(request, "model");
    if (model && model[0] == '\0') {
        free(model);
        model = (char *)malloc(strlen(self->model) + 1);
        if (model) strcpy(model, self->model);
    }
    return model;
}

static ah_status provider_chat(ah_instance *self, const ah_call *raw_call, const ah_event_sink *events) {
    ah_call call;
    stream_state st;
    byte_buffer url = {NULL, 0, 0, 8192}, headers = {NULL, 0, 0, 16384};
    ah_writer headers_writer = buffer_writer(&headers);
    ah_http_request request;
    ah_http_sink sink;
    ah_status status;
    char *model;

    ah_struct_read(&call, sizeof call, raw_call); /* ABI rule 1: the host's struct, our size */
    memset(&st, 0, sizeof st);
    st.events = events;
    st.retry_after = -1;
    st.line.limit = MAX_LINE_BYTES;
    st.error_body.limit = MAX_ERROR_BODY_BYTES;

    model = model_of(self, call.arguments_json);
    status = model ? AH_OK : AH_ERR_NO_MEMORY;
    if (status == AH_OK) status = buffer_append(&url, self->base_url, strlen(self->base_url));
    if (status == AH_OK) status = buffer_append(&url, "/chat", 5);
    /* Header values are JSON strings: the helper escapes the model name and the key. */
    if (status == AH_OK)
        status = ah_write_cstr(&headers_writer,
                               "{\"Content-Type\":\"application/json\",\"Accept\":\"application/x-ndjson\"");
    if (status == AH_OK && model[0] != '\0') {
        status = ah_write_cstr(&headers_writer, ",\"X-Model\":");
        if (status == AH_OK) status = ah_json_write_string(&headers_writer, ah_str_from_cstr(model));
    }
    if (status == AH_OK && self->api_key[0] != '\0') {
        status = ah_write_cstr(&headers_writer, ",\"Authorization\":\"Bearer ");
        if (status == AH_OK) status = ah_json_write_escaped(&headers_writer, ah_str_from_cstr(self->api_key));
        if (status == AH_OK) status = ah_write_cstr(&headers_writer, "\"");
    }
    if (status == AH_OK) status = ah_write_cstr(&headers_writer, "}");
    free(model);
    if (status != AH_OK) {
        free(url.data);
        free(headers.data);
        return status;
    }

    memset(&request, 0, sizeof request);
    request.struct_size = sizeof request;
    request.method = ah_str_from_cstr("POST");
    request.url = buffer_str(&url);
    request.headers_json = buffer_str(&headers);
    request.body = call.arguments_json; /* the canonical request is this server's format */
    request.timeout_ms = self->timeout_ms;
    request.connect_timeout_ms = self->connect_timeout_ms;
    /* A model call changes nothing on the server: it may ride on a kept connection (ABI 1.4). */
    request.flags = AH_HTTP_REPLAYABLE;
    sink.struct_size = sizeof sink;
    sink.ctx = &st;
    sink.on_head = on_head;
    sink.on_body = on_body;

    status = self->api->http_request(self->host, &request, &sink, call.cancel);

    if (!st.ended) {
        if (status == AH_OK && st.status_code >= 200 && st.status_code <= 299 && st.line.len > 0) {
            handle_line(&st, buffer_str(&st.line)); /* a last line without its newline */
        }
        if (st.emit_status != AH_OK) {
            /* the host asked us to stop: nothing more to say */
        } else if (status == AH_ERR_CANCELLED) {
            /* call->cancel fired: return the status, no event */
        } else if (status == AH_ERR_TIMEOUT) {
            emit_error(&st, "timeout", "the model server did not answer in time", ah_str_from_cstr(""));
        } else if (status == AH_ERR_IO && st.status_code > 0) {
            /* AH_ERR_IO after on_head: the connection broke mid-answer, the server was reached */
            emit_error(&st, "transient", "the connection broke before the answer was complete", request.url);
        } else if (status == AH_ERR_IO) {
            emit_error(&st, "transient", "cannot reach the model server (is it running?)", request.url);
        } else if (status != AH_OK) {
            /* AH_ERR_INVALID_ARGUMENT: the host refused the address (its log says why, e.g. a
               network permission); AH_ERR_UNSUPPORTED: this host has no HTTP. Neither heals. */
            emit_error(&st, "bad_request",
                       "the host refused the request (its log says why: base_url outside the "
                       "plugin's network permission?)",
                       request.url);
        } else if (st.status_code < 200 || st.status_code > 299) {
            ah_str body = buffer_str(&st.error_body);
            while (body.len > 0 && (body.data[body.len - 1] == '\n' || body.data[body.len - 1] == '\r'))
                --body.len;
            emit_error(&st, error_type_of(st.status_code), "the model server refused the request", body);
        } else if (!st.ended) {
            emit_error(&st, "transient", "the stream ended before its reply was complete",
                       ah_str_from_cstr(""));
        }
    }
    free(url.data);
    free(headers.data);
    free(st.line.data);
    free(st.error_body.data);
    if (st.emit_status != AH_OK) return AH_ERR_CANCELLED;
    if (status == AH_ERR_CANCELLED && !st.ended) return AH_ERR_CANCELLED;
    return AH_OK; /* a STOP, or a typed ERROR: either way the exchange ended normally */
}

/* ---- the models the server serves ------------------------------------------------------------- */

typedef struct models_state {
    int32_t status_code;
    byte_buffer body;
} models_state;

static ah_status models_head(void *ctx, int32_t status_code, ah_str headers_json) {
    (void)headers_json;
    ((models_state *)ctx)->status_code = status_code;
    return AH_OK;
}

static ah_status models_body(void *ctx, const char *data, size_t len) {
    return buffer_append(&((models_state *)ctx)->body, data, len); /* over the limit aborts it */
}

static ah_status provider_list_models(ah_instance *self, const ah_call *raw_call, const ah_writer *out) {
    ah_call call;
    models_state st = {0, {NULL, 0, 0, MAX_MODELS_BYTES}};
    byte_buffer url = {NULL, 0, 0, 8192};
    ah_http_request request;
    ah_http_sink sink;
    ah_status status;
    ah_struct_read(&call, sizeof call, raw_call);
    status = buffer_append(&url, self->base_url, strlen(self->base_url));
    if (status == AH_OK) status = buffer_append(&url, "/models", 7);
    if (status != AH_OK) {
        free(url.data);
        return status;
    }
    memset(&request, 0, sizeof request);
    request.struct_size = sizeof request;
    request.url = buffer_str(&url); /* an empty method is a GET */
    request.timeout_ms = 10000;
    request.connect_timeout_ms = self->connect_timeout_ms;
    sink.struct_size = sizeof sink;
    sink.ctx = &st;
    sink.on_head = models_head;
    sink.on_body = models_body;
    status = self->api->http_request(self->host, &request, &sink, call.cancel);
    if (status == AH_OK && st.status_code == 200 && st.body.len > 0 && st.body.data[0] == '[') {
        status = ah_write(out, st.body.data, st.body.len); /* the host checks the array */
    } else {
        /* {"error": "..."} with a negative status: the host shows these words. */
        char why[160];
        snprintf(why, sizeof why, "the model server at %s did not list its models (HTTP status %d)", url.data,
                 (int)st.status_code);
        ah_write_cstr(out, "{\"error\":");
        ah_json_write_string(out, ah_str_from_cstr(why));
        ah_write_cstr(out, "}");
        status = status == AH_OK ? AH_ERR_FAILED : status;
    }
    free(url.data);
    free(st.body.data);
    return status;
}

static const ah_plugin descriptor = {
    sizeof(ah_plugin),
    AH_ABI_MAJOR,
    AH_ABI_MINOR,
    AH_PLUGIN_KIND_PROVIDER,
    AH_PLUGIN_THREAD_SAFE, /* the instance never changes after create(); each call has its own state */
    "example_provider_c",
    "1.0.0",
    provider_create,
    provider_destroy,
    NULL, /* providers offer no tools */
    NULL,
    NULL, /* no context hook */
    provider_chat,
    provider_list_models,
    NULL, /* no resources */
    NULL,
    NULL, /* no health check: list_models() is how the host sees the server answer */
};

AH_PLUGIN_ENTRY {
    *out_plugin = &descriptor;
    return AH_OK;
}
