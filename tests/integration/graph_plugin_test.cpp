// The graph plugin: the executor, auditor and committer alone and together, dedup on near-duplicate
// names, layout, exact undo, the vault round trip, cross-graph edges, and a scripted session.
#include "fuzzy.hpp"
#include "graph_db.hpp"
#include "mentions.hpp"
#include "render.hpp"
#include "spec.hpp"
#include "isolation/sandbox.hpp"
#include "support/test_support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <random>
#include <set>

using namespace agenthost;
using Catch::Matchers::Contains;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<graph::GraphDb> fresh(const test::TempDir& dir, const std::string& name = "graph.db") {
    std::string error;
    auto db = graph::GraphDb::open((dir.path / name).string(), error);
    REQUIRE(db);
    return db;
}

int64_t make_graph(graph::GraphDb& db, const std::string& name) {
    db.begin();
    int64_t id = db.insert("graphs", {{"name", name}, {"description", ""}});
    db.commit();
    return id;
}

json dump_all(graph::GraphDb& db) {
    json out;
    for (const char* t : {"graphs", "concepts", "instances", "connection_types", "edges", "frames", "storylines"})
        out[t] = db.query(std::string("SELECT * FROM ") + t + " ORDER BY id");
    return out;
}

json swift_kelce() {
    return {{"nodes",
             {{{"name", "Taylor Swift"}, {"description", "Singer"}, {"type", "Person"}},
              {{"name", "Travis Kelce"}, {"description", "Tight end"}, {"type", "Person"}},
              {{"name", "Kansas City Chiefs"}, {"description", "NFL team"}, {"type", "Team"}},
              {{"name", "Andy Reid"}, {"description", "Coach"}, {"type", "Person"}}}},
            {"edges",
             {{{"source", "Taylor Swift"}, {"target", "Travis Kelce"}, {"type", "romantic_partnership"}},
              {{"source", "Travis Kelce"}, {"target", "Kansas City Chiefs"}, {"type", "plays for"}},
              {{"source", "Andy Reid"}, {"target", "Travis Kelce"}, {"type", "coaching-relationship"}}}}};
}

// A host with only the graph plugin, its data in `dir`.
std::unique_ptr<app::HostApp> graph_app(const test::TempDir& dir) {
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = {"graph"};
    return test::start(cfg);
}

}  // namespace

TEST_CASE("graph: a database made before schema versions gets every table, and one at the version skips the script",
          "[integration][graph]") {
    test::TempDir dir;
    const std::string file = (dir.path / "graph.db").string();
    std::string error;
    {  // an old file: one table of the schema, no version
        auto db = graph::GraphDb::open(file, error);
        REQUIRE(db);
        db->run("DROP TABLE vault_notes");
        db->run("PRAGMA user_version=0");
    }
    auto tables = [&](graph::GraphDb& db) {
        std::set<std::string> names;
        for (const json& row : db.query("SELECT name FROM sqlite_master WHERE type = 'table'"))
            names.insert(row["name"].get<std::string>());
        return names;
    };
    {
        auto db = graph::GraphDb::open(file, error);
        REQUIRE(db);
        CHECK(tables(*db).count("vault_notes") == 1);
        CHECK(db->one("PRAGMA user_version")["user_version"] == 1);
        db->run("DROP TABLE vault_notes");  // at the version now: the next open does not look
    }
    auto db = graph::GraphDb::open(file, error);
    REQUIRE(db);
    CHECK(tables(*db).count("vault_notes") == 0);
    CHECK(db->one("PRAGMA journal_mode")["journal_mode"] == "wal");
}

TEST_CASE("graph: near-duplicate names merge, different names do not", "[integration][graph]") {
    std::vector<std::pair<std::string, std::string>> same{{"The Beatles", "Beatles"},
                                                          {"Beyoncé", "Beyonce"},
                                                          {"Swift, Taylor", "Taylor Swift"},
                                                          {"Taylor Swfit", "Taylor Swift"},
                                                          {"KANSAS CITY CHIEFS", "Kansas City Chiefs"},
                                                          {"Kansas-City Chiefs", "Kansas City Chiefs"},
                                                          {"Zoë Kravitz", "Zoe Kravitz"}};
    std::vector<std::pair<std::string, std::string>> different{
        {"Taylor Swift", "Taylor Lautner"}, {"Paris", "Paris Hilton"},   {"Mercury", "Mercury Records"},
        {"Jason Kelce", "Travis Kelce"},    {"Iron Man", "Iron Maiden"}, {"Blake Lively", "Blake Shelton"}};
    for (const auto& [a, b] : same) {
        INFO(a << " ~ " << b);
        CHECK(graph::similarity(a, b) >= 0.86);
    }
    for (const auto& [a, b] : different) {
        INFO(a << " !~ " << b);
        CHECK(graph::similarity(a, b) < 0.86);
    }
    CHECK(graph::title_case("close_friends_with") == "Close Friends With");
    CHECK(graph::title_case("coaching-relationship") == "Coaching Relationship");
    CHECK(graph::title_case("closeFriendsWith") == "Close Friends With");  // camelCase as a model writes it
    CHECK(graph::title_case("HTTPServer") == "Httpserver");
}

// The table behind plugins/README.md's dedup figures: real near-duplicates that must merge and
// different things (sequels, versions, models, years, namesakes) that must stay apart.
TEST_CASE("graph: dedup merges typos and never different numbers, over a table of real pairs", "[integration][graph]") {
    json table = json::parse(test::read_file(std::string(test::source_dir()) + "/tests/fixtures/graph_dedup_pairs.json"));
    double threshold = table["threshold"];
    int merged = 0, kept_apart = 0;
    std::string misses;
    // [a, b] or [a, b, type_a, type_b]: the executor's one decision, graph::same_concept.
    auto same = [&](const json& pair) {
        std::string type_a = pair.size() == 4 ? pair[2].get<std::string>() : "",
                    type_b = pair.size() == 4 ? pair[3].get<std::string>() : "";
        return graph::same_concept(pair[0], type_a, pair[1], type_b, threshold);
    };
    auto said = [](const json& pair) {
        std::string text = pair[0].get<std::string>() + " ~ " + pair[1].get<std::string>();
        if (pair.size() == 4) text += " (" + pair[2].get<std::string>() + ", " + pair[3].get<std::string>() + ")";
        return text + " (similarity " + std::to_string(graph::similarity(pair[0], pair[1])) + ")";
    };
    for (const auto& pair : table["merge"]) {
        if (same(pair))
            ++merged;
        else
            misses += "  not merged: " + said(pair) + "\n";
    }
    for (const auto& pair : table["apart"]) {
        if (!same(pair))
            ++kept_apart;
        else
            misses += "  MERGED: " + said(pair) + "\n";
    }
    WARN("dedup at " << threshold << ": merged right " << merged << "/" << table["merge"].size() << ", kept apart right "
                     << kept_apart << "/" << table["apart"].size() << "\n"
                     << misses);
    CHECK(kept_apart == static_cast<int>(table["apart"].size()));  // a wrong merge loses data: none allowed
    CHECK(merged == static_cast<int>(table["merge"].size()));
}

TEST_CASE("graph: executor plans, auditor refuses, committer applies and undo restores exactly", "[integration][graph]") {
    test::TempDir dir;
    auto db = fresh(dir);
    graph::SpecSettings settings;
    int64_t g = make_graph(*db, "Swift–Kelce network");
    json before = dump_all(*db);

    std::string error;
    auto plan = graph::execute(*db, swift_kelce(), g, settings, error);
    REQUIRE(error.empty());
    CHECK(plan.created.size() == 4);
    CHECK(graph::audit(plan, settings).empty());
    json summary = graph::commit(*db, plan);
    CHECK(summary["linked"].size() == 3);
    auto types = db->query("SELECT name FROM connection_types ORDER BY name");
    REQUIRE(types.size() == 3);
    CHECK(types[0]["name"] == "Coaching Relationship");
    CHECK(types[2]["name"] == "Romantic Partnership");
    auto colors = db->query("SELECT DISTINCT color FROM concepts");
    CHECK(colors.size() == 2);  // one per type, from the palette

    // "add more": existing names are reused, near-duplicates too; nothing is duplicated.
    json more{{"nodes", {{{"name", "taylor swift"}}, {{"name", "Jason Kelce"}, {"type", "Person"}}, {{"name", "Travis  Kelce"}}}},
              {"edges",
               {{{"source", "Jason Kelce"}, {"target", "Travis Kelce"}, {"type", "Sibling Of"}},
                {{"source", "Taylor Swift"}, {"target", "Travis Kelce"}, {"type", "Romantic Partnership"}}}}};
    auto again = graph::execute(*db, more, g, settings, error);
    CHECK(again.created.size() == 1);
    CHECK(again.reused.size() == 2);
    CHECK(graph::audit(again, settings).empty());  // the partnership exists already: skipped, not refused
    REQUIRE(again.skipped.size() == 1);
    CHECK_THAT(again.skipped[0]["why"].get<std::string>(), Contains("already there"));

    json self{
        {"nodes", {{{"name", "Solo"}}}},
        {"edges",
         {{{"source", "Solo"}, {"target", "Solo"}, {"type", "x"}}, {{"source", "Solo"}, {"target", "Nobody"}, {"type", "x"}}}}};
    auto bad = graph::execute(*db, self, g, settings, error);
    auto bad_violations = graph::audit(bad, settings);
    CHECK(bad_violations.size() == 2);  // a self-edge and an unknown endpoint: nothing applied

    auto invented = graph::execute(*db, {{"graph", {{"name", "Marvel Universe"}}}, {"nodes", json::array()}}, g, settings, error);
    CHECK_THAT(error, Contains("no graph named 'Marvel Universe'") && Contains("Swift–Kelce network"));

    json batch = db->one("SELECT log FROM batches ORDER BY id DESC LIMIT 1");
    db->undo(json::parse(batch["log"].get<std::string>()));
    CHECK(dump_all(*db) == before);  // exactly the previous state
}

TEST_CASE("graph: layout never overlaps, keeps neighbours near and is deterministic", "[integration][graph]") {
    json spec{{"nodes", json::array()}, {"edges", json::array()}};
    for (int i = 0; i < 60; ++i) spec["nodes"].push_back({{"name", "Node " + std::to_string(i)}});
    for (int i = 1; i < 60; ++i)
        spec["edges"].push_back({{"source", "Node 0"}, {"target", "Node " + std::to_string(i)}, {"type", "links"}});
    std::vector<json> layouts;
    for (int run = 0; run < 2; ++run) {
        test::TempDir dir;
        auto db = fresh(dir);
        int64_t g = make_graph(*db, "Star");
        std::string error;
        auto plan = graph::execute(*db, spec, g, {}, error);
        graph::commit(*db, plan);
        json pos = db->query("SELECT x, y FROM instances ORDER BY id");
        for (size_t a = 0; a < pos.size(); ++a)
            for (size_t b = a + 1; b < pos.size(); ++b)
                CHECK(std::hypot(pos[a]["x"].get<double>() - pos[b]["x"].get<double>(),
                                 pos[a]["y"].get<double>() - pos[b]["y"].get<double>()) >= graph::kSpacing - 1e-6);
        layouts.push_back(pos);
    }
    CHECK(layouts[0] == layouts[1]);
}

TEST_CASE("graph: the vault mirrors concepts and links, and reindex reads a person's edits back", "[integration][graph]") {
    test::TempDir dir;
    auto db = fresh(dir);
    int64_t g = make_graph(*db, "Swift–Kelce network");
    std::string error;
    graph::commit(*db, graph::execute(*db, swift_kelce(), g, {}, error));
    graph::Vault vault(dir.path / "vault");
    vault.write_all(*db);
    std::string note = test::read_file(dir.path / "vault" / "Taylor Swift.md");
    CHECK_THAT(note,
               Contains("name: \"Taylor Swift\"") && Contains("Romantic Partnership → [[Travis Kelce]]") && Contains("Singer"));
    CHECK_THAT(test::read_file(dir.path / "vault" / "Graph - Swift–Kelce network.md"), Contains("- [[Andy Reid]]"));
    // A concept whose name reads like a graph's index note still gets a note, and its links find it
    // (an outside try: "Graph - Rock Music" had none, its link opened the graph's index).
    graph::commit(*db,
                  graph::execute(*db,
                                 {{"nodes", {{{"name", "Graph - Rock Music"}}}},
                                  {"edges", {{{"source", "Taylor Swift"}, {"target", "Graph - Rock Music"}, {"type", "plays"}}}}},
                                 g, {}, error));
    vault.write_all(*db);
    CHECK_THAT(test::read_file(dir.path / "vault" / "Concept - Graph - Rock Music.md"), Contains("name: \"Graph - Rock Music\""));
    CHECK_THAT(test::read_file(dir.path / "vault" / "Taylor Swift.md"), Contains("Plays → [[Concept - Graph - Rock Music]]"));
    CHECK(vault.reindex(*db)["created"] == 0);  // read back as the concept it is, not a new one
    note = test::read_file(dir.path / "vault" / "Taylor Swift.md");

    // A person edits a description, adds a link and a new concept note.
    std::string edited = note;
    edited.replace(edited.find("Singer"), 6, "Singer-songwriter");
    edited += "- Friend Of → [[Andy Reid]]\n";
    test::write_file(dir.path / "vault" / "Taylor Swift.md", edited);
    test::write_file(
        dir.path / "vault" / "Jason Kelce.md",
        "---\nname: \"Jason Kelce\"\ntype: \"Person\"\ncolor: \"#4e79a7\"\ngraphs: [\"Swift–Kelce network\"]\n---\nCenter\n\n"
        "## Connections\n- Sibling Of → [[Travis Kelce]]\n");
    json changes = vault.reindex(*db);
    CHECK(changes["updated"] == 1);
    CHECK(changes["created"] == 1);
    CHECK(changes["linked"] == 2);
    CHECK(db->one("SELECT description FROM concepts WHERE name = 'Taylor Swift'")["description"] == "Singer-songwriter");
    CHECK_FALSE(db->one("SELECT id FROM connection_types WHERE name = 'Sibling Of'").is_null());
    vault.write_all(*db);
    CHECK(vault.reindex(*db)["updated"] == 0);  // what was written reads back unchanged

    // A description whose lines read as the note's own headings stays a description (an outside
    // try: "## Connections" in it became a dangling link and reindex erased the description).
    const std::string tricky = "Plays the bass.\n## Connections\n- Friend Of → [[Nobody]]\n\\## Linked from\nEnd.";
    graph::commit(*db, graph::execute(*db, {{"nodes", {{{"name", "Tricky Bassist"}, {"description", tricky}}}}}, g, {}, error));
    for (int round = 0; round < 2; ++round) {
        vault.write_all(*db);
        json again = vault.reindex(*db);
        CHECK(again["updated"] == 0);
        CHECK(again["linked"] == 0);
        CHECK(again["unresolved"].empty());
        CHECK(db->one("SELECT description FROM concepts WHERE name = 'Tricky Bassist'")["description"] == tricky);
    }
    CHECK_THAT(test::read_file(dir.path / "vault" / "Tricky Bassist.md"),
               Contains("\\## Connections\n") && Contains("\\\\## Linked from\n") && !Contains("\n## Connections"));
}

TEST_CASE("graph: tools end to end — cross-graph edges, fuzzy deletes, undo, exports", "[integration][graph]") {
    test::TempDir dir;
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = {"graph"};
    // Sandboxed (where the kernel can): the plugin needs nothing beyond the data folder it declares.
    if (isolation::kernel_support().landlock_abi >= 1) cfg.plugin_tables["graph"] = R"({"isolation": "sandbox"})";
    auto app = test::start(cfg);
    auto call = [&](const std::string& tool, const json& args) { return test::call_tool(*app, tool, args); };
    REQUIRE(call("create_graph", {{"name", "Marvel"}})["is_error"] == false);
    REQUIRE(call("apply_graph_spec",
                 {{"spec",
                   {{"nodes", {{{"name", "Tony Stark"}, {"type", "Hero"}}, {{"name", "Pepper Potts"}}}},
                    {"edges", {{{"source", "Tony Stark"}, {"target", "Pepper Potts"}, {"type", "married_to"}}}}}}})["is_error"] ==
            false);
    REQUIRE(call("create_graph", {{"name", "DC"}})["is_error"] == false);
    REQUIRE(call("apply_graph_spec", {{"spec", {{"nodes", {{{"name", "Bruce Wayne"}, {"type", "Hero"}}}}}}})["is_error"] ==
            false);
    auto cross = call("create_edge", {{"source", "tony stark"},
                                      {"source_graph", "Marvel"},
                                      {"target", "Bruce Wayne"},
                                      {"target_graph", "DC"},
                                      {"type", "rival of"}});
    CHECK(cross["is_error"] == false);
    CHECK_THAT(cross["content"].get<std::string>(), Contains("Rival Of"));
    auto marvel = call("describe_graph", {{"graph", "marvel"}});
    CHECK(marvel["structured"]["edges"].size() == 2);  // one inside, one to DC

    CHECK(call("set_active_graph", {{"name", "Marvel"}})["is_error"] == false);
    auto removed = call("delete_nodes", {{"names", {"Peper Pots"}}});  // misspelt
    CHECK(removed["structured"]["removed"] == json::array({"Pepper Potts"}));
    CHECK(call("describe_graph", json::object())["structured"]["nodes"].size() == 1);
    auto undone = call("undo_last_change", json::object());
    CHECK_THAT(undone["content"].get<std::string>(), Contains("Undid"));
    CHECK(call("describe_graph", json::object())["structured"]["nodes"].size() == 2);

    std::string mermaid = call("export_graph", {{"format", "mermaid"}})["content"];
    CHECK_THAT(mermaid, Contains("graph LR") && Contains("[\"Tony Stark\"]") && Contains("|\"Married To\"|"));
    CHECK_THAT(call("export_graph", {{"format", "dot"}})["content"].get<std::string>(), Contains("digraph"));
    CHECK_THAT(call("export_graph", {{"format", "graphml"}})["content"].get<std::string>(), Contains("<graphml"));
    CHECK(json::parse(call("export_graph", {{"format", "json"}})["content"].get<std::string>())["nodes"].size() == 2);
    auto invented = call("apply_graph_spec", {{"spec", {{"graph", {{"name", "Star Wars"}}}, {"nodes", {{{"name", "Luke"}}}}}}});
    CHECK(invented["error_code"] == "invalid_graph");
    CHECK(call("find_nodes", {{"query", "bruce wane"}})["structured"]["nodes"][0]["name"] == "Bruce Wayne");

    plugins::CallInput none;  // the generic resource hook: graph://<name>, as JSON and as Mermaid
    json resources = json::parse(app->registry().resources(none));
    std::set<std::string> uris;
    for (const auto& r : resources) uris.insert(r["uri"]);
    CHECK(uris.count("graph://Marvel"));
    CHECK(uris.count("graph://DC?format=mermaid"));
    auto doc = app->registry().read_resource("graph://Marvel", none);
    REQUIRE(doc);
    CHECK(json::parse(json::parse(*doc)["contents"][0]["text"].get<std::string>())["nodes"].size() == 2);
    auto drawn = app->registry().read_resource("graph://Marvel?format=mermaid", none);
    REQUIRE(drawn);
    CHECK_THAT(json::parse(*drawn)["contents"][0]["text"].get<std::string>(), Contains("graph LR"));
    CHECK_FALSE(app->registry().read_resource("graph://Narnia", none));
    // A name with a space is percent-encoded in the URI, and read back either way.
    REQUIRE(call("create_graph", {{"name", "Solar System"}})["is_error"] == false);
    std::set<std::string> listed;
    for (const auto& r : json::parse(app->registry().resources(none))) listed.insert(r["uri"]);
    CHECK(listed.count("graph://Solar%20System"));
    CHECK(listed.count("graph://Solar%20System?format=mermaid"));
    CHECK(app->registry().read_resource("graph://Solar%20System?format=mermaid", none));
    CHECK(app->registry().read_resource("graph://Solar System", none));

    plugins::CallInput hook;
    hook.request_context_json = json{{"user_message", "what about @Tony Stark in the DC graph?"}}.dump();
    std::string context = app->registry().context(hook);
    CHECK_THAT(context, Contains("@Tony Stark is the node 'Tony Stark'") && Contains("active graph is now 'DC'"));
    hook.request_context_json = json{{"selected_nodes", {"Bruce Wayne"}}}.dump();
    CHECK_THAT(app->registry().context(hook), Contains("Selected by the user") && Contains("Bruce Wayne"));
}

TEST_CASE("graph: a scripted agent session creates, extends, deletes by a misspelt name, undoes and exports",
          "[integration][graph]") {
    test::TempDir dir;
    auto call = [](const std::string& name, json args) {
        return json{{"tool_calls", {{{"name", name}, {"arguments", std::move(args)}}}}};
    };
    json cassette{
        {"replies",
         {call("create_graph", {{"name", "Solar System"}}),
          call("apply_graph_spec", {{"spec",
                                     {{"nodes", {{{"name", "Sun"}, {"type", "Star"}}, {{"name", "Earth"}, {"type", "Planet"}}}},
                                      {"edges", {{{"source", "Earth"}, {"target", "Sun"}, {"type", "orbits"}}}}}}}),
          call("apply_graph_spec", {{"spec",
                                     {{"nodes", {{{"name", "Mars"}, {"type", "Planet"}}, {{"name", "the earth"}}}},
                                      {"edges", {{{"source", "Mars"}, {"target", "Sun"}, {"type", "Orbits"}}}}}}}),
          call("delete_nodes", {{"names", {"Marz"}}}),
          call("undo_last_change", json::object()),
          call("export_graph", {{"format", "mermaid"}}),
          {{"text", "Here is the Solar System graph."}}}}};
    test::write_file(dir.path / "cassette.json", cassette.dump());
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = {"scripted", "graph"};
    cfg.plugin_tables["scripted"] = json{{"cassette", (dir.path / "cassette.json").string()}}.dump();
    auto app = test::start(cfg);
    std::vector<agent::TurnEvent> events;
    agent::RunControls controls;
    controls.on_event = [&](const agent::TurnEvent& e) { events.push_back(e); };
    controls.approve = [](const agent::ApprovalRequest&) {
        return agent::ApprovalDecision{agent::ApprovalDecision::Kind::approve};
    };
    auto out = app->runner().run({"make a solar system graph", "space", agent::Mode::execute, "{}"}, controls);
    REQUIRE(out.ok());
    std::vector<std::string> results;
    for (const auto& e : events)
        if (const auto* r = e.as<agent::events::ToolResult>()) results.push_back(r->content);
    REQUIRE(results.size() == 6);
    CHECK_THAT(results[2],
               Contains("1 created, 1 reused") && Contains("'the earth' is 'Earth' (the same name but for case"));  // Mars is new
    CHECK_THAT(results[3], Contains("Mars"));  // "Marz" found Mars
    CHECK_THAT(results[4], Contains("Undid"));
    CHECK_THAT(results[5], Contains("[\"Mars\"]") && Contains("|\"Orbits\"|"));  // Mars is back after the undo
    std::string earth = test::read_file(dir.path / "plugins" / "graph" / "vault" / "Earth.md");
    CHECK_THAT(earth, Contains("Orbits → [[Sun]]"));
}

TEST_CASE("graph: describe_graph's neighbourhoods are breadth first by depth, name filters ignore case and accents",
          "[integration][graph]") {
    test::TempDir dir;
    auto app = graph_app(dir);
    auto call = [&](const std::string& tool, const json& args) { return test::call_tool(*app, tool, args); };
    REQUIRE(call("create_graph", {{"name", "Chain"}})["is_error"] == false);
    // Alpha – Bravo – Charlie – Delta – Echo, and Foxtrot off Echo: distances from Charlie are known.
    json nodes = json::array(), edges = json::array();
    for (const char* n : {"Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Zoë Kelce"}) nodes.push_back({{"name", n}});
    for (auto [s, t] :
         {std::pair{"Alpha", "Bravo"}, {"Bravo", "Charlie"}, {"Charlie", "Delta"}, {"Delta", "Echo"}, {"Echo", "Foxtrot"}})
        edges.push_back({{"source", s}, {"target", t}, {"type", "next"}});
    REQUIRE(call("apply_graph_spec", {{"spec", {{"nodes", nodes}, {"edges", edges}}}})["is_error"] == false);
    auto names = [&](const json& r) {
        std::set<std::string> out;
        for (const auto& n : r["structured"]["nodes"]) out.insert(n["name"]);
        return out;
    };
    CHECK(names(call("describe_graph", {{"near", "Charlie"}, {"depth", 1}})) ==
          std::set<std::string>{"Bravo", "Charlie", "Delta"});
    CHECK(names(call("describe_graph", {{"near", "Charlie"}, {"depth", 2}})) ==
          std::set<std::string>{"Alpha", "Bravo", "Charlie", "Delta", "Echo"});
    CHECK(names(call("describe_graph", {{"near", "Alpha"}, {"depth", 3}})) ==
          std::set<std::string>{"Alpha", "Bravo", "Charlie", "Delta"});
    CHECK(names(call("describe_graph", {{"name", "kelce"}})) == std::set<std::string>{"Zoë Kelce"});
    CHECK(names(call("describe_graph", {{"name", "zoe KELCE"}})) == std::set<std::string>{"Zoë Kelce"});
}

TEST_CASE("graph: apply_graph_spec takes one documented shape, refuses empty ones, and audits in names", "[integration][graph]") {
    test::TempDir dir;
    auto app = graph_app(dir);
    auto call = [&](const std::string& tool, const json& args) { return test::call_tool(*app, tool, args); };
    REQUIRE(call("create_graph", {{"name", "Chiefs"}})["is_error"] == false);
    // The seed's own shape (intent + graphSpec) is not this tool's: refused with the expected shape.
    auto seed_shape = call("apply_graph_spec", {{"spec", {{"intent", "add"}, {"graphSpec", {{"nodes", json::array()}}}}}});
    CHECK(seed_shape["is_error"] == true);
    CHECK_THAT(seed_shape["content"].get<std::string>(), Contains("\"nodes\": [{\"name\""));
    // … and before the plugin, the schema every caller is checked against names the stray keys.
    auto tool = app->catalogue().find("apply_graph_spec");
    REQUIRE(tool);
    auto invalid = app->invoker().check_arguments(*tool, {{"spec", {{"intent", "add"}, {"graphSpec", json::object()}}}});
    REQUIRE(invalid);
    CHECK_THAT((*invalid)["content"].get<std::string>(), Contains("intent") && Contains("graphSpec"));
    auto empty = call("apply_graph_spec", {{"spec", json::object()}});
    CHECK(empty["is_error"] == true);
    CHECK_THAT(empty["content"].get<std::string>(), Contains("no nodes and no edges") && Contains("\"nodes\": [{\"name\""));
    // Real changes take an undo step; a spec that changes nothing takes none.
    json spec{{"nodes", {{{"name", "Travis Kelce"}}, {{"name", "Jason Kelce"}}}},
              {"edges", {{{"source", "Travis Kelce"}, {"target", "Jason Kelce"}, {"type", "brother of"}}}}};
    REQUIRE(call("apply_graph_spec", {{"spec", spec}})["is_error"] == false);
    auto again = call("apply_graph_spec", {{"spec", {{"nodes", {{{"name", "travis kelce"}}}}}}});
    CHECK(again["is_error"] == false);
    CHECK_THAT(again["content"].get<std::string>(), Contains("Nothing changed"));
    CHECK(call("undo_last_change", json::object())["is_error"] == false);  // undoes the real change, not the no-op
    CHECK(call("describe_graph", json::object())["structured"]["nodes"].empty());
    // The auditor names nodes, never internal references.
    REQUIRE(call("apply_graph_spec", {{"spec", spec}})["is_error"] == false);
    json brothers{{"source", "Travis Kelce"}, {"target", "Jason Kelce"}, {"type", "sibling of"}};
    auto dup = call("apply_graph_spec", {{"spec", {{"edges", {brothers, brothers}}}}});
    CHECK(dup["is_error"] == true);
    CHECK_THAT(dup["content"].get<std::string>(), Contains("given twice (Travis Kelce → Jason Kelce)") && !Contains("c1"));
    // The same spec sent again changes nothing, edges included, and says so.
    auto resent = call("apply_graph_spec", {{"spec", spec}});
    CHECK(resent["is_error"] == false);
    CHECK_THAT(resent["content"].get<std::string>(), Contains("Nothing changed") && Contains("1 skipped"));
    // Keys the shape does not have are refused by name, inside nodes and edges too.
    auto stray = app->invoker().check_arguments(
        *tool, {{"spec",
                 {{"nodes", {{{"name", "Vesta"}, {"x", 10}}}},
                  {"edges", {{{"source", "Vesta"}, {"target", "Travis Kelce"}, {"label", "orbits"}}}}}}});
    REQUIRE(stray);
    CHECK_THAT((*stray)["content"].get<std::string>(), Contains("spec.nodes[0].x") && Contains("spec.edges[0].label"));
    auto frame = call("create_frame", {{"name", "Kelce Family"}, {"members", {"Travis Kelce", "Jason Kelce"}}});
    CHECK_THAT(frame["content"].get<std::string>(),
               Contains("Created the frame 'Kelce Family' in 'Chiefs' with Travis Kelce, Jason Kelce"));
}

TEST_CASE("graph: message phrases name graphs for mention candidates and switching", "[integration][graph]") {
    auto first = [](const std::vector<graph::Reference>& refs) { return refs.empty() ? std::string() : refs[0].candidates[0]; };
    auto all = [](const graph::Reference& r) { return std::set<std::string>(r.candidates.begin(), r.candidates.end()); };
    auto m = graph::mentions("what about @Tony Stark, and @In-Relationship?");
    REQUIRE(m.size() == 2);
    CHECK(m[0].candidates == std::vector<std::string>{"Tony Stark", "Tony"});
    CHECK(m[1].candidates == std::vector<std::string>{"In-Relationship"});
    auto p = graph::graph_phrases("Please open the Chiefs Roster graph. Then add Pluto to the Solar System graph");
    REQUIRE(p.size() == 3);  // "open …" (the name whole), "… graph" (part of a name may do), "… graph"
    CHECK_FALSE(p[0].says_graph);
    CHECK(all(p[0]).count("the Chiefs Roster"));
    CHECK(p[1].asks_to_switch);
    CHECK(p[1].spoken == "Chiefs Roster");
    CHECK(all(p[1]).count("Chiefs Roster graph"));
    CHECK_FALSE(p[2].asks_to_switch);
    CHECK(all(p[2]).count("Solar System"));
    auto network = graph::graph_phrases("switch to the swift kelce network");
    REQUIRE(network.size() == 2);
    CHECK(first(network) == "swift kelce network");  // the trigger word may be part of the name, an article not
    CHECK(all(network[0]).count("the swift kelce"));
    CHECK(network[1].candidates[0] == "swift kelce network");  // the name said before the trigger, no more
    CHECK(graph::graph_phrases("no trigger word here").empty());
    CHECK(graph::only_filler_words("this whole"));
    CHECK_FALSE(graph::only_filler_words("the roster"));
}

TEST_CASE("graph: the message switches the active graph by phrase or part of a name, per conversation, with a notice",
          "[integration][graph]") {
    test::TempDir dir;
    auto app = graph_app(dir);
    for (const char* g : {"Chiefs Roster", "Swift Kelce Network", "Solar System"})
        REQUIRE(test::call_tool(*app, "create_graph", {{"name", g}}, "setup")["is_error"] == false);
    REQUIRE(test::call_tool(*app, "apply_graph_spec", {{"spec", {{"nodes", {{{"name", "Sun"}}, {{"name", "Earth"}}}}}}},
                            "setup")["is_error"] == false);
    auto context = [&](const std::string& conversation, const std::string& message) {
        plugins::CallInput hook;
        hook.conversation_id = conversation;
        hook.request_context_json = json{{"user_message", message}}.dump();
        return app->registry().context(hook);
    };
    CHECK_THAT(
        context("a", "open the Chiefs Roster graph"),
        Contains("The active graph is now 'Chiefs Roster' (named in the message)") && Contains("Active graph: 'Chiefs Roster'"));
    CHECK_THAT(context("b", "switch to the swift kelce network"), Contains("active graph is now 'Swift Kelce Network'"));
    // b's switch is b's: a keeps its graph, and its tools act on it.
    std::string again = context("a", "how many nodes are there?");
    CHECK_THAT(again, Contains("Active graph: 'Chiefs Roster'") && !Contains("is now"));
    CHECK(test::call_tool(*app, "describe_graph", json::object(), "a")["structured"]["graph"] == "Chiefs Roster");
    CHECK(test::call_tool(*app, "describe_graph", json::object(), "b")["structured"]["graph"] == "Swift Kelce Network");
    // A conversation that never switched keeps the graph it started on (an outside try: it followed
    // a switch made in another conversation).
    CHECK_THAT(context("quiet", "hello"), Contains("Active graph: 'Swift Kelce Network'"));
    CHECK_THAT(context("c", "open the Chiefs Roster graph"), Contains("active graph is now 'Chiefs Roster'"));
    CHECK_THAT(context("quiet", "and now?"), Contains("Active graph: 'Swift Kelce Network'"));
    CHECK_THAT(context("a", "add Pluto to the Solar System graph"),
               Contains("active graph is now 'Solar System'") && Contains("2 nodes"));
    // Part of a name, and the conversation's recent graphs.
    CHECK_THAT(context("a", "back in the roster graph please"),
               Contains("active graph is now 'Chiefs Roster'") && Contains("Recently used here: Solar System"));
    // A graph that does not exist is said so; filler words switch nothing and say nothing.
    CHECK_THAT(context("a", "open the Narnia graph"),
               Contains("asks for a graph named 'Narnia', which does not exist") && Contains("Active graph: 'Chiefs Roster'"));
    std::string filler = context("a", "use this graph to plan");
    CHECK_THAT(filler, !Contains("does not exist") && !Contains("is now"));
    // A front end's choice (request context) switches too; a refresh never switches.
    plugins::CallInput hook;
    hook.conversation_id = "a";
    hook.request_context_json = json{{"user_message", "open the Solar System graph"}, {"context_refresh", true}}.dump();
    CHECK_THAT(app->registry().context(hook), Contains("Active graph: 'Chiefs Roster'") && !Contains("is now"));
}

TEST_CASE(
    "graph: mentions name graphs with counts and samples, nodes, and connection types, and selected nodes come with their edges",
    "[integration][graph]") {
    test::TempDir dir;
    auto app = graph_app(dir);
    REQUIRE(test::call_tool(*app, "create_graph", {{"name", "Swift Kelce"}})["is_error"] == false);
    json spec = swift_kelce();
    spec["nodes"].push_back({{"name", "Jason Kelce"}, {"description", "Center, Travis's brother"}});
    spec["edges"].push_back({{"source", "Jason Kelce"}, {"target", "Travis Kelce"}, {"type", "brother of"}});
    spec["edges"].push_back({{"source", "Travis Kelce"}, {"target", "Taylor Swift"}, {"type", "in relationship"}});
    REQUIRE(test::call_tool(*app, "apply_graph_spec", {{"spec", spec}})["is_error"] == false);
    plugins::CallInput hook;
    hook.conversation_id = "c1";
    hook.request_context_json = json{{"user_message", "what does @In-Relationship mean in @Swift Kelce? and @Andy Reid"}}.dump();
    std::string context = app->registry().context(hook);
    CHECK_THAT(context,
               Contains("@In-Relationship is the connection type 'In Relationship' (1 edge(s): Travis Kelce → Taylor Swift)"));
    CHECK_THAT(context, Contains("@Swift Kelce is the graph 'Swift Kelce' (5 nodes, 5 edges; e.g. Travis Kelce"));
    CHECK_THAT(context, Contains("@Andy Reid is the node 'Andy Reid' (Person): Coach"));
    hook.request_context_json = json{{"selected_nodes", {"Travis Kelce"}}}.dump();
    std::string selected = app->registry().context(hook);
    CHECK_THAT(selected, Contains("Selected by the user:\n- Travis Kelce (Person): Tight end"));
    CHECK_THAT(selected, Contains("—Plays For→ Kansas City Chiefs") && Contains("←Brother Of— Jason Kelce") &&
                             Contains("←Coaching Relationship— Andy Reid"));
    CHECK_THAT(selected, !Contains("Center, Travis's brother"));  // neighbours by name only: the selection is what is described
}

TEST_CASE("graph: a change within a turn refreshes what the model is told about the graph", "[integration][graph]") {
    test::TempDir dir;
    auto call = [](const std::string& name, json args) {
        return json{{"tool_calls", {{{"name", name}, {"arguments", std::move(args)}}}}};
    };
    json cassette{
        {"replies",
         {call("create_graph", {{"name", "Planets"}}),
          call("apply_graph_spec", {{"spec", {{"nodes", {{{"name", "Mercury"}}, {{"name", "Venus"}}, {{"name", "Earth"}}}}}}}),
          {{"text", "Three planets."}}}}};
    test::write_file(dir.path / "cassette.json", cassette.dump());
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = {"scripted", "graph"};
    cfg.plugin_tables["scripted"] = json{{"cassette", (dir.path / "cassette.json").string()}}.dump();
    auto app = test::start(cfg);
    agent::RunControls controls;
    auto out = app->runner().run({"make a planets graph", "space", agent::Mode::execute, "{}"}, controls);
    REQUIRE(out.ok());
    // The state the last model request was built from (and a resumed run would use).
    auto checkpoint = app->runs().last_checkpoint(out.run).value();
    REQUIRE(checkpoint);
    std::string told = json::parse(checkpoint->state_json)["plugin_context"];
    CHECK_THAT(told, Contains("Active graph: 'Planets' (3 nodes, 0 edges)") && Contains("Mercury, Venus, Earth"));
}

TEST_CASE("graph: exports carry frames, storylines and other graphs' nodes, read by networkx and Graphviz",
          "[integration][graph]") {
    test::TempDir dir;
    auto app = graph_app(dir);
    auto call = [&](const std::string& tool, const json& args) { return test::call_tool(*app, tool, args); };
    REQUIRE(call("create_graph", {{"name", "DC"}})["is_error"] == false);
    REQUIRE(call("apply_graph_spec", {{"spec", {{"nodes", {{{"name", "Bruce Wayne"}}}}}}})["is_error"] == false);
    REQUIRE(call("create_graph", {{"name", "Swift \"Kelce\" <Story>"}})["is_error"] == false);
    REQUIRE(call("apply_graph_spec", {{"spec", swift_kelce()}})["is_error"] == false);
    REQUIRE(
        call("create_edge",
             {{"source", "Taylor Swift"}, {"target", "Bruce Wayne"}, {"target_graph", "DC"}, {"type", "fan of"}})["is_error"] ==
        false);
    REQUIRE(call("create_frame",
                 {{"name", "Chiefs"}, {"members", {"Travis Kelce", "Andy Reid", "Kansas City Chiefs"}}})["is_error"] == false);
    REQUIRE(call("create_storyline", {{"title", "How they met"},
                                      {"members", {"Taylor Swift", "Kansas City Chiefs", "Travis Kelce"}}})["is_error"] == false);

    json doc = json::parse(call("export_graph", {{"format", "json"}})["content"].get<std::string>());
    REQUIRE(doc["external_nodes"].size() == 1);
    CHECK(doc["external_nodes"][0]["name"] == "Bruce Wayne");
    CHECK(doc["external_nodes"][0]["graph_name"] == "DC");

    REQUIRE(fs::exists("/usr/bin/python3"));  // Debian's, with python3-networkx (scripts/install-deps)
    test::write_file(dir.path / "g.graphml", call("export_graph", {{"format", "graphml"}})["content"]);
    test::write_file(dir.path / "read.py", R"(import json, sys, networkx as nx
g = nx.read_graphml(sys.argv[1])
print(json.dumps({"nodes": {n: d for n, d in g.nodes(data=True)}, "edges": [[a, b, d] for a, b, d in g.edges(data=True)], "graph": g.graph}))
)");
    auto read =
        test::run_command("/usr/bin/python3 " + (dir.path / "read.py").string() + " " + (dir.path / "g.graphml").string());
    INFO(read.err);
    REQUIRE(read.exit_code == 0);
    json nx = json::parse(read.out);
    std::map<std::string, json> by_name;
    for (const auto& [id, data] : nx["nodes"].items()) {
        REQUIRE(data.contains("name"));  // every node declared with its name, none nameless
        by_name[data["name"]] = data;
    }
    CHECK(by_name.size() == 5);
    CHECK(by_name["Bruce Wayne"]["graph"] == "DC");
    CHECK(by_name["Bruce Wayne"]["external"] == true);
    CHECK(by_name["Travis Kelce"]["frames"] == "Chiefs");
    CHECK(by_name["Travis Kelce"]["storylines"] == "How they met (3)");
    CHECK(nx["edges"].size() == 4);
    CHECK(json::parse(nx["graph"]["frames"].get<std::string>())[0]["name"] == "Chiefs");
    CHECK(json::parse(nx["graph"]["storylines"].get<std::string>())[0]["members"].size() == 3);

    std::string dot = call("export_graph", {{"format", "dot"}})["content"];
    test::write_file(dir.path / "g.dot", dot);
    auto drawn = test::run_command("dot -Tsvg " + (dir.path / "g.dot").string());
    INFO(drawn.err);
    REQUIRE(drawn.exit_code == 0);
    CHECK_THAT(drawn.out, Contains("Swift &quot;Kelce&quot; &lt;Story&gt;") && Contains(">Chiefs<") &&
                              Contains("DC (other graph)") && Contains("How they met 1") && Contains("Bruce Wayne"));
    std::string mermaid = call("export_graph", {{"format", "mermaid"}})["content"];
    CHECK_THAT(mermaid, Contains("subgraph frame1[\"Chiefs\"]") && Contains("subgraph other1[\"DC (other graph)\"]") &&
                            Contains("-.->|\"How they met 1\"|") && Contains("[\"Bruce Wayne\"]"));
}

TEST_CASE("graph: the vault writes frames, storylines and backlinks as wikilinks, and reindex keeps notes as they were",
          "[integration][graph]") {
    test::TempDir dir;
    auto app = graph_app(dir);
    auto call = [&](const std::string& tool, const json& args) { return test::call_tool(*app, tool, args); };
    REQUIRE(call("create_graph", {{"name", "Chiefs"}})["is_error"] == false);
    REQUIRE(call("apply_graph_spec", {{"spec", swift_kelce()}})["is_error"] == false);
    REQUIRE(call("create_frame", {{"name", "Team"}, {"members", {"Travis Kelce", "Andy Reid"}}})["is_error"] == false);
    REQUIRE(call("create_storyline", {{"title", "Season"}, {"members", {"Andy Reid", "Travis Kelce"}}})["is_error"] == false);
    fs::path vault = dir.path / "plugins" / "graph" / "vault";
    std::string index = test::read_file(vault / "Graph - Chiefs.md");
    CHECK_THAT(index, Contains("## Frame: Team\n- [[Travis Kelce]]\n- [[Andy Reid]]\n"));
    CHECK_THAT(index, Contains("## Storyline: Season\n1. [[Andy Reid]]\n2. [[Travis Kelce]]\n"));
    std::string travis = test::read_file(vault / "Travis Kelce.md");
    CHECK_THAT(travis, Contains("## Connections\n- Plays For → [[Kansas City Chiefs]]"));
    CHECK_THAT(travis,
               Contains("## Linked from\n- [[Andy Reid]] → Coaching Relationship\n- [[Taylor Swift]] → Romantic Partnership"));
    CHECK_THAT(travis,
               Contains("## Frames and storylines\n- [[Graph - Chiefs#Frame: Team]]\n- [[Graph - Chiefs#Storyline: Season]]"));
    // Reading the vault back changes nothing: derived sections are not descriptions or links.
    auto reindexed = call("reindex_vault", json::object());
    CHECK(reindexed["structured"]["updated"] == 0);
    CHECK(reindexed["structured"]["linked"] == 0);
    CHECK(call("find_nodes", {{"query", "Travis Kelce"}})["structured"]["nodes"][0]["description"] == "Tight end");
    // Undoing the storyline takes it out of its members' notes.
    REQUIRE(call("undo_last_change", json::object())["is_error"] == false);
    CHECK_THAT(test::read_file(vault / "Travis Kelce.md"), !Contains("Storyline: Season") && Contains("Frame: Team"));
    // A delete that finds nothing takes no undo step: the next undo still reverts the frame.
    CHECK_THAT(call("delete_nodes", {{"names", {"Nobody Here"}}})["content"].get<std::string>(), Contains("nothing"));
    CHECK_THAT(call("undo_last_change", json::object())["content"].get<std::string>(), Contains("create_frame"));
}

TEST_CASE(
    "graph: what an outsider tripped over — names said without the word graph, typos suggested, one edge count, safe reindex",
    "[integration][graph]") {
    test::TempDir dir;
    auto app = graph_app(dir);
    auto call = [&](const std::string& tool, const json& args, const std::string& conversation = "c1") {
        return test::call_tool(*app, tool, args, conversation);
    };
    auto context = [&](const std::string& conversation, const json& request) {
        plugins::CallInput hook;
        hook.conversation_id = conversation;
        hook.request_context_json = request.dump();
        return app->registry().context(hook);
    };
    REQUIRE(call("create_graph", {{"name", "Solar System"}})["is_error"] == false);
    REQUIRE(call("apply_graph_spec",
                 {{"spec",
                   {{"nodes", {{{"name", "Sun"}}, {{"name", "Mars"}}}},
                    {"edges", {{{"source", "Mars"}, {"target", "Sun"}, {"type", "orbits"}}}}}}})["is_error"] == false);
    REQUIRE(call("create_graph", {{"name", "Chiefs Roster"}})["is_error"] == false);
    REQUIRE(call("apply_graph_spec", {{"spec", {{"nodes", {{{"name", "Andy Reid"}}, {{"name", "Chris Jones"}}}}}}})["is_error"] ==
            false);
    // A cross-graph edge, counted once and the same everywhere.
    REQUIRE(
        call("create_edge",
             {{"source", "Andy Reid"}, {"target", "Sun"}, {"target_graph", "Solar System"}, {"type", "fan of"}})["is_error"] ==
        false);
    // Only source_graph: the target is looked up in the same graph.
    auto coaches =
        call("create_edge",
             {{"source", "Andy Reid"}, {"target", "Chris Jones"}, {"type", "coaches"}, {"source_graph", "Chiefs Roster"}});
    CHECK(coaches["is_error"] == false);
    auto listed = call("list_graphs", json::object());
    CHECK_THAT(listed["content"].get<std::string>(),
               Contains("Chiefs Roster (2 nodes, 2 edges)") && Contains("Solar System (2 nodes, 2 edges)"));
    CHECK_THAT(context("c1", {{"user_message", "hi"}}), Contains("Active graph: 'Chiefs Roster' (2 nodes, 2 edges)"));

    // Reading the vault back adds nothing: the cross-graph edge is known, not a new link.
    auto reindexed = call("reindex_vault", json::object());
    CHECK(reindexed["structured"]["linked"] == 0);
    CHECK(call("list_graphs", json::object())["content"] == listed["content"]);
    // A hand-written link to a note that is no concept is reported, not dropped in silence.
    fs::path mars = dir.path / "plugins" / "graph" / "vault" / "Mars.md";
    test::write_file(mars, test::read_file(mars) + "- Has Moon → [[Phobos]]\n");
    CHECK_THAT(call("reindex_vault", json::object())["content"].get<std::string>(), Contains("Mars → Phobos"));
    // … and kept in the note when the plugin rewrites it, until the person fixes it.
    REQUIRE(call("update_node", {{"name", "Mars"}, {"graph", "Solar System"}, {"description", "red"}})["is_error"] == false);
    CHECK_THAT(test::read_file(mars), Contains("- Has Moon → [[Phobos]]") && Contains("- Orbits → [[Sun]]"));
    CHECK_THAT(call("reindex_vault", json::object())["content"].get<std::string>(), Contains("Mars → Phobos"));
    // Undo names the tool that made the change.
    CHECK_THAT(call("undo_last_change", json::object())["content"].get<std::string>(),
               Contains("Undid the last change: update_node"));

    // Switching by the name alone, typos suggested, the name quoted as said.
    CHECK_THAT(context("c2", {{"user_message", "switch to Solar System"}}), Contains("active graph is now 'Solar System'"));
    CHECK_THAT(context("c2", {{"user_message", "open the Jupiter Moons graph"}}),
               Contains("a graph named 'Jupiter Moons', which does not exist"));
    CHECK_THAT(context("c2", {{"user_message", "switch to the Chefs Rostr graph"}}), Contains("did you mean 'Chiefs Roster'?"));
    CHECK_THAT(context("c2", {{"user_message", "use the folders tool"}}), !Contains("does not exist") && !Contains("is now"));
    // Tools read a part of a name as messages do; an unknown graph is an error, not an empty answer.
    CHECK(call("set_active_graph", {{"name", "chiefs"}}, "c3")["content"] == "The active graph is now 'Chiefs Roster'.");
    CHECK(call("find_nodes", {{"query", "Sun"}, {"graph", "Narnia"}})["error_code"] == "not_found");

    // Mentions: unknown ones said, repeats told once, a mentioned graph is not a used one.
    std::string told = context("c4", {{"user_message", "compare @Solar System with @Mahomes and @Mars @Mars"}});
    CHECK_THAT(told, Contains("@Mahomes names no graph, node or connection type here"));
    CHECK(told.find("@Mars is the node") == told.rfind("@Mars is the node"));
    CHECK_THAT(told, !Contains("Recently used here: Solar System"));
    // A selected node of another graph is described as fully as one of the active graph, with
    // where it is, and no empty heading (an outside try: name only, under an empty heading).
    REQUIRE(call("update_node", {{"name", "Mars"}, {"graph", "Solar System"}, {"description", "red"}})["is_error"] == false);
    std::string elsewhere = context("c3", {{"selected_nodes", {"Mars"}}});
    CHECK_THAT(elsewhere,
               Contains("Selected by the user, in another graph than the active one:\n- Mars [in 'Solar System']: red\n"
                        "  —Orbits→ Sun"));
    CHECK_THAT(elsewhere, !Contains("Selected by the user:"));
    std::string both = context("c3", {{"selected_nodes", {"Mars", "Andy Reid", "Pluto"}}});
    CHECK_THAT(both, Contains("Selected by the user:\n- Andy Reid") && Contains("- Mars [in 'Solar System']: red") &&
                         Contains("- pluto (no such node)"));
    // As a front end holds them: objects with a name (an outside try: they were dropped in silence).
    CHECK_THAT(context("c3", {{"selected_nodes", {{{"name", "Mars"}, {"graph", "Solar System"}}}}}),
               Contains("- Mars [in 'Solar System']: red"));

    // A duplicate frame name is refused (the vault links frames by name); undo answers in words.
    REQUIRE(call("create_frame", {{"name", "Staff"}, {"members", {"Andy Reid"}}})["is_error"] == false);
    CHECK(call("create_frame", {{"name", "staff"}, {"members", {"Chris Jones"}}})["error_code"] == "already_exists");
    CHECK(call("undo_last_change", json::object())["content"] == "Undid the last change: create_frame (name: Staff).");
    // An empty graph says so; JSON exports say directed as the spec does.
    REQUIRE(call("create_graph", {{"name", "Empty"}}, "c5")["is_error"] == false);
    CHECK_THAT(context("c5", {{"user_message", "hi"}}), Contains("It has no nodes yet."));
    json doc = json::parse(call("export_graph", {{"graph", "Solar System"}, {"format", "json"}})["content"].get<std::string>());
    CHECK(doc["edges"][0]["directed"] == true);
}

TEST_CASE("graph: a name made of common words is a name — exact names win before any filler or fuzzy logic",
          "[integration][graph]") {
    test::TempDir dir;
    auto app = graph_app(dir);
    auto call = [&](const std::string& tool, const json& args, const std::string& conversation = "c1") {
        return test::call_tool(*app, tool, args, conversation);
    };
    const std::vector<std::string> names{"My Graph", "Other",   "Graph",  "Network", "The Graph", "New",
                                         "This",     "Current", "Active", "My",      "A",         "Café Society"};
    for (const auto& name : names) REQUIRE(call("create_graph", {{"name", name}})["is_error"] == false);
    for (const auto& name : names) {
        INFO(name);
        CHECK(call("set_active_graph", {{"name", name}})["content"] == "The active graph is now '" + name + "'.");
        CHECK(call("describe_graph", {{"graph", name}})["is_error"] == false);
        CHECK(call("export_graph", {{"graph", name}, {"format", "json"}})["is_error"] == false);
        CHECK(call("find_nodes", {{"query", "x"}, {"graph", name}})["error_code"] != "not_found");
    }
    // Case and accents aside, the name as said: "the graph" is "The Graph", not "Graph".
    CHECK(call("set_active_graph", {{"name", "the graph"}})["content"] == "The active graph is now 'The Graph'.");
    CHECK(call("set_active_graph", {{"name", "cafe society"}})["content"] == "The active graph is now 'Café Society'.");
    CHECK(call("set_active_graph", {{"name", "OTHER"}})["content"] == "The active graph is now 'Other'.");
    // Creating one again points at it, and it can be selected.
    CHECK_THAT(call("create_graph", {{"name", "Other"}})["content"].get<std::string>(), Contains("set_active_graph"));
    // An edge into a graph named with a common word.
    REQUIRE(call("apply_graph_spec", {{"spec", {{"nodes", {{{"name", "Sun"}}}}}}}, "c2").is_object());
    REQUIRE(call("set_active_graph", {{"name", "New"}}, "c2")["is_error"] == false);
    REQUIRE(call("apply_graph_spec", {{"spec", {{"nodes", {{{"name", "Moon"}}}}}}}, "c2")["is_error"] == false);
    REQUIRE(call("set_active_graph", {{"name", "Other"}}, "c2")["is_error"] == false);
    REQUIRE(call("apply_graph_spec", {{"spec", {{"nodes", {{{"name", "Star"}}}}}}}, "c2")["is_error"] == false);
    CHECK(call("create_edge", {{"source", "Star"}, {"target", "Moon"}, {"target_graph", "New"}, {"type", "near"}},
               "c2")["is_error"] == false);
    // find_nodes searches the graph named, not every graph whose name contains it (an outside try:
    // "Graph" found the nodes of My Graph and The Graph too).
    for (const char* g : {"Graph", "My Graph", "The Graph", "My"}) {
        REQUIRE(call("set_active_graph", {{"name", g}}, "c3")["is_error"] == false);
        REQUIRE(call("apply_graph_spec", {{"spec", {{"nodes", {{{"name", std::string("Item of ") + g}}}}}}}, "c3")["is_error"] ==
                false);
    }
    for (const char* g : {"Graph", "My Graph", "The Graph", "My"}) {
        json found = call("find_nodes", {{"query", "Item"}, {"graph", g}})["structured"]["nodes"];
        INFO(g << ": " << found.dump());
        REQUIRE(found.size() == 1);
        CHECK(found[0]["name"] == std::string("Item of ") + g);
    }
}

TEST_CASE("graph: the active graph changes only when the message asks for it — a table of phrasings", "[integration][graph]") {
    test::TempDir dir;
    auto app = graph_app(dir);
    // Graphs named with common words too: an exact name is a name whatever it is made of.
    for (const char* g : {"Chiefs Roster", "Swift-Kelce Network", "Mars", "Other", "Solar System", "Rock Music", "Network",
                          "My Graph", "My", "Graph", "The Graph", "Active", "This", "New", "A"})
        REQUIRE(test::call_tool(*app, "create_graph", {{"name", g}}, "setup")["is_error"] == false);
    // {message, the graph it must switch to ("" = stay on Solar System)}
    const std::vector<std::pair<std::string, std::string>> table{
        // explicit requests
        {"open the Chiefs Roster graph", "Chiefs Roster"},
        {"switch to the swift kelce network", "Swift-Kelce Network"},
        {"switch to Mars", "Mars"},
        {"open Mars", "Mars"},
        {"use the Mars graph", "Mars"},
        {"select the roster graph", "Chiefs Roster"},
        {"go to the Mars graph", "Mars"},
        {"open the Other graph", "Other"},
        {"switch to Other", "Other"},
        {"switch to Mars and add Phobos", "Mars"},
        {"open Chiefs Roster, then list the players", "Chiefs Roster"},
        {"add Pluto to the Mars graph", "Mars"},
        {"in the roster graph, who is the coach?", "Chiefs Roster"},
        {"back in the rock music graph please", "Rock Music"},
        {"show me the Chiefs Roster graph", "Chiefs Roster"},
        {"use the Swift-Kelce network for this", "Swift-Kelce Network"},
        {"Open the Mars graph.", "Mars"},
        {"SWITCH TO THE MARS GRAPH", "Mars"},
        {"switch to mars now", "Mars"},
        {"what is in the Other graph?", "Other"},
        // … of graphs named with common words (an outside try: 'the', 'My' or 'The Graph' were chosen)
        {"open the Network graph", "Network"},
        {"switch to the Network graph", "Network"},
        {"open the network", "Network"},
        {"open Network", "Network"},
        {"open the My Graph graph", "My Graph"},
        {"switch to My Graph", "My Graph"},
        {"open My", "My"},
        {"use the Graph graph", "Graph"},
        {"switch to the Graph graph", "Graph"},
        {"open The Graph", "The Graph"},
        {"use the Active graph", "Active"},
        {"open the This graph", "This"},
        {"switch to the A graph", "A"},
        {"switch to the New graph", "New"},
        // passing mentions and the current graph: no switch
        {"add Elon Musk's plan to go to Mars as a note on Patrick Mahomes", ""},
        {"add the solar system tour of Taylor Swift to this graph", ""},
        {"Elon wants to go to Mars.", ""},
        {"use Mars as an example of a planet", ""},
        {"add Mars to this graph", ""},
        {"use this graph to plan", ""},
        {"in the current graph, add Taylor Swift", ""},
        {"add a note about the other players", ""},
        {"Taylor Swift dates Travis Kelce", ""},
        {"the roster is long", ""},
        {"tell me about Mars", ""},
        {"open the pod bay doors", ""},
        {"use the folders tool", ""},
        {"select all the nodes", ""},
        {"add rock music as a genre to the active graph", ""},
        {"how does this network look?", ""},
        {"switch the lights off", ""},
        {"go to the store and buy milk", ""},
        {"the Mars rover is in the same graph", ""},
        {"compare Mars and Venus", ""},
        {"create a new graph about cars", ""},
        {"this is my graph", ""},
        {"add a graph of planets", ""},
        {"draw the graph", ""},
        {"in a graph, nodes are linked", ""},
        {"add Phobos to this graph", ""},
        {"use the active graph for this", ""},
    };
    int right = 0, asked = 0;
    for (size_t i = 0; i < table.size(); ++i) {
        const auto& [message, expected] = table[i];
        std::string conversation = "t" + std::to_string(i);
        REQUIRE(test::call_tool(*app, "set_active_graph", {{"name", "Solar System"}}, conversation)["is_error"] == false);
        plugins::CallInput hook;
        hook.conversation_id = conversation;
        hook.request_context_json = json{{"user_message", message}}.dump();
        std::string told = app->registry().context(hook);
        std::string now = test::call_tool(*app, "describe_graph", json::object(), conversation)["structured"]["graph"];
        INFO(message << " → " << now);
        bool ok = expected.empty()
                      ? now == "Solar System" && told.find("is now") == std::string::npos
                      : now == expected && told.find("The active graph is now '" + expected + "'") != std::string::npos;
        CHECK(ok);
        right += ok;
        asked += !expected.empty();
    }
    std::fprintf(stderr, "[figures] graph switching: %d of %zu phrasings right (%d asking to switch, %zu not)\n", right,
                 table.size(), asked, table.size() - static_cast<size_t>(asked));
    CHECK(table.size() >= 40);
}

TEST_CASE("graph: after any sequence of changes and undos the vault is what a fresh write of the database gives",
          "[integration][graph]") {
    test::TempDir dir;
    auto app = graph_app(dir);
    auto call = [&](const std::string& tool, const json& args) { return test::call_tool(*app, tool, args, "c1"); };
    const fs::path data = dir.path / "plugins" / "graph";
    // The vault as files: name → text.
    auto files_of = [](const fs::path& vault) {
        std::map<std::string, std::string> out;
        for (const auto& e : fs::directory_iterator(vault))
            if (e.path().extension() == ".md") out[e.path().filename().string()] = test::read_file(e.path());
        return out;
    };
    // What a fresh write gives, from a copy of the database (the plugin's own stays as it is).
    auto fresh_vault = [&](int step) {
        fs::path copy = dir.path / ("copy-" + std::to_string(step) + ".db"), vault = dir.path / ("fresh-" + std::to_string(step));
        fs::copy_file(data / "graph.db", copy);
        for (const char* side : {"-wal", "-shm"})
            if (fs::exists(data / ("graph.db" + std::string(side))))
                fs::copy_file(data / ("graph.db" + std::string(side)), copy.string() + side);
        std::string error;
        auto db = graph::GraphDb::open(copy.string(), error);
        REQUIRE(db);
        db->run("DELETE FROM vault_notes");
        graph::Vault(vault).write_all(*db);
        return files_of(vault);
    };
    REQUIRE(call("create_graph", {{"name", "People"}})["is_error"] == false);
    std::vector<std::string> pool{"Taylor Swift", "Travis Kelce",  "Blake Lively", "Patrick Mahomes",
                                  "Jason Kelce",  "Ryan Reynolds", "Selena Gomez", "Andy Reid"};
    std::mt19937 random(20261205);
    auto pick = [&](const std::vector<std::string>& from) { return from[random() % from.size()]; };
    auto names_now = [&] {
        std::vector<std::string> out;
        json described = call("describe_graph", json::object());
        for (const auto& n : described["structured"]["nodes"]) out.push_back(n["name"]);
        return out;
    };
    int changes = 0, undos = 0, mismatches = 0;
    for (int step = 0; step < 150; ++step) {
        auto names = names_now();
        int op = static_cast<int>(random() % 6);
        if (names.size() < 2) op = 0;
        if (op == 0) {
            std::string a = pick(pool), b = pick(pool);
            call("apply_graph_spec", {{"spec",
                                       {{"nodes", {{{"name", a}, {"description", "about " + a}}, {{"name", b}}}},
                                        {"edges", {{{"source", a}, {"target", b}, {"type", "knows"}}}}}}});
        } else if (op == 1) {
            call("create_edge", {{"source", pick(names)},
                                 {"target", pick(names)},
                                 {"type", pick(std::vector<std::string>{"dates", "coaches", "knows"})}});
        } else if (op == 2) {
            std::string from = pick(names);
            call("update_node", {{"name", from}, {"new_name", from.substr(0, 3) + " " + from.substr(from.find(' ') + 1)}});
        } else if (op == 3) {
            call("delete_nodes", {{"names", {pick(names)}}});
        } else {
            call("undo_last_change", json::object());
            ++undos;
        }
        ++changes;
        auto have = files_of(data / "vault"), want = fresh_vault(step);
        if (have != want) {
            ++mismatches;
            for (const auto& [file, text] : want) {
                INFO("step " << step << ": " << file);
                CHECK(have[file] == text);
            }
            for (const auto& [file, text] : have) {
                INFO("step " << step << ": a note no fresh write has: " << file);
                CHECK(want.count(file) == 1);
            }
        }
    }
    std::fprintf(stderr, "[figures] vault vs a fresh write: %d steps (%d undos), %d mismatches\n", changes, undos, mismatches);
    CHECK(mismatches == 0);
    // Reading the vault back changes nothing and brings nothing back.
    auto reindexed = call("reindex_vault", json::object());
    CHECK(reindexed["structured"]["created"] == 0);
    CHECK(reindexed["structured"]["linked"] == 0);
    // A deleted node leaves its neighbours' notes; re-added, reading the vault back does not
    // restore the edge it had.
    REQUIRE(call("apply_graph_spec",
                 {{"spec",
                   {{"nodes", {{{"name", "Zed One"}}, {{"name", "Zed Two"}}}},
                    {"edges", {{{"source", "Zed One"}, {"target", "Zed Two"}, {"type", "dates"}}}}}}})["is_error"] == false);
    CHECK_THAT(test::read_file(data / "vault" / "Zed One.md"), Contains("[[Zed Two]]"));
    REQUIRE(call("delete_nodes", {{"names", {"Zed Two"}}})["is_error"] == false);
    CHECK_THAT(test::read_file(data / "vault" / "Zed One.md"), !Contains("Zed Two"));
    CHECK_FALSE(fs::exists(data / "vault" / "Zed Two.md"));
    REQUIRE(call("apply_graph_spec", {{"spec", {{"nodes", {{{"name", "Zed Two"}}}}}}})["is_error"] == false);
    CHECK(call("reindex_vault", json::object())["structured"]["linked"] == 0);
    // Renamed and undone: the note of the new name goes, and nothing comes back from the vault.
    REQUIRE(call("update_node", {{"name", "Zed One"}, {"new_name", "Zed Uno"}})["is_error"] == false);
    CHECK(fs::exists(data / "vault" / "Zed Uno.md"));
    CHECK_FALSE(fs::exists(data / "vault" / "Zed One.md"));
    REQUIRE(call("undo_last_change", json::object())["is_error"] == false);
    CHECK_FALSE(fs::exists(data / "vault" / "Zed Uno.md"));
    CHECK(fs::exists(data / "vault" / "Zed One.md"));
    auto again = call("reindex_vault", json::object());
    CHECK(again["structured"]["created"] == 0);
    CHECK(again["structured"]["linked"] == 0);
}

TEST_CASE("graph: a merge says what it matched and why, keeps new information, and keeps other things apart",
          "[integration][graph]") {
    // An outside try: "John Snow" (with a description) after "Jon Snow" answered "Nothing changed …
    // 1 node(s) already there", dropped the description, and delete_nodes ["John Snow"] removed Jon
    // Snow; two "Mercury" nodes of different types merged; AC/DC and ACDC did not.
    test::TempDir dir;
    auto cfg = test::config(dir.path, false);
    cfg.enabled_plugins = {"graph"};
    auto app = test::start(cfg);
    auto call = [&](const std::string& tool, const json& args) { return test::call_tool(*app, tool, args); };
    auto spec = [&](const json& nodes, const json& edges = json::array()) {
        return call("apply_graph_spec", {{"spec", {{"nodes", nodes}, {"edges", edges}}}});
    };
    auto node = [&](const std::string& name) {
        json nodes = call("describe_graph", json::object())["structured"]["nodes"];
        for (const auto& n : nodes)
            if (n.value("name", "") == name) return n;
        WARN(nodes.dump());
        return json();
    };
    REQUIRE(call("create_graph", {{"name", "Westeros"}})["is_error"] == false);
    REQUIRE(spec({{{"name", "Jon Snow"}, {"type", "Character"}},
                  {{"name", "Mercury"}, {"type", "Planet"}},
                  {{"name", "AC/DC"}}})["is_error"] == false);

    // A namesake of another given name is created apart, and the answer says why and how to merge.
    auto john = spec({{{"name", "John Snow"}, {"type", "Person"}, {"description", "physician, father of epidemiology"}}});
    INFO(john.dump());
    CHECK(john["structured"]["created"] == json::array({"John Snow"}));
    CHECK_THAT(john["content"].get<std::string>(), Contains("given names differ") && Contains("same_as"));
    CHECK(node("John Snow")["description"] == "physician, father of epidemiology");
    // Deleting by the other name leaves the character alone.
    CHECK(call("delete_nodes", {{"names", {"John Snow"}}})["structured"]["removed"] == json::array({"John Snow"}));
    CHECK_FALSE(node("Jon Snow").is_null());

    // Another type is another thing: a namesake gets its type in its name, so both keep a note.
    auto element = spec({{{"name", "Mercury"}, {"type", "Element"}}});
    INFO(element.dump());
    CHECK(element["structured"]["created"] == json::array({"Mercury (Element)"}));
    CHECK_THAT(element["content"].get<std::string>(), Contains("different types") && Contains("is an Element"));
    // Said again, it is that node, not a second "Mercury (Element)" (an outside try: two nodes of
    // one name, and reindex_vault then wiped one's description).
    auto again = spec({{{"name", "Mercury"}, {"type", "Element"}, {"description", "Liquid metal, Hg"}},
                       {{"name", "Thermometer"}, {"type", "Device"}}},
                      {{{"source", "Thermometer"}, {"target", "Mercury"}, {"type", "contains"}}});
    INFO(again.dump());
    CHECK(again["structured"]["created"] == json::array({"Thermometer"}));
    CHECK_THAT(again["content"].get<std::string>(), Contains("kept apart from its namesake 'Mercury' before"));
    CHECK(node("Mercury (Element)")["description"] == "Liquid metal, Hg");
    CHECK(node("Mercury")["type"] == "Planet");
    CHECK(call("find_nodes", {{"query", "Mercury"}})["structured"]["nodes"].size() == 2);

    // Punctuation alone is the same name; the match is named with its reason, and what the node
    // lacked (a description, a type) is added, undoably.
    auto band = spec({{{"name", "ACDC"}, {"type", "Band"}, {"description", "Australian rock band"}}});
    INFO(band.dump());
    CHECK(band["structured"]["created"].empty());
    CHECK_THAT(band["content"].get<std::string>(), Contains("'ACDC' is 'AC/DC' (the same name, written with other punctuation") &&
                                                       Contains("added its description and type"));
    CHECK(node("AC/DC")["description"] == "Australian rock band");
    CHECK(node("AC/DC")["type"] == "Band");

    // A description that differs is kept and said, never dropped or overwritten in silence.
    auto differs = spec({{{"name", "AC/DC"}, {"description", "a band from Sydney"}}});
    INFO(differs.dump());
    CHECK_THAT(differs["content"].get<std::string>(),
               Contains("Nothing changed") && Contains("kept its own description (the spec's differs; update_node replaces it)"));
    CHECK(node("AC/DC")["description"] == "Australian rock band");

    // same_as merges what the rules keep apart, when the spec says they are one.
    auto same = spec({{{"name", "Lord Snow"}, {"type", "Person"}, {"same_as", "Jon Snow"}}});
    INFO(same.dump());
    CHECK(same["structured"]["created"].empty());
    CHECK_THAT(same["content"].get<std::string>(), Contains("'Lord Snow' is 'Jon Snow' (the spec says it is the same"));

    // Undo takes the added description and type back (the steps after it changed nothing).
    CHECK(call("undo_last_change", json::object())["is_error"] == false);
    CHECK(node("AC/DC")["description"] == "");
    CHECK(node("AC/DC")["type"] == "");
}
