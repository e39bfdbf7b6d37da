// Named folders the agent may look into (downloads, movies, music …). A name maps to a directory.
// The operator's presets (agenthost.toml, published as "folder_presets") always win; names the
// model adds with set_path_for_folder live in the host's long-term memory (key "folders"), need
// approval (the tool is destructive), and must lie under one of the operator's `allowed_roots`,
// checked again on every use so narrowing the roots takes effect at once. Without allowed_roots
// the tool is not offered. Every subpath is resolved inside its folder's real path (folder_paths.hpp).
#include "file_contents.hpp"
#include "folder_paths.hpp"

#include <agenthost/plugin.hpp>

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <variant>
#include <vector>

namespace {

namespace fs = std::filesystem;
using agenthost::sdk::Call;
using agenthost::sdk::Tool;
using agenthost::sdk::ToolResult;
using nlohmann::json;

using folders::hostile;
using folders::inside;
using folders::kMaxComponent;
using folders::kMaxSubpath;

std::string iso_time(fs::file_time_type t) {
    auto system = std::chrono::time_point_cast<std::chrono::seconds>(t - fs::file_time_type::clock::now() +
                                                                     std::chrono::system_clock::now());
    std::time_t tt = std::chrono::system_clock::to_time_t(system);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&tt));
    return buf;
}

class FoldersPlugin : public agenthost::sdk::ToolPlugin {
public:
    explicit FoldersPlugin(agenthost::sdk::Host host) : ToolPlugin(host) {
        json cfg = host.config();
        allow_changes_ = cfg.value("allow_changes", false);
        page_size_ = std::max(1, cfg.value("page_size", 50));
        max_save_bytes_ = static_cast<size_t>(std::clamp(cfg.value("max_save_mb", 25), 1, 1024)) << 20;
        if (cfg.contains("folders") && cfg["folders"].is_object()) presets_ = cfg["folders"];
        if (cfg.contains("allowed_roots") && cfg["allowed_roots"].is_array())
            for (const auto& root : cfg["allowed_roots"]) {
                std::error_code ec;
                // A root that does not exist (yet) is skipped: nothing can lie under it.
                if (root.is_string() && fs::path(root.get<std::string>()).is_absolute())
                    if (fs::path real = fs::canonical(root.get<std::string>(), ec); !ec) allowed_roots_.push_back(real);
            }
        // Other plugins (torrent) resolve folder names from long-term memory: publish the presets.
        if (host.memory_get("", "folder_presets") != presets_) host.memory_set("", "folder_presets", presets_);
        for (const auto& root : cfg.value("allowed_roots", json::array()))
            if (root.is_string()) configured_roots_.push_back(root.get<std::string>());
    }

    // doctor: each named folder is there and readable (writable when changes are allowed), each
    // allowed root exists.
    std::vector<json> health(const Call&) override {
        using agenthost::sdk::health_check;
        std::vector<json> checks;
        for (const auto& [name, path] : presets_.items()) {
            std::string p = path.is_string() ? path.get<std::string>() : "";
            std::error_code ec;
            std::string problem;
            if (!fs::is_directory(p, ec))
                problem = "missing: create " + p + " or fix [plugins.folders] folders." + name;
            else if (::access(p.c_str(), R_OK | X_OK) != 0)
                problem = p + " is not readable by this user";
            else if (allow_changes_ && ::access(p.c_str(), W_OK) != 0)
                problem = p + " is not writable by this user (allow_changes = true)";
            checks.push_back(health_check("folder " + name, problem.empty(), problem.empty() ? p : problem));
        }
        for (const auto& root : configured_roots_) {
            std::error_code ec;
            bool there = fs::is_directory(root, ec);
            checks.push_back(
                health_check("allowed root", there, there ? root : "missing: " + root + " (nothing can be named under it)"));
        }
        return checks;
    }

    std::vector<Tool> tools() override {
        json name{
            {"type", "string"}, {"pattern", "^[a-z][a-z0-9_]{0,31}$"}, {"description", "the folder's name, e.g. downloads"}};
        json sub{{"type", "string"}, {"maxLength", kMaxSubpath}, {"description", "a path inside the folder"}};
        std::vector<Tool> list{
            {"list_folders",
             "The named folders and their paths.",
             {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}},
             AH_TOOL_READ_ONLY | AH_TOOL_IDEMPOTENT},
            {"list_folder",
             "The entries of a named folder (or a subpath in it): type, size, modified time; sorted, paged.",
             {{"type", "object"},
              {"properties", {{"name", name}, {"subpath", sub}, {"page", {{"type", "integer"}, {"minimum", 1}}}}},
              {"required", {"name"}},
              {"additionalProperties", false}},
             AH_TOOL_READ_ONLY | AH_TOOL_IDEMPOTENT},
            {"folder_info",
             "A named folder's path, free space and number of entries.",
             {{"type", "object"}, {"properties", {{"name", name}}}, {"required", {"name"}}, {"additionalProperties", false}},
             AH_TOOL_READ_ONLY | AH_TOOL_IDEMPOTENT},
            {"read_file",
             "A text file inside a named folder (a file the user attached, a note, a log), " + std::to_string(kReadChunk / 1024) +
                 " KiB at a time: a longer one ends with the offset to read on from.",
             {{"type", "object"},
              {"properties", {{"name", name}, {"path", sub}, {"offset", {{"type", "integer"}, {"minimum", 0}}}}},
              {"required", {"name", "path"}},
              {"additionalProperties", false}},
             AH_TOOL_READ_ONLY | AH_TOOL_IDEMPOTENT},
            {"save_file",
             "Save a file (its bytes as base64) inside a named folder, in a subfolder that exists. A name already taken "
             "gets a number (\"notes (2).txt\") unless overwrite is true.",
             {{"type", "object"},
              {"properties",
               {{"name", name},
                {"path",
                 {{"type", "string"},
                  {"minLength", 1},
                  {"maxLength", kMaxSubpath},
                  {"description", "where, ending in the file's name"}}},
                {"content_base64", {{"type", "string"}, {"description", "the file's bytes, base64"}}},
                {"overwrite", {{"type", "boolean"}, {"default", false}}}}},
              {"required", {"name", "path", "content_base64"}},
              {"additionalProperties", false}},
             // Destructive: it writes to the user's disk, so the model's calls are approved by a person.
             AH_TOOL_DESTRUCTIVE}};
        // With no folder named and none the model may name, list_folders alone says how to name one:
        // the other tools could only fail, at the cost of their schemas in every request.
        if (presets_.empty() && allowed_roots_.empty() && folders().empty()) list.resize(1);
        if (!allowed_roots_.empty())
            list.push_back(
                {"set_path_for_folder",
                 "Name a directory (downloads, movies, music …) so it can be used by name later. It must lie under " +
                     roots_text() + "; the user approves each new name.",
                 {{"type", "object"},
                  {"properties", {{"name", name}, {"path", {{"type", "string"}, {"minLength", 1}, {"maxLength", kMaxSubpath}}}}},
                  {"required", {"name", "path"}},
                  {"additionalProperties", false}},
                 // Destructive: a new name widens what the agent can reach, so a person approves it.
                 AH_TOOL_DESTRUCTIVE | AH_TOOL_IDEMPOTENT});
        if (allow_changes_) {
            list.push_back({"move_into_folder",
                            "Move a file or directory (a subpath of one folder) into another named folder.",
                            {{"type", "object"},
                             {"properties", {{"from", name}, {"subpath", sub}, {"to", name}}},
                             {"required", {"from", "subpath", "to"}},
                             {"additionalProperties", false}},
                            AH_TOOL_DESTRUCTIVE});
            list.push_back({"rename_entry",
                            "Rename an entry inside a named folder.",
                            {{"type", "object"},
                             {"properties",
                              {{"name", name},
                               {"subpath", sub},
                               {"new_name", {{"type", "string"}, {"minLength", 1}, {"maxLength", kMaxComponent}}}}},
                             {"required", {"name", "subpath", "new_name"}},
                             {"additionalProperties", false}},
                            AH_TOOL_DESTRUCTIVE});
        }
        return list;
    }

    std::string context(const Call&) override {
        json all = folders();
        if (all.empty()) return "";
        std::string names;
        for (const auto& [name, path] : all.items()) names += (names.empty() ? "" : ", ") + name;
        return "Named folders you can use with the folder tools: " + names + ".";
    }

    ToolResult call(const Call& call) override {
        const json& a = call.arguments;
        std::string tool(call.tool);
        if (tool == "set_path_for_folder" && !allowed_roots_.empty()) return set_path(a.value("name", ""), a.value("path", ""));
        if (tool == "list_folders") {
            json all = folders();
            if (all.empty() && allowed_roots_.empty())
                return ToolResult::ok(
                    "No folder is named yet. The operator names them in agenthost.toml: [plugins.folders] folders = "
                    "{downloads = \"/srv/downloads\"} (or allowed_roots, to let you name them).");
            return ToolResult::ok(all);
        }
        if (tool == "list_folder") return list(a.value("name", ""), a.value("subpath", ""), a.value("page", 1));
        if (tool == "folder_info") return info(a.value("name", ""));
        if (tool == "read_file") return read_file(a.value("name", ""), a.value("path", ""), a.value("offset", int64_t{0}));
        if (tool == "save_file")
            return save_file(a.value("name", ""), a.value("path", ""), a.value("content_base64", ""),
                             a.value("overwrite", false));
        if (tool == "move_into_folder" && allow_changes_)
            return move(a.value("from", ""), a.value("subpath", ""), a.value("to", ""));
        if (tool == "rename_entry" && allow_changes_)
            return rename(a.value("name", ""), a.value("subpath", ""), a.value("new_name", ""));
        return ToolResult::error("unknown_tool", "no tool " + tool);
    }

private:
    // The names set through the tool, with the operator's presets over them (a preset always wins).
    json folders() const {
        json all = json::object();
        if (auto stored = host().memory_get("", "folders"); stored && stored->is_object())
            for (const auto& [name, path] : stored->items())
                if (path.is_string()) all[name] = path;
        for (const auto& [name, path] : presets_.items()) all[name] = path;
        return all;
    }

    bool under_allowed_root(const fs::path& real) const {
        return std::any_of(allowed_roots_.begin(), allowed_roots_.end(),
                           [&](const fs::path& root) { return inside(root, real); });
    }

    std::string roots_text() const {
        std::string out;
        for (const auto& root : allowed_roots_) out += (out.empty() ? "" : ", ") + root.string();
        return out;
    }

    static bool valid_name(const std::string& name) {
        static const std::regex pattern("^[a-z][a-z0-9_]{0,31}$");
        return std::regex_match(name, pattern);
    }

    // A folder's real path, or the error that stops its use.
    std::variant<fs::path, ToolResult> root(const std::string& name) const {
        if (!valid_name(name))
            return ToolResult::error("validation_failed",
                                     "'" + name + "' is not a folder name (lower case, digits, _; up to 32)");
        json all = folders();
        if (!all.contains(name) || !all[name].is_string())
            return ToolResult::error(
                "folder_not_set",
                "no folder is named '" + name + "'" + (all.empty() ? "" : " (named: " + names(all) + ")") +
                    (allowed_roots_.empty()
                         ? "; the operator names folders in agenthost.toml ([plugins.folders] folders = {NAME = \"/path\"})"
                         : "; set_path_for_folder names one"));
        std::error_code ec;
        fs::path real = fs::canonical(all[name].get<std::string>(), ec);
        if (ec)
            return ToolResult::error(
                "not_found", "the folder '" + name + "' points to " + all[name].get<std::string>() + ", which no longer exists");
        // A name the model set is checked against today's roots: the operator may have narrowed them.
        if (!presets_.contains(name) && !under_allowed_root(real))
            return ToolResult::error("forbidden",
                                     "the folder '" + name + "' (" + real.string() + ") is no longer under the allowed roots" +
                                         (allowed_roots_.empty() ? " (none are configured)" : " (" + roots_text() + ")") +
                                         "; ask the user to add it to [plugins.folders] folders or allowed_roots");
        return real;
    }

    static std::string names(const json& all) {
        std::string out;
        for (const auto& [name, path] : all.items()) out += (out.empty() ? "" : ", ") + name;
        return out;
    }

    // `sub` inside `base`, resolved on disk; symlinks are followed only while they stay inside.
    std::variant<fs::path, ToolResult> resolve(const fs::path& base, const std::string& sub) const {
        auto resolved = folders::resolve_inside(base, sub);
        if (!resolved.path) return ToolResult::error(resolved.code, resolved.message);
        return *resolved.path;
    }

    ToolResult set_path(const std::string& name, const std::string& path) {
        if (!valid_name(name))
            return ToolResult::error("validation_failed", "'" + name + "' is not a folder name: use ^[a-z][a-z0-9_]{0,31}$");
        if (path.empty() || path.find('\0') != std::string::npos)
            return ToolResult::error("invalid_path", "the path is empty or contains a NUL byte");
        if (presets_.contains(name))
            return ToolResult::error(
                "forbidden",
                "'" + name + "' is set by the operator in agenthost.toml and cannot be changed by a tool; choose another name");
        std::error_code ec;
        fs::path p(path);
        if (!p.is_absolute()) return ToolResult::error("invalid_path", "give an absolute path (got '" + path + "')");
        if (!fs::exists(p, ec)) return ToolResult::error("not_found", path + " does not exist");
        if (!fs::is_directory(p, ec)) return ToolResult::error("not_a_directory", path + " is not a directory");
        if (::access(p.c_str(), R_OK | X_OK) != 0)
            return ToolResult::error("permission_denied", path + " cannot be read by this process");
        fs::path real = fs::canonical(p, ec);
        if (ec) return ToolResult::error("not_found", path + " cannot be resolved: " + ec.message());
        if (!under_allowed_root(real))
            return ToolResult::error("forbidden", real.string() + " is not under the allowed roots (" + roots_text() +
                                                      "); ask the user to add it to [plugins.folders] folders or allowed_roots");
        json stored = host().memory_get("", "folders").value_or(json::object());
        if (!stored.is_object()) stored = json::object();
        stored[name] = real.string();
        if (host().memory_set("", "folders", stored) != AH_OK)
            return ToolResult::error("store_failed", "the host could not save the folder");
        return ToolResult::ok("The folder '" + name + "' is now " + real.string() + ".");
    }

    ToolResult list(const std::string& name, const std::string& sub, int page) {
        auto r = root(name);
        if (auto* e = std::get_if<ToolResult>(&r)) return *e;
        auto target = resolve(std::get<fs::path>(r), sub);
        if (auto* e = std::get_if<ToolResult>(&target)) return *e;
        const fs::path& dir = std::get<fs::path>(target);
        std::error_code ec;
        if (!fs::is_directory(dir, ec)) return ToolResult::error("not_a_directory", "'" + sub + "' is a file, not a directory");
        if (::access(dir.c_str(), R_OK | X_OK) != 0)
            return ToolResult::error("permission_denied", "'" + (sub.empty() ? name : sub) + "' cannot be read");
        json entries = json::array();
        for (const auto& entry : fs::directory_iterator(dir, fs::directory_options::skip_permission_denied, ec)) {
            std::error_code e2;
            auto st = entry.symlink_status(e2);
            std::string type = fs::is_symlink(st)        ? "symlink"
                               : fs::is_directory(st)    ? "directory"
                               : fs::is_regular_file(st) ? "file"
                                                         : "other";
            json item{{"name", entry.path().filename().string()}, {"type", type}};
            if (type == "file") item["size"] = entry.file_size(e2);
            auto modified = fs::last_write_time(entry.path(), e2);
            if (!e2) item["modified"] = iso_time(modified);
            entries.push_back(std::move(item));
        }
        if (ec)
            return ToolResult::error("permission_denied", "'" + (sub.empty() ? name : sub) + "' cannot be read: " + ec.message());
        std::sort(entries.begin(), entries.end(), [](const json& a, const json& b) {
            bool ad = a["type"] == "directory", bd = b["type"] == "directory";
            return ad != bd ? ad : a["name"].get<std::string>() < b["name"].get<std::string>();
        });
        size_t pages = std::max<size_t>(1, (entries.size() + page_size_ - 1) / page_size_);
        if (page < 1 || static_cast<size_t>(page) > pages)
            return ToolResult::error("validation_failed",
                                     "page " + std::to_string(page) + " does not exist (1 to " + std::to_string(pages) + ")");
        json shown = json::array();
        for (size_t i = (page - 1) * page_size_; i < std::min(entries.size(), page * static_cast<size_t>(page_size_)); ++i)
            shown.push_back(entries[i]);
        std::string text;
        for (const auto& e : shown)
            text += (e["type"] == "directory" ? "[dir]  " : "       ") + e["name"].get<std::string>() +
                    (e.contains("size") ? "  (" + std::to_string(e["size"].get<uint64_t>()) + " bytes)" : "") + "\n";
        ToolResult result =
            ToolResult::ok(text.empty() ? "(empty)" : text + "page " + std::to_string(page) + " of " + std::to_string(pages));
        result.body["structured"] = {{"entries", shown}, {"page", page}, {"pages", pages}, {"total", entries.size()}};
        return result;
    }

    ToolResult info(const std::string& name) {
        auto r = root(name);
        if (auto* e = std::get_if<ToolResult>(&r)) return *e;
        const fs::path& dir = std::get<fs::path>(r);
        struct statvfs vfs {};
        if (::statvfs(dir.c_str(), &vfs) != 0)
            return ToolResult::error("permission_denied", "cannot read the file system of " + dir.string());
        std::error_code ec;
        size_t count = 0;
        for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) ++count;
        uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
        ToolResult result = ToolResult::ok(name + ": " + dir.string() + ", " + std::to_string(count) + " entries, " +
                                           std::to_string(free_bytes / (1024 * 1024)) + " MiB free");
        result.body["structured"] = {{"name", name}, {"path", dir.string()}, {"entries", count}, {"free_bytes", free_bytes}};
        return result;
    }

    ToolResult move(const std::string& from, const std::string& sub, const std::string& to) {
        auto src_root = root(from), dst_root = root(to);
        if (auto* e = std::get_if<ToolResult>(&src_root)) return *e;
        if (auto* e = std::get_if<ToolResult>(&dst_root)) return *e;
        if (sub.empty()) return ToolResult::error("validation_failed", "give the subpath of the entry to move");
        auto src = resolve(std::get<fs::path>(src_root), sub);
        if (auto* e = std::get_if<ToolResult>(&src)) return *e;
        fs::path target = std::get<fs::path>(dst_root) / std::get<fs::path>(src).filename();
        std::error_code ec;
        if (fs::exists(fs::symlink_status(target, ec)))
            return ToolResult::error("validation_failed", target.filename().string() + " already exists in " + to);
        fs::rename(std::get<fs::path>(src), target, ec);
        if (ec) return ToolResult::error("permission_denied", "could not move: " + ec.message());
        return ToolResult::ok("Moved " + sub + " into " + to + ".");
    }

    ToolResult rename(const std::string& name, const std::string& sub, const std::string& new_name) {
        auto r = root(name);
        if (auto* e = std::get_if<ToolResult>(&r)) return *e;
        if (new_name.find('/') != std::string::npos || new_name == "." || new_name == ".." || !hostile(new_name).empty())
            return ToolResult::error("forbidden", "the new name must be a single plain name");
        auto src = resolve(std::get<fs::path>(r), sub);
        if (auto* e = std::get_if<ToolResult>(&src)) return *e;
        if (std::get<fs::path>(src) == std::get<fs::path>(r))
            return ToolResult::error("forbidden", "the folder itself cannot be renamed");
        fs::path target = std::get<fs::path>(src).parent_path() / new_name;
        std::error_code ec;
        if (fs::exists(fs::symlink_status(target, ec)))
            return ToolResult::error("validation_failed", new_name + " already exists");
        fs::rename(std::get<fs::path>(src), target, ec);
        if (ec) return ToolResult::error("permission_denied", "could not rename: " + ec.message());
        return ToolResult::ok("Renamed " + sub + " to " + new_name + ".");
    }

    // A text file of a folder from `offset`, kReadChunk bytes at most, cut on a character's edge.
    ToolResult read_file(const std::string& name, const std::string& sub, int64_t offset) {
        auto r = root(name);
        if (auto* e = std::get_if<ToolResult>(&r)) return *e;
        if (sub.empty()) return ToolResult::error("validation_failed", "give the path of a file inside the folder");
        auto target = resolve(std::get<fs::path>(r), sub);
        if (auto* e = std::get_if<ToolResult>(&target)) return *e;
        const fs::path& file = std::get<fs::path>(target);
        std::error_code ec;
        if (!fs::is_regular_file(file, ec))
            return ToolResult::error("not_a_file", "'" + sub + "' is not a file (list_folder shows what is there)");
        const auto size = static_cast<int64_t>(fs::file_size(file, ec));
        if (offset < 0 || offset > size)
            return ToolResult::error("validation_failed", "offset " + std::to_string(offset) + " is outside the file (0 to " +
                                                              std::to_string(size) + ")");
        std::ifstream in(file, std::ios::binary);
        if (!in) return ToolResult::error("permission_denied", "'" + sub + "' cannot be read");
        in.seekg(offset);
        std::string chunk(kReadChunk + 3, '\0');  // room to finish a character the chunk would cut
        in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
        chunk.resize(static_cast<size_t>(in.gcount()));
        auto whole = folders::utf8_prefix(chunk, kReadChunk);
        if (!whole)
            return ToolResult::error("not_text", "'" + sub + "' is not UTF-8 text (" + std::to_string(size) +
                                                     " bytes, binary or another encoding): it cannot be read as text");
        chunk.resize(*whole);
        const int64_t next = offset + static_cast<int64_t>(*whole);
        json structured{{"folder", name}, {"path", sub}, {"size", size}, {"offset", offset}, {"bytes", *whole}};
        if (next < size) {
            structured["next_offset"] = next;
            chunk +=
                "\n[" + std::to_string(size - next) + " more bytes: read_file again with offset " + std::to_string(next) + "]";
        }
        ToolResult result = ToolResult::ok(chunk);
        result.body["structured"] = std::move(structured);
        return result;
    }

    // The bytes of `content` (base64) as a file at `sub`, written beside it and renamed into place, so
    // nobody reads half a file; a taken name gets a number unless `overwrite`.
    ToolResult save_file(const std::string& name, const std::string& sub, const std::string& content, bool overwrite) {
        auto r = root(name);
        if (auto* e = std::get_if<ToolResult>(&r)) return *e;
        const fs::path wanted(sub);
        const std::string file_name = wanted.filename().string();
        if (file_name.empty() || file_name == "." || file_name == "..")
            return ToolResult::error("validation_failed", "give the file's path inside the folder, ending in its name");
        if (std::string why = hostile(sub); !why.empty()) return ToolResult::error("forbidden", why);
        auto parent = resolve(std::get<fs::path>(r), wanted.parent_path().string());
        if (auto* e = std::get_if<ToolResult>(&parent)) return *e;
        std::error_code ec;
        if (!fs::is_directory(std::get<fs::path>(parent), ec))
            return ToolResult::error("not_a_directory", "'" + wanted.parent_path().string() + "' is not a folder");
        auto bytes = folders::base64_bytes(content, max_save_bytes_);
        if (!bytes)
            return ToolResult::error("validation_failed", "content_base64 is not base64, or holds more than " +
                                                              std::to_string(max_save_bytes_ >> 20) +
                                                              " MiB ([plugins.folders] max_save_mb)");
        std::optional<fs::path> target = std::get<fs::path>(parent) / file_name;
        if (fs::is_directory(fs::symlink_status(*target, ec)))
            return ToolResult::error("validation_failed", "'" + sub + "' is a folder");
        if (!overwrite) target = folders::free_name(*target);
        if (!target) return ToolResult::error("validation_failed", "every name like '" + file_name + "' (up to 100) is taken");
        fs::path part = target->parent_path() / ("." + target->filename().string() + ".part-" + std::to_string(::getpid()));
        std::ofstream out(part, std::ios::binary | std::ios::trunc);
        out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
        out.close();
        if (!out || (fs::rename(part, *target, ec), ec)) {
            fs::remove(part, ec);
            return ToolResult::error("permission_denied", "could not write '" + sub + "' (a full disk, or no permission)");
        }
        const std::string saved = fs::relative(*target, std::get<fs::path>(r), ec).string();
        ToolResult result =
            ToolResult::ok("Saved " + saved + " (" + std::to_string(bytes->size()) + " bytes) in the folder " + name + ".");
        result.body["structured"] = {{"folder", name}, {"path", saved}, {"bytes", bytes->size()}};
        return result;
    }

    static constexpr size_t kReadChunk = 32 * 1024;

    std::vector<std::string> configured_roots_;  // allowed_roots as written, for health()
    json presets_ = json::object();
    std::vector<fs::path> allowed_roots_;  // canonical
    bool allow_changes_ = false;
    int page_size_ = 50;
    size_t max_save_bytes_ = size_t{25} << 20;
};

}  // namespace

// Thread-safe: the only state is read from the host's memory on each call.
AGENTHOST_PLUGIN(FoldersPlugin, "folders", "1.0.0", AH_PLUGIN_THREAD_SAFE)
