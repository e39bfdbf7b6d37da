/*
 * Unit tests of sdk/include/agenthost/agenthost_helpers.h, in C11, compiled with
 * -Wall -Wextra -Werror -pedantic (the helpers must be clean C, as a plugin author compiles them).
 * Each check prints what it expected and what it got; the exit status is the number of failures.
 */
#include <agenthost/agenthost_helpers.h>

#include <stdio.h>
#include <string.h>

/* A receiver: appends to a fixed buffer; refuses writes once `fail_after` calls were made. */
typedef struct buffer {
    char data[1024];
    size_t len;
    int calls;
    int fail_after; /* < 0: never fail */
} buffer;

static ah_status buffer_write(void *ctx, const char *data, size_t len) {
    buffer *b = (buffer *)ctx;
    if (b->fail_after >= 0 && b->calls >= b->fail_after) return AH_ERR_NO_MEMORY;
    ++b->calls;
    if (b->len + len >= sizeof b->data) return AH_ERR_NO_MEMORY;
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return AH_OK;
}

static int failures = 0;

static void reset(buffer *b, ah_writer *w) {
    memset(b, 0, sizeof *b);
    b->fail_after = -1;
    w->struct_size = sizeof *w;
    w->ctx = b;
    w->write = buffer_write;
}

static void expect_bytes(const char *what, const buffer *b, const char *expected, size_t expected_len) {
    if (b->len != expected_len || memcmp(b->data, expected, expected_len) != 0) {
        ++failures;
        printf("FAIL %s\n  expected (%u bytes): %.*s\n  got      (%u bytes): %.*s\n", what,
               (unsigned)expected_len, (int)expected_len, expected, (unsigned)b->len, (int)b->len, b->data);
    } else {
        printf("ok   %s\n", what);
    }
}

#define EXPECT_TEXT(what, b, literal) expect_bytes(what, b, literal, sizeof(literal) - 1)

static void expect_true(const char *what, int condition) {
    if (!condition) ++failures;
    printf("%s %s\n", condition ? "ok  " : "FAIL", what);
}

/* Escapes `len` bytes of `input` as a JSON string and compares with `expected`. */
static void check_string(const char *what, const char *input, size_t len, const char *expected) {
    buffer b;
    ah_writer w;
    ah_str text;
    ah_status status;
    reset(&b, &w);
    text.data = input;
    text.len = len;
    status = ah_json_write_string(&w, text);
    expect_true(what, status == AH_OK);
    expect_bytes(what, &b, expected, strlen(expected));
}

static void test_escaping(void) {
    static const char nul_inside[] = {'a', '\0', 'b'};
    check_string("empty string", "", 0, "\"\"");
    check_string("empty string with NULL data", NULL, 0, "\"\"");
    check_string("plain ASCII unchanged", "hello, world", 12, "\"hello, world\"");
    check_string("quote and backslash", "say \"hi\" \\ bye", 14, "\"say \\\"hi\\\" \\\\ bye\"");
    check_string("named control escapes", "\b\f\n\r\t", 5, "\"\\b\\f\\n\\r\\t\"");
    check_string("other control chars as \\u00XX", "\x01\x1f\x0b", 3, "\"\\u0001\\u001f\\u000b\"");
    check_string("embedded NUL kept as \\u0000", nul_inside, sizeof nul_inside, "\"a\\u0000b\"");
    check_string("DEL passes through", "\x7f", 1, "\"\x7f\"");
    check_string("slash not escaped", "a/b", 3, "\"a/b\"");
    check_string("2-, 3- and 4-byte UTF-8 pass through", "\xc3\xbc\xe2\x82\xac\xf0\x9f\x99\x82", 9,
                 "\"\xc3\xbc\xe2\x82\xac\xf0\x9f\x99\x82\"");
    check_string("highest code point U+10FFFF passes", "\xf4\x8f\xbf\xbf", 4, "\"\xf4\x8f\xbf\xbf\"");
    check_string("stray continuation byte replaced", "a\x80z", 3, "\"a\xef\xbf\xbdz\"");
    check_string("truncated sequence replaced byte by byte", "\xe2\x82", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\"");
    check_string("overlong '/' replaced", "\xc0\xaf", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\"");
    check_string("surrogate U+D800 replaced", "\xed\xa0\x80", 3, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
    check_string("above U+10FFFF replaced", "\xf4\x90\x80\x80", 4,
                 "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
    check_string("only the given length is read", "abc\"def", 3, "\"abc\"");

    { /* Unchanged runs go out in one write: quote, run, escape, run, quote. */
        buffer b;
        ah_writer w;
        reset(&b, &w);
        ah_json_write_string(&w, ah_str_from_cstr("abc\ndef"));
        expect_true("runs written in one piece (5 writes)", b.calls == 5);
    }
    { /* Without quotes. */
        buffer b;
        ah_writer w;
        reset(&b, &w);
        ah_json_write_escaped(&w, ah_str_from_cstr("x\"y"));
        EXPECT_TEXT("escaped contents without quotes", &b, "x\\\"y");
    }
}

static void test_results(void) {
    buffer b;
    ah_writer w;
    ah_status status;

    reset(&b, &w);
    status = ah_result_write_text(&w, ah_str_from_cstr("5"), 0);
    expect_true("text result status", status == AH_OK);
    EXPECT_TEXT("text result", &b, "{\"content\":\"5\",\"is_error\":false}");

    reset(&b, &w);
    ah_result_write_text(&w, ah_str_from_cstr("line 1\nline \"2\""), 1);
    EXPECT_TEXT("text result flagged as error, escaped", &b,
                "{\"content\":\"line 1\\nline \\\"2\\\"\",\"is_error\":true}");

    reset(&b, &w);
    ah_result_write_error(&w, "not_found", ah_str_from_cstr("no file \"a\\b\""));
    EXPECT_TEXT("error result with error_code", &b,
                "{\"content\":\"no file \\\"a\\\\b\\\"\",\"is_error\":true,\"error_code\":\"not_found\"}");

    reset(&b, &w);
    ah_result_write_error(&w, NULL, ah_str_from_cstr("broken"));
    EXPECT_TEXT("error result without error_code", &b, "{\"content\":\"broken\",\"is_error\":true}");

    /* A writer that refuses: the first negative status comes back and nothing more is written. */
    reset(&b, &w);
    b.fail_after = 2;
    status = ah_result_write_error(&w, "x", ah_str_from_cstr("message"));
    expect_true("writer failure returned", status == AH_ERR_NO_MEMORY);
    expect_true("writing stops at the failure", b.calls == 2);
    EXPECT_TEXT("only what was accepted is there", &b, "{\"content\":\"");
}

static void test_strings(void) {
    ah_str s = ah_str_from_cstr("echo");
    ah_str none = ah_str_from_cstr(NULL);
    ah_str prefix = {"echoes", 4};
    expect_true("ah_str_from_cstr length", s.len == 4);
    expect_true("ah_str_from_cstr(NULL) is empty", none.len == 0);
    expect_true("ah_str_equals same", ah_str_equals(s, "echo"));
    expect_true("ah_str_equals a prefix of the ah_str", ah_str_equals(prefix, "echo"));
    expect_true("ah_str_equals longer text differs", !ah_str_equals(s, "echoes"));
    expect_true("ah_str_equals shorter text differs", !ah_str_equals(s, "ech"));
    expect_true("ah_str_equals empty", ah_str_equals(none, ""));
}

/* A host table as a 1.0 host compiled it: it ends before the 1.3 slot tools_changed. */
static ah_status fake_tools_changed(ah_host *host) {
    (void)host;
    return AH_OK;
}

static void test_struct_sizes(void) {
    ah_host_api api;
    ah_http_request request;
    ah_call raw, copy;
    size_t old_host_size = offsetof(ah_host_api, tools_changed);
    size_t old_request_size = offsetof(ah_http_request, flags);

    memset(&api, 0, sizeof api);
    api.struct_size = sizeof api;
    api.tools_changed = fake_tools_changed;
    expect_true("a current host has tools_changed", AH_HOST_HAS(&api, tools_changed));
    expect_true("a current host has log (a 1.0 slot)", AH_STRUCT_HAS(ah_host_api, api.struct_size, log));
    api.tools_changed = NULL;
    expect_true("a NULL slot is not there", !AH_HOST_HAS(&api, tools_changed));
    api.tools_changed = fake_tools_changed;
    api.struct_size = old_host_size;
    expect_true("an older host's table lacks tools_changed", !AH_HOST_HAS(&api, tools_changed));
    expect_true("an older host's table still has is_cancelled",
                AH_STRUCT_HAS(ah_host_api, api.struct_size, is_cancelled));
    api.struct_size = old_host_size + sizeof(void *) - 1;
    expect_true("a member cut in half is not there",
                !AH_STRUCT_HAS(ah_host_api, api.struct_size, tools_changed));

    request.struct_size = old_request_size;
    expect_true("a 1.0 request has no flags", !AH_STRUCT_HAS(ah_http_request, request.struct_size, flags));
    expect_true("a 1.0 request has its timeout",
                AH_STRUCT_HAS(ah_http_request, request.struct_size, connect_timeout_ms));

    /* ah_struct_read: a shorter writer's struct; what it did not fill reads as zero. */
    memset(&raw, 0xAB, sizeof raw);
    raw.struct_size = offsetof(ah_call, request_context_json);
    raw.call_id = ah_str_from_cstr("c1");
    memset(&copy, 0xCD, sizeof copy);
    expect_true("ah_struct_read copies the writer's size",
                ah_struct_read(&copy, sizeof copy, &raw) == offsetof(ah_call, request_context_json));
    expect_true("known members copied", ah_str_equals(copy.call_id, "c1"));
    expect_true("unknown members zeroed", copy.request_context_json.data == NULL &&
                                              copy.request_context_json.len == 0 && copy.cancel == NULL);
    /* A bigger (newer) writer: only our own size is copied. */
    {
        unsigned char bigger[sizeof(ah_call) + 16];
        size_t big = sizeof bigger;
        memset(bigger, 0x11, sizeof bigger);
        memcpy(bigger, &big, sizeof big);
        memset(&copy, 0, sizeof copy);
        expect_true("a newer writer's struct is cut to our size",
                    ah_struct_read(&copy, sizeof copy, bigger) == sizeof copy);
    }
}

/* Finds `key` in `object` and compares the raw token with `expected` (NULL: must not be found). */
static void check_member(const char *what, const char *object, const char *key, const char *expected) {
    ah_str token = {NULL, 0};
    int found = ah_json_member(ah_str_from_cstr(object), key, &token);
    if (!expected) {
        expect_true(what, !found && token.data == NULL);
        return;
    }
    expect_true(what, found && token.len == strlen(expected) && memcmp(token.data, expected, token.len) == 0);
    if (found && (token.len != strlen(expected) || memcmp(token.data, expected, token.len) != 0))
        printf("  expected %s\n  got      %.*s\n", expected, (int)token.len, token.data);
}

/* Decodes the string token `token` and compares with `expected_len` bytes of `expected`. */
static void check_decode(const char *what, const char *token, const char *expected, size_t expected_len) {
    char out[64];
    size_t len = 0;
    int ok = ah_json_string_decode(ah_str_from_cstr(token), out, strlen(token), &len);
    expect_true(what, ok && len == expected_len && memcmp(out, expected, len) == 0);
}

static void test_reading(void) {
    static const char object[] =
        " { \"a\" : 1, \"text\":\"say \\\"hi\\\"\", \"nested\": {\"text\": [1, {\"x\": \"]\"}]},"
        " \"list\": [true, null, -2.5e3], \"last\": false } ";
    char small[2];
    size_t len = 0;
    double number = 0;
    ah_str cut;

    check_member("a number member", object, "a", "1");
    check_member("a string member keeps its quotes and escapes", object, "text", "\"say \\\"hi\\\"\"");
    check_member("an object member is its whole text", object, "nested", "{\"text\": [1, {\"x\": \"]\"}]}");
    check_member("an array member", object, "list", "[true, null, -2.5e3]");
    check_member("the last member", object, "last", "false");
    check_member("a missing member", object, "none", NULL);
    check_member("a nested name is not a top-level member", "{\"o\": {\"deep\": 1}}", "deep", NULL);
    check_member("a repeated name: the first wins", "{\"k\": 1, \"k\": 2}", "k", "1");
    check_member("not an object", "[1, 2]", "a", NULL);
    check_member("the empty text", "", "a", NULL);
    check_member("an unterminated string before the member", "{\"x\": \"open, \"a\": 1", "a", NULL);
    check_member("an object that never closes", "{\"x\": {\"y\": 1, \"a\": 2", "a", NULL);
    check_member("members without a comma stop the scan", "{\"x\": 1 \"a\": 2}", "a", NULL);

    /* A member that ends exactly at the end of a length-bounded view, no NUL after it. */
    cut.data = "{\"a\": 12345}";
    cut.len = 9; /* {"a": 123 */
    expect_true("a view cut short is not read past its length",
                ah_json_member(cut, "a", &cut) && cut.len == 3 && memcmp(cut.data, "123", 3) == 0);

    check_decode("plain text", "\"hello\"", "hello", 5);
    check_decode("named escapes", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t", 8);
    check_decode("\\u escapes to UTF-8", "\"\\u00fc\\u20ac\"", "\xc3\xbc\xe2\x82\xac", 5);
    check_decode("a surrogate pair is one emoji", "\"\\ud83d\\ude42\"", "\xf0\x9f\x99\x82", 4);
    check_decode("a lone surrogate becomes U+FFFD", "\"a\\ud83db\"",
                 "a\xef\xbf\xbd"
                 "b",
                 5);
    check_decode("\\u0000 is kept as a NUL byte", "\"a\\u0000b\"", "a\0b", 3);
    check_decode("the empty string", "\"\"", "", 0);
    expect_true("a bad escape is refused",
                !ah_json_string_decode(ah_str_from_cstr("\"\\x\""), small, sizeof small, &len));
    expect_true("bad hex is refused",
                !ah_json_string_decode(ah_str_from_cstr("\"\\u12g4\""), small, sizeof small, &len));
    expect_true("a backslash before the closing quote is refused",
                !ah_json_string_decode(ah_str_from_cstr("\"ab\\\""), small, sizeof small, &len));
    expect_true("not a string token is refused",
                !ah_json_string_decode(ah_str_from_cstr("12"), small, sizeof small, &len));
    expect_true("a buffer too small is refused, not overrun",
                !ah_json_string_decode(ah_str_from_cstr("\"abc\""), small, sizeof small, &len));
    expect_true("a multi-byte character that does not fit is refused",
                !ah_json_string_decode(ah_str_from_cstr("\"a\\u20ac\""), small, sizeof small, &len));

    expect_true("a number", ah_json_number(ah_str_from_cstr("-2.5e3"), &number) && number == -2500.0);
    expect_true("a string is not a number", !ah_json_number(ah_str_from_cstr("\"5\""), &number));
    expect_true("inf is not a JSON number", !ah_json_number(ah_str_from_cstr("inf"), &number));
    expect_true("hex is not a JSON number", !ah_json_number(ah_str_from_cstr("0x10"), &number));
    expect_true("a leading zero is not JSON", !ah_json_number(ah_str_from_cstr("012"), &number));
    expect_true("zero and a fraction", ah_json_number(ah_str_from_cstr("0.25"), &number) && number == 0.25);
    expect_true("a bare exponent is not a number", !ah_json_number(ah_str_from_cstr("1e"), &number));
    expect_true("trailing garbage is not a number", !ah_json_number(ah_str_from_cstr("12abc"), &number));
}

int main(void) {
    test_escaping();
    test_results();
    test_strings();
    test_struct_sizes();
    test_reading();
    printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
