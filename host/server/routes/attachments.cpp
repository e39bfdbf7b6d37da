// Attachments: a file the person adds to a message in the web panel is saved into the named folder
// the operator allows ([server] attachment_folder) by the folders plugin's own save_file tool, under
// the same policy and path rules as any call of it, so the agent's tools (read_file) can read it.
#include "common/bounded_json.hpp"
#include "common/ids.hpp"
#include "server/replies.hpp"
#include "server/routes/routes.hpp"
#include "tools/invoker.hpp"
#include "tools/policy.hpp"

#include <string_view>
#include <utility>

namespace agenthost::server {
using nlohmann::json;

namespace {

constexpr const char* kSaveTool = "save_file";

// How save_file's refusals reach the person: the plugin's error code → an HTTP status.
constexpr std::pair<std::string_view, int> kRefusalStatus[] = {
    {"validation_failed", 400}, {"forbidden", 403},       {"folder_not_set", 409},
    {"not_found", 409},         {"not_a_directory", 409}, {"invalid_arguments", 400},
};

int refusal_status(std::string_view code) {
    for (const auto& [known, status] : kRefusalStatus)
        if (code == known) return status;
    return 500;
}

size_t max_attachment_bytes(const ServerState& state) { return static_cast<size_t>(state.settings.max_attachment_mb) << 20; }

// The name a file is saved under: the last part of what the browser sent (a path never leads
// elsewhere), without control characters.
std::string plain_file_name(const std::string& given) {
    const size_t slash = given.find_last_of("/\\");
    std::string out;
    for (char c : given.substr(slash == std::string::npos ? 0 : slash + 1))
        if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) out += c;
    return out == "." || out == ".." ? std::string() : out;
}

// GET: where attachments go and how large one may be; the panel offers its button only when on.
void attachment_settings(ServerState& state, Response& res) {
    const std::string& folder = state.settings.attachment_folder;
    const bool tool = state.app.catalogue().find(kSaveTool, tools::Scope::plugins_only).has_value();
    send_json(res, 200, {{"enabled", !folder.empty() && tool}, {"folder", folder}, {"max_bytes", max_attachment_bytes(state)}});
}

// POST {"name", "content_base64"}: saves the file, a taken name numbered → 201 {"folder", "path", "bytes"}.
void attach(ServerState& state, const std::string& text, Response& res) {
    const std::string& folder = state.settings.attachment_folder;
    if (folder.empty())
        return send_error(res, 409, "attachments_off",
                          "this server takes no attachments: set [server] attachment_folder (agenthost.toml) to a folder of "
                          "[plugins.folders] folders");
    auto body = body_object(text, max_attachment_bytes(state) / 3 * 4 + 65536, res);
    if (!body) return;
    Fields f{*body};
    const std::string name = plain_file_name(f.str("name"));
    const std::string content = f.str("content_base64");
    if (!f.ok(res)) return;
    if (name.empty()) return send_error(res, 400, "invalid_name", "\"name\" must be the file's name, e.g. \"notes.txt\"");
    app::HostApp& app = state.app;
    auto tool = app.catalogue().find(kSaveTool, tools::Scope::plugins_only);
    if (!tool)
        return send_error(
            res, 409, "attachments_off",
            "the folders plugin is not loaded, and its save_file tool keeps attachments: enable it (enabled_plugins)");
    json args{{"name", folder}, {"path", name}, {"content_base64", content}};
    tools::CallSite site;
    site.scope = tools::Scope::plugins_only;
    site.approved = true;  // the person chose this file to attach: their own approval
    auto verdict = tools::decide(app.catalogue(), tool, kSaveTool, args, site);
    if (verdict.kind == tools::Verdict::Kind::refuse) return send_error(res, 403, verdict.error_code(), verdict.message);
    if (auto invalid = app.invoker().check_arguments(*tool, args))
        return send_error(res, 400, "invalid_attachment", tools::content_text(*invalid));
    tools::Invocation call;
    call.call_id = "attach-" + random_hex(8);
    call.arguments = std::move(args);
    call.approved = true;
    json result = app.invoker().call(*tool, call);
    if (json_io::get_bool(result, "is_error", false)) {
        const std::string code = json_io::get_string(result, "error_code", "tool_failed");
        return send_error(res, refusal_status(code), code, tools::content_text(result));
    }
    send_json(res, 201, result.contains("structured") ? result["structured"] : json{{"folder", folder}, {"path", name}});
}

}  // namespace

void add_attachment_routes(ServerCore& core, ServerState& state) {
    core.get("/api/attachments", [&state](const Request&, Response& res) { attachment_settings(state, res); });
    core.post(
        "/api/attachments", [&state](const Request&, const std::string& body, Response& res) { attach(state, body, res); }, {},
        max_attachment_bytes(state) / 3 * 4 + 65536);
}

}  // namespace agenthost::server
