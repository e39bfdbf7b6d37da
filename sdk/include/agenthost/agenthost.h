/*
 * agenthost.h — the agenthost plugin ABI, version 1.
 *
 * This header is the whole contract between the agenthost host and its plugins (tool families and
 * LLM provider adapters). It is plain C (C11 and C++17 clean); a plugin written in C, C++, Rust or
 * Zig needs nothing else. The host never exports symbols to plugins: everything the host offers
 * arrives as a function table (ah_host_api), everything a plugin offers is reached through one
 * descriptor (ah_plugin) returned by the single exported entry point ah_plugin_init_v1().
 * Conveniences for C authors (JSON escaping, tool results, struct-size checks) are in the
 * header-only agenthost_helpers.h; they add nothing to the ABI.
 *
 * RULES THAT HOLD FOR EVERY DECLARATION BELOW
 *
 * 1. Versioning. AH_ABI_MAJOR changes only when the ABI breaks; the host refuses plugins of another
 *    major (and says so) before running any of their code. AH_ABI_MINOR grows when something is added.
 *    Every struct that crosses the boundary (except ah_str, which is frozen) starts with a
 *    `size_t struct_size` field set by whoever fills it to sizeof() of the struct as THEY compiled it.
 *    Structs only ever grow at their end. A reader copies min(struct_size, sizeof(its own struct))
 *    bytes into a zeroed local, so fields it does not know are ignored and fields the writer did not
 *    know read as zero / NULL. A NULL function pointer always means "not supported".
 *
 * 2. Memory ownership. No heap memory crosses the boundary and nobody frees what the other side
 *    allocated. Inputs are BORROWED: a pointer is valid only until the function it was passed to
 *    returns, so copy what you need to keep. Outputs go to an ah_writer owned by the RECEIVING side:
 *    the producer calls writer->write() zero or more times and the bytes are appended.
 *    Strings are UTF-8, given as pointer + length (ah_str), and need not be NUL-terminated.
 *    The only exceptions are the `name` / `version` C strings of ah_plugin, which point to storage
 *    that lives as long as the library (libraries are never unloaded while the process runs).
 *
 * 3. Errors. Functions return ah_status. AH_OK (0) is success; negative values are failures. The
 *    set of values is frozen, new ones are only appended, and a reader treats any unknown negative
 *    value as a failure. A TOOL THAT RAN AND FAILED (file not found, HTTP 404 from a site) returns
 *    AH_OK with a result whose "is_error" is true, so the model can see and act on it. A negative
 *    status means the plugin or its transport broke.
 *    No C++ exception, Rust panic or longjmp may cross the boundary in either direction.
 *
 * 4. Structured data is JSON text (RFC 8259, UTF-8): tool argument objects, tool results, the
 *    canonical chat request, stream event payloads, configuration. The C surface stays small.
 *
 * 5. Threads. Every host service in ah_host_api may be called from any thread, at any time between
 *    create() and the end of destroy(). The host serialises calls into one plugin instance unless
 *    the plugin sets AH_PLUGIN_THREAD_SAFE. A plugin that starts threads joins them in destroy().
 *
 * 6. Lifetime. The host opens a plugin library once (RTLD_NOW | RTLD_LOCAL) and never closes it.
 *    Build plugins with -fvisibility=hidden so only ah_plugin_init_v1 is exported.
 */
#ifndef AGENTHOST_H
#define AGENTHOST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Versions                                                                                        */
/* ---------------------------------------------------------------------------------------------- */

/** Major version of the ABI. Part of the entry symbol's name; a different major never loads. */
#define AH_ABI_MAJOR 1
/** Minor version of the ABI this header describes. Grows when slots or fields are appended. */
#define AH_ABI_MINOR 5
/** "MAJOR.MINOR" as a string literal, the form plugin.toml's `abi` key uses. */
#define AH_ABI_VERSION_STRING "1.5"

/* ---------------------------------------------------------------------------------------------- */
/* Export helpers                                                                                  */
/* ---------------------------------------------------------------------------------------------- */

#if defined(_WIN32)
#define AH_EXPORT __declspec(dllexport)
#else
#define AH_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
#define AH_EXTERN_C extern "C"
#else
#define AH_EXTERN_C
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Status codes (frozen: values are never changed or reused; new ones are appended)                */
/* ---------------------------------------------------------------------------------------------- */

/** Result of every ABI function. 0 is success, negative is failure. Stored as int32_t. */
typedef int32_t ah_status;

/** The values of ah_status. */
enum ah_status_code {
    AH_OK = 0,                    /**< Success. */
    AH_ERR_FAILED = -1,           /**< Failure with no more specific code. */
    AH_ERR_INVALID_ARGUMENT = -2, /**< An argument was NULL, malformed JSON, or out of range. */
    AH_ERR_NOT_FOUND = -3,        /**< The key, tool, model or file asked for does not exist. */
    AH_ERR_UNSUPPORTED = -4,      /**< The operation is not offered by this side (e.g. NULL slot). */
    AH_ERR_CANCELLED = -5,        /**< The operation stopped because its cancel token fired. */
    AH_ERR_NO_MEMORY = -6,        /**< An allocation failed. */
    AH_ERR_IO = -7,               /**< A file, database or network operation failed. */
    AH_ERR_TIMEOUT = -8,          /**< The operation ran past its time limit. */
    AH_ERR_INTERNAL = -9          /**< A bug: an exception or invariant failure was caught. */
};

/* ---------------------------------------------------------------------------------------------- */
/* Strings and writers                                                                             */
/* ---------------------------------------------------------------------------------------------- */

/**
 * A borrowed UTF-8 string: `len` bytes at `data`, not necessarily NUL-terminated.
 * `data` may be NULL only when `len` is 0. Valid only for the duration of the call it is passed to.
 * This struct is frozen forever and therefore has no struct_size.
 */
typedef struct ah_str {
    const char *data;
    size_t len;
} ah_str;

/**
 * An output channel owned by the RECEIVING side. The producer calls write(ctx, data, len) any
 * number of times; the receiver appends the bytes to storage it owns. `data` is borrowed for the
 * duration of write(). write() returns AH_OK, or a negative status (e.g. AH_ERR_NO_MEMORY when a
 * size limit is reached), after which the producer should stop and return that status.
 */
typedef struct ah_writer {
    size_t struct_size; /**< sizeof(ah_writer) as compiled by the receiver. */
    void *ctx;          /**< The receiver's state; opaque to the producer. */
    ah_status (*write)(void *ctx, const char *data, size_t len);
} ah_writer;

/* ---------------------------------------------------------------------------------------------- */
/* Opaque handles                                                                                  */
/* ---------------------------------------------------------------------------------------------- */

/** The host's view of one loaded plugin. Passed back to every ah_host_api function. Host-owned. */
typedef struct ah_host ah_host;

/** A cancellation token. Check it with ah_host_api.is_cancelled(); hand it to http_request(). */
typedef struct ah_cancel ah_cancel;

/** One plugin instance, defined and owned by the plugin; created by create(), freed by destroy(). */
typedef struct ah_instance ah_instance;

/* ---------------------------------------------------------------------------------------------- */
/* Host services                                                                                   */
/* ---------------------------------------------------------------------------------------------- */

/** Log levels for ah_host_api.log(). */
enum ah_log_level {
    AH_LOG_TRACE = 0,
    AH_LOG_DEBUG = 1,
    AH_LOG_INFO = 2,
    AH_LOG_WARN = 3,
    AH_LOG_ERROR = 4
};

/**
 * An HTTP request made through the host (libcurl on the host side: proxies, TLS and timeouts are
 * configured once for the whole process).
 */
typedef struct ah_http_request {
    size_t struct_size;          /**< sizeof(ah_http_request) as compiled by the plugin. */
    ah_str method;               /**< "GET", "POST", … ; empty means "GET". */
    ah_str url;                  /**< Absolute http:// or https:// URL. Other schemes are refused. */
    ah_str headers_json;         /**< JSON object {"Name": "value", …}; empty means none. */
    ah_str body;                 /**< Request body; empty means none. */
    uint32_t timeout_ms;         /**< Whole-transfer limit; 0 means the host's default. */
    uint32_t connect_timeout_ms; /**< Connection limit; 0 means the host's default. */
    /* Since ABI 1.1 (a 1.0 host ignores them; check ah_host_api.abi_minor). */
    uint32_t flags;    /**< AH_HTTP_* flags. */
    ah_str resolve_to; /**< An IP address to connect to for the URL's host, instead of looking
                            the name up (pins a name the plugin resolved and checked itself);
                            empty means a normal lookup. TLS still verifies the URL's name. */
} ah_http_request;

/** Flags for ah_http_request.flags (since ABI 1.1). */
enum ah_http_flag {
    AH_HTTP_NO_REDIRECTS = 1u << 0, /**< Report a 3xx response (with its Location header) instead of
                                         following it, so the plugin can check every hop. */
    AH_HTTP_REPLAYABLE = 1u << 1    /**< Sending this request twice does no harm (a model call: it costs
                                         tokens, changes nothing), so it may go out on a kept
                                         connection like a GET (see http_request). A host that
                                         does not know it ignores it: the request then opens a new
                                         connection, which is always safe. */
};

/**
 * Receives an HTTP response as it arrives (streaming). Owned by the plugin. on_head() is called
 * once, with the final status code and a JSON object of response headers (lower-case names; a
 * repeated header's values joined by ", "). on_body() is called for every chunk of the body, in
 * order. Either callback may return a negative status to abort the transfer; http_request() then
 * returns that status. Either slot may be NULL when the plugin does not care.
 */
typedef struct ah_http_sink {
    size_t struct_size; /**< sizeof(ah_http_sink) as compiled by the plugin. */
    void *ctx;          /**< The plugin's state. */
    ah_status (*on_head)(void *ctx, int32_t status_code, ah_str headers_json);
    ah_status (*on_body)(void *ctx, const char *data, size_t len);
} ah_http_sink;

/**
 * The services the host offers a plugin. Handed to ah_plugin.create(); the table and the `host`
 * handle stay valid until destroy() returns. Every slot is thread-safe. Check struct_size (or a slot
 * for NULL) before using a slot added after minor 0.
 *
 * After destroy() returns (or after a failed create()), the host refuses every call through that
 * `host` handle for as long as the host process keeps its services: log() does nothing,
 * is_cancelled() returns 1, every other slot returns AH_ERR_UNSUPPORTED, and the host logs one
 * warning. This is a safety net for a thread the plugin forgot to join, not a licence: once the
 * host itself shuts down, such a call is undefined behaviour. Join your threads in destroy().
 */
typedef struct ah_host_api {
    size_t struct_size;       /**< sizeof(ah_host_api) as compiled by the host. */
    uint32_t abi_major;       /**< The host's AH_ABI_MAJOR. */
    uint32_t abi_minor;       /**< The host's AH_ABI_MINOR. */
    const char *host_version; /**< NUL-terminated host version, e.g. "0.1.0". Host-owned, static. */

    /**
     * Writes a log line through the host's logger, tagged with the plugin's name.
     * `level` is an AH_LOG_* value. `fields_json` is an optional JSON object of structured fields
     * (empty for none). Never fails; oversized or invalid input is logged as far as it is valid.
     */
    void (*log)(ah_host *host, int32_t level, ah_str message, ah_str fields_json);

    /**
     * Writes the plugin's own configuration table as a JSON object to `out`: the manifest's
     * [default_config] overlaid with agenthost.toml's [plugins.<name>] table. A plugin never sees
     * another plugin's table. Returns AH_OK (an empty table is written as "{}").
     */
    ah_status (*get_config)(ah_host *host, const ah_writer *out);

    /**
     * Per-plugin key-value store, persisted by the host across restarts. Keys and values are
     * arbitrary UTF-8 (values typically JSON). kv_get writes the value to `out`, or returns
     * AH_ERR_NOT_FOUND when the key has none, or AH_ERR_IO when the store cannot be read just now
     * (a database restarting): the key may have a value, so do not take AH_ERR_IO for absent;
     * fail the call (a provider: a "store_unavailable" error). kv_set replaces;
     * AH_ERR_IO when it could not be stored. kv_delete returns AH_OK whether or not the key existed.
     * Keys of one plugin are invisible to every other plugin.
     * Durability: a tool plugin's kv_set is on disk when it returns. A provider's is written in the
     * transaction of the host's next write, usually the step that used the reply (kv_get reads it
     * back at once), never before it: after a crash the run asks again for a reply it lost, so
     * answer a request asked again (same call_id and messages) as before if you keep state.
     * Within one run, a provider called in the host's process reads its own writes back from the
     * host's memory, not the store (writes from the thread chat() was called on). A run holds its
     * conversation on every host, so keep per-conversation state under a key naming the
     * conversation; a key shared by all conversations and written by another host during the
     * run is read as this run last wrote it until the run ends.
     */
    ah_status (*kv_get)(ah_host *host, ah_str key, const ah_writer *out);
    ah_status (*kv_set)(ah_host *host, ah_str key, ah_str value);
    ah_status (*kv_delete)(ah_host *host, ah_str key);

    /**
     * Agent memory shared with the host and the other plugins. `conversation` selects a
     * conversation's session memory (use ah_call.conversation_id); an EMPTY conversation selects
     * long-term memory that outlives conversations (e.g. named folders). `key` names the entry
     * (e.g. "search_results"); the value is a JSON document. memory_get writes the value to `out`,
     * or returns AH_ERR_NOT_FOUND when there is none, or AH_ERR_IO when the store cannot be read just
     * now: as with kv_get, do not take AH_ERR_IO for absent and write over the entry. memory_set
     * replaces it (an empty value deletes it); memory_set returns AH_ERR_INVALID_ARGUMENT when the
     * value is not valid JSON, AH_ERR_IO when it could not be stored.
     * Every entry of a conversation is shown to the model in the system prompt. Well-known keys:
     *   "search_results" : array of results the user may refer to by number; each object's "title"
     *                      (and "index", default its position from 1) is shown as "N. title".
     *   "topic"          : string, what the conversation is about now ("choosing a torrent").
     *   "entities"       : things mentioned so far (any JSON).
     * The host owns "session", "plan", "task_stack", "pending_question", "recent_errors",
     * and "provider": read them freely, do not write them.
     */
    ah_status (*memory_get)(ah_host *host, ah_str conversation, ah_str key, const ah_writer *out);
    ah_status (*memory_set)(ah_host *host, ah_str conversation, ah_str key, ah_str value_json);

    /**
     * Posts an event for the user and the model: a JSON object with at least "message" (string)
     * and optionally "level" ("info" | "warn" | "error") and any other fields. It is shown once,
     * as a notification at the next turn of `conversation` (empty: of any conversation).
     */
    ah_status (*post_event)(ah_host *host, ah_str conversation, ah_str event_json);

    /**
     * Performs an HTTP request and streams the response into `sink`. Returns AH_OK once the whole
     * body was delivered, whatever the HTTP status (the status reaches on_head); AH_ERR_CANCELLED
     * when `cancel` fired (pass NULL for none); AH_ERR_TIMEOUT; AH_ERR_IO for connection and TLS
     * failures; AH_ERR_INVALID_ARGUMENT for a bad URL, scheme or headers object, and for a
     * destination (the URL's host and port, a resolve_to address, any redirect's target) outside
     * the plugin's network permissions when it has any (docs/plugin-abi.md, "Permissions"); the
     * host logs which destination it refused and why. AH_ERR_UNSUPPORTED when this host cannot
     * make HTTP requests at all (its HTTP support is not installed; the host logs why): retrying
     * will not help.
     *
     * Connections: each plugin instance keeps up to 4 open connections, each closed after 30 s
     * idle, and lends one to one request at a time, so a request to the same origin often skips
     * the TCP and TLS handshakes. Only a request that may be sent twice rides on a kept
     * connection: GET, HEAD, OPTIONS, PUT, DELETE, or one flagged AH_HTTP_REPLAYABLE (if a kept
     * connection turns out to be closed before any answer, the request is sent again on a new
     * one, within the same timeout_ms). Any other request opens a new connection. A connection is
     * not kept after a failure or an answer of 408, 429 or 5xx (a retry starts on a new one), nor
     * when the server sent anything after its answer, nor for a request with resolve_to; a
     * provider's AH_EVENT_ERROR closes its instance's kept connections.
     */
    ah_status (*http_request)(ah_host *host, const ah_http_request *request, const ah_http_sink *sink,
                              const ah_cancel *cancel);

    /**
     * Writes the absolute path of a directory reserved for this plugin (created if missing, under
     * the host's data_dir) to `out`. The plugin may create any files inside it.
     */
    ah_status (*data_dir)(ah_host *host, const ah_writer *out);

    /** Returns 1 when `cancel` has fired (the user or a deadline stopped the work), else 0. */
    int32_t (*is_cancelled)(ah_host *host, const ah_cancel *cancel);

    /* Since ABI 1.3 (NULL, or beyond struct_size, in an older host). */

    /**
     * Tells the host that list_tools() would now answer differently (e.g. a bridged server added a
     * tool). The host calls list_tools() again soon, on a thread of its own, never from inside
     * this call, so it may be called from anywhere, even from within call_tool(). The new list
     * replaces the plugin's old one for the agent and for the host's own MCP clients (which get
     * notifications/tools/list_changed); a tool whose name another plugin already uses is
     * skipped with a warning. Returns AH_OK, or AH_ERR_UNSUPPORTED for a provider plugin.
     */
    ah_status (*tools_changed)(ah_host *host);

    /* Since ABI 1.5 (NULL, or beyond struct_size, in an older host). The first three speak to
     * whoever made a call: they take that call's ah_call.call_id (of call_tool), and do nothing
     * useful once the call returned. */

    /**
     * Reports how far the call `call_id` has come: `progress` so far, of `total` (0 when unknown),
     * with an optional `message` ("3 of 10 files copied"). An MCP client that asked for progress
     * sees notifications/progress; the others see nothing. `progress` must grow from one report to
     * the next (a smaller one is dropped). Returns AH_OK, also when nobody listens.
     */
    ah_status (*progress)(ah_host *host, ah_str call_id, double progress, double total, ah_str message);

    /**
     * Asks the client that made the call `call_id` for a model's answer (MCP sampling).
     * `request_json` is the params object of MCP's sampling/createMessage: {"messages": [{"role":
     * "user", "content": {"type": "text", "text": …}}], "maxTokens": n, "systemPrompt"?, …}. On
     * AH_OK, `out` receives the client's result: {"role": "assistant", "content": {…}, "model": …,
     * "stopReason"?}. Returns AH_ERR_UNSUPPORTED when the call's client cannot sample (the agent's
     * own calls, a client without the capability), AH_ERR_CANCELLED when the call was cancelled,
     * AH_ERR_TIMEOUT after 120 s, AH_ERR_FAILED when the client refused (its error message is
     * written to `out`). Blocks until then; call it from the call's own thread or one it joins.
     */
    ah_status (*sample)(ah_host *host, ah_str call_id, ah_str request_json, const ah_writer *out);

    /**
     * Asks the person at the client that made the call `call_id` (MCP elicitation).
     * `request_json` is the params object of MCP's elicitation/create: {"message": string,
     * "requestedSchema": {"type": "object", "properties": {…}}}, a flat object of strings,
     * numbers, booleans and enums. On AH_OK, `out` receives {"action": "accept" | "decline" |
     * "cancel", "content"?: {…}}. Statuses as for sample(); a person may take long, so the wait
     * is up to 10 minutes.
     */
    ah_status (*elicit)(ah_host *host, ah_str call_id, ah_str request_json, const ah_writer *out);

    /**
     * Tells the host that the resource `uri` (one the plugin lists or serves through a template)
     * now reads differently. MCP clients subscribed to it get notifications/resources/updated.
     * Call it from anywhere, any time. Returns AH_OK.
     */
    ah_status (*resource_updated)(ah_host *host, ah_str uri);
} ah_host_api;

/* ---------------------------------------------------------------------------------------------- */
/* Tools                                                                                           */
/* ---------------------------------------------------------------------------------------------- */

/**
 * Hint flags of a tool (the MCP tool annotations). They are hints to the HOST's policy, which
 * decides which mode may use a tool and which calls need the user's approval; agenthost.toml can
 * override them per tool. They are never a security boundary inside the plugin.
 */
enum ah_tool_hint {
    AH_TOOL_READ_ONLY = 1u << 0,   /**< Changes nothing anywhere (safe in explore mode). */
    AH_TOOL_DESTRUCTIVE = 1u << 1, /**< May delete or overwrite data (needs approval by default). */
    AH_TOOL_IDEMPOTENT = 1u << 2,  /**< Calling twice with the same arguments equals calling once. */
    AH_TOOL_OPEN_WORLD = 1u << 3   /**< Talks to the world outside this machine (web, trackers). */
};

/** One tool a plugin offers. All strings are borrowed for the duration of ah_tool_sink.add(). */
typedef struct ah_tool_def {
    size_t struct_size;       /**< sizeof(ah_tool_def) as compiled by the plugin. */
    ah_str name;              /**< Unique across all loaded plugins: ^[a-zA-Z][a-zA-Z0-9_]{0,63}$ */
    ah_str description;       /**< What the tool does, written for the model. */
    ah_str input_schema_json; /**< JSON Schema (an "object" schema) of the arguments. */
    uint32_t hints;           /**< AH_TOOL_* flags. */
    /* Since ABI 1.5 (an older host reads neither). */
    ah_str title;              /**< A short name for people ("Search torrents"); empty for none. */
    ah_str output_schema_json; /**< JSON Schema (an "object" schema) of the result's "structured"
                                    value, which the tool then always returns; empty for none. */
} ah_tool_def;

/** Receives tool definitions from ah_plugin.list_tools(). Owned by the host. */
typedef struct ah_tool_sink {
    size_t struct_size; /**< sizeof(ah_tool_sink) as compiled by the host. */
    void *ctx;          /**< The host's state. */
    /**
     * Adds one tool. Returns AH_ERR_INVALID_ARGUMENT for a bad name, a schema the host cannot use or
     * a name added twice: that tool is refused (the host logs it and `agenthost plugins` names the
     * keyword at fault) and the others are unaffected, so keep adding the rest and return AH_OK.
     */
    ah_status (*add)(void *ctx, const ah_tool_def *tool);
} ah_tool_sink;

/**
 * The context of one call into a plugin. All fields are borrowed for the duration of the call.
 *
 * For call_tool(): tool_name and arguments_json (a JSON object already validated against the
 * tool's schema by the host) are set. For context(): tool_name and arguments_json are empty.
 * For chat(): tool_name is empty and arguments_json holds the canonical chat request.
 */
typedef struct ah_call {
    size_t struct_size;          /**< sizeof(ah_call) as compiled by the host. */
    ah_str call_id;              /**< Unique id of this call (for logs and journals). */
    ah_str tool_name;            /**< The tool to run (call_tool only). */
    ah_str arguments_json;       /**< See above. */
    ah_str conversation_id;      /**< The conversation the call belongs to (may be empty). */
    ah_str request_context_json; /**< JSON object of request context (selected nodes, active
                                      graph…) from the CLI or HTTP request; "{}" when none. */
    const ah_cancel *cancel;     /**< Fires when the user cancels; check with is_cancelled(). */
} ah_call;

/*
 * THE TOOL RESULT (written by call_tool() to its `result` writer) is one JSON object:
 *   "content"    : what the model sees: a string, or any JSON value (rendered as JSON text).
 *   "is_error"   : true when the tool ran and failed; "content" then explains why and what to do.
 *   "error_code" : optional short machine-readable cause ("not_found", "forbidden", …).
 *   "structured" : optional JSON value for programs (front ends, MCP structuredContent).
 *   "marker"     : optional loop marker: "done" (with "summary": the turn's final answer),
 *                  "plan_created" (with "plan": {"steps": [string, …]}; the steps become the
 *                  task list) or "approval_requested" (with "reason"): the host asks the user
 *                  and, on approval, calls the tool again with the same arguments and
 *                  "approved": true in request_context_json; on rejection the user's reason
 *                  reaches the model as the call's result.
 *   "blocks"     : optional (since ABI 1.5) array of MCP content blocks, for results that are more
 *                  than text: {"type": "text", "text"}, {"type": "image", "data": base64,
 *                  "mimeType"}, {"type": "audio", "data": base64, "mimeType"}, {"type":
 *                  "resource", "resource": {"uri", "mimeType", "text" | "blob": base64}} and
 *                  {"type": "resource_link", "uri", "name", "mimeType"?}. MCP clients receive
 *                  them as the result's content (in place of "content"'s text); the model reads
 *                  "content" when there is one, else the text blocks, with a one-line note for
 *                  each other block ("[image/png image, 2.1 KiB]"). Blocks of an unknown type, or
 *                  without their required fields, are dropped (the host logs it).
 * Anything else is ignored. A result that is not a JSON object is treated as {"content": <text>}.
 */

/* ---------------------------------------------------------------------------------------------- */
/* Provider stream events                                                                          */
/* ---------------------------------------------------------------------------------------------- */

/**
 * Event types a provider emits while answering a chat request. The payload of each:
 *  AH_EVENT_TEXT      : UTF-8 text delta of the answer (raw text, not JSON).
 *  AH_EVENT_REASONING : UTF-8 text delta of reasoning / thinking (raw text, not JSON).
 *  AH_EVENT_TOOL_CALL : JSON {"id": string, "name": string, "arguments": object} — one complete
 *                       native tool call (providers assemble streamed call fragments themselves).
 *                       Optional "provider_data": any JSON value of at most 64 KiB that the API
 *                       requires back with the call (Gemini's thoughtSignature, a Responses
 *                       reasoning item). The host stores it with the call and sends it back, as
 *                       tool_calls[i].provider_data of the assistant message, in every later
 *                       request that holds the call. Other providers may see it after a fallback:
 *                       keep its keys under the plugin's name. Larger values are dropped (logged);
 *                       a host that predates the field ignores it.
 *  AH_EVENT_USAGE     : JSON {"input_tokens": int, "output_tokens": int} (may repeat; last wins).
 *                       Optional "cached_input_tokens": the part of input_tokens a prompt cache
 *                       served (input_tokens always counts the whole prompt).
 *  AH_EVENT_STOP      : JSON {"reason": "end" | "tool_calls" | "max_tokens" | "content_filter"}.
 *  AH_EVENT_ERROR     : JSON {"type": T, "message": string, "retry_after": seconds (optional),
 *                       "status": HTTP status (optional)}, T one of "auth", "rate_limit",
 *                       "model_unavailable", "context_too_large", "transient", "timeout" (the
 *                       request did not complete in time; retried as "transient" is), "bad_request",
 *                       "store_unavailable" (kv_get or kv_set said AH_ERR_IO: the run stops as
 *                       a store failure, and resumes by itself once the store is back).
 *                       A provider that emits an error returns AH_OK from chat(): the failure is
 *                       the model's, typed, and the host decides whether to retry.
 */
enum ah_event_type {
    AH_EVENT_TEXT = 1,
    AH_EVENT_REASONING = 2,
    AH_EVENT_TOOL_CALL = 3,
    AH_EVENT_USAGE = 4,
    AH_EVENT_STOP = 5,
    AH_EVENT_ERROR = 6
};

/**
 * Receives a provider's events, in order. Owned by the host. emit() returns AH_OK;
 * AH_ERR_CANCELLED when the host no longer wants the answer; AH_ERR_NO_MEMORY when the answer
 * outgrew the host's limit; AH_ERR_INVALID_ARGUMENT for an event the host cannot read (a tool
 * call that is not the JSON above, an unknown type): the answer fails with those words. After any
 * of these the provider stops and returns.
 */
typedef struct ah_event_sink {
    size_t struct_size; /**< sizeof(ah_event_sink) as compiled by the host. */
    void *ctx;          /**< The host's state. */
    ah_status (*emit)(void *ctx, int32_t type, ah_str payload);
} ah_event_sink;

/*
 * THE CANONICAL CHAT REQUEST (ah_call.arguments_json of chat()) is one JSON object:
 *   "model"       : string (may be empty: the provider's configured model).
 *   "messages"    : [ {"role": "system" | "user" | "assistant" | "tool",
 *                      "content": string,
 *                      "tool_calls": [ {"id", "name", "arguments": object,
 *                                       "provider_data" (when the call came with one)} ]
 *                                                                               (assistant only),
 *                      "tool_call_id": string, "name": string                 (tool only)} ]
 *                   Messages with "agenthost_state": true are the agent's state (goal, plan,
 *                   progress, session memory), "user" messages the host adds after the last
 *                   message whenever the state changed; the newest counts. They join the
 *                   conversation instead of the system prompt so that the requests of a turn
 *                   share everything before their newest messages as a prefix (prompt caches).
 *                   A provider that looks for the user's last words passes over them; one that
 *                   sends the messages on sends them as user messages.
 *   "tools"       : [ {"name", "description", "parameters": JSON Schema} ]   (may be empty)
 *   "tool_choice" : "auto" | "none" | "required"
 *   "max_tokens"  : integer (optional), "temperature": number (optional),
 *   "stream"      : boolean (a hint; events are emitted either way).
 * Providers translate this into their vendor's wire format; vendor quirks stay in the provider.
 */

/* ---------------------------------------------------------------------------------------------- */
/* The plugin descriptor                                                                           */
/* ---------------------------------------------------------------------------------------------- */

/** Plugin kinds. */
enum ah_plugin_kind {
    AH_PLUGIN_KIND_TOOL = 1,    /**< Offers tools: list_tools and call_tool are required. */
    AH_PLUGIN_KIND_PROVIDER = 2 /**< An LLM provider adapter: chat is required. */
};

/** Plugin flags. */
enum ah_plugin_flag {
    AH_PLUGIN_THREAD_SAFE = 1u << 0 /**< The host may call into one instance from many threads. */
};

/**
 * What a plugin is and can do. Returned by ah_plugin_init_v1(); the storage is the plugin's and must
 * live as long as the library (a static const object is typical). The host copies it.
 */
typedef struct ah_plugin {
    size_t struct_size;  /**< sizeof(ah_plugin) as compiled by the plugin. */
    uint32_t abi_major;  /**< AH_ABI_MAJOR the plugin was built against. */
    uint32_t abi_minor;  /**< AH_ABI_MINOR the plugin was built against. */
    int32_t kind;        /**< AH_PLUGIN_KIND_*. */
    uint32_t flags;      /**< AH_PLUGIN_* flags. */
    const char *name;    /**< NUL-terminated; must equal the manifest's `name`. */
    const char *version; /**< NUL-terminated version of the plugin, e.g. "1.2.0". */

    /**
     * Creates an instance. `api` and `host` stay valid until destroy() returns; keep them.
     * On success store the instance in *out_instance and return AH_OK. On failure return a negative
     * status and write a one-line human-readable cause to `error` (e.g. "cassette file
     * /x/y.json not found: set plugins.scripted.cassette"). Required.
     */
    ah_status (*create)(const ah_host_api *api, ah_host *host, ah_instance **out_instance,
                        const ah_writer *error);

    /** Frees an instance and joins any threads it started. Required. Never fails. */
    void (*destroy)(ah_instance *instance);

    /**
     * Tool plugins: declares every tool by calling tools->add() once per tool. May be called
     * again at any time (the list may change, e.g. for a bridge to remote tools).
     */
    ah_status (*list_tools)(ah_instance *instance, const ah_tool_sink *tools);

    /**
     * Tool plugins: runs call->tool_name with call->arguments_json and writes the tool result JSON
     * (see THE TOOL RESULT above) to `result`. Returns AH_OK whenever a result was written, even an
     * error result; a negative status only when the plugin itself broke.
     */
    ah_status (*call_tool)(ah_instance *instance, const ah_call *call, const ah_writer *result);

    /**
     * Optional context hook: writes plain UTF-8 text that the host adds to the system prompt of
     * call->conversation_id's next request (e.g. "Named folders: movies, tv"). Writing nothing adds
     * nothing. NULL when the plugin has no context to add. call->request_context_json carries the
     * turn's request context plus "user_message": the user's prompt (to resolve @mentions in it).
     * The host calls it at the start of a turn, and again within the turn after any plugin tool
     * not marked AH_TOOL_READ_ONLY succeeded, with "context_refresh": true added: describe what is
     * there now, but do not act on the message a second time (switching a selection, say).
     */
    ah_status (*context)(ah_instance *instance, const ah_call *call, const ah_writer *out);

    /**
     * Provider plugins: answers the canonical chat request in call->arguments_json by emitting
     * events to `events` (see AH_EVENT_*), ending with AH_EVENT_STOP or AH_EVENT_ERROR. Returns AH_OK
     * when the exchange ended normally or with a typed error event; AH_ERR_CANCELLED when
     * call->cancel fired or emit() asked to stop; another negative status when the plugin broke.
     */
    ah_status (*chat)(ah_instance *instance, const ah_call *call, const ah_event_sink *events);

    /**
     * Optional (providers): writes a JSON array of model descriptions [{"id": string, …}] the
     * provider can serve. NULL when unknown. A model marked "default": true is the one used when
     * the operator configures none; without one, the host reports a provider with no model set as
     * not ready (a request naming no model would only be refused). When the server cannot be asked, return a
     * negative status and (optionally) write {"error": "why, in words"}: the host shows those words.
     * Return AH_ERR_UNSUPPORTED when this instance has no list to give (an endpoint that serves the
     * one model its URL names): the host then checks nothing before the first call.
     */
    ah_status (*list_models)(ah_instance *instance, const ah_call *call, const ah_writer *out);

    /* Since ABI 1.2 (the host reads them only when struct_size covers them). */

    /**
     * Optional (any plugin): writes a JSON array of the resources it offers, [{"uri", "name",
     * "description"?, "mimeType"?}] (e.g. "graph://Marvel"). Front ends and MCP clients read them.
     */
    ah_status (*list_resources)(ah_instance *instance, const ah_call *call, const ah_writer *out);

    /**
     * Optional: reads one resource; call->arguments_json is {"uri": string}. Writes
     * {"contents": [{"uri", "mimeType", "text"}]} (since ABI 1.5 a binary resource has "blob",
     * its bytes in base64, in place of "text"); returns AH_ERR_NOT_FOUND for a URI it does
     * not serve (the host then asks the next plugin). A URI of one of its templates is read here too.
     */
    ah_status (*read_resource)(ah_instance *instance, const ah_call *call, const ah_writer *out);

    /* Since ABI 1.4 (the host reads it only when struct_size covers it). */

    /**
     * Optional (any plugin): checks what the plugin needs from the world beyond loading — a server
     * it logs in to, an indexer it searches, a folder it writes, a file it reads — and writes
     *
     *     {"checks": [{"name": "qBittorrent", "ok": true, "detail": "4.5.2 at http://127.0.0.1:8081"}, …]}
     *
     * One entry per thing checked: "ok" false makes `agenthost doctor` report the plugin NOT READY
     * and exit 1; "detail" says what was found or, when not ok, what to fix ("QBITTORRENT_PASSWORD
     * is not set: put the WebUI password in it"). The host calls it from `agenthost doctor`, never
     * during another call of the same instance unless the plugin is AH_PLUGIN_THREAD_SAFE. It may use the
     * network through ah_host_api.http; keep it within a few seconds and honour call->cancel.
     * call->arguments_json is "{}". Returns AH_OK when it wrote a result (also when a check failed); NULL
     * when the plugin has nothing to check.
     */
    ah_status (*health)(ah_instance *instance, const ah_call *call, const ah_writer *out);

    /* Since ABI 1.5 (the host reads them only when struct_size covers them). All optional. */

    /**
     * Writes a JSON array of the prompts the plugin offers, ready-made starts of a conversation a
     * person picks from a menu (MCP prompts): [{"name": string, "title"?: string, "description":
     * string, "arguments"?: [{"name", "description"?, "required"?: bool}]}]. Names are unique
     * across plugins (a later namesake is skipped with a warning). call->arguments_json is "{}".
     */
    ah_status (*list_prompts)(ah_instance *instance, const ah_call *call, const ah_writer *out);

    /**
     * Fills in one prompt. call->arguments_json is {"name": string, "arguments": {string: string}}
     * (required arguments present; the host checked them). Writes {"description"?: string,
     * "messages": [{"role": "user" | "assistant", "content": <one MCP content block, as in
     * "blocks" of THE TOOL RESULT>}]}. Returns AH_ERR_NOT_FOUND for a name it does not offer.
     */
    ah_status (*get_prompt)(ah_instance *instance, const ah_call *call, const ah_writer *out);

    /**
     * Writes a JSON array of URI templates (RFC 6570 level 1, "{name}" placeholders) whose
     * resources read_resource() serves: [{"uriTemplate": "graph://{name}", "name", "description"?,
     * "mimeType"?}].
     */
    ah_status (*list_resource_templates)(ah_instance *instance, const ah_call *call, const ah_writer *out);

    /**
     * Suggests values for an argument as a person types it (MCP completion). call->arguments_json
     * is {"ref": {"type": "ref/prompt", "name"} | {"type": "ref/resource", "uri": template},
     * "argument": {"name", "value": the text typed so far}, "context"?: {"arguments": {…}}}.
     * Writes {"values": [string, …] (best first, at most 100), "total"?: n, "hasMore"?: bool}.
     * Returns AH_ERR_NOT_FOUND when the prompt or template is not the plugin's.
     */
    ah_status (*complete)(ah_instance *instance, const ah_call *call, const ah_writer *out);
} ah_plugin;

/* ---------------------------------------------------------------------------------------------- */
/* The entry point                                                                                 */
/* ---------------------------------------------------------------------------------------------- */

/** The name of the only symbol a plugin exports, for dlsym() and friends. */
#define AH_PLUGIN_ENTRY_SYMBOL "ah_plugin_init_v1"

/**
 * Type of the entry point. It must not allocate, start threads or touch the host: it only stores a
 * pointer to the plugin's static descriptor in *out_plugin and returns AH_OK (or a negative status
 * when the plugin cannot run at all on this machine). All real work starts in create().
 */
typedef ah_status (*ah_plugin_init_v1_fn)(const ah_plugin **out_plugin);

/**
 * Declares the entry point with C linkage and default visibility. Use it as:
 *     AH_PLUGIN_ENTRY { *out_plugin = &my_descriptor; return AH_OK; }
 */
#define AH_PLUGIN_ENTRY AH_EXTERN_C AH_EXPORT ah_status ah_plugin_init_v1(const ah_plugin **out_plugin)

/** Builds an ah_str from a NUL-terminated string literal (compile-time length). */
#define AH_STR_LIT(literal) \
    { (literal), sizeof(literal) - 1 }

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AGENTHOST_H */
