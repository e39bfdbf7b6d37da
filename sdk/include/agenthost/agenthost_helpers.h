/*
 * agenthost_helpers.h — small conveniences for plugins written in C, on top of agenthost.h.
 *
 * Header-only: every function is `static inline`, so nothing here is exported, linked or part of the
 * ABI. It changes nothing in the contract; it only saves C authors from hand-writing JSON and size
 * checks. C11 and C++17 clean; needs only the C standard library (<string.h>, <stddef.h>,
 * <stdlib.h>).
 *
 * What it offers:
 *   - writing bytes and C strings to an ah_writer             ah_write(), ah_write_cstr()
 *   - building an ah_str and comparing one                    ah_str_from_cstr(), ah_str_equals()
 *   - JSON string escaping into an ah_writer                  ah_json_write_escaped(),
 *                                                             ah_json_write_string()
 *   - writing a whole tool result                             ah_result_write_text(),
 *                                                             ah_result_write_error()
 *   - reading flat JSON (arguments, config, a server's answer) ah_json_member(),
 *                                                             ah_json_string_decode(),
 *                                                             ah_json_number()
 *   - reading a struct of another minor (ABI rule 1)          AH_STRUCT_HAS(), AH_HOST_HAS(),
 *                                                             ah_struct_read()
 *
 * OWNERSHIP. Nothing here allocates. Every input is borrowed for the duration of the call; every
 * output goes through the given ah_writer (or into the caller's own buffer), owned by whoever
 * handed it to you.
 *
 * ERRORS. Every function that writes returns AH_OK, or the first negative status the writer
 * returned; it stops writing at that point (the receiver then holds a truncated result, which the
 * caller should not try to complete: return the status instead, as the ABI asks).
 */
#ifndef AGENTHOST_HELPERS_H
#define AGENTHOST_HELPERS_H

#include <agenthost/agenthost.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------- */
/* Writers and strings                                                                             */
/* ---------------------------------------------------------------------------------------------- */

/**
 * Writes `len` bytes at `data` to `out`. Nothing is written (and AH_OK returned) when `len` is 0, so
 * `data` may then be NULL. Returns what out->write() returned.
 */
static inline ah_status ah_write(const ah_writer *out, const char *data, size_t len) {
    if (len == 0) return AH_OK;
    return out->write(out->ctx, data, len);
}

/** Writes the NUL-terminated string `text` (without its NUL) to `out`. See ah_write(). */
static inline ah_status ah_write_cstr(const ah_writer *out, const char *text) {
    return ah_write(out, text, strlen(text));
}

/**
 * Returns an ah_str viewing the NUL-terminated string `text` (borrowed: it lives as long as `text`).
 * NULL gives the empty string.
 */
static inline ah_str ah_str_from_cstr(const char *text) {
    ah_str s;
    s.data = text;
    s.len = text ? strlen(text) : 0;
    return s;
}

/** Returns 1 when `s` holds exactly the bytes of the NUL-terminated string `text`, else 0. */
static inline int ah_str_equals(ah_str s, const char *text) {
    size_t len = strlen(text);
    return s.len == len && (len == 0 || memcmp(s.data, text, len) == 0);
}

/* ---------------------------------------------------------------------------------------------- */
/* JSON strings                                                                                    */
/* ---------------------------------------------------------------------------------------------- */

/*
 * Length of the valid UTF-8 sequence starting at p (1 to 4 bytes), or 0 when the bytes there are not
 * valid UTF-8 (a stray continuation byte, a truncated sequence, an overlong form, a UTF-16
 * surrogate, or a code point above U+10FFFF). Internal to ah_json_write_escaped().
 */
static inline size_t ah_utf8_sequence_length_(const unsigned char *p, size_t available) {
    unsigned char c = p[0];
    size_t need, i;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        need = 3;
    else if (c >= 0xF0 && c <= 0xF4)
        need = 4;
    else
        return 0; /* 0x80-0xC1: continuation or overlong lead; 0xF5-0xFF: never valid */
    if (available < need) return 0;
    for (i = 1; i < need; ++i)
        if ((p[i] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0; /* overlong 3-byte form */
    if (c == 0xED && p[1] > 0x9F) return 0; /* U+D800-U+DFFF, surrogates */
    if (c == 0xF0 && p[1] < 0x90) return 0; /* overlong 4-byte form */
    if (c == 0xF4 && p[1] > 0x8F) return 0; /* above U+10FFFF */
    return need;
}

/**
 * Writes `text` to `out` as the CONTENTS of a JSON string (RFC 8259), without the surrounding quotes:
 *   - `"` becomes `\"` and `\` becomes `\\`;
 *   - the control characters U+0000 to U+001F become `\b`, `\f`, `\n`, `\r`, `\t` or `\u00XX`
 *     (so an embedded NUL byte is kept, as `\u0000`);
 *   - valid UTF-8 (any non-ASCII character, emoji included) and DEL (0x7F) pass through unchanged;
 *   - each byte that is not part of valid UTF-8 becomes U+FFFD (the replacement character), so the
 *     output is always valid JSON even when `text` came from a file name or a network peer.
 * `text` is borrowed; `text.data` may be NULL when `text.len` is 0 (nothing is written).
 * Unchanged runs are written in one piece, so out->write() is called once per escape, not per byte.
 * Returns AH_OK or the writer's first negative status.
 */
static inline ah_status ah_json_write_escaped(const ah_writer *out, ah_str text) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)text.data;
    size_t i = 0, run_start = 0;
    ah_status status;
    if (text.len == 0) return AH_OK; /* and text.data may be NULL: no arithmetic on it */
    while (i < text.len) {
        unsigned char c = p[i];
        char escape[6];
        size_t escape_len = 0, length;
        const char *replacement = NULL;
        if (c == '"' || c == '\\') {
            escape[0] = '\\';
            escape[1] = (char)c;
            escape_len = 2;
        } else if (c < 0x20) {
            escape[0] = '\\';
            escape_len = 2;
            switch (c) {
            case '\b': escape[1] = 'b'; break;
            case '\f': escape[1] = 'f'; break;
            case '\n': escape[1] = 'n'; break;
            case '\r': escape[1] = 'r'; break;
            case '\t': escape[1] = 't'; break;
            default:
                escape[1] = 'u';
                escape[2] = '0';
                escape[3] = '0';
                escape[4] = hex[c >> 4];
                escape[5] = hex[c & 0x0F];
                escape_len = 6;
            }
        } else if (c >= 0x80) {
            length = ah_utf8_sequence_length_(p + i, text.len - i);
            if (length > 0) {
                i += length; /* valid UTF-8: part of the unchanged run */
                continue;
            }
            replacement = "\xEF\xBF\xBD"; /* U+FFFD for this one invalid byte */
        } else {
            ++i;
            continue;
        }
        status = ah_write(out, text.data + run_start, i - run_start);
        if (status != AH_OK) return status;
        status = replacement ? ah_write(out, replacement, 3) : ah_write(out, escape, escape_len);
        if (status != AH_OK) return status;
        ++i;
        run_start = i;
    }
    return ah_write(out, text.data + run_start, i - run_start);
}

/**
 * Writes `text` to `out` as a complete JSON string: a quote, ah_json_write_escaped(), a quote.
 * An empty `text` gives `""`. Returns AH_OK or the writer's first negative status.
 */
static inline ah_status ah_json_write_string(const ah_writer *out, ah_str text) {
    ah_status status = ah_write(out, "\"", 1);
    if (status == AH_OK) status = ah_json_write_escaped(out, text);
    if (status == AH_OK) status = ah_write(out, "\"", 1);
    return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* Reading JSON                                                                                    */
/* ---------------------------------------------------------------------------------------------- */

/*
 * A scanner, not a parser: enough to read the members a C plugin needs from JSON the host already
 * checked (tool arguments, its config table) or from a server's answer, without a JSON library.
 * Every function reads only within the ah_str it is given (never up to a NUL) and never recurses,
 * so any input, however long or deep, is safe to hand it. It finds; it does not validate: a value
 * the scanner can skip but that is not valid JSON (say `[1,}`) is returned as it stands. Values
 * come back as RAW TOKENS: a string token keeps its quotes and escapes (decode it with
 * ah_json_string_decode()), an object or array token is its whole text (search it again with
 * ah_json_member(), or pass it on unchanged, as a provider does with a tool call's arguments).
 */

static inline const char *ah_json_skip_ws_(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) ++p;
    return p;
}

/* p points at '"'; returns the position after the closing quote, or NULL when unterminated. */
static inline const char *ah_json_skip_string_(const char *p, const char *end) {
    for (++p; p < end; ++p) {
        if (*p == '\\') {
            ++p;
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return NULL;
}

/* Returns the position after the JSON value starting at p, or NULL when there is none. */
static inline const char *ah_json_skip_value_(const char *p, const char *end) {
    size_t depth = 0;
    p = ah_json_skip_ws_(p, end);
    if (p >= end) return NULL;
    do {
        if (p >= end) return NULL; /* an object or array that never closes */
        if (*p == '"') {
            p = ah_json_skip_string_(p, end);
            if (!p) return NULL;
            continue;
        }
        if (*p == '{' || *p == '[') {
            ++depth;
        } else if (*p == '}' || *p == ']') {
            if (depth == 0) return NULL;
            --depth;
        } else if (depth == 0) {
            const char *start = p; /* a scalar: number, true, false, null */
            while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' && *p != '\r' &&
                   *p != '\n')
                ++p;
            return p > start ? p : NULL;
        }
        ++p;
    } while (depth > 0);
    return p;
}

/**
 * Finds the member `key` (NUL-terminated, compared byte for byte with the member's name as
 * written, so write it unescaped: "text", not "te\u0078t") of the JSON object `object`, at its
 * top level only. On success sets *value to the member's raw token (see above; it points into
 * `object`) and returns 1. Returns 0 when `object` is not an object, has no such member, or is
 * malformed before the member is reached; *value is then left alone. When a name is repeated, the
 * first wins.
 *     ah_str text;
 *     if (ah_json_member(call.arguments_json, "text", &text) && text.len > 0 && text.data[0] == '"') ...
 */
static inline int ah_json_member(ah_str object, const char *key, ah_str *value) {
    const char *p = object.data, *end = object.data + object.len;
    size_t key_len = strlen(key);
    if (object.len == 0) return 0;
    p = ah_json_skip_ws_(p, end);
    if (p >= end || *p != '{') return 0;
    p = ah_json_skip_ws_(p + 1, end);
    while (p < end && *p == '"') {
        const char *name = p + 1, *name_end = ah_json_skip_string_(p, end), *v, *v_end;
        if (!name_end) return 0;
        p = ah_json_skip_ws_(name_end, end);
        if (p >= end || *p != ':') return 0;
        v = ah_json_skip_ws_(p + 1, end);
        v_end = ah_json_skip_value_(v, end);
        if (!v_end) return 0;
        if ((size_t)(name_end - 1 - name) == key_len && memcmp(name, key, key_len) == 0) {
            value->data = v;
            value->len = (size_t)(v_end - v);
            return 1;
        }
        p = ah_json_skip_ws_(v_end, end);
        if (p >= end || *p != ',') return 0;
        p = ah_json_skip_ws_(p + 1, end);
    }
    return 0;
}

/* The value of one hex digit, or -1. */
static inline int ah_json_hex_digit_(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The 4 hex digits at p (the caller checked p + 4 <= end), or -1 when they are not hex. */
static inline long ah_json_hex4_(const char *p) {
    long value = 0;
    int i;
    for (i = 0; i < 4; ++i) {
        int digit = ah_json_hex_digit_(p[i]);
        if (digit < 0) return -1;
        value = value * 16 + digit;
    }
    return value;
}

/* Writes code point cp as UTF-8 at out; returns the number of bytes (1 to 4). */
static inline size_t ah_json_put_utf8_(char *out, unsigned long cp) {
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

/**
 * Decodes the JSON string token `token` (quotes included, as ah_json_member() returns it) into
 * `out`, a buffer of the caller's with room for `capacity` bytes, and sets *out_len to the decoded
 * length. The text is not NUL-terminated and may hold NUL bytes (from \u0000). A decoded string is
 * never longer than its token, so `capacity` = token.len always suffices. Escapes, surrogate pairs
 * included, become UTF-8; a lone UTF-16 surrogate becomes U+FFFD. Returns 1, or 0 when the token
 * is not a well-formed string or `out` is too small (the contents of `out` are then unspecified).
 *     char *text = malloc(token.len);
 *     size_t len;
 *     if (text && ah_json_string_decode(token, text, token.len, &len)) ...
 */
static inline int ah_json_string_decode(ah_str token, char *out, size_t capacity, size_t *out_len) {
    const char *p, *end;
    size_t o = 0;
    if (token.len < 2 || token.data[0] != '"' || token.data[token.len - 1] != '"') return 0;
    p = token.data + 1;
    end = token.data + token.len - 1; /* the closing quote */
    for (; p < end; ++p) {
        unsigned long cp;
        long unit;
        char unescaped = 0;
        if (*p == '"') return 0; /* an unescaped quote inside: two tokens, not one */
        if (*p != '\\') {
            if (o >= capacity) return 0;
            out[o++] = *p;
            continue;
        }
        if (++p >= end) return 0; /* a backslash escaping the closing quote */
        switch (*p) {
        case '"': unescaped = '"'; break;
        case '\\': unescaped = '\\'; break;
        case '/': unescaped = '/'; break;
        case 'b': unescaped = '\b'; break;
        case 'f': unescaped = '\f'; break;
        case 'n': unescaped = '\n'; break;
        case 'r': unescaped = '\r'; break;
        case 't': unescaped = '\t'; break;
        case 'u': break;
        default: return 0;
        }
        if (*p != 'u') {
            if (o >= capacity) return 0;
            out[o++] = unescaped;
            continue;
        }
        if (end - p < 5 || (unit = ah_json_hex4_(p + 1)) < 0) return 0;
        p += 4;
        cp = (unsigned long)unit;
        if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 7 && p[1] == '\\' && p[2] == 'u') {
            long low = ah_json_hex4_(p + 3); /* a surrogate pair: \uD83D\uDE42 is one emoji */
            if (low >= 0xDC00 && low <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((unsigned long)low - 0xDC00);
                p += 6;
            }
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
        if (capacity - o < 4) {
            char utf8[4];
            size_t n = ah_json_put_utf8_(utf8, cp);
            if (capacity - o < n) return 0;
            memcpy(out + o, utf8, n);
            o += n;
        } else {
            o += ah_json_put_utf8_(out + o, cp);
        }
    }
    *out_len = o;
    return 1;
}

/**
 * Reads the JSON number token `token` (as ah_json_member() returns it) into *out. Returns 1, or 0
 * when the token is not a JSON number by RFC 8259's grammar (a string such as "5", true, inf,
 * hex, "+1" and "01" are refused) or is longer than 63 bytes. strtod() reads it, so a program
 * that changed LC_NUMERIC from "C" must change it back first.
 */
static inline int ah_json_number(ah_str token, double *out) {
    char buffer[64];
    char *parsed_end;
    size_t i = 0, digits;
    if (token.len == 0 || token.len >= sizeof buffer) return 0;
    /* RFC 8259's grammar first, so strtod() never sees what JSON does not allow (hex, inf, "+1") */
    if (token.data[i] == '-') ++i;
    for (digits = 0; i < token.len && token.data[i] >= '0' && token.data[i] <= '9'; ++i) ++digits;
    if (digits == 0 || (digits > 1 && token.data[i - digits] == '0')) return 0;
    if (i < token.len && token.data[i] == '.') {
        for (++i, digits = 0; i < token.len && token.data[i] >= '0' && token.data[i] <= '9'; ++i) ++digits;
        if (digits == 0) return 0;
    }
    if (i < token.len && (token.data[i] == 'e' || token.data[i] == 'E')) {
        ++i;
        if (i < token.len && (token.data[i] == '+' || token.data[i] == '-')) ++i;
        for (digits = 0; i < token.len && token.data[i] >= '0' && token.data[i] <= '9'; ++i) ++digits;
        if (digits == 0) return 0;
    }
    if (i != token.len) return 0;
    memcpy(buffer, token.data, token.len);
    buffer[token.len] = '\0';
    *out = strtod(buffer, &parsed_end);
    return *parsed_end == '\0';
}

/* ---------------------------------------------------------------------------------------------- */
/* Tool results (see THE TOOL RESULT in agenthost.h)                                               */
/* ---------------------------------------------------------------------------------------------- */

/**
 * Writes a whole tool result with text content to `out`, for call_tool()'s `result` writer:
 *     {"content":"<content, escaped>","is_error":false}      (is_error == 0)
 *     {"content":"<content, escaped>","is_error":true}       (is_error != 0)
 * Use ah_result_write_error() for a failure that has a machine-readable cause. `content` is
 * borrowed. Returns AH_OK or the writer's first negative status; call_tool() should return it.
 */
static inline ah_status ah_result_write_text(const ah_writer *out, ah_str content, int is_error) {
    ah_status status = ah_write_cstr(out, "{\"content\":");
    if (status == AH_OK) status = ah_json_write_string(out, content);
    if (status == AH_OK)
        status = ah_write_cstr(out, is_error ? ",\"is_error\":true}" : ",\"is_error\":false}");
    return status;
}

/**
 * Writes an error result for a tool that ran and failed (the model reads `message` and may retry):
 *     {"content":"<message, escaped>","is_error":true,"error_code":"<error_code, escaped>"}
 * `error_code` is a short NUL-terminated cause such as "not_found" or "invalid_arguments"; NULL or
 * "" leaves "error_code" out. `message` says what went wrong and what to do, written for the
 * model. Both are borrowed. call_tool() still returns AH_OK after writing it (ABI rule 3); this
 * function returns AH_OK or the writer's first negative status.
 */
static inline ah_status ah_result_write_error(const ah_writer *out, const char *error_code, ah_str message) {
    ah_status status = ah_write_cstr(out, "{\"content\":");
    if (status == AH_OK) status = ah_json_write_string(out, message);
    if (status == AH_OK) status = ah_write_cstr(out, ",\"is_error\":true");
    if (status == AH_OK && error_code && error_code[0] != '\0') {
        status = ah_write_cstr(out, ",\"error_code\":");
        if (status == AH_OK) status = ah_json_write_string(out, ah_str_from_cstr(error_code));
    }
    if (status == AH_OK) status = ah_write(out, "}", 1);
    return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* Structs of other minors (ABI rule 1)                                                            */
/* ---------------------------------------------------------------------------------------------- */

/**
 * AH_STRUCT_HAS(type, struct_size, member) is 1 when a `type` whose writer set `struct_size` is big
 * enough to contain `member` entirely, else 0: the writer was compiled against a minor that has the
 * member. Use it before reading a member added after minor 0 from a struct the other side filled
 * (an older host's ah_host_api, say). `type` is the struct type as THIS header declares it.
 *     if (AH_STRUCT_HAS(ah_http_request, req->struct_size, resolve_to)) ... req->resolve_to ...
 * A member that is present may still be a NULL slot ("not supported"): see AH_HOST_HAS().
 */
#define AH_STRUCT_HAS(type, struct_size, member) \
    ((size_t)(struct_size) >= offsetof(type, member) + sizeof(((type *)0)->member))

/**
 * AH_HOST_HAS(api, slot) is 1 when the host services table `api` (a const ah_host_api *) has the
 * function slot `slot` and it is not NULL: the only safe test before calling a slot added after
 * minor 0 (an older host's table is shorter, and the bytes past its struct_size are not the host's).
 *     if (AH_HOST_HAS(api, tools_changed)) api->tools_changed(host);
 */
#define AH_HOST_HAS(api, slot) (AH_STRUCT_HAS(ah_host_api, (api)->struct_size, slot) && (api)->slot != NULL)

/**
 * Copies a struct the other side filled into `dst`, a local of your own compiled size `dst_size`,
 * following ABI rule 1: min(src's struct_size, dst_size) bytes are copied and the rest of `dst` is
 * zeroed, so members the writer did not know read as 0 / NULL and members you do not know are
 * ignored. `src` must start with its `size_t struct_size` (every ABI struct except ah_str does).
 * Returns the number of bytes copied.
 *     ah_call call;
 *     ah_struct_read(&call, sizeof call, raw_call);
 */
static inline size_t ah_struct_read(void *dst, size_t dst_size, const void *src) {
    size_t src_size, n;
    memcpy(&src_size, src, sizeof src_size); /* the first member of every sized struct */
    n = src_size < dst_size ? src_size : dst_size;
    memset(dst, 0, dst_size);
    memcpy(dst, src, n);
    return n;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AGENTHOST_HELPERS_H */
