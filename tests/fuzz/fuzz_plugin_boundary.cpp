// The plugin boundary played by the fuzzer: a plugin answers every slot (tool result, context,
// resource list, resource) with the input's bytes, and the same bytes are read as a tool schema
// and as a JSON-RPC message. Invariants: nothing crashes or throws out, every tool result is
// usable (an object with a boolean is_error, valid UTF-8), and every MCP reply is valid JSON-RPC.
#include "app/host_app.hpp"
#include "common/bounded_json.hpp"
#include "common/schema_validator.hpp"
#include "mcp/mcp_server.hpp"

#include <dlfcn.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>

using nlohmann::json;
namespace io = agenthost::json_io;

namespace {

struct Host {
    std::unique_ptr<agenthost::app::HostApp> app;
    std::unique_ptr<agenthost::mcp::McpServer> server;
    agenthost::mcp::McpSession session;
    void (*set_output)(const char*, size_t) = nullptr;

    Host() {
        spdlog::set_level(spdlog::level::off);
        auto cfg = agenthost::config::defaults();
        cfg.data_dir = std::filesystem::temp_directory_path() / ("agenthost-fuzz-" + std::to_string(::getpid()));
        cfg.plugin_dirs = {AGENTHOST_FUZZ_PLUGIN_DIR};
        cfg.use_default_plugin_dirs = false;
        auto started = agenthost::app::HostApp::start(cfg);
        if (!started) std::abort();
        app = std::move(*started);
        void* lib = ::dlopen(AGENTHOST_FUZZ_PLUGIN_DIR "/fuzz_plugin/fuzz_plugin.so", RTLD_NOW | RTLD_NOLOAD);
        if (!lib) std::abort();  // the host did not load it
        set_output = reinterpret_cast<void (*)(const char*, size_t)>(::dlsym(lib, "fuzz_plugin_set_output"));
        if (!set_output) std::abort();
        server = std::make_unique<agenthost::mcp::McpServer>(*app);
        session.id = "fuzz";
        if (!server->handle(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})",
                            session, {}))
            std::abort();
    }
};

void check_jsonrpc(const std::optional<std::string>& reply) {
    if (!reply) return;
    auto parsed = io::parse(*reply, {256u << 20, 256});
    if (!parsed || !parsed->is_object() || (*parsed)["jsonrpc"] != "2.0") std::abort();
    if (!parsed->contains("result") && !parsed->contains("error")) std::abort();
}

}  // namespace

// The first byte picks the path (so each execution is short), the rest is what the plugin says.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static Host host;
    if (size == 0) return 0;
    const uint8_t path = data[0] % 5;
    std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
    host.set_output(bytes.data(), bytes.size());
    agenthost::plugins::CallInput call;
    switch (path) {
        case 0: {  // a tool result, straight and through MCP
            auto tool = host.app->catalogue().find("fz_say");
            if (!tool) std::abort();
            json result = host.app->invoker().call(*tool, agenthost::tools::Invocation{});
            if (!result.is_object() || !result["is_error"].is_boolean() || !io::valid_utf8(io::dump(result))) std::abort();
            check_jsonrpc(host.server->handle(
                R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fz_say","arguments":{}}})", host.session, {}));
            break;
        }
        case 1:  // context text
            if (!io::valid_utf8(host.app->registry().context(call))) std::abort();
            break;
        case 2:  // resource lists and documents
            check_jsonrpc(host.server->handle(R"({"jsonrpc":"2.0","id":2,"method":"resources/list"})", host.session, {}));
            check_jsonrpc(host.server->handle(R"({"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"x://y"}})",
                                              host.session, {}));
            break;
        case 3:  // the bytes as a tool's input schema
            if (auto schema = io::parse(bytes, {1 << 20, 64}, io::Utf8::repair);
                schema && agenthost::schema::check_tool_schema(*schema).empty())
                (void)agenthost::schema::validate_against_schema(json::object(), *schema);
            break;
        default:  // the bytes as a client's JSON-RPC message
            check_jsonrpc(host.server->handle(std::string(bytes), host.session, {}));
            break;
    }
    return 0;
}
