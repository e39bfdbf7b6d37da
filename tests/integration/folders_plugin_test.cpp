// The folders plugin against a real directory tree: names, listing, paging, persistence, the
// context hook, every error code and a table of hostile subpaths.
#include "isolation/sandbox.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Tree {
    test::TempDir dir;
    fs::path media, outside;
    Tree() {
        media = dir.path / "media";
        outside = dir.path / "outside";
        fs::create_directories(media / "a" / "b");
        fs::create_directories(outside);
        test::write_file(outside / "secret.txt", "do not read");
        test::write_file(media / "ünï cödé file.txt", "unicode");
        test::write_file(media / "with space.txt", "12345");
        test::write_file(media / "a" / "b" / "deep.txt", "deep");
        fs::create_directory_symlink(outside, media / "escape");     // leads out
        fs::create_directory_symlink(media / "a", media / "inner");  // stays in
        fs::create_directory_symlink(outside, media / "a" / "out");  // leads out, one level down
        fs::create_directory_symlink(dir.path, media / "abs_up");    // the folder's own parent
        fs::create_directory(media / "locked");
        ::chmod((media / "locked").c_str(), 0);
    }
    ~Tree() { ::chmod((media / "locked").c_str(), 0755); }
};

std::unique_ptr<app::HostApp> start(const Tree& t, const std::string& extra = "{}") {
    auto cfg = test::config(t.dir.path / "data", true);
    cfg.enabled_plugins = {"folders", "service_probe"};
    json table = json::parse(extra);
    cfg.plugin_tables["folders"] = table.dump();
    return test::start(cfg);
}

std::string code(const json& result) { return result.value("error_code", "ok"); }

}  // namespace

TEST_CASE("folders: set, list, page, inspect, names survive a restart and other plugins see them", "[integration][folders]") {
    Tree t;
    // Sandboxed (where the kernel can): the plugin reads its allowed roots and nothing else.
    const std::string sandbox = isolation::kernel_support().landlock_abi >= 1 ? R"("isolation": "sandbox", )" : "";
    std::string roots = "{" + sandbox + R"("allowed_roots": [")" + t.dir.path.string() + R"("]})";
    {
        auto app = start(t, roots);
        auto set = test::call_tool(*app, "set_path_for_folder", {{"name", "media"}, {"path", t.media.string()}});
        REQUIRE(code(set) == "ok");
        // Other plugins resolve the name through the host's long-term memory.
        auto seen = test::call_tool(*app, "probe_memory", {{"conversation", ""}, {"key", "folders"}});
        CHECK_THAT(seen["content"].dump(), Contains(t.media.filename().string()));
    }
    auto app = start(t, "{" + sandbox + R"("page_size": 4, "allowed_roots": [")" + t.dir.path.string() + R"("]})");
    auto folders = test::call_tool(*app, "list_folders", json::object());
    CHECK(folders["content"]["media"] == fs::canonical(t.media).string());
    plugins::CallInput hook;
    CHECK_THAT(app->registry().context(hook), Contains("Named folders") && Contains("media"));

    auto page1 = test::call_tool(*app, "list_folder", {{"name", "media"}});
    REQUIRE(code(page1) == "ok");
    json s = page1["structured"];
    CHECK(s["pages"] == 2);
    CHECK(s["total"] == 7);
    CHECK(s["entries"][0]["name"] == "a");  // directories first, then by name
    CHECK(s["entries"][0]["type"] == "directory");
    auto page2 = test::call_tool(*app, "list_folder", {{"name", "media"}, {"page", 2}});
    std::vector<std::string> names;
    for (const auto& e : page2["structured"]["entries"]) names.push_back(e["name"]);
    CHECK(std::find(names.begin(), names.end(), "ünï cödé file.txt") != names.end());
    for (const auto& e : page2["structured"]["entries"])
        if (e["name"] == "with space.txt") {
            CHECK(e["size"] == 5);
            CHECK(e["modified"].get<std::string>().size() == 20);
        }
    auto deep = test::call_tool(*app, "list_folder", {{"name", "media"}, {"subpath", "inner/b"}});  // a link that stays inside
    CHECK(deep["structured"]["entries"][0]["name"] == "deep.txt");
    auto info = test::call_tool(*app, "folder_info", {{"name", "media"}});
    CHECK(info["structured"]["entries"] == 7);
    CHECK(info["structured"]["free_bytes"].get<uint64_t>() > 0);
    CHECK(app->registry().find_tool("move_into_folder") == nullptr);  // off unless allowed
}

TEST_CASE("folders: every error code is distinct and says what to do", "[integration][folders]") {
    Tree t;
    auto app =
        start(t, R"({"allowed_roots": [")" + t.dir.path.string() + R"("], "folders": {"media": ")" + t.media.string() + R"("}})");
    auto call = [&](const std::string& tool, const json& args) { return code(test::call_tool(*app, tool, args)); };
    CHECK(call("set_path_for_folder", {{"name", "Bad-Name"}, {"path", t.media.string()}}) == "validation_failed");
    CHECK(call("set_path_for_folder", {{"name", "films"}, {"path", "relative/dir"}}) == "invalid_path");
    CHECK(call("set_path_for_folder", {{"name", "films"}, {"path", (t.dir.path / "missing").string()}}) == "not_found");
    CHECK(call("set_path_for_folder", {{"name", "films"}, {"path", (t.media / "with space.txt").string()}}) == "not_a_directory");
    CHECK(call("list_folder", {{"name", "films"}}) == "folder_not_set");
    CHECK(call("list_folder", {{"name", "media"}, {"subpath", "nope"}}) == "not_found");
    CHECK(call("list_folder", {{"name", "media"}, {"subpath", "with space.txt"}}) == "not_a_directory");
    CHECK(call("list_folder", {{"name", "media"}, {"page", 9}}) == "validation_failed");
    CHECK(call("list_folder", {{"name", "media"}, {"subpath", "../outside"}}) == "forbidden");
    if (::geteuid() == 0) {
        WARN("running as root: the unreadable-directory case (permission_denied) is skipped, root reads everything");
    } else {
        CHECK(call("list_folder", {{"name", "media"}, {"subpath", "locked"}}) == "permission_denied");
    }
}

TEST_CASE("folders: hostile subpaths are refused, never followed", "[integration][folders]") {
    Tree t;
    auto app = start(t, R"({"folders": {"media": ")" + t.media.string() + R"("}})");
    std::vector<std::string> hostile{"..",
                                     "../",
                                     "../outside",
                                     "../../../../etc/passwd",
                                     "a/../..",
                                     "a/b/../../..",
                                     "a/../../outside/secret.txt",
                                     "/etc",
                                     "/",
                                     "//etc/passwd",
                                     "\\etc",
                                     "..\\..\\etc",
                                     "a\\..\\..\\outside",
                                     "C:\\Windows",
                                     "c:/windows/system32",
                                     "~",
                                     "~/secret",
                                     "escape",
                                     "escape/secret.txt",
                                     "a/../escape",
                                     "inner/../escape",
                                     std::string("a\0b", 3),
                                     std::string(300, 'x'),
                                     "a/" + std::string(300, 'y'),
                                     std::string(5000, 'z'),
                                     "./../outside",
                                     "a/./../../outside",
                                     "a//../../outside",
                                     "a/out",
                                     "a/out/secret.txt",
                                     "abs_up",
                                     "abs_up/outside/secret.txt",
                                     "inner/out/secret.txt"};
    REQUIRE(hostile.size() >= 30);
    for (const auto& sub : hostile) {
        INFO("subpath: " << json(sub).dump());
        auto result = test::call_tool(*app, "list_folder", {{"name", "media"}, {"subpath", sub}});
        CHECK(result["is_error"] == true);
        std::string c = code(result);
        CHECK(c == "forbidden");
        CHECK_THAT(result["content"].dump(), !Contains("secret.txt\""));
    }
}

TEST_CASE("folders: move and rename, when allowed, are destructive and stay inside the folders", "[integration][folders]") {
    Tree t;
    fs::create_directories(t.dir.path / "archive");
    auto app = start(t, R"({"allow_changes": true, "folders": {"media": ")" + t.media.string() + R"(", "archive": ")" +
                            (t.dir.path / "archive").string() + R"("}})");
    auto move = app->registry().find_tool("move_into_folder");
    REQUIRE(move);
    CHECK(move->hints & AH_TOOL_DESTRUCTIVE);
    CHECK(move->needs_approval);
    auto moved = test::call_tool(*app, "move_into_folder", {{"from", "media"}, {"subpath", "with space.txt"}, {"to", "archive"}});
    CHECK(code(moved) == "ok");
    CHECK(fs::exists(t.dir.path / "archive" / "with space.txt"));
    CHECK(code(test::call_tool(*app, "rename_entry",
                               {{"name", "archive"}, {"subpath", "with space.txt"}, {"new_name", "../x"}})) == "forbidden");
    CHECK(code(test::call_tool(*app, "rename_entry",
                               {{"name", "archive"}, {"subpath", "with space.txt"}, {"new_name", "renamed.txt"}})) == "ok");
    CHECK(fs::exists(t.dir.path / "archive" / "renamed.txt"));
    CHECK(code(test::call_tool(*app, "move_into_folder", {{"from", "media"}, {"subpath", "escape"}, {"to", "archive"}})) ==
          "forbidden");
}

TEST_CASE("folders: the operator's presets and allowed_roots bound what the model can name", "[integration][folders]") {
    Tree t;
    fs::create_directories(t.dir.path / "library" / "films");
    std::string presets = R"("folders": {"media": ")" + t.media.string() + R"("})";
    {  // No allowed_roots: the model cannot name folders at all; the tool is not even offered.
        auto app = start(t, "{" + presets + "}");
        CHECK(app->registry().find_tool("set_path_for_folder") == nullptr);
        CHECK(code(test::call_tool(*app, "set_path_for_folder", {{"name", "etc"}, {"path", "/etc"}})) != "ok");
    }
    auto app =
        start(t, R"({"allowed_roots": [")" + (t.dir.path / "library").string() + R"(", "/does/not/exist"], )" + presets + "}");
    auto set = app->registry().find_tool("set_path_for_folder");
    REQUIRE(set);
    CHECK(set->needs_approval);  // a new name widens what the agent can reach: a person approves it
    CHECK_THAT(set->description, Contains((t.dir.path / "library").string()));

    auto attempt = [&](const std::string& name, const std::string& path) {
        return test::call_tool(*app, "set_path_for_folder", {{"name", name}, {"path", path}});
    };
    // A preset cannot be overwritten (the old bug: the model pointed "media" at /root and listed it).
    auto overwrite = attempt("media", "/root");
    CHECK(code(overwrite) == "forbidden");
    CHECK_THAT(overwrite["content"].dump(), Contains("set by the operator"));
    CHECK(test::call_tool(*app, "list_folders", json::object())["content"]["media"] == t.media.string());
    // Outside the roots: refused, whichever way the path gets there.
    for (const std::string& path : {std::string("/root"), std::string("/"), t.outside.string(),
                                    (t.dir.path / "library" / "..").string(), t.dir.path.string()}) {
        INFO(path);
        auto r = attempt("elsewhere", path);
        CHECK(code(r) == "forbidden");
        CHECK_THAT(r["content"].dump(), Contains("allowed roots"));
    }
    // A symbolic link inside the root that leads out is judged by where it leads.
    fs::create_directory_symlink(t.outside, t.dir.path / "library" / "sneaky");
    CHECK(code(attempt("sneaky", (t.dir.path / "library" / "sneaky").string())) == "forbidden");
    CHECK(code(test::call_tool(*app, "list_folder", {{"name", "sneaky"}})) == "folder_not_set");
    // Under the root: accepted, and usable by name.
    REQUIRE(code(attempt("films", (t.dir.path / "library" / "films").string())) == "ok");
    CHECK(code(test::call_tool(*app, "list_folder", {{"name", "films"}})) == "ok");

    // The operator narrows the roots: the name the model set stops working at once, the presets do not.
    app.reset();
    auto narrowed = start(t, "{" + presets + R"(, "allowed_roots": [")" + t.media.string() + R"("]})");
    auto gone = test::call_tool(*narrowed, "list_folder", {{"name", "films"}});
    CHECK(code(gone) == "forbidden");
    CHECK_THAT(gone["content"].dump(), Contains("no longer under the allowed roots"));
    CHECK(code(test::call_tool(*narrowed, "list_folder", {{"name", "media"}})) == "ok");
}

TEST_CASE("folders: read_file reads text in pieces on a character's edge, save_file writes inside the folder only",
          "[integration][folders]") {
    Tree t;
    auto app = start(t, R"({"max_save_mb": 1, "folders": {"media": ")" + t.media.string() + R"("}})");
    // Reading: the text, a binary file refused in words, hostile paths refused as for listing.
    auto read = test::call_tool(*app, "read_file", {{"name", "media"}, {"path", "a/b/deep.txt"}});
    CHECK(code(read) == "ok");
    CHECK(read["content"] == "deep");
    test::write_file(t.media / "blob.bin", std::string("\x7f"
                                                       "ELF\0\0\x01",
                                                       7));
    auto binary = test::call_tool(*app, "read_file", {{"name", "media"}, {"path", "blob.bin"}});
    CHECK(code(binary) == "not_text");
    CHECK(code(test::call_tool(*app, "read_file", {{"name", "media"}, {"path", "escape/secret.txt"}})) == "forbidden");
    CHECK(code(test::call_tool(*app, "read_file", {{"name", "media"}, {"path", "a"}})) == "not_a_file");
    // A long file in pieces: each piece ends on a whole character, and the offsets join them back.
    std::string long_text;
    while (long_text.size() < 80 * 1024) long_text += "é";  // two bytes each: a piece of 32 KiB could cut one
    long_text += "z";
    test::write_file(t.media / "long.txt", long_text);
    std::string joined;
    int64_t offset = 0;
    for (int piece = 0; piece < 10; ++piece) {
        auto part = test::call_tool(*app, "read_file", {{"name", "media"}, {"path", "long.txt"}, {"offset", offset}});
        REQUIRE(code(part) == "ok");
        const json& s = part["structured"];
        joined += part["content"].get<std::string>().substr(0, s["bytes"].get<size_t>());
        if (!s.contains("next_offset")) break;
        CHECK_THAT(part["content"].get<std::string>(),
                   Contains("read_file again with offset " + std::to_string(s["next_offset"].get<int64_t>())));
        offset = s["next_offset"];
    }
    CHECK(joined == long_text);

    // Saving: destructive (the model's calls need approval), a taken name numbered, never outside.
    auto save = app->registry().find_tool("save_file");
    REQUIRE(save);
    CHECK(save->needs_approval);
    auto saved = test::call_tool(*app, "save_file", {{"name", "media"}, {"path", "a/notes.txt"}, {"content_base64", "aGVsbG8="}});
    CHECK(code(saved) == "ok");
    CHECK(saved["structured"]["path"] == "a/notes.txt");
    CHECK(test::read_file(t.media / "a" / "notes.txt") == "hello");
    auto again = test::call_tool(*app, "save_file", {{"name", "media"}, {"path", "a/notes.txt"}, {"content_base64", "d29ybGQ="}});
    CHECK(again["structured"]["path"] == "a/notes (2).txt");
    CHECK(test::read_file(t.media / "a" / "notes.txt") == "hello");  // kept
    auto replaced = test::call_tool(
        *app, "save_file", {{"name", "media"}, {"path", "a/notes.txt"}, {"content_base64", "d29ybGQ="}, {"overwrite", true}});
    CHECK(code(replaced) == "ok");
    CHECK(test::read_file(t.media / "a" / "notes.txt") == "world");
    for (const char* hostile : {"../outside/x.txt", "escape/x.txt", "/etc/x.txt", "a/../../x.txt", "missing/x.txt"}) {
        auto refused = test::call_tool(*app, "save_file", {{"name", "media"}, {"path", hostile}, {"content_base64", "eA=="}});
        INFO(hostile << " → " << refused.dump());
        CHECK(code(refused) != "ok");
    }
    CHECK_FALSE(fs::exists(t.outside / "x.txt"));
    CHECK(code(test::call_tool(*app, "save_file", {{"name", "media"}, {"path", "bad.txt"}, {"content_base64", "not base64!"}})) ==
          "validation_failed");
    // max_save_mb: 1 MiB and one byte is refused before it is written.
    std::string big(((1 << 20) / 3 + 1) * 4, 'A');  // base64 of 1 MiB and two bytes
    auto too_big = test::call_tool(*app, "save_file", {{"name", "media"}, {"path", "big.bin"}, {"content_base64", big}});
    CHECK(code(too_big) == "validation_failed");
    CHECK_THAT(too_big["content"].get<std::string>(), Contains("max_save_mb"));
    CHECK_FALSE(fs::exists(t.media / "big.bin"));
    for (const auto& entry : fs::directory_iterator(t.media / "a"))
        CHECK(entry.path().filename().string().find(".part-") == std::string::npos);
}
