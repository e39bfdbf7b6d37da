// The web panel end to end in headless Chromium (tests/peers/web_panel.mjs, playwright-core with
// Debian's chromium): the login form, a prompt streams, text around tool calls stays apart, the
// agent_done summary is drawn as sanitised Markdown, tool lines and the graph canvas fill, a paused
// run is approved and another rejected with a reason by keyboard, a reload shows the same
// conversation, a conversation on the second provider is renamed, searched and deleted, every width
// and theme passes an axe-core audit, and the panel works without its renderers. The panel logs in through the URL serve prints
// (its token generated in data_dir/server-token), which sets an HttpOnly cookie. Screenshots: <build>/web-panel-screenshots/.
#include "integration/qbittorrent_fixture.hpp"
#include "support/test_support.hpp"
#include "test_paths.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cctype>
#include <csignal>
#include <memory>
#include <thread>

#include <sys/wait.h>

using Catch::Matchers::Contains;
using nlohmann::json;

TEST_CASE("web panel: transcript, tools, graph canvas, approvals and reload in headless Chromium", "[peer][web]") {
    test::TempDir dir;
    auto call = [](const std::string& name, json args) {
        return json{{"tool_calls", {{{"name", name}, {"arguments", std::move(args)}}}}};
    };
    json spec{
        {"nodes",
         {{{"name", "Sun"}, {"type", "star"}}, {{"name", "Earth"}, {"type", "planet"}}, {{"name", "Moon"}, {"type", "moon"}}}},
        {"edges",
         {{{"source", "Earth"}, {"target", "Sun"}, {"type", "orbits"}},
          {{"source", "Moon"}, {"target", "Earth"}, {"type", "orbits"}}}}};
    json first = call("create_graph", {{"name", "Solar"}});
    first["reasoning"] = "The user wants a graph of the solar system; I will create it first.";
    first["text"] = "First the graph, then its frame.";
    json frame_and_story{
        {"tool_calls",
         json::array({json{{"name", "create_frame"},
                           {"arguments", {{"name", "Earth system"}, {"members", json::array({"Earth", "Moon"})}}}},
                      json{{"name", "create_storyline"},
                           {"arguments", {{"title", "Inward"}, {"members", json::array({"Moon", "Earth", "Sun"})}}}}})}};
    // The answer through agent_done, in Markdown (code to highlight, a diagram to draw), with markup a
    // sanitiser must remove.
    std::string summary =
        "## Done\n\nMade the Solar graph with the Sun, the Earth and the Moon.\n\n| body | orbits |\n|---|---|\n"
        "| Earth | Sun |\n| Moon | Earth |\n\n```python\nprint('hi')\n```\n\n```mermaid\ngraph LR\n  Sun --> Earth\n```\n\n"
        "See [the docs](https://example.org/docs). "
        "<img src=x onerror=\"window.__injected=1\"> [click](javascript:window.__injected=1) "
        "![the orbits drawn](https://example.org/orbits.png)";
    auto rule = [](const std::string& match, json replies) { return json{{"match", match}, {"replies", std::move(replies)}}; };
    json cassette{
        {"rules",
         {rule("Write a title", {{{"text", "Solar notes"}}, {{"text", "Solar notes"}}, {{"text", "Solar notes"}}}),
          rule("solar",
               {first, call("apply_graph_spec", {{"spec", spec}}), frame_and_story, call("agent_done", {{"summary", summary}})}),
          rule("delete the earth", {call("delete_nodes", {{"names", {"Earth"}}}), {{"text", "Deleted the Earth."}}}),
          rule("delete the sun", {call("delete_nodes", {{"names", {"Sun"}}}), {{"text", "Kept the Sun."}}}),
          rule("hello", {{{"text", "Hello from the backup provider."}}}),
          rule("ask me", {call("test_elicitation", {{"message", "Who is asking?"}}), {{"text", "Noted who you are."}}})}},
        {"fallback", {{"text", "fallback"}}}};
    test::write_file(dir.path / "cassette.json", cassette.dump());
    std::string config = (dir.path / "agenthost.toml").string();
    test::write_file(config, "data_dir = \"" + (dir.path / "data").string() +
                                 "\"\ndefault_plugin_dirs = false\n"
                                 "enabled_plugins = [\"scripted\", \"graph\", \"conformance\", \"folders\"]\n"
                                 "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                                 "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS "\", \"" AGENTHOST_FIXTURE_PLUGIN_DIR
                                 "\"]\n"
                                 "[providers.backup]\nuse = \"scripted\"\n"
                                 "[server]\nattachment_folder = \"inbox\"\nmodel_titles = true\n"
                                 "[plugins.folders]\nfolders = {inbox = \"" +
                                 (dir.path / "inbox").string() +
                                 "\"}\n"
                                 "[plugins.scripted]\ncassette = \"" +
                                 (dir.path / "cassette.json").string() + "\"\ndelta_chars = 3\ndelta_delay_ms = 15\n");
    test::fs::create_directories(dir.path / "inbox");
    int port = test::free_port();
    test::Process server({test::cli(), "--config", config, "serve", "--listen", "127.0.0.1:" + std::to_string(port)});
    REQUIRE(server.wait_for_port(port));
    std::string token = test::read_file(dir.path / "data" / "server-token");  // generated on first start
    REQUIRE(token.size() == 64);

    std::string shots = std::string(test::binary_dir()) + "/web-panel-screenshots";
    auto r = test::run_command("node '" + std::string(test::source_dir()) + "/tests/peers/web_panel.mjs' http://127.0.0.1:" +
                               std::to_string(port) + " '" + shots + "' main " + token);
    INFO(r.err);
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    json out = json::parse(r.out);
    CHECK_THAT(out["status"].get<std::string>(), Contains("provider scripted") && Contains("ready"));
    CHECK(out["graph_summary"] == "3 nodes · 2 edges · 1 frame · 1 storyline");
    CHECK(out["conversations"] == 1);
    CHECK(out["token_in_page"] == false);
    CHECK(out["picked_provider"] == "backup");
    CHECK(test::read_file(dir.path / "inbox" / "notes.txt") == "remember the milk\n");  // attached in the panel
    for (const char* shot : {"0-login.png",
                             "1-graph-built.png",
                             "2-approval.png",
                             "2-question.png",
                             "3-after-reload-1280x720.png",
                             "3-server-away.png",
                             "4-confirm-delete.png",
                             "5-375-light.png",
                             "5-375-dark.png",
                             "5-1280-light.png",
                             "5-1280-dark.png",
                             "5-1920-light.png",
                             "5-1920-dark.png",
                             "6-375-drawer.png",
                             "6-375-graph.png",
                             "7-without-renderers.png",
                             "5-375-light-graph.png",
                             "5-375-dark-activity.png",
                             "5-1280-light-activity.png",
                             "5-1280-dark-graph.png"})
        CHECK(test::fs::file_size(test::fs::path(shots) / shot) > 1000);
}

TEST_CASE("web panel: a run a killed terminal left interrupted is resumed from the panel", "[peer][web]") {
    test::TempDir dir;
    // The second reply is slow so the kill below lands inside it however long the polling
    // `runs --json` takes (a sanitizer build starts a CLI in about a second).
    auto step = [](const std::string& text, int delay_ms) {
        return json{{"delay_ms", delay_ms}, {"tool_calls", {{{"name", "echo"}, {"arguments", {{"text", text}}}}}}};
    };
    json cassette{{"rules",
                   {{{"match", "steps"},
                     {"replies", {step("one", 300), step("two", 6000), step("three", 300), {{"text", "three steps done"}}}}}}},
                  {"fallback", {{"text", "fallback"}}}};
    test::write_file(dir.path / "cassette.json", cassette.dump());
    std::string config = (dir.path / "agenthost.toml").string();
    test::write_file(config, "data_dir = \"" + (dir.path / "data").string() +
                                 "\"\ndefault_plugin_dirs = false\n"
                                 "enabled_plugins = [\"scripted\", \"example_c\"]\n"
                                 "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                                 "\", \"" AGENTHOST_EXAMPLE_PLUGIN_DIR_FOR_TESTS
                                 "\"]\n"
                                 "[plugins.scripted]\ncassette = \"" +
                                 (dir.path / "cassette.json").string() + "\"\n");
    int port = test::free_port();
    auto serve = [&] {
        return std::make_unique<test::Process>(
            std::vector<std::string>{test::cli(), "--config", config, "serve", "--listen", "127.0.0.1:" + std::to_string(port)});
    };
    auto server = serve();
    REQUIRE(server->wait_for_port(port));
    std::string token = test::read_file(dir.path / "data" / "server-token");
    server.reset();  // SIGTERM: the token is kept for the next start
    server = serve();
    REQUIRE(server->wait_for_port(port));
    // A terminal's run, killed mid-run: the server leaves it to its user (a server's own runs it
    // resumes by itself), so the panel offers to resume it.
    test::Process terminal({test::cli(), "--config", config, "run", "three steps"});
    // Killed once its first step is written (inside the second, 6 s long): waited for, not
    // timed, as a slow start (a sanitizer build, a busy machine) would find no run yet.
    for (int i = 0; i < 200; ++i) {
        auto now = test::run_command("'" + std::string(test::cli()) + "' --config '" + config + "' runs --json");
        json seen = json::parse(now.out, nullptr, false);
        if (seen.is_array() && !seen.empty() && seen[0].value("tool_calls", 0) >= 1) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    ::kill(terminal.pid, SIGKILL);
    ::waitpid(terminal.pid, nullptr, 0);
    terminal.pid = -1;
    auto runs = test::run_command("'" + std::string(test::cli()) + "' --config '" + config + "' runs --json");
    REQUIRE(runs.exit_code == 0);
    json listed = json::parse(runs.out);  // `runs` marks the dead process's run interrupted at once
    REQUIRE(listed.size() == 1);
    CHECK(listed[0]["status"] == "interrupted");
    CHECK(listed[0]["origin"] == "cli");

    std::string shots = std::string(test::binary_dir()) + "/web-panel-screenshots";
    CHECK(test::read_file(dir.path / "data" / "server-token") == token);  // the same token after a restart
    auto r = test::run_command("node '" + std::string(test::source_dir()) + "/tests/peers/web_panel.mjs' http://127.0.0.1:" +
                               std::to_string(port) + " '" + shots + "' resume " + token);
    INFO(r.err);
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    json out = json::parse(r.out);
    CHECK_THAT(out["resume_label"].get<std::string>(), Contains("Resume run 1"));
    CHECK_THAT(out["transcript"].get<std::string>(), Contains("three steps done"));
}

TEST_CASE("web panel: a server stopped while it answers comes back in the page: the answer once, the draft kept", "[peer][web]") {
    test::TempDir dir;
    // Long answers, streamed slowly: the stop lands while one is being written. (Each rule answers
    // twice the same: a step the stop cut is asked again.)
    auto story = [](const std::string& name) {
        std::string text;
        for (int i = 0; i < 40; ++i) text += "Sentence " + std::to_string(i) + " of story " + name + ". ";
        std::string upper = name;
        for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        json reply{{"text", text + "END OF STORY " + upper}};
        return json{{"match", "story " + name}, {"replies", {reply, reply}}};
    };
    json cassette{{"rules", {story("one"), story("two")}}, {"fallback", {{"text", "fallback"}}}};
    test::write_file(dir.path / "cassette.json", cassette.dump());
    std::string config = (dir.path / "agenthost.toml").string();
    test::write_file(config, "data_dir = \"" + (dir.path / "data").string() +
                                 "\"\ndefault_plugin_dirs = false\n"
                                 "enabled_plugins = [\"scripted\"]\n"
                                 "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                                 "\"]\n"
                                 "[server]\nshutdown_grace_seconds = 1\n"
                                 "[plugins.scripted]\ncassette = \"" +
                                 (dir.path / "cassette.json").string() + "\"\ndelta_chars = 4\ndelta_delay_ms = 20\n");
    int port = test::free_port();
    {
        test::Process first({test::cli(), "--config", config, "serve", "--listen", "127.0.0.1:" + std::to_string(port)});
        REQUIRE(first.wait_for_port(port));  // writes the token; the script starts the server it stops
    }
    std::string token = test::read_file(dir.path / "data" / "server-token");
    std::string shots = std::string(test::binary_dir()) + "/web-panel-screenshots";
    auto r = test::run_command("node '" + std::string(test::source_dir()) +
                               "/tests/peers/web_panel.mjs' http://127.0.0.1:" + std::to_string(port) + " '" + shots +
                               "' restart " + token + " '" + test::cli() + "' '" + config + "'");
    INFO(r.err);
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    json out = json::parse(r.out);
    CHECK(out["SIGTERM"]["endings"] == 1);
    CHECK(out["SIGKILL"]["endings"] == 1);
}

TEST_CASE("web panel: the downloads panel follows the real qBittorrent and says in the transcript when one finishes",
          "[peer][web][qbittorrent]") {
    test::TempDir dir, qdir;
    test::Qbittorrent qbt(qdir.path);
    INFO("qbittorrent-nox must be installed (scripts/install-deps installs it)");
    REQUIRE(qbt.running());
    std::string data(40000, 'x');
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + (i * 7) % 26);
    test::write_file(dir.path / "staged.bin", data);  // put in place by the browser script, later
    test::write_file(dir.path / "data.torrent", test::make_torrent("data.bin", data));
    test::fs::create_directories(dir.path / "done");
    auto call = [](const std::string& name, json args) {
        return json{{"tool_calls", {{{"name", name}, {"arguments", std::move(args)}}}}};
    };
    json cassette{
        {"rules",
         {{{"match", "get the files"},
           {"replies",
            {call("add_torrent", {{"source", "magnet:?xt=urn:btih:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa&dn=ubuntu-desktop"},
                                  {"folder", (qdir.path / "media").string()}}),
             call("add_torrent", {{"source", (dir.path / "data.torrent").string()}, {"folder", (dir.path / "done").string()}}),
             {{"text", "Both are on their way."}}}}}}},
        {"fallback", {{"text", "fallback"}}}};
    test::write_file(dir.path / "cassette.json", cassette.dump());
    ::setenv("QBT_PANEL_PASSWORD", "test-pass-123", 1);
    std::string config = (dir.path / "agenthost.toml").string();
    test::write_file(config, "data_dir = \"" + (dir.path / "data").string() +
                                 "\"\ndefault_plugin_dirs = false\n"
                                 "enabled_plugins = [\"scripted\", \"torrent\"]\n"
                                 "plugin_dirs = [\"" AGENTHOST_BUILD_PLUGIN_DIR_FOR_TESTS
                                 "\"]\n"
                                 "[plugins.scripted]\ncassette = \"" +
                                 (dir.path / "cassette.json").string() +
                                 "\"\n"
                                 "[plugins.torrent]\nqbittorrent_url = \"" +
                                 qbt.url() + "\"\npassword_env = \"QBT_PANEL_PASSWORD\"\npoll_seconds = 1\n");
    int port = test::free_port();
    test::Process server({test::cli(), "--config", config, "serve", "--listen", "127.0.0.1:" + std::to_string(port)});
    REQUIRE(server.wait_for_port(port));
    std::string token = test::read_file(dir.path / "data" / "server-token");
    std::string shots = std::string(test::binary_dir()) + "/web-panel-screenshots";
    auto r = test::run_command("node '" + std::string(test::source_dir()) + "/tests/peers/web_panel.mjs' http://127.0.0.1:" +
                               std::to_string(port) + " '" + shots + "' downloads " + token + " " + qbt.url() + " '" +
                               (dir.path / "staged.bin").string() + "' '" + (dir.path / "done").string() + "'");
    INFO(r.err);
    INFO(r.out);
    REQUIRE(r.exit_code == 0);
    json out = json::parse(r.out);
    CHECK_THAT(out["notice"].get<std::string>(),
               Contains("Download finished: data.bin") && Contains((dir.path / "done").string()));
    CHECK(out["progress"][0] == 1);
}
