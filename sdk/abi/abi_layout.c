/*
 * abi_layout — prints the size of every public struct of agenthost.h at each ABI minor, and the
 * offset and size of each member, as compiled on this machine. docs/abi-layout.md is its output on
 * x86_64 Linux (scripts/update-abi-layout writes it; the test sdk_abi_layout_doc compares it), and
 * the Rust example checks its hand-written #[repr(C)] bindings against it.
 *
 *   abi_layout            the Markdown page
 *   abi_layout --sizes M  "<struct> <size>" lines: each struct's size as minor M declared it
 *
 * Members added after minor 0 sit behind #if AH_ABI_MINOR >= N, so this file also compiles against
 * an older header (tests/fixtures/sdk-1.0): the sizes it then gives are the real ones of that minor,
 * which the test compares with the sizes this table derives for it.
 *
 * A member appended to a struct in agenthost.h must be added here too, with its minor; the checks
 * in main() fail when the listed members do not account for a struct's sizeof.
 */
#include <agenthost/agenthost.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct member {
    const char *name;
    size_t offset;
    size_t size;
    unsigned since; /* the minor that appended it */
} member;

typedef struct layout {
    const char *name;
    size_t size;  /* sizeof at this header's minor */
    size_t align; /* _Alignof */
    const member *members;
    size_t count;
} layout;

#define M(type, field, minor) \
    { #field, offsetof(type, field), sizeof(((type *)0)->field), minor }
#define LAYOUT(type, list) \
    { #type, sizeof(type), _Alignof(type), list, sizeof(list) / sizeof(list[0]) }

static const member str_members[] = {M(ah_str, data, 0), M(ah_str, len, 0)};

static const member writer_members[] = {M(ah_writer, struct_size, 0), M(ah_writer, ctx, 0),
                                        M(ah_writer, write, 0)};

static const member http_request_members[] = {
    M(ah_http_request, struct_size, 0),
    M(ah_http_request, method, 0),
    M(ah_http_request, url, 0),
    M(ah_http_request, headers_json, 0),
    M(ah_http_request, body, 0),
    M(ah_http_request, timeout_ms, 0),
    M(ah_http_request, connect_timeout_ms, 0),
#if AH_ABI_MINOR >= 1
    M(ah_http_request, flags, 1),
    M(ah_http_request, resolve_to, 1),
#endif
};

static const member http_sink_members[] = {M(ah_http_sink, struct_size, 0), M(ah_http_sink, ctx, 0),
                                           M(ah_http_sink, on_head, 0), M(ah_http_sink, on_body, 0)};

static const member host_api_members[] = {
    M(ah_host_api, struct_size, 0),      M(ah_host_api, abi_major, 0),  M(ah_host_api, abi_minor, 0),
    M(ah_host_api, host_version, 0),     M(ah_host_api, log, 0),        M(ah_host_api, get_config, 0),
    M(ah_host_api, kv_get, 0),           M(ah_host_api, kv_set, 0),     M(ah_host_api, kv_delete, 0),
    M(ah_host_api, memory_get, 0),       M(ah_host_api, memory_set, 0), M(ah_host_api, post_event, 0),
    M(ah_host_api, http_request, 0),     M(ah_host_api, data_dir, 0),   M(ah_host_api, is_cancelled, 0),
#if AH_ABI_MINOR >= 3
    M(ah_host_api, tools_changed, 3),
#endif
#if AH_ABI_MINOR >= 5
    M(ah_host_api, progress, 5),         M(ah_host_api, sample, 5),     M(ah_host_api, elicit, 5),
    M(ah_host_api, resource_updated, 5),
#endif
};

static const member tool_def_members[] = {
    M(ah_tool_def, struct_size, 0), M(ah_tool_def, name, 0),
    M(ah_tool_def, description, 0), M(ah_tool_def, input_schema_json, 0),
    M(ah_tool_def, hints, 0),
#if AH_ABI_MINOR >= 5
    M(ah_tool_def, title, 5),       M(ah_tool_def, output_schema_json, 5),
#endif
};

static const member tool_sink_members[] = {M(ah_tool_sink, struct_size, 0), M(ah_tool_sink, ctx, 0),
                                           M(ah_tool_sink, add, 0)};

static const member call_members[] = {M(ah_call, struct_size, 0),     M(ah_call, call_id, 0),
                                      M(ah_call, tool_name, 0),       M(ah_call, arguments_json, 0),
                                      M(ah_call, conversation_id, 0), M(ah_call, request_context_json, 0),
                                      M(ah_call, cancel, 0)};

static const member event_sink_members[] = {M(ah_event_sink, struct_size, 0), M(ah_event_sink, ctx, 0),
                                            M(ah_event_sink, emit, 0)};

static const member plugin_members[] = {
    M(ah_plugin, struct_size, 0),    M(ah_plugin, abi_major, 0),     M(ah_plugin, abi_minor, 0),
    M(ah_plugin, kind, 0),           M(ah_plugin, flags, 0),         M(ah_plugin, name, 0),
    M(ah_plugin, version, 0),        M(ah_plugin, create, 0),        M(ah_plugin, destroy, 0),
    M(ah_plugin, list_tools, 0),     M(ah_plugin, call_tool, 0),     M(ah_plugin, context, 0),
    M(ah_plugin, chat, 0),           M(ah_plugin, list_models, 0),
#if AH_ABI_MINOR >= 2
    M(ah_plugin, list_resources, 2), M(ah_plugin, read_resource, 2),
#endif
#if AH_ABI_MINOR >= 4
    M(ah_plugin, health, 4),
#endif
#if AH_ABI_MINOR >= 5
    M(ah_plugin, list_prompts, 5),   M(ah_plugin, get_prompt, 5),    M(ah_plugin, list_resource_templates, 5),
    M(ah_plugin, complete, 5),
#endif
};

/* In the header's order. */
static const layout layouts[] = {
    LAYOUT(ah_str, str_members),
    LAYOUT(ah_writer, writer_members),
    LAYOUT(ah_http_request, http_request_members),
    LAYOUT(ah_http_sink, http_sink_members),
    LAYOUT(ah_host_api, host_api_members),
    LAYOUT(ah_tool_def, tool_def_members),
    LAYOUT(ah_tool_sink, tool_sink_members),
    LAYOUT(ah_call, call_members),
    LAYOUT(ah_event_sink, event_sink_members),
    LAYOUT(ah_plugin, plugin_members),
};
#define LAYOUT_COUNT (sizeof layouts / sizeof layouts[0])

/* The struct's size as minor `minor` declared it: its members up to that minor, padded. */
static size_t size_at(const layout *l, unsigned minor) {
    size_t end = 0, i;
    for (i = 0; i < l->count; ++i)
        if (l->members[i].since <= minor && l->members[i].offset + l->members[i].size > end)
            end = l->members[i].offset + l->members[i].size;
    return (end + l->align - 1) / l->align * l->align;
}

/* The members listed must be the whole struct, in order, appended minor by minor. */
static int check(const layout *l) {
    size_t i;
    int ok = 1;
    for (i = 0; i < l->count; ++i) {
        const member *m = &l->members[i];
        if (i > 0) {
            const member *prev = &l->members[i - 1];
            /* A gap of alignment or more means a member is missing from the list. */
            if (m->offset < prev->offset + prev->size ||
                m->offset - (prev->offset + prev->size) >= l->align) {
                fprintf(stderr, "%s: a member between %s and %s is not listed\n", l->name, prev->name,
                        m->name);
                ok = 0;
            }
            if (m->since < prev->since) {
                fprintf(stderr, "%s.%s: members are only ever appended (since %u after %u)\n", l->name,
                        m->name, m->since, prev->since);
                ok = 0;
            }
        }
        if (m->since > AH_ABI_MINOR) {
            fprintf(stderr, "%s.%s: since minor %u, after this header's %d\n", l->name, m->name, m->since,
                    AH_ABI_MINOR);
            ok = 0;
        }
    }
    if (size_at(l, AH_ABI_MINOR) != l->size) {
        fprintf(stderr, "%s: sizeof is %u but the listed members make %u: a member is not listed\n", l->name,
                (unsigned)l->size, (unsigned)size_at(l, AH_ABI_MINOR));
        ok = 0;
    }
    return ok;
}

static void print_page(void) {
    size_t i, j;
    unsigned minor;
    printf("# ABI layout: struct sizes and member offsets\n\n");
    printf(
        "<!-- Generated by scripts/update-abi-layout from sdk/abi/abi_layout.c. Do not edit: the test\n"
        "     sdk_abi_layout_doc fails when this page differs from what agenthost.h gives. -->\n\n");
    printf(
        "Every public struct of [`agenthost.h`](../sdk/include/agenthost/agenthost.h) (ABI %d.%d) as\n"
        "compiled on x86_64 Linux (LP64: pointers and `size_t` are 8 bytes, `uint32_t` and `int32_t` 4).\n"
        "Use it to check bindings written by hand in another language (the Rust example's tests read this\n"
        "table), and to know which minor wrote a struct you receive: its `struct_size` is the size that\n"
        "minor declared. Members are only ever appended, so an offset never changes.\n\n",
        AH_ABI_MAJOR, AH_ABI_MINOR);

    printf("## Sizes per ABI minor\n\n| struct |");
    for (minor = 0; minor <= AH_ABI_MINOR; ++minor) printf(" %d.%u |", AH_ABI_MAJOR, minor);
    printf(" alignment |\n|---|");
    for (minor = 0; minor <= AH_ABI_MINOR; ++minor) printf("---:|");
    printf("---:|\n");
    for (i = 0; i < LAYOUT_COUNT; ++i) {
        printf("| `%s` |", layouts[i].name);
        for (minor = 0; minor <= AH_ABI_MINOR; ++minor)
            printf(" %u |", (unsigned)size_at(&layouts[i], minor));
        printf(" %u |\n", (unsigned)layouts[i].align);
    }
    printf("\n`ah_str` is frozen (no `struct_size`); every other struct starts with `size_t struct_size`.\n");

    printf("\n## Members\n");
    for (i = 0; i < LAYOUT_COUNT; ++i) {
        printf("\n### `%s`\n\n| member | offset | size | since |\n|---|---:|---:|---|\n", layouts[i].name);
        for (j = 0; j < layouts[i].count; ++j) {
            const member *m = &layouts[i].members[j];
            printf("| `%s` | %u | %u | %d.%u |\n", m->name, (unsigned)m->offset, (unsigned)m->size,
                   AH_ABI_MAJOR, m->since);
        }
    }
}

int main(int argc, char **argv) {
    size_t i;
    int ok = 1;
    for (i = 0; i < LAYOUT_COUNT; ++i) ok = check(&layouts[i]) && ok;
    if (!ok) return 1;
    if (argc == 3 && strcmp(argv[1], "--sizes") == 0) {
        unsigned minor = (unsigned)strtoul(argv[2], NULL, 10);
        for (i = 0; i < LAYOUT_COUNT; ++i)
            printf("%s %u\n", layouts[i].name, (unsigned)size_at(&layouts[i], minor));
        return 0;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: abi_layout [--sizes MINOR]\n");
        return 2;
    }
    print_page();
    return 0;
}
