// The web panel's static files: index.html at /, the rest under /panel/. Open without a token
// (the page logs in through /login); nothing outside the panel's folder is ever served.
#include "server/replies.hpp"
#include "server/routes/routes.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace agenthost::server {

namespace {

const char* content_type(const std::string& ext) {
    return ext == ".html"  ? "text/html; charset=utf-8"
           : ext == ".js"  ? "text/javascript; charset=utf-8"
           : ext == ".css" ? "text/css; charset=utf-8"
           : ext == ".svg" ? "image/svg+xml"
                           : "text/plain; charset=utf-8";
}

void panel_file(const std::filesystem::path& dir, const std::string& name, Response& res) {
    if (name.find("..") != std::string::npos) return send_error(res, 404, "not_found", "no such file");
    std::error_code ec;
    bool file = std::filesystem::is_regular_file(dir / name, ec);  // a directory is never listed
    std::ifstream in(dir / name, std::ios::binary);
    if (!file || !in) {
        if (name == "index.html")
            return send_error(res, 404, "panel_missing",
                              "the web panel's files are not in " + dir.string() +
                                  ": build the web_panel target, install agenthost, or set [server] web_dir");
        return send_error(res, 404, "not_found", "no file " + name + " in the web panel");
    }
    std::stringstream data;
    data << in.rdbuf();
    res.set_header("Cache-Control", "no-cache");
    res.remove_header("Content-Security-Policy");
    res.set_header("Content-Security-Policy", kPanelCsp);
    // Its own forms must name their origin (the login form's POST): with no-referrer a browser sends
    // "Origin: null", which the server refuses. Links elsewhere carry rel="noreferrer" anyway.
    res.remove_header("Referrer-Policy");
    res.set_header("Referrer-Policy", "same-origin");
    res.set_content(data.str(), content_type(std::filesystem::path(name).extension().string()));
}

}  // namespace

void add_panel_routes(ServerCore& core, ServerState& state) {
    const std::filesystem::path& dir = state.settings.web_dir;
    const Access open{.open = true};
    core.get(
        "/", [&dir](const Request&, Response& res) { panel_file(dir, "index.html", res); }, open);
    core.get(R"(/panel/([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)?))",
             [&dir](const Request& req, Response& res) { panel_file(dir, req.match(1), res); }, open);
}

}  // namespace agenthost::server
