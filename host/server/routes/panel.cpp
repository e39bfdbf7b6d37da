// The web panel's static files: index.html at /, the rest under /panel/. Open without a token
// (the page logs in through /login); nothing outside the panel's folder is ever served.
#include "server/replies.hpp"
#include "server/routes/routes.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace agenthost::server {

namespace {

// Above this size a file is sent as it is: the HTTP library compresses text with brotli at its
// highest level, which took 10 s for mermaid's 3.5 MB script on a loaded machine (an outside try).
constexpr uintmax_t kCompressUpTo = uintmax_t{256} * 1024;

const char* content_type(const std::string& ext, uintmax_t size) {
    // application/javascript is a type browsers run and the library does not compress.
    if (ext == ".js") return size > kCompressUpTo ? "application/javascript; charset=utf-8" : "text/javascript; charset=utf-8";
    return ext == ".html"  ? "text/html; charset=utf-8"
           : ext == ".css" ? "text/css; charset=utf-8"
           : ext == ".svg" ? "image/svg+xml"
                           : "text/plain; charset=utf-8";
}

// A file's version as an ETag: its size and modification time. A browser asks again each time
// (no-cache) and gets 304 while the file is unchanged, so a page load does not fetch the panel's
// megabytes of third-party scripts again.
std::string etag_of(const std::filesystem::path& file, uintmax_t size) {
    std::error_code ec;
    auto modified = std::filesystem::last_write_time(file, ec).time_since_epoch().count();
    return "\"" + std::to_string(size) + "-" + std::to_string(ec ? 0 : modified) + "\"";
}

void panel_file(const std::filesystem::path& dir, const std::string& name, const Request& req, Response& res) {
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
    const uintmax_t size = std::filesystem::file_size(dir / name, ec);
    const std::string etag = etag_of(dir / name, size);
    res.set_header("Cache-Control", "no-cache");
    res.set_header("ETag", etag);
    // Set on a 304 too: a browser takes a 304's headers into the copy it keeps.
    res.remove_header("Content-Security-Policy");
    res.set_header("Content-Security-Policy", kPanelCsp);
    // Its own forms must name their origin (the login form's POST): with no-referrer a browser sends
    // "Origin: null", which the server refuses. Links elsewhere carry rel="noreferrer" anyway.
    res.remove_header("Referrer-Policy");
    res.set_header("Referrer-Policy", "same-origin");
    if (req.header("If-None-Match") == etag) return res.set_status(304);
    std::stringstream data;
    data << in.rdbuf();
    res.set_content(data.str(), content_type(std::filesystem::path(name).extension().string(), size));
}

}  // namespace

void add_panel_routes(ServerCore& core, ServerState& state) {
    const std::filesystem::path& dir = state.settings.web_dir;
    const Access open{.open = true};
    core.get(
        "/", [&dir](const Request& req, Response& res) { panel_file(dir, "index.html", req, res); }, open);
    // Browsers ask for /favicon.ico by themselves (the login page has no <link rel="icon">).
    core.get(
        "/favicon.ico", [&dir](const Request& req, Response& res) { panel_file(dir, "icon.svg", req, res); }, open);
    core.get(R"(/panel/([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)?))",
             [&dir](const Request& req, Response& res) { panel_file(dir, req.match(1), req, res); }, open);
}

}  // namespace agenthost::server
