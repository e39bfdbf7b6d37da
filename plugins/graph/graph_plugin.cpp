// Knowledge graphs: graphs of concepts (shared across graphs as instances with positions), typed
// edges (also across graphs), frames and storylines; stored in the plugin's own SQLite file and
// mirrored into a Markdown vault. The model describes what it wants (apply_graph_spec); the plugin
// deduplicates, lays out, audits and commits, and can undo the last change exactly.
#include "fuzzy.hpp"
#include "graph_db.hpp"
#include "render.hpp"
#include "spec.hpp"

#include <agenthost/plugin.hpp>

#include <regex>
#include <set>
#include <sstream>

namespace {

using agenthost::sdk::Call;
using agenthost::sdk::Tool;
using agenthost::sdk::ToolResult;
using graph::GraphDb;
using nlohmann::json;

json object(json properties, json required = json::array()) {
    return {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}, {"additionalProperties", false}};
}

constexpr double kLookupThreshold = 0.75;  // how close a referenced name must be to a node's

const json kName{{"type", "string"}, {"minLength", 1}, {"maxLength", 200}};
const json kNames{{"type", "array"}, {"items", kName}, {"minItems", 1}};

// apply_graph_spec's one shape: the text the model reads and the schema the host checks are
// written here, side by side, and nowhere else (plugins/README.md quotes this text).
constexpr const char* kSpecShape =
    "{\"graph\": {\"name\"}?, \"nodes\": [{\"name\", \"description\"?, \"type\"?, \"color\"?}], "
    "\"edges\": [{\"source\", \"target\", \"type\"?, \"directed\"?}]}";

json spec_schema() {
    json text{{"type", "string"}};
    json node{{"type", "object"},
              {"required", {"name"}},
              {"properties", {{"name", text}, {"description", text}, {"type", text}, {"color", text}}}};
    json edge{{"type", "object"},
              {"required", {"source", "target"}},
              {"properties", {{"source", text}, {"target", text}, {"type", text}, {"directed", {{"type", "boolean"}}}}}};
    return {{"type", "object"},
            {"additionalProperties", false},
            {"properties",
             {{"graph", {{"type", "object"}, {"properties", {{"name", text}}}, {"additionalProperties", false}}},
              {"nodes", {{"type", "array"}, {"items", node}}},
              {"edges", {{"type", "array"}, {"items", edge}}}}}};
}

class GraphPlugin : public agenthost::sdk::ToolPlugin {
public:
    explicit GraphPlugin(agenthost::sdk::Host host) : ToolPlugin(host), vault_("") {
        json cfg = host.config();
        std::string dir = host.data_dir();
        std::string error;
        db_ = GraphDb::open(cfg.value("database", dir + "/graph.db"), error);
        if (!db_) throw std::runtime_error(error);
        vault_ = graph::Vault(cfg.value("vault_dir", dir + "/vault"));
        settings_.dedup_threshold = cfg.value("dedup_threshold", settings_.dedup_threshold);
        settings_.allow_self_edges = cfg.value("allow_self_edges", false);
        context_budget_ = cfg.value("context_nodes", 40);
    }

    std::vector<Tool> tools() override {
        const uint32_t ro = AH_TOOL_READ_ONLY | AH_TOOL_IDEMPOTENT;
        json graph_arg{{"graph", kName}};
        return {
            {"list_graphs", "The graphs, their sizes, and which one is active.", object(json::object()), ro},
            {"create_graph", "Create a graph and make it the active one.", object({{"name", kName}, {"description", {{"type", "string"}}}}, {"name"}), 0},
            {"set_active_graph", "Make a graph (by name, fuzzy) the active one.", object({{"name", kName}}, {"name"}), AH_TOOL_IDEMPOTENT},
            {"describe_graph", "Nodes, edges, frames and storylines of a graph (the active one by default); filter by type, name or the neighbourhood of a node; paged.",
             object({{"graph", kName}, {"type", {{"type", "string"}}}, {"name", {{"type", "string"}}}, {"near", {{"type", "string"}}},
                     {"depth", {{"type", "integer"}, {"minimum", 1}, {"maximum", 3}}}, {"page", {{"type", "integer"}, {"minimum", 1}}},
                     {"page_size", {{"type", "integer"}, {"minimum", 1}, {"maximum", 500}}}}),
             ro},
            {"find_nodes", "Find concepts by name, tolerating typos, accents and word order.",
             object({{"query", kName}, {"graph", kName}, {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 100}}}}, {"query"}), ro},
            {"apply_graph_spec",
             "Add nodes and edges to a graph by meaning only (no coordinates), as {\"spec\": " + std::string(kSpecShape) +
                 "}. Existing concepts are reused, connection types normalised, colours and positions assigned; nothing is "
                 "applied if anything is wrong.",
             object({{"spec", spec_schema()}}, {"spec"}), 0},
            {"update_node", "Change a node's name, description, colour or type.",
             object({{"name", kName}, {"graph", kName}, {"new_name", kName}, {"description", {{"type", "string"}}}, {"color", {{"type", "string"}}},
                     {"type", {{"type", "string"}}}}, {"name"}),
             AH_TOOL_IDEMPOTENT},
            {"delete_nodes", "Remove nodes (by name, fuzzy) from a graph, with their edges; reports what it removed.",
             object({{"names", kNames}, {"graph", kName}}, {"names"}), AH_TOOL_DESTRUCTIVE},
            {"create_edge", "Connect two nodes, possibly in different graphs.",
             object({{"source", kName}, {"target", kName}, {"type", kName}, {"source_graph", kName}, {"target_graph", kName},
                     {"directed", {{"type", "boolean"}}}}, {"source", "target", "type"}),
             0},
            {"delete_edge", "Remove the edges between two nodes (of one type, or all).",
             object({{"source", kName}, {"target", kName}, {"type", kName}, {"source_graph", kName}, {"target_graph", kName}}, {"source", "target"}),
             AH_TOOL_DESTRUCTIVE},
            {"create_frame", "Group nodes of a graph in a named box.", object({{"name", kName}, {"members", kNames}, {"graph", kName}}, {"name", "members"}), 0},
            {"create_storyline", "An ordered path through nodes of a graph.", object({{"title", kName}, {"members", kNames}, {"graph", kName}}, {"title", "members"}), 0},
            {"undo_last_change", "Revert the last change to the graphs exactly.", object(json::object()), AH_TOOL_DESTRUCTIVE},
            {"export_graph", "A graph as json, graphml, mermaid or dot.",
             object({{"graph", kName}, {"format", {{"type", "string"}, {"enum", {"json", "graphml", "mermaid", "dot"}}}}}, {"format"}), ro},
            {"reindex_vault", "Read the Markdown vault back: edits a person made to notes and links.", object(json::object()), 0},
        };
    }

    std::string context(const Call& call) override { return describe_for_model(call); }

    // graph://<name> (JSON) and graph://<name>?format=mermaid, for front ends and MCP clients.
    json resources(const Call&) override {
        json list = json::array();
        int64_t current = active();
        for (const auto& g : db_->query("SELECT id, name, description FROM graphs ORDER BY name")) {
            std::string name = g["name"];
            // MCP's priority annotation marks the active graph (a front end shows it first).
            list.push_back({{"uri", "graph://" + name}, {"name", name}, {"description", g["description"]}, {"mimeType", "application/json"},
                            {"annotations", {{"priority", g["id"] == current ? 1.0 : 0.5}}}});
            list.push_back({{"uri", "graph://" + name + "?format=mermaid"}, {"name", name + " (Mermaid)"}, {"mimeType", "text/vnd.mermaid"}});
        }
        return list;
    }

    json read_resource(const Call&, const std::string& uri) override {
        const std::string scheme = "graph://";
        if (uri.rfind(scheme, 0) != 0) return nullptr;
        std::string rest = uri.substr(scheme.size()), format = "json";
        if (size_t q = rest.find("?format="); q != std::string::npos) {
            format = rest.substr(q + 8);
            rest.resize(q);
        }
        json g = db_->one("SELECT id FROM graphs WHERE name = ? COLLATE NOCASE", {rest});
        if (g.is_null()) return nullptr;
        std::string text = graph::export_graph(*db_, g["id"], format);
        if (text.empty()) return nullptr;
        return {{"contents", json::array({{{"uri", uri}, {"mimeType", format == "mermaid" ? "text/vnd.mermaid" : "application/json"}, {"text", text}}})}};
    }

    ToolResult call(const Call& call) override {
        const json& a = call.arguments;
        std::string tool(call.tool);
        try {
            if (tool == "list_graphs") return list_graphs();
            if (tool == "create_graph") return create_graph(a["name"], a.value("description", ""));
            if (tool == "set_active_graph") return set_active(a["name"]);
            if (tool == "describe_graph") return describe(a);
            if (tool == "find_nodes") return find_nodes(a["query"], a.value("graph", ""), a.value("limit", 10));
            if (tool == "apply_graph_spec") return apply(a["spec"]);
            if (tool == "update_node") return update_node(a);
            if (tool == "delete_nodes") return delete_nodes(a["names"], a.value("graph", ""));
            if (tool == "create_edge") return create_edge(a);
            if (tool == "delete_edge") return delete_edge(a);
            if (tool == "create_frame") return create_group("frames", "name", a["name"], a["members"], a.value("graph", ""));
            if (tool == "create_storyline") return create_group("storylines", "title", a["title"], a["members"], a.value("graph", ""));
            if (tool == "undo_last_change") return undo();
            if (tool == "export_graph") return export_graph(a.value("graph", ""), a["format"]);
            if (tool == "reindex_vault") return ToolResult::ok(vault_.reindex(*db_));
        } catch (const std::exception& e) {
            db_->rollback();
            return ToolResult::error("graph_error", e.what());
        }
        return ToolResult::error("unknown_tool", "no tool " + tool);
    }

private:
    int64_t active() {
        json row = db_->one("SELECT value FROM settings WHERE key = 'active_graph'");
        return row.is_null() ? 0 : std::stoll(row["value"].get<std::string>());
    }
    void set_active_id(int64_t id) { db_->run("INSERT OR REPLACE INTO settings (key, value) VALUES ('active_graph', ?)", {std::to_string(id)}); }

    std::string graph_names() {
        std::string names;
        for (const auto& g : db_->query("SELECT name FROM graphs ORDER BY name")) names += (names.empty() ? "" : ", ") + g["name"].get<std::string>();
        return names.empty() ? "none yet" : names;
    }

    // A graph by name (exact, then fuzzy), or the active one for an empty name.
    std::optional<json> graph(const std::string& name, std::string& error) {
        if (name.empty()) {
            json g = db_->one("SELECT id, name FROM graphs WHERE id = ?", {active()});
            if (g.is_null()) error = "there is no active graph; create_graph or set_active_graph first (graphs: " + graph_names() + ")";
            return g.is_null() ? std::nullopt : std::optional<json>(g);
        }
        json g = db_->one("SELECT id, name FROM graphs WHERE name = ? COLLATE NOCASE", {name});
        if (g.is_null())
            for (const auto& row : db_->query("SELECT id, name FROM graphs"))
                if (graph::similarity(name, row["name"]) >= settings_.dedup_threshold) g = row;
        if (g.is_null()) error = "there is no graph named '" + name + "' (graphs: " + graph_names() + ")";
        return g.is_null() ? std::nullopt : std::optional<json>(g);
    }

    // The instance of a graph whose concept is closest to `name`.
    // A name the model refers to may be misspelt more than one that would merge two concepts.
    json instance(int64_t graph_id, const std::string& name) {
        json best;
        double best_score = kLookupThreshold;
        for (const auto& row : db_->query("SELECT i.id, i.concept_id, c.name FROM instances i JOIN concepts c ON c.id = i.concept_id WHERE i.graph_id = ?", {graph_id})) {
            double score = graph::similarity(name, row["name"]);
            if (score >= best_score) {
                best_score = score;
                best = row;
            }
        }
        return best;
    }

    // Concepts a change touched (for the vault).
    std::set<int64_t> touched(const json& log) {
        std::set<int64_t> ids;
        auto concept_of_instance = [&](const json& id) {
            json row = db_->one("SELECT concept_id FROM instances WHERE id = ?", {id});
            if (!row.is_null()) ids.insert(row["concept_id"].get<int64_t>());
        };
        for (const auto& e : log) {
            std::string table = e["table"];
            const json& before = e["before"];
            if (table == "concepts") ids.insert(e["id"].get<int64_t>());
            if (table == "instances") before.is_null() ? concept_of_instance(e["id"]) : (void)ids.insert(before["concept_id"].get<int64_t>());
            if (table == "edges") {
                json row = before.is_null() ? db_->one("SELECT source, target FROM edges WHERE id = ?", {e["id"]}) : before;
                if (!row.is_null()) {
                    concept_of_instance(row["source"]);
                    concept_of_instance(row["target"]);
                }
            }
        }
        return ids;
    }

    // Names of concepts a change deleted (their notes go).
    std::set<std::string> removed_names(const json& log) {
        std::set<std::string> names;
        for (const auto& e : log)
            if (e["table"] == "concepts" && !e["before"].is_null()) names.insert(e["before"]["name"].get<std::string>());
        return names;
    }

    // Runs `change` as one recorded, undoable batch and updates the vault.
    template <typename Change>
    json change(const std::string& what, Change&& body) {
        json summary = db_->batch([&] {
            json s = body();
            s["change"] = what;
            return s;
        });
        vault_.write(*db_, touched(db_->last_log()), removed_names(db_->last_log()));
        return summary;
    }

    ToolResult list_graphs() {
        json graphs = db_->query(
            "SELECT g.id, g.name, g.description, (SELECT COUNT(*) FROM instances i WHERE i.graph_id = g.id) AS nodes,"
            " (SELECT COUNT(*) FROM edges e JOIN instances i ON i.id = e.source WHERE i.graph_id = g.id) AS edges FROM graphs g ORDER BY g.name");
        int64_t current = active();
        std::string text;
        for (auto& g : graphs) {
            g["active"] = g["id"] == current;
            text += "- " + g["name"].get<std::string>() + " (" + g["nodes"].dump() + " nodes, " + g["edges"].dump() + " edges)" +
                    (g["active"].get<bool>() ? " [active]" : "") + "\n";
        }
        ToolResult r = ToolResult::ok(text.empty() ? "There are no graphs yet." : text);
        r.body["structured"] = {{"graphs", graphs}};
        return r;
    }

    ToolResult create_graph(const std::string& name, const std::string& description) {
        if (!db_->one("SELECT id FROM graphs WHERE name = ? COLLATE NOCASE", {name}).is_null())
            return ToolResult::error("already_exists", "a graph named '" + name + "' exists; set_active_graph selects it");
        int64_t id = 0;
        change("create_graph", [&] {
            id = db_->insert("graphs", {{"name", name}, {"description", description}});
            return json{{"graph", name}};
        });
        set_active_id(id);
        vault_.write(*db_, {});
        return ToolResult::ok("Created the graph '" + name + "'; it is now the active graph.");
    }

    ToolResult set_active(const std::string& name) {
        std::string error;
        auto g = graph(name, error);
        if (!g) return ToolResult::error("not_found", error);
        set_active_id((*g)["id"]);
        return ToolResult::ok("The active graph is now '" + (*g)["name"].get<std::string>() + "'.");
    }

    ToolResult describe(const json& a) {
        std::string error;
        auto g = graph(a.value("graph", ""), error);
        if (!g) return ToolResult::error("not_found", error);
        json doc = graph::graph_document(*db_, (*g)["id"]);
        json nodes = json::array();
        std::set<int64_t> keep;
        if (a.contains("near")) {
            json center = instance((*g)["id"], a["near"]);
            if (center.is_null()) return ToolResult::error("not_found", "no node like '" + a["near"].get<std::string>() + "' in " + (*g)["name"].get<std::string>());
            // Breadth first, one ring per depth: a node found in this ring is expanded in the next one,
            // never in the same pass (which walked 2–3 hops for depth 1).
            std::set<int64_t> ring{center["id"].get<int64_t>()};
            keep = ring;
            for (int d = 0; d < a.value("depth", 1) && !ring.empty(); ++d) {
                std::set<int64_t> next;
                for (const auto& e : doc["edges"]) {
                    int64_t s = e["source"], t = e["target"];
                    if (ring.count(s) && !keep.count(t)) next.insert(t);
                    if (ring.count(t) && !keep.count(s)) next.insert(s);
                }
                keep.insert(next.begin(), next.end());
                ring = std::move(next);
            }
        }
        // Name filters ignore case, accents and punctuation ("kelce" finds "Kelce").
        const std::string wanted = a.contains("name") ? graph::normal_form(a["name"]) : "";
        for (const auto& n : doc["nodes"]) {
            if (a.contains("type") && graph::normal_form(n["type"]) != graph::normal_form(a["type"])) continue;
            if (a.contains("name") && graph::similarity(a["name"], n["name"]) < 0.6 &&
                graph::normal_form(n["name"]).find(wanted) == std::string::npos)
                continue;
            if (!keep.empty() && !keep.count(n["id"].get<int64_t>())) continue;
            nodes.push_back(n);
        }
        size_t size = a.value("page_size", 100), page = a.value("page", 1);
        size_t pages = std::max<size_t>(1, (nodes.size() + size - 1) / size);
        json shown = json::array();
        std::set<int64_t> visible;
        for (size_t i = (page - 1) * size; i < std::min(nodes.size(), page * size); ++i) {
            shown.push_back(nodes[i]);
            visible.insert(nodes[i]["id"].get<int64_t>());
        }
        json edges = json::array();
        for (const auto& e : doc["edges"])
            if (visible.count(e["source"].get<int64_t>()) || visible.count(e["target"].get<int64_t>())) edges.push_back(e);
        std::string text = "Graph '" + (*g)["name"].get<std::string>() + "': " + std::to_string(nodes.size()) + " nodes (page " +
                           std::to_string(page) + " of " + std::to_string(pages) + ")\n";
        for (const auto& n : shown) text += "- " + n["name"].get<std::string>() + (n["type"].get<std::string>().empty() ? "" : " (" + n["type"].get<std::string>() + ")") + "\n";
        for (const auto& e : edges)
            text += "  " + e["source_name"].get<std::string>() + " —" + e["type"].get<std::string>() + "→ " + e["target_name"].get<std::string>() + "\n";
        for (const auto& f : doc["frames"]) text += "Frame " + f["name"].get<std::string>() + ": " + f["members"].dump() + "\n";
        for (const auto& s : doc["storylines"]) text += "Storyline " + s["title"].get<std::string>() + ": " + s["members"].dump() + "\n";
        ToolResult r = ToolResult::ok(text);
        r.body["structured"] = {{"graph", (*g)["name"]}, {"nodes", shown}, {"edges", edges}, {"frames", doc["frames"]},
                                {"storylines", doc["storylines"]}, {"page", page}, {"pages", pages}};
        return r;
    }

    ToolResult find_nodes(const std::string& query, const std::string& graph_name, int limit) {
        std::vector<std::pair<double, json>> scored;
        std::string sql = "SELECT c.id, c.name, c.type, c.description, (SELECT GROUP_CONCAT(g.name, ', ') FROM instances i JOIN graphs g ON g.id = i.graph_id "
                          "WHERE i.concept_id = c.id) AS graphs FROM concepts c";
        for (const auto& c : db_->query(sql)) {
            if (!graph_name.empty() && (c["graphs"].is_null() || c["graphs"].get<std::string>().find(graph_name) == std::string::npos)) continue;
            double score = graph::similarity(query, c["name"]);
            if (graph::normal_form(c["name"]).find(graph::normal_form(query)) != std::string::npos) score = std::max(score, 0.9);
            if (score >= 0.5) scored.emplace_back(score, c);
        }
        std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
        json found = json::array();
        std::string text;
        for (size_t i = 0; i < scored.size() && i < static_cast<size_t>(limit); ++i) {
            json c = scored[i].second;
            c["score"] = std::round(scored[i].first * 100) / 100;
            text += "- " + c["name"].get<std::string>() + " (in " + (c["graphs"].is_null() ? std::string("no graph") : c["graphs"].get<std::string>()) + ")\n";
            found.push_back(c);
        }
        ToolResult r = ToolResult::ok(text.empty() ? "No concept looks like '" + query + "'." : text);
        r.body["structured"] = {{"nodes", found}};
        return r;
    }

    ToolResult apply(const json& spec) {
        if (spec.value("nodes", json::array()).empty() && spec.value("edges", json::array()).empty())
            return ToolResult::error("invalid_graph", "the spec has no nodes and no edges, so nothing would change; send {\"spec\": " +
                                             std::string(kSpecShape) + "}");
        std::string error;
        graph::Plan plan = graph::execute(*db_, spec, active(), settings_, error);
        if (!error.empty()) return ToolResult::error("invalid_graph", error);
        auto violations = graph::audit(*db_, plan, settings_);
        if (!violations.empty()) {
            std::string text = "Nothing was applied; fix these and send the spec again:";
            for (const auto& v : violations) text += "\n- " + v;
            ToolResult r = ToolResult::error("audit_failed", text);
            r.body["structured"] = {{"violations", violations}};
            return r;
        }
        if (plan.ops.empty()) {  // everything was there already: no change, so no undo step either
            ToolResult r = ToolResult::ok("Nothing changed in '" + plan.graph_name + "': " + std::to_string(plan.reused.size()) +
                                          " node(s) already there" + (plan.skipped.empty() ? "" : ", " + std::to_string(plan.skipped.size()) + " skipped") + ".");
            r.body["structured"] = {{"graph", plan.graph_name}, {"created", json::array()}, {"reused", plan.reused}, {"linked", json::array()},
                                    {"skipped", plan.skipped}};
            return r;
        }
        json summary = graph::commit(*db_, plan);
        vault_.write(*db_, touched(db_->last_log()));
        std::string text = "Applied to '" + plan.graph_name + "': " + std::to_string(plan.created.size()) + " created, " +
                           std::to_string(plan.reused.size()) + " reused, " + std::to_string(plan.linked.size()) + " linked, " +
                           std::to_string(plan.skipped.size()) + " skipped.";
        for (const auto& r : plan.reused) text += "\n- reused '" + r["matched"].get<std::string>() + "' for '" + r["name"].get<std::string>() + "'";
        for (const auto& s : plan.skipped) text += "\n- skipped '" + s["name"].get<std::string>() + "': " + s["why"].get<std::string>();
        ToolResult r = ToolResult::ok(text);
        r.body["structured"] = summary;
        return r;
    }

    ToolResult update_node(const json& a) {
        std::string error;
        auto g = graph(a.value("graph", ""), error);
        if (!g) return ToolResult::error("not_found", error);
        json node = instance((*g)["id"], a["name"]);
        if (node.is_null()) return ToolResult::error("not_found", "no node like '" + a["name"].get<std::string>() + "' in " + (*g)["name"].get<std::string>());
        json fields = json::object();
        if (a.contains("new_name")) fields.update({{"name", a["new_name"]}, {"norm", graph::normal_form(a["new_name"])}});
        for (const char* key : {"description", "color", "type"})
            if (a.contains(key)) fields[key] = a[key];
        if (fields.empty()) return ToolResult::error("validation_failed", "give at least one of new_name, description, color, type");
        change("update_node", [&] {
            db_->update("concepts", node["concept_id"], fields);
            return json{{"node", node["name"]}};
        });
        return ToolResult::ok("Updated '" + node["name"].get<std::string>() + "'.");
    }

    ToolResult delete_nodes(const json& names, const std::string& graph_name) {
        std::string error;
        auto g = graph(graph_name, error);
        if (!g) return ToolResult::error("not_found", error);
        json removed = json::array(), missing = json::array();
        change("delete_nodes", [&] {
            for (const auto& name : names) {
                json node = instance((*g)["id"], name);
                if (node.is_null()) {
                    missing.push_back(name);
                    continue;
                }
                for (const auto& e : db_->query("SELECT id FROM edges WHERE source = ?1 OR target = ?1", {node["id"]})) db_->remove("edges", e["id"]);
                db_->remove("instances", node["id"]);
                if (db_->one("SELECT id FROM instances WHERE concept_id = ?", {node["concept_id"]}).is_null()) db_->remove("concepts", node["concept_id"]);
                removed.push_back(node["name"]);
            }
            return json{{"removed", removed}};
        });
        std::string text = "Removed from '" + (*g)["name"].get<std::string>() + "': " + (removed.empty() ? std::string("nothing") : removed.dump());
        if (!missing.empty()) text += "; not found: " + missing.dump();
        ToolResult r = ToolResult::ok(text);
        r.body["structured"] = {{"removed", removed}, {"not_found", missing}};
        return r;
    }

    std::optional<std::pair<json, json>> endpoints(const json& a, std::string& error) {
        auto sg = graph(a.value("source_graph", ""), error);
        if (!sg) return std::nullopt;
        auto tg = graph(a.value("target_graph", ""), error);
        if (!tg) return std::nullopt;
        json s = instance((*sg)["id"], a["source"]), t = instance((*tg)["id"], a["target"]);
        if (s.is_null() || t.is_null()) {
            error = "no node like '" + (s.is_null() ? a["source"] : a["target"]).get<std::string>() + "' in " +
                    (s.is_null() ? (*sg)["name"] : (*tg)["name"]).get<std::string>();
            return std::nullopt;
        }
        return std::make_pair(s, t);
    }

    ToolResult create_edge(const json& a) {
        std::string error;
        auto ends = endpoints(a, error);
        if (!ends) return ToolResult::error("not_found", error);
        if (ends->first["id"] == ends->second["id"] && !settings_.allow_self_edges) return ToolResult::error("audit_failed", "an edge from a node to itself is not allowed");
        std::string type = graph::title_case(a["type"]);
        change("create_edge", [&] {
            json t = db_->one("SELECT id FROM connection_types WHERE name = ? COLLATE NOCASE", {type});
            int64_t type_id = t.is_null() ? db_->insert("connection_types", {{"name", type}}) : t["id"].get<int64_t>();
            if (!db_->one("SELECT id FROM edges WHERE source = ? AND target = ? AND type_id = ?", {ends->first["id"], ends->second["id"], type_id}).is_null())
                throw std::runtime_error("that edge already exists");
            db_->insert("edges", {{"source", ends->first["id"]}, {"target", ends->second["id"]}, {"type_id", type_id}, {"directed", a.value("directed", true) ? 1 : 0}});
            return json{{"edge", ends->first["name"].get<std::string>() + " → " + ends->second["name"].get<std::string>()}};
        });
        return ToolResult::ok("Linked " + ends->first["name"].get<std::string>() + " —" + type + "→ " + ends->second["name"].get<std::string>() + ".");
    }

    ToolResult delete_edge(const json& a) {
        std::string error;
        auto ends = endpoints(a, error);
        if (!ends) return ToolResult::error("not_found", error);
        int removed = 0;
        change("delete_edge", [&] {
            for (const auto& e : db_->query("SELECT e.id, t.name FROM edges e JOIN connection_types t ON t.id = e.type_id WHERE "
                                            "(e.source = ?1 AND e.target = ?2) OR (e.source = ?2 AND e.target = ?1)",
                                            {ends->first["id"], ends->second["id"]})) {
                if (a.contains("type") && graph::normal_form(e["name"]) != graph::normal_form(a["type"])) continue;
                db_->remove("edges", e["id"]);
                ++removed;
            }
            return json{{"removed", removed}};
        });
        return ToolResult::ok("Removed " + std::to_string(removed) + " edge(s).");
    }

    ToolResult create_group(const std::string& table, const std::string& label, const std::string& name, const json& members, const std::string& graph_name) {
        std::string error;
        auto g = graph(graph_name, error);
        if (!g) return ToolResult::error("not_found", error);
        json resolved = json::array();
        for (const auto& m : members) {
            json node = instance((*g)["id"], m);
            if (node.is_null()) return ToolResult::error("not_found", "no node like '" + m.get<std::string>() + "' in " + (*g)["name"].get<std::string>());
            resolved.push_back(node["name"]);
        }
        change("create_" + table, [&] {
            db_->insert(table, {{"graph_id", (*g)["id"]}, {label, name}, {"members", resolved.dump()}});
            return json{{label, name}};
        });
        vault_.write(*db_, {});
        std::string kind = table == "frames" ? "frame" : "storyline", list;  // "the frame 'Kelce Family' with Travis Kelce, Jason Kelce"
        for (const auto& m : resolved) list += (list.empty() ? "" : ", ") + m.get<std::string>();
        return ToolResult::ok("Created the " + kind + " '" + name + "' in '" + (*g)["name"].get<std::string>() + "' with " + list + ".");
    }

    ToolResult undo() {
        json batch = db_->one("SELECT id, summary, log FROM batches ORDER BY id DESC LIMIT 1");
        if (batch.is_null()) return ToolResult::error("nothing_to_undo", "there is no change to undo");
        json log = json::parse(batch["log"].get<std::string>());
        std::set<int64_t> concepts = touched(log);
        std::set<std::string> gone;  // concepts the change created: the undo deletes them
        for (const auto& e : log)
            if (e["table"] == "concepts" && e["before"].is_null())
                if (json c = db_->one("SELECT name FROM concepts WHERE id = ?", {e["id"]}); !c.is_null()) gone.insert(c["name"].get<std::string>());
        db_->undo(log);
        db_->run("DELETE FROM batches WHERE id = ?", {batch["id"]});
        for (int64_t id : touched(log)) concepts.insert(id);
        vault_.write(*db_, concepts, gone);
        ToolResult r = ToolResult::ok("Undid: " + batch["summary"].get<std::string>());
        r.body["structured"] = json::parse(batch["summary"].get<std::string>());
        return r;
    }

    ToolResult export_graph(const std::string& graph_name, const std::string& format) {
        std::string error;
        auto g = graph(graph_name, error);
        if (!g) return ToolResult::error("not_found", error);
        std::string text = graph::export_graph(*db_, (*g)["id"], format);
        if (text.empty()) return ToolResult::error("validation_failed", "unknown format '" + format + "' (json, graphml, mermaid, dot)");
        return ToolResult::ok(text);
    }

    // The context hook: the active graph in brief, or the selected nodes and their neighbourhood;
    // @mentions and "in the X graph" in the user's message are resolved.
    std::string describe_for_model(const Call& call) {
        const json& ctx = call.request_context;
        std::string message = ctx.value("user_message", "");
        std::string notes;
        std::smatch m;
        static const std::regex in_graph(R"(\bin the ([^.,;:!?]+?) graph\b)", std::regex::icase);
        if (std::regex_search(message, m, in_graph)) {
            std::string error;
            if (auto g = graph(m[1].str(), error); g && (*g)["id"] != active()) {
                set_active_id((*g)["id"]);
                notes += "The active graph is now '" + (*g)["name"].get<std::string>() + "' (named in the message).\n";
            }
        }
        if (ctx.contains("active_graph") && ctx["active_graph"].is_string()) {
            std::string error;
            if (auto g = graph(ctx["active_graph"], error)) set_active_id((*g)["id"]);
        }
        // @Name: the longest run of words after the @ that names a graph or a node.
        static const std::regex mention(R"(@([^\s@,.;:!?]+(?:[ \t]+[^\s@,.;:!?]+){0,5}))");
        json concepts = db_->query("SELECT name, type, description FROM concepts");
        for (auto it = std::sregex_iterator(message.begin(), message.end(), mention); it != std::sregex_iterator(); ++it) {
            std::istringstream words((*it)[1].str());
            std::vector<std::string> parts;
            for (std::string w; words >> w;) parts.push_back(w);
            bool resolved = false;
            for (size_t n = parts.size(); n > 0 && !resolved; --n) {
                std::string name;
                for (size_t k = 0; k < n; ++k) name += (k ? " " : "") + parts[k];
                std::string error;
                if (auto g = graph(name, error)) {
                    notes += "@" + name + " is the graph '" + (*g)["name"].get<std::string>() + "'.\n";
                    remember_graph(call, (*g)["name"]);
                    resolved = true;
                    continue;
                }
                for (const auto& row : concepts)
                    if (graph::similarity(name, row["name"]) >= settings_.dedup_threshold) {
                        notes += "@" + name + " is the node '" + row["name"].get<std::string>() + "'" +
                                 (row["type"].get<std::string>().empty() ? "" : " (" + row["type"].get<std::string>() + ")") + ": " +
                                 row["description"].get<std::string>() + "\n";
                        resolved = true;
                        break;
                    }
            }
        }
        json g = db_->one("SELECT id, name FROM graphs WHERE id = ?", {active()});
        if (g.is_null()) return notes + (db_->one("SELECT id FROM graphs").is_null() ? "" : "Graphs: " + graph_names() + ". None is active.");
        remember_graph(call, g["name"]);
        json doc = graph::graph_document(*db_, g["id"]);
        std::string text = notes + "Active graph: '" + g["name"].get<std::string>() + "' (" + std::to_string(doc["nodes"].size()) + " nodes, " +
                           std::to_string(doc["edges"].size()) + " edges).";
        std::set<std::string> selected;
        for (const auto& s : ctx.value("selected_nodes", json::array()))
            if (s.is_string()) selected.insert(graph::normal_form(s));
        std::set<int64_t> shown;
        for (const auto& n : doc["nodes"])
            if (selected.count(graph::normal_form(n["name"]))) shown.insert(n["id"].get<int64_t>());
        if (!selected.empty()) {
            std::set<int64_t> around = shown;
            for (const auto& e : doc["edges"])
                if (shown.count(e["source"].get<int64_t>()) || shown.count(e["target"].get<int64_t>())) {
                    around.insert(e["source"].get<int64_t>());
                    around.insert(e["target"].get<int64_t>());
                }
            shown = around;
            text += " Selected by the user (with their neighbours):";
        } else {
            text += " Nodes:";
        }
        int count = 0;
        std::set<std::string> types, colors;
        for (const auto& n : doc["nodes"]) {
            colors.insert(n["color"]);
            if ((!shown.empty() && !shown.count(n["id"].get<int64_t>())) || count >= context_budget_) continue;
            text += (count++ ? ", " : " ") + n["name"].get<std::string>();
        }
        if (doc["nodes"].size() > static_cast<size_t>(count) && selected.empty()) text += " …";
        for (const auto& e : doc["edges"]) types.insert(e["type"]);
        auto join = [](const std::set<std::string>& s) {
            std::string out;
            for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
            return out;
        };
        if (!types.empty()) text += "\nConnection types in use: " + join(types) + ".";
        if (!colors.empty()) text += "\nColours in use: " + join(colors) + ".";
        return text;
    }

    void remember_graph(const Call& call, const std::string& name) {
        if (call.conversation.empty()) return;
        json recent = host().memory_get(call.conversation, "recent_graphs").value_or(json::array());
        if (!recent.is_array()) recent = json::array();
        if (!recent.empty() && recent.back() == name) return;
        recent.erase(std::remove(recent.begin(), recent.end(), json(name)), recent.end());
        recent.push_back(name);
        while (recent.size() > 5) recent.erase(recent.begin());
        host().memory_set(call.conversation, "recent_graphs", recent);
    }

    std::unique_ptr<GraphDb> db_;
    graph::Vault vault_;
    graph::SpecSettings settings_;
    int context_budget_ = 40;
};

}  // namespace

// Not marked thread-safe: calls are serialised by the host (one SQLite connection, one undo log).
AGENTHOST_PLUGIN(GraphPlugin, "graph", "1.0.0", 0)
