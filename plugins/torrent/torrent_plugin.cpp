// torrent: search for torrents (Knaben or Torznab indexers) and drive qBittorrent. Search results
// are kept in the conversation's memory ("search_results", numbered 1, 2, 3 …, topic "choosing a
// torrent", then "downloading: NAME" once added, "downloaded: NAME" when it finishes) so "get
// number 2" works on the next turn. Downloads added through the plugin are
// tracked; a background poll tells the conversation when one finishes, the context hook shows
// the active ones in the prompt, and the resource torrent://downloads shows them all, read live
// from qBittorrent (a front end's downloads panel).
#include "format.hpp"
#include "qbittorrent.hpp"
#include "search.hpp"

#include <agenthost/plugin.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <variant>

namespace {

namespace fs = std::filesystem;
using agenthost::sdk::Call;
using agenthost::sdk::Tool;
using agenthost::sdk::ToolResult;
using nlohmann::json;
using torrent::FormField;

json hit_json(const torrent::Hit& h, int index) {
    return {{"index", index},     {"title", h.title},     {"size", torrent::human_size(h.bytes)},
            {"bytes", h.bytes},   {"seeders", h.seeders}, {"peers", h.peers},
            {"date", h.date},     {"source", h.source},   {"infohash", h.infohash},
            {"magnet", h.magnet}, {"link", h.link}};
}

std::string hit_line(const json& h) {
    std::string line = std::to_string(h.value("index", 0)) + ". " + h.value("title", "") + " — " + h.value("size", "") + ", " +
                       std::to_string(h.value("seeders", 0)) + " seeders, " + std::to_string(h.value("peers", 0)) + " peers";
    if (!h.value("date", "").empty()) line += ", " + h.value("date", "");
    return line + " [" + h.value("source", "") + "]";
}

constexpr const char* kDownloadsUri = "torrent://downloads";

int64_t unix_now() { return static_cast<int64_t>(std::time(nullptr)); }

class TorrentPlugin : public agenthost::sdk::ToolPlugin {
public:
    explicit TorrentPlugin(agenthost::sdk::Host host)
        : ToolPlugin(host),
          config_(host.config()),
          qbt_(host, config_.value("qbittorrent_url", ""), config_.value("username", "admin"), password(config_),
               config_.value("password_env", "QBITTORRENT_PASSWORD"), config_.value("timeout_ms", 15000)) {
        backends_ = torrent::make_backends(host, config_, config_.value("timeout_ms", 15000), config_problems_);
        for (const auto& p : config_problems_) host.warn("torrent: " + p);
        poll_seconds_ = std::max(1, config_.value("poll_seconds", 30));
        if (auto stored = host.kv_get("tracked")) tracked_ = json::parse(*stored, nullptr, false);
        if (!tracked_.is_object()) tracked_ = json::object();
        if (qbt_.configured()) poller_ = std::thread([this] { poll_loop(); });
    }

    ~TorrentPlugin() override {
        {
            std::lock_guard lock(poll_mutex_);
            stopping_ = true;
        }
        poll_wake_.notify_all();
        if (poller_.joinable()) poller_.join();
    }

    // doctor: the configuration, each indexer answering a search, qBittorrent logging in.
    std::vector<json> health(const Call& call) override {
        using agenthost::sdk::health_check;
        std::vector<json> checks;
        for (const auto& p : config_problems_) checks.push_back(health_check("configuration", false, p));
        for (const auto& backend : backends_) {
            torrent::Query probe;
            probe.text = "ubuntu";
            probe.limit = 1;
            std::vector<torrent::Hit> hits;
            auto error = backend->search(probe, hits, call.cancel);
            checks.push_back(health_check("indexer " + backend->name(), !error,
                                          error ? error->message
                                                : "answers searches (" + std::to_string(hits.size()) +
                                                      (hits.size() == 1 ? " result" : " results") + " for a probe)"));
        }
        if (!qbt_.configured()) {
            checks.push_back(health_check("qBittorrent", true, "not configured (qbittorrent_url): search only, no downloads"));
            return checks;
        }
        // Without a password the client asks qBittorrent whether it lets this address in (its bypass)
        // and says what to set when it does not: the same answer the tools give.
        auto version = qbt_.get("app/version", {}, call.cancel);
        checks.push_back(
            health_check("qBittorrent", version.ok,
                         version.ok ? "logged in to " + qbt_.url() + ", qBittorrent " + version.body : version.error));
        return checks;
    }

    std::vector<Tool> tools() override {
        json index{{"type", "integer"}, {"minimum", 1}, {"description", "the number of a result of the last find_torrent"}};
        json folder{{"type", "string"},
                    {"minLength", 1},
                    {"maxLength", 4096},
                    {"description", "a named folder (e.g. downloads, movies) or an absolute directory"}};
        json category{{"type", "string"}, {"maxLength", 100}, {"description", "qBittorrent category"}};
        json torrents{{"type", "array"},
                      {"minItems", 1},
                      {"maxItems", 100},
                      {"items", {{"type", "string"}, {"minLength", 1}}},
                      {"description", "info hashes or unique parts of the names; [\"all\"] for every torrent"}};
        auto object = [](json properties, std::vector<std::string> required) {
            return json{{"type", "object"},
                        {"properties", std::move(properties)},
                        {"required", required},
                        {"additionalProperties", false}};
        };
        std::vector<Tool> list{
            {"find_torrent",
             "Search for torrents. Returns a numbered list (title, size, seeders, peers, date, source); refer to a result by its "
             "number.",
             object({{"query", {{"type", "string"}, {"minLength", 1}, {"maxLength", 200}}},
                     {"category", {{"type", "string"}, {"enum", {"movies", "tv", "music", "books", "any"}}}},
                     {"min_seeders", {{"type", "integer"}, {"minimum", 0}}},
                     {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 50}}},
                     {"page",
                      {{"type", "integer"},
                       {"minimum", 1},
                       {"maximum", 30},
                       {"description", "2 for the next results of the same search (numbered on from the last page)"}}}},
                    {"query"}),
             AH_TOOL_READ_ONLY | AH_TOOL_OPEN_WORLD},
            {"get_torrent_by_index", "One result of the last find_torrent, by its number (with its magnet link).",
             object({{"index", index}}, {"index"}), AH_TOOL_READ_ONLY}};
        // Downloads only with a qBittorrent to send them to: tools that could only answer "not
        // configured" would cost the model their schemas in every request.
        if (!qbt_.configured()) return list;
        std::vector<Tool> downloads{
            {"add_torrent_by_index", "Download a result of the last find_torrent in qBittorrent.",
             object({{"index", index}, {"folder", folder}, {"category", category}, {"paused", {{"type", "boolean"}}}}, {"index"}),
             0},
            {"add_torrent",
             "Download a torrent in qBittorrent: a magnet link, an http(s) URL of a .torrent file, or a local .torrent file.",
             object({{"source", {{"type", "string"}, {"minLength", 1}, {"maxLength", 8192}}},
                     {"folder", folder},
                     {"category", category},
                     {"tags", {{"type", "array"}, {"items", {{"type", "string"}, {"minLength", 1}}}}},
                     {"paused", {{"type", "boolean"}}}},
                    {"source"}),
             0},
            {"list_torrents", "The torrents in qBittorrent with state, progress, speed and time left.",
             object({{"filter",
                      {{"type", "string"},
                       {"enum",
                        {"all", "downloading", "seeding", "completed", "paused", "active", "inactive", "stalled", "errored"}}}},
                     {"category", category},
                     {"sort",
                      {{"type", "string"},
                       {"enum", {"name", "progress", "dlspeed", "upspeed", "added_on", "size", "eta", "state", "ratio"}}}},
                     {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 200}}}},
                    {}),
             AH_TOOL_READ_ONLY},
            {"torrent_details", "Details of one torrent: where it saves, trackers' state, files.",
             object(
                 {{"torrent", {{"type", "string"}, {"minLength", 1}, {"description", "info hash or a unique part of the name"}}}},
                 {"torrent"}),
             AH_TOOL_READ_ONLY},
            {"pause_torrents", "Pause torrents.", object({{"torrents", torrents}}, {"torrents"}), AH_TOOL_IDEMPOTENT},
            {"resume_torrents", "Resume paused torrents.", object({{"torrents", torrents}}, {"torrents"}), AH_TOOL_IDEMPOTENT},
            {"delete_torrents", "Remove torrents from qBittorrent; with delete_files also delete their downloaded data.",
             object({{"torrents", torrents}, {"delete_files", {{"type", "boolean"}}}}, {"torrents"}), AH_TOOL_DESTRUCTIVE},
            {"list_categories", "qBittorrent's categories and their save paths.", object(json::object(), {}), AH_TOOL_READ_ONLY},
            {"create_category", "Create a qBittorrent category (optionally saving into a folder).",
             object({{"name", {{"type", "string"}, {"minLength", 1}, {"maxLength", 100}}}, {"folder", folder}}, {"name"}), 0},
        };
        for (auto& tool : downloads) list.push_back(std::move(tool));
        return list;
    }

    std::string context(const Call& call) override {
        std::lock_guard lock(state_mutex_);
        std::string text;
        for (const auto& [hash, t] : tracked_.items()) {
            if (t.value("conversation", "") != call.conversation || t.value("done", false) || !t.contains("progress")) continue;
            text += "- " + t.value("name", hash) + ": " + t.value("state", "") + ", " +
                    std::to_string(static_cast<int>(t.value("progress", 0.0) * 100)) + "%" +
                    (t.value("speed", "").empty() ? "" : ", " + t.value("speed", "")) +
                    (t.value("eta", "").empty() ? "" : ", " + t.value("eta", "") + " left") + "\n";
        }
        return text.empty() ? "" : "Active downloads in qBittorrent:\n" + text;
    }

    // The media recipe's start, for MCP clients' prompt menus: find something, choose, download it
    // into a named folder.
    static constexpr const char* kMediaPrompt = "get_media";
    json prompts(const Call&) override {
        return json::array({{{"name", kMediaPrompt},
                             {"title", "Find and download"},
                             {"description", "Search the indexers for a film, a show or an album and download the one you pick"},
                             {"arguments",
                              {{{"name", "what"}, {"description", "what to look for"}, {"required", true}},
                               {{"name", "folder"}, {"description", "the named folder to save into (e.g. movies)"}}}}}});
    }

    json get_prompt(const Call&, const std::string& name, const json& arguments) override {
        if (name != kMediaPrompt) return nullptr;
        std::string what = arguments.value("what", ""), folder = arguments.value("folder", "");
        std::string text = "Find \"" + what +
                           "\" with find_torrent and show me the best few results (size, seeders, quality). When I pick "
                           "one, download it with add_torrent_by_index" +
                           (folder.empty() ? std::string(" into the folder that fits it") : " into the folder '" + folder + "'") +
                           ", then tell me when it is finished.";
        return {{"messages", json::array({{{"role", "user"}, {"content", {{"type", "text"}, {"text", text}}}}})}};
    }

    // The named folders for the prompt's "folder", as the person types.
    json complete(const Call&, const json& request) override {
        const json ref = request.value("ref", json::object());
        const json argument = request.value("argument", json::object());
        if (ref.value("name", "") != kMediaPrompt) return nullptr;
        json values = json::array();
        if (argument.value("name", "") == "folder") {
            std::string typed = argument.value("value", "");
            for (const char* key : {"folder_presets", "folders"})
                if (auto named = host().memory_get("", key); named && named->is_object())
                    for (const auto& [folder, path] : named->items())
                        if (folder.rfind(typed, 0) == 0 && std::find(values.begin(), values.end(), json(folder)) == values.end())
                            values.push_back(folder);
        }
        return {{"values", values}, {"total", values.size()}, {"hasMore", false}};
    }

    json resources(const Call&) override {
        if (!qbt_.configured()) return json::array();
        return json::array({{{"uri", kDownloadsUri},
                             {"name", "Downloads"},
                             {"mimeType", "application/json"},
                             {"description",
                              "The downloads added through the agent, newest first, read live from qBittorrent: state, "
                              "progress, speed, time left, folder, and when each was added and finished"}}});
    }

    // {"downloads": [...], "updated_at", "stale"[, "error"]}: the tracked torrents as qBittorrent
    // lists them now. A torrent seen complete here for the first time is reported as the poll would
    // report it (finished() runs once, whichever sees it first); with qBittorrent out of reach, the
    // last values read, marked stale, and why.
    json read_resource(const Call& call, const std::string& uri) override {
        if (uri != kDownloadsUri || !qbt_.configured()) return nullptr;
        std::string wanted;
        {
            std::lock_guard lock(state_mutex_);
            for (const auto& [hash, t] : tracked_.items()) wanted += (wanted.empty() ? "" : "|") + hash;
        }
        std::string error;
        std::set<std::string> listed;  // what qBittorrent answered for, when it answered
        if (!wanted.empty()) {
            auto got = info({{"hashes", wanted, ""}}, call.cancel);
            if (auto* failed = std::get_if<ToolResult>(&got)) {
                error = "qBittorrent could not be read (" + failed->body.value("content", std::string("no answer")) +
                        "); these are the values last read";
            } else {
                std::lock_guard lock(state_mutex_);
                bool finished_now = false;
                for (const auto& t : std::get<json>(got)) {
                    std::string hash = t.value("hash", "");
                    if (!tracked_.contains(hash)) continue;
                    listed.insert(hash);
                    finished_now = refresh(hash, tracked_[hash], t) || finished_now;
                }
                if (finished_now) host().kv_set("tracked", tracked_.dump());
            }
        }
        std::lock_guard lock(state_mutex_);
        if (error.empty()) last_read_ = unix_now();
        std::vector<json> downloads;
        for (const auto& [hash, t] : tracked_.items()) {
            bool done = t.value("done", false);
            std::string state = t.value("state", "");
            if (error.empty() && !listed.count(hash))
                state = state.empty() ? "waiting for qBittorrent to list it" : "no longer in qBittorrent";
            else if (state.empty())
                state = "waiting for qBittorrent to list it";
            downloads.push_back({{"hash", hash},
                                 {"name", t.value("name", hash)},
                                 {"conversation", t.value("conversation", "")},
                                 {"state", state},
                                 {"progress", t.value("progress", 0.0)},
                                 {"speed_bytes", t.value("speed_bytes", int64_t(0))},
                                 {"speed", t.value("speed", "")},
                                 {"eta_seconds", t.contains("eta_seconds") && !done ? t["eta_seconds"] : json()},
                                 {"eta", done ? "" : t.value("eta", "")},
                                 {"size_bytes", t.value("size_bytes", int64_t(0))},
                                 {"save_path", t.value("save_path", "")},
                                 {"done", done},
                                 {"added_at", t.contains("added_at") ? t["added_at"] : json()},
                                 {"finished_at", t.contains("finished_at") ? t["finished_at"] : json()}});
        }
        std::stable_sort(downloads.begin(), downloads.end(), [](const json& a, const json& b) {
            return a["added_at"].is_number() &&
                   (!b["added_at"].is_number() || a["added_at"].get<int64_t>() > b["added_at"].get<int64_t>());
        });
        json doc{
            {"downloads", json(downloads)}, {"updated_at", last_read_ ? json(last_read_) : json()}, {"stale", !error.empty()}};
        if (!error.empty()) doc["error"] = error;
        return {{"contents", json::array({{{"uri", uri}, {"mimeType", "application/json"}, {"text", doc.dump()}}})}};
    }

    ToolResult call(const Call& call) override {
        const std::string tool(call.tool);
        const json& a = call.arguments;
        if (tool == "find_torrent") return find(call);
        if (tool == "get_torrent_by_index") {
            auto hit = result_by_index(call);
            if (!hit.is_object()) return hit_error(call);
            ToolResult r = ToolResult::ok(hit_line(hit) + "\nmagnet: " + hit.value("magnet", ""));
            r.body["structured"] = hit;
            return r;
        }
        if (tool == "add_torrent_by_index") {
            auto hit = result_by_index(call);
            if (!hit.is_object()) return hit_error(call);
            std::string source = !hit.value("magnet", "").empty() ? hit.value("magnet", "") : hit.value("link", "");
            if (source.empty())
                return ToolResult::error("no_link",
                                         "result " + std::to_string(a.value("index", 0)) + " has neither a magnet nor a link");
            return add(call, source, hit.value("title", ""));
        }
        if (tool == "add_torrent") return add(call, a.value("source", ""), "");
        if (tool == "list_torrents") return list(call);
        if (tool == "torrent_details") return details(call);
        if (tool == "pause_torrents" || tool == "resume_torrents") return pause_resume(call, tool == "pause_torrents");
        if (tool == "delete_torrents") return remove(call);
        if (tool == "list_categories") return categories(call);
        if (tool == "create_category") return create_category(call);
        return ToolResult::error("unknown_tool", "no tool " + tool);
    }

private:
    std::vector<std::string> config_problems_;  // from make_backends, reported by health()

    static std::string password(const json& cfg) {
        std::string env = cfg.value("password_env", "QBITTORRENT_PASSWORD");
        if (const char* p = std::getenv(env.c_str())) return p;
        return cfg.value("password", "");
    }

    // ---- search ----

    ToolResult find(const Call& call) {
        if (backends_.empty())
            return ToolResult::error(
                "not_configured",
                "no search backend is configured: set [plugins.torrent] search = \"knaben\" or torznab indexers");
        torrent::Query q;
        q.text = call.arguments.value("query", "");
        q.category = call.arguments.value("category", "any");
        q.min_seeders = call.arguments.value("min_seeders", config_.value("min_seeders", int64_t(0)));
        q.limit = call.arguments.value("limit", config_.value("results", 10));
        q.page = call.arguments.value("page", 1);
        auto found = torrent::search_all(backends_, q, call.cancel);
        if (found.hits.empty() && !found.errors.empty()) {
            std::string why;
            for (const auto& e : found.errors) why += (why.empty() ? "" : "; ") + e.message;
            return ToolResult::error(found.errors.front().code, why);
        }
        const int first = (q.page - 1) * q.limit + 1;
        json results = json::array();
        std::string text;
        for (size_t i = 0; i < found.hits.size(); ++i) {
            results.push_back(hit_json(found.hits[i], first + static_cast<int>(i)));
            text += hit_line(results.back()) + "\n";
        }
        // A later page of the same search extends the numbered list, so every number shown so far
        // still works; any other search starts a new list.
        const std::string topic = "choosing a torrent: \"" + q.text + "\"";
        json remembered = json::array();
        if (q.page > 1 && host().memory_get(call.conversation, "topic").value_or(json()) == topic)
            for (const auto& r : host().memory_get(call.conversation, "search_results").value_or(json::array()))
                if (r.is_object() && r.value("index", 0) < first) remembered.push_back(r);
        if (!results.empty() || q.page == 1) {
            for (const auto& r : results) remembered.push_back(r);
            host().memory_set(call.conversation, "search_results", remembered);
            host().memory_set(call.conversation, "topic", topic);
        }
        std::string filter = q.min_seeders ? " with at least " + std::to_string(q.min_seeders) + " seeders" : "";
        if (results.empty() && q.page > 1)
            text = "No more torrents for \"" + q.text + "\"" + filter + " after result " + std::to_string(first - 1) + ".";
        else if (results.empty())
            text = "No torrents found for \"" + q.text + "\"" + filter + ".";
        else
            text = (results.size() == 1 ? "Found torrent " + std::to_string(first)
                                        : "Found torrents " + std::to_string(first) + " to " +
                                              std::to_string(first + static_cast<int>(results.size()) - 1)) +
                   " for \"" + q.text + "\" (refer to them by number" +
                   (static_cast<int>(results.size()) == q.limit ? "; page " + std::to_string(q.page + 1) + " shows the next ones"
                                                                : std::string()) +
                   "):\n" + text;
        for (const auto& e : found.errors) text += "\n(" + e.message + ")";
        ToolResult r = ToolResult::ok(text);
        r.body["structured"] = {{"results", results}};
        return r;
    }

    json result_by_index(const Call& call) {
        json results = host().memory_get(call.conversation, "search_results").value_or(json::array());
        int64_t index = call.arguments.value("index", int64_t(0));
        for (const auto& r : results)
            if (r.is_object() && r.value("index", int64_t(0)) == index) return r;
        return nullptr;
    }

    ToolResult hit_error(const Call& call) {
        json results = host().memory_get(call.conversation, "search_results").value_or(json::array());
        if (!results.is_array() || results.empty())
            return ToolResult::error("no_results",
                                     "there are no search results in this conversation yet; call find_torrent first");
        int64_t last = 0;
        for (const auto& r : results)
            if (r.is_object()) last = std::max(last, r.value("index", int64_t(0)));
        return ToolResult::error("not_found", "there is no result " + std::to_string(call.arguments.value("index", 0)) +
                                                  "; the last search has results 1 to " + std::to_string(last));
    }

    // ---- folders ----

    // A named folder (from the folders plugin's long-term memory) or an absolute directory.
    std::optional<std::string> resolve_folder(const std::string& folder, std::string& error) {
        // The same order as the folders plugin: names set by the model, the operator's presets over them.
        json named = json::object();
        if (auto stored = host().memory_get("", "folders"); stored && stored->is_object()) named = *stored;
        if (auto presets = host().memory_get("", "folder_presets"); presets && presets->is_object())
            for (const auto& [k, v] : presets->items()) named[k] = v;
        if (named.is_object() && named.contains(folder) && named[folder].is_string()) return named[folder].get<std::string>();
        if (!folder.empty() && folder[0] == '/' && folder.find('\0') == std::string::npos) {
            bool climbs = false;
            for (const auto& part : fs::path(folder)) climbs = climbs || part == "..";
            if (!climbs) return fs::path(folder).lexically_normal().string();
        }
        std::string names;
        if (named.is_object())
            for (const auto& [k, v] : named.items()) names += (names.empty() ? "" : ", ") + k;
        error = "\"" + folder + "\" is neither a named folder (" + (names.empty() ? "none are set" : "known: " + names) +
                ") nor an absolute directory without '..'";
        return std::nullopt;
    }

    // ---- qBittorrent ----

    ToolResult qbt_fail(const torrent::QbtReply& r) {
        return ToolResult::error(r.error_code.empty() ? "qbittorrent_error" : r.error_code, r.error);
    }

    ToolResult add(const Call& call, const std::string& source, const std::string& title) {
        const json& a = call.arguments;
        std::vector<FormField> form;
        std::string display = title;
        std::string hash;
        if (source.rfind("magnet:", 0) == 0) {
            hash = torrent::hash_from_magnet(source);
            if (hash.empty())
                return ToolResult::error("invalid_argument", "the magnet link has no btih info hash (xt=urn:btih:…)");
            form.push_back({"urls", source, ""});
        } else if (source.rfind("http://", 0) == 0 || source.rfind("https://", 0) == 0) {
            form.push_back({"urls", source, ""});
        } else if (source[0] == '/' && source.size() > 8 && source.substr(source.size() - 8) == ".torrent") {
            std::ifstream in(source, std::ios::binary);
            if (!in) return ToolResult::error("not_found", "cannot read the torrent file " + source);
            std::stringstream data;
            data << in.rdbuf();
            if (data.str().size() > 16 * 1024 * 1024)
                return ToolResult::error("invalid_argument", source + " is larger than 16 MiB; not a torrent file");
            form.push_back({"torrents", data.str(), fs::path(source).filename().string()});
        } else {
            return ToolResult::error(
                "invalid_argument",
                "source must be a magnet link, an http(s) URL of a .torrent file, or an absolute path to a .torrent file");
        }
        std::string save_path;
        if (a.contains("folder")) {
            std::string error;
            auto path = resolve_folder(a["folder"], error);
            if (!path) return ToolResult::error("invalid_argument", error);
            save_path = *path;
            form.push_back({"savepath", save_path, ""});
        }
        if (a.contains("category")) form.push_back({"category", a["category"], ""});
        if (a.contains("tags")) {
            std::string tags;
            for (const auto& t : a["tags"]) tags += (tags.empty() ? "" : ",") + t.get<std::string>();
            form.push_back({"tags", tags, ""});
        }
        bool paused = a.value("paused", false);
        if (paused) {
            form.push_back({"paused", "true", ""});
            form.push_back({"stopped", "true", ""});  // the 5.x name
        }
        // A file or URL carries its hash inside; learn it from qBittorrent's list (what is new after the add).
        std::set<std::string> before;
        if (hash.empty())
            if (auto listed = info({}, call.cancel); std::holds_alternative<json>(listed))
                for (const auto& t : std::get<json>(listed)) before.insert(t.value("hash", ""));
        auto r = qbt_.post("torrents/add", form, call.cancel);
        if (r.code == 415)
            return ToolResult::error("invalid_torrent",
                                     "qBittorrent says this is not a valid torrent file: " + r.body.substr(0, 200));
        if (!r.ok) return qbt_fail(r);
        std::string body = r.body;
        while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back()))) body.pop_back();
        if (body == "Fails.")
            return ToolResult::error(
                "rejected",
                "qBittorrent did not add it: it is already in the list (same info hash), or the link is not a torrent");
        // qBittorrent answers "Ok." before the torrent is in its list: look for a few seconds.
        for (int attempt = 0; hash.empty() && attempt < 30 && !host().cancelled(call.cancel); ++attempt) {
            if (attempt) std::this_thread::sleep_for(std::chrono::milliseconds(100));
            if (auto listed = info({}, call.cancel); std::holds_alternative<json>(listed))
                for (const auto& t : std::get<json>(listed))
                    if (!before.count(t.value("hash", ""))) {
                        hash = t.value("hash", "");
                        if (display.empty()) display = t.value("name", "");
                    }
        }
        if (!hash.empty()) track(hash, std::string(call.conversation), display.empty() ? hash : display);
        // The conversation's topic follows the workflow: choosing → downloading → downloaded.
        host().memory_set(call.conversation, "topic", "downloading: " + (display.empty() ? hash : display));
        std::string text = "Added " + (display.empty() ? source.substr(0, 120) : display) + " to qBittorrent" +
                           (save_path.empty() ? "" : ", saving into " + save_path) + (paused ? " (paused)" : "") + ".";
        ToolResult result = ToolResult::ok(text);
        result.body["structured"] = {{"hash", hash}, {"save_path", save_path}};
        return result;
    }

    void track(const std::string& hash, const std::string& conversation, const std::string& name) {
        {
            std::lock_guard lock(state_mutex_);
            tracked_[hash] = {{"conversation", conversation}, {"name", name}, {"done", false}, {"added_at", unix_now()}};
            host().kv_set("tracked", tracked_.dump());
        }
        host().resource_updated(kDownloadsUri);
        poll_wake_.notify_all();
    }

    // Torrents as qBittorrent lists them, or the failure.
    std::variant<json, ToolResult> info(const std::vector<FormField>& query, const ah_cancel* cancel) {
        auto r = qbt_.get("torrents/info", query, cancel);
        if (!r.ok) return qbt_fail(r);
        json list = json::parse(r.body, nullptr, false);
        if (!list.is_array()) return ToolResult::error("qbittorrent_error", "qBittorrent's torrent list is not JSON");
        return list;
    }

    static std::string torrent_line(const json& t) {
        double progress = t.value("progress", 0.0);
        char percent[16];
        std::snprintf(percent, sizeof percent, "%.1f%%", progress * 100);
        std::string line = t.value("name", "") + " — " + torrent::human_state(t.value("state", "")) + ", " + percent + " of " +
                           torrent::human_size(t.value("size", int64_t(0)));
        if (t.value("dlspeed", int64_t(0)) > 0) line += ", ↓ " + torrent::human_speed(t.value("dlspeed", int64_t(0)));
        if (t.value("upspeed", int64_t(0)) > 0) line += ", ↑ " + torrent::human_speed(t.value("upspeed", int64_t(0)));
        if (progress < 1.0) line += ", " + torrent::human_eta(t.value("eta", int64_t(8640000))) + " left";
        if (!t.value("category", "").empty()) line += ", category " + t.value("category", "");
        if (!t.value("tags", "").empty()) line += ", tags " + t.value("tags", "");
        return line + " [" + t.value("hash", "").substr(0, 8) + "]";
    }

    ToolResult list(const Call& call) {
        const json& a = call.arguments;
        std::vector<FormField> query;
        std::string filter = a.value("filter", "all");
        if (filter == "paused" && qbt_.stop_start_names()) filter = "stopped";
        query.push_back({"filter", filter, ""});
        if (a.contains("category")) query.push_back({"category", a["category"], ""});
        if (a.contains("sort")) query.push_back({"sort", a["sort"], ""});
        if (a.contains("sort")) query.push_back({"reverse", a["sort"] == "name" ? "false" : "true", ""});
        query.push_back({"limit", std::to_string(a.value("limit", 50)), ""});
        auto got = info(query, call.cancel);
        if (auto* e = std::get_if<ToolResult>(&got)) return *e;
        const json& list = std::get<json>(got);
        std::string text;
        json rows = json::array();
        for (const auto& t : list) {
            text += "- " + torrent_line(t) + "\n";
            rows.push_back({{"hash", t.value("hash", "")},
                            {"name", t.value("name", "")},
                            {"state", t.value("state", "")},
                            {"progress", t.value("progress", 0.0)},
                            {"save_path", t.value("save_path", "")},
                            {"category", t.value("category", "")},
                            {"tags", t.value("tags", "")}});
        }
        ToolResult r = ToolResult::ok(
            list.empty() ? "No torrents" + (filter == "all" ? std::string() : " matching filter " + filter) + "."
                         : std::to_string(list.size()) + (list.size() == 1 ? " torrent:\n" : " torrents:\n") + text);
        r.body["structured"] = {{"torrents", rows}};
        return r;
    }

    // Hashes for what the model named (hashes or unique name parts); "all" stays "all".
    std::variant<std::string, ToolResult> hashes(const json& names, const ah_cancel* cancel) {
        if (names.size() == 1 && names[0] == "all") return std::string("all");
        auto got = info({}, cancel);
        if (auto* e = std::get_if<ToolResult>(&got)) return *e;
        const json& list = std::get<json>(got);
        std::string out;
        for (const auto& n : names) {
            std::string wanted = n.get<std::string>();
            std::string lowered = wanted;
            std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
            std::vector<std::string> matches;
            for (const auto& t : list) {
                std::string hash = t.value("hash", ""), name = t.value("name", "");
                std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
                if (hash == lowered || (lowered.size() >= 6 && hash.rfind(lowered, 0) == 0) ||
                    name.find(lowered) != std::string::npos)
                    matches.push_back(hash);
            }
            if (matches.empty())
                return ToolResult::error("not_found", "no torrent matches \"" + wanted + "\"; list_torrents shows them");
            if (matches.size() > 1)
                return ToolResult::error("ambiguous", "\"" + wanted + "\" matches " + std::to_string(matches.size()) +
                                                          " torrents; give more of the name or the hash");
            out += (out.empty() ? "" : "|") + matches[0];
        }
        return out;
    }

    ToolResult details(const Call& call) {
        auto h = hashes(json::array({call.arguments.value("torrent", "")}), call.cancel);
        if (auto* e = std::get_if<ToolResult>(&h)) return *e;
        std::string hash = std::get<std::string>(h);
        auto got = info({{"hashes", hash, ""}}, call.cancel);
        if (auto* e = std::get_if<ToolResult>(&got)) return *e;
        const json& list = std::get<json>(got);
        if (list.empty()) return ToolResult::error("not_found", "the torrent is gone");
        const json& t = list[0];
        std::time_t added = t.value("added_on", int64_t(0));
        char when[32], ratio[16];
        std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", std::gmtime(&added));
        std::snprintf(ratio, sizeof ratio, "%.2f", t.value("ratio", 0.0));
        std::string text = torrent_line(t) + "\nsaves into: " + t.value("save_path", "") + "\nadded: " + when +
                           "\nseeds/peers: " + std::to_string(t.value("num_seeds", 0)) + "/" +
                           std::to_string(t.value("num_leechs", 0)) + "\nratio: " + ratio + "\nhash: " + t.value("hash", "");
        auto files = qbt_.get("torrents/files", {{"hash", hash, ""}}, call.cancel);
        json file_list = files.ok ? json::parse(files.body, nullptr, false) : json::array();
        if (file_list.is_array() && !file_list.empty()) {
            text += "\nfiles:";
            for (size_t i = 0; i < file_list.size() && i < 50; ++i)
                text += "\n  " + file_list[i].value("name", "") + " (" +
                        torrent::human_size(file_list[i].value("size", int64_t(0))) + ", " +
                        std::to_string(static_cast<int>(file_list[i].value("progress", 0.0) * 100)) + "%)";
        }
        ToolResult r = ToolResult::ok(text);
        r.body["structured"] = t;
        return r;
    }

    ToolResult pause_resume(const Call& call, bool pause) {
        auto h = hashes(call.arguments["torrents"], call.cancel);
        if (auto* e = std::get_if<ToolResult>(&h)) return *e;
        bool v5 = qbt_.stop_start_names();
        std::string path = pause ? (v5 ? "torrents/stop" : "torrents/pause") : (v5 ? "torrents/start" : "torrents/resume");
        auto r = qbt_.post(path, {{"hashes", std::get<std::string>(h), ""}}, call.cancel);
        if (!r.ok) return qbt_fail(r);
        return ToolResult::ok(std::string(pause ? "Paused" : "Resumed") + " " +
                              (std::get<std::string>(h) == "all" ? "every torrent" : "the torrents") + ".");
    }

    ToolResult remove(const Call& call) {
        auto h = hashes(call.arguments["torrents"], call.cancel);
        if (auto* e = std::get_if<ToolResult>(&h)) return *e;
        bool delete_files = call.arguments.value("delete_files", false);
        auto r = qbt_.post("torrents/delete",
                           {{"hashes", std::get<std::string>(h), ""}, {"deleteFiles", delete_files ? "true" : "false", ""}},
                           call.cancel);
        if (!r.ok) return qbt_fail(r);
        {
            std::lock_guard lock(state_mutex_);
            std::string all = std::get<std::string>(h);
            for (auto it = tracked_.begin(); it != tracked_.end();)
                it = all == "all" || all.find(it.key()) != std::string::npos ? tracked_.erase(it) : std::next(it);
            host().kv_set("tracked", tracked_.dump());
        }
        return ToolResult::ok(std::string("Removed the torrents from qBittorrent") +
                              (delete_files ? " and deleted their files." : "; their files stay on disk."));
    }

    ToolResult categories(const Call& call) {
        auto r = qbt_.get("torrents/categories", {}, call.cancel);
        if (!r.ok) return qbt_fail(r);
        json cats = json::parse(r.body, nullptr, false);
        if (!cats.is_object()) return ToolResult::error("qbittorrent_error", "qBittorrent's category list is not JSON");
        std::string text;
        for (const auto& [name, c] : cats.items())
            text += "- " + name + (c.value("savePath", "").empty() ? "" : " → " + c.value("savePath", "")) + "\n";
        ToolResult out = ToolResult::ok(text.empty() ? "No categories." : "Categories:\n" + text);
        out.body["structured"] = cats;
        return out;
    }

    ToolResult create_category(const Call& call) {
        std::vector<FormField> form{{"category", call.arguments.value("name", ""), ""}};
        std::string path;
        if (call.arguments.contains("folder")) {
            std::string error;
            auto p = resolve_folder(call.arguments["folder"], error);
            if (!p) return ToolResult::error("invalid_argument", error);
            path = *p;
            form.push_back({"savePath", path, ""});
        }
        auto r = qbt_.post("torrents/createCategory", form, call.cancel);
        if (r.code == 409)
            return ToolResult::error(
                "exists", "the category " + call.arguments.value("name", "") + " exists already (or its name is invalid)");
        if (!r.ok) return qbt_fail(r);
        return ToolResult::ok("Created the category " + call.arguments.value("name", "") +
                              (path.empty() ? "" : ", saving into " + path) + ".");
    }

    // ---- background poll ----

    // Every poll_seconds while a tracked download is unfinished: refresh the tracked torrents'
    // state, keep the active ones in their conversation's memory, and post an event when one
    // completes (the next turn tells the user).
    void poll_loop() {
        std::unique_lock lock(poll_mutex_);
        while (!stopping_) {
            poll_wake_.wait_for(lock, std::chrono::seconds(poll_seconds_));
            if (stopping_) break;
            lock.unlock();
            poll_once();
            lock.lock();
        }
    }

    void poll_once() {
        std::string wanted;
        {
            std::lock_guard lock(state_mutex_);
            for (const auto& [hash, t] : tracked_.items())
                if (!t.value("done", false)) wanted += (wanted.empty() ? "" : "|") + hash;
        }
        if (wanted.empty()) return;
        auto got = info({{"hashes", wanted, ""}}, nullptr);
        if (!std::holds_alternative<json>(got)) return;  // qBittorrent away: try at the next poll
        std::map<std::string, json> active;              // conversation → its active downloads
        std::lock_guard lock(state_mutex_);
        for (const auto& t : std::get<json>(got)) {
            std::string hash = t.value("hash", "");
            if (!tracked_.contains(hash)) continue;
            json& mine = tracked_[hash];
            refresh(hash, mine, t);
            if (!mine.value("done", false))
                active[mine.value("conversation", "")].push_back(
                    {{"name", mine["name"]}, {"progress", mine["progress"]}, {"state", mine["state"]}});
        }
        for (const auto& [hash, t] : tracked_.items())
            if (!active.count(t.value("conversation", ""))) active[t.value("conversation", "")] = json::array();
        for (const auto& [conversation, list] : active)
            if (!conversation.empty()) host().memory_set(conversation, "downloads", list);
        host().kv_set("tracked", tracked_.dump());
    }

    // A tracked torrent's entry from its torrents/info row (the caller holds state_mutex_); true when
    // this is the first sight of it complete, after finished() told its conversation.
    bool refresh(const std::string& hash, json& mine, const json& t) {
        double progress = t.value("progress", 0.0);
        int64_t speed = t.value("dlspeed", int64_t(0)), eta = t.value("eta", int64_t(8640000));
        mine["name"] = t.value("name", mine.value("name", hash));
        mine["progress"] = progress;
        mine["state"] = torrent::human_state(t.value("state", ""));
        mine["speed_bytes"] = speed;
        mine["speed"] = speed > 0 ? torrent::human_speed(speed) : "";
        mine["eta"] = progress < 1.0 ? torrent::human_eta(eta) : "";
        mine["eta_seconds"] = progress < 1.0 && eta >= 0 && eta < 8640000 ? json(eta) : json();  // 8640000: unknown
        mine["size_bytes"] = t.value("size", int64_t(0));
        mine["save_path"] = t.value("save_path", "");
        if (!mine.contains("added_at") && t.value("added_on", int64_t(0)) > 0)
            mine["added_at"] = t["added_on"];  // tracked before added_at was kept
        if (mine.value("done", false) || !(progress >= 1.0 || torrent::complete_state(t.value("state", "")))) return false;
        finished(hash, mine);
        return true;
    }

    // A tracked torrent was seen complete, by the poll or a read of torrent://downloads: the one
    // place that marks it done and tells its conversation (topic, event), so that happens once.
    void finished(const std::string& hash, json& mine) {
        std::string conversation = mine.value("conversation", ""), name = mine.value("name", hash);
        mine["done"] = true;
        mine["finished_at"] = unix_now();
        mine["eta"] = "";
        mine["eta_seconds"] = nullptr;
        if (host().memory_get(conversation, "topic").value_or(json()) == "downloading: " + name)
            host().memory_set(conversation, "topic", "downloaded: " + name);
        host().post_event(conversation, {{"message", "Download finished: " + name + " (in " + mine.value("save_path", "") + ")"},
                                         {"hash", hash}});
        host().info("torrent: download finished", {{"name", name}, {"conversation", conversation}});
        host().resource_updated(kDownloadsUri);  // MCP clients subscribed to the downloads hear of it
    }

    json config_;
    torrent::Qbittorrent qbt_;
    std::vector<std::unique_ptr<torrent::Backend>> backends_;
    int poll_seconds_ = 30;

    std::mutex state_mutex_;  // tracked_, last_read_
    // hash → {conversation, name, done, progress, state, speed, eta, speed_bytes, eta_seconds,
    // size_bytes, save_path, added_at, finished_at}; kept with kv_set
    json tracked_;
    int64_t last_read_ = 0;  // when torrent://downloads last read qBittorrent (unix s; 0: not since start)

    std::mutex poll_mutex_;
    std::condition_variable poll_wake_;
    bool stopping_ = false;
    std::thread poller_;
};

}  // namespace

// Thread-safe: the qBittorrent client serialises logins; tracked downloads are under a mutex.
AGENTHOST_PLUGIN(TorrentPlugin, "torrent", "1.0.0", AH_PLUGIN_THREAD_SAFE)
