// A plugin whose every answer is whatever the fuzzer says: fuzz_plugin_boundary sets the bytes
// through fuzz_plugin_set_output() (found with dlsym), then calls the host paths that read them.
#include <agenthost/agenthost.h>

#include <cstring>
#include <string>

struct ah_instance {
    int unused;
};

namespace {

std::string g_output;  // one fuzz input at a time; the target is single-threaded

ah_status write(const ah_writer* out) { return out->write(out->ctx, g_output.data(), g_output.size()); }

const ah_plugin descriptor = [] {
    ah_plugin d{};
    d.struct_size = sizeof d;
    d.abi_major = AH_ABI_MAJOR;
    d.abi_minor = AH_ABI_MINOR;
    d.kind = AH_PLUGIN_KIND_TOOL;
    d.name = "fuzz_plugin";
    d.version = "0.1.0";
    d.create = [](const ah_host_api*, ah_host*, ah_instance** out, const ah_writer*) -> ah_status {
        *out = new ah_instance{0};
        return AH_OK;
    };
    d.destroy = [](ah_instance* self) { delete self; };
    d.list_tools = [](ah_instance*, const ah_tool_sink* sink) -> ah_status {
        const char* schema = R"({"type":"object","properties":{"x":{"type":"string"}}})";
        ah_tool_def def{sizeof(ah_tool_def), {"fz_say", 6}, {"fuzz", 4}, {schema, std::strlen(schema)}, AH_TOOL_READ_ONLY};
        return sink->add(sink->ctx, &def);
    };
    d.call_tool = [](ah_instance*, const ah_call*, const ah_writer* result) { return write(result); };
    d.context = [](ah_instance*, const ah_call*, const ah_writer* out) { return write(out); };
    d.list_resources = [](ah_instance*, const ah_call*, const ah_writer* out) { return write(out); };
    d.read_resource = [](ah_instance*, const ah_call*, const ah_writer* out) { return write(out); };
    return d;
}();

}  // namespace

extern "C" AH_EXPORT void fuzz_plugin_set_output(const char* data, size_t size) { g_output.assign(data, size); }

AH_PLUGIN_ENTRY {
    *out_plugin = &descriptor;
    return AH_OK;
}
