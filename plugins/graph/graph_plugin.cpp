// Knowledge graphs: graphs of concepts (shared across graphs as instances with positions), typed
// edges (also across graphs), frames and storylines; stored in the plugin's own SQLite file and
// mirrored into a Markdown vault. The model describes what it wants (apply_graph_spec); the plugin
// deduplicates, lays out, audits and commits, and can undo the last change exactly.
#include "context.hpp"
#include "fuzzy.hpp"
#include "graph_db.hpp"
#include "graphs.hpp"
#include "render.hpp"
#include "spec.hpp"

#include <agenthost/plugin.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace {

using agenthost::sdk::Call;
using agenthost::sdk::Tool;
using agenthost::sdk::ToolResult;
using graph::GraphDb;
using nlohmann::json;

json object(json properties, json required = json::array()) {
    return {{"type", "object"},
            {"properties", std::move(properties)},
            {"required", std::move(required)},
            {"additionalProperties", false}};
}

constexpr double kLookupThreshold = 0.75;  // how close a referenced name must be to a node's

const json kName{{"type", "string"}, {"minLength", 1}, {"maxLength", 200}};
const json kNames{{"type", "array"}, {"items", kName}, {"minItems", 1}};

// apply_graph_spec's one shape: the text the model reads and the schema the host checks are
// written here, side by side, and nowhere else (plugins/README.md quotes this text).
constexpr const char* kSpecShape =
    "{\"graph\": {\"name\"}?, \"nodes\": [{\"name\", \"description\"?, \"type\"?, \"color\"?, \"same_as\"?}], "
    "\"edges\": [{\"source\", \"target\", \"type\"?, \"directed\"?}]}";

// What apply_graph_spec did with each node that was not simply created, a line each: which node a
// name matched and why, what it added or kept, what was kept apart and why, what was skipped.
std::string plan_lines(const graph::Plan& plan) {
    std::string text;
    for (const auto& r : plan.reused) {
        text += "\n- '" + r["name"].get<std::string>() + "' is '" + r["matched"].get<std::string>() + "' (" +
                r["why"].get<std::string>() + ")";
        if (r.contains("added")) {
            std::string added;
            for (const auto& a : r["added"]) added += (added.empty() ? "" : " and ") + a.get<std::string>();
            text += "; added its " + added;
        }
        if (r.contains("kept"))
            for (const auto& k : r["kept"]) text += "; kept " + k.get<std::string>();
    }
    for (const auto& a : plan.kept_apart)
        text += "\n- created '" + a["name"].get<std::string>() + "' apart: " + a["why"].get<std::string>() +
                " (give \"same_as\" the existing node's name if they are one)";
    for (const auto& s : plan.skipped)
        text += "\n- skipped '" + s["name"].get<std::string>() + "': " + s["why"].get<std::string>();
    return text;
}

json spec_schema() {
    json text{{"type", "string"}};
    json node{{"type", "object"},
              {"required", {"name"}},
              {"additionalProperties", false},
              {"properties", {{"name", text}, {"description", text}, {"type", text}, {"color", text}, {"same_as", text}}}};
    json edge{{"type", "object"},
              {"required", {"source", "target"}},
              {"additionalProperties", false},
              {"properties", {{"source", text}, {"target", text}, {"type", text}, {"directed", {{"type", "boolean"}}}}}};
    return {{"type", "object"},
            {"additionalProperties", false},
            {"properties",
             {{"graph", {{"type", "object"}, {"properties", {{"name", text}}}, {"additionalProperties", false}}},
              {"nodes", {{"type", "array"}, {"items", node}}},
              {"edges", {{"type", "array"}, {"items", edge}}}}}};
}

graph::SpecSettings spec_settings(const json& cfg) {
    graph::SpecSettings s;
    s.dedup_threshold = cfg.value("dedup_threshold", s.dedup_threshold);
    s.allow_self_edges = cfg.value("allow_self_edges", false);
    return s;
}

std::unique_ptr<GraphDb> open_database(const json& cfg, const std::string& data_dir) {
    std::string error;
    auto db = GraphDb::open(cfg.value("database", data_dir + "/graph.db"), error);
    if (!db) throw std::runtime_error(error);
    return db;
}

class GraphPlugin : public agenthost::sdk::ToolPlugin {
public:
    explicit GraphPlugin(agenthost::sdk::Host host)
        : ToolPlugin(host),
          config_(host.config()),
          db_(open_database(config_, host.data_dir())),
          vault_(config_.value("vault_dir", host.data_dir() + "/vault")),
          settings_(spec_settings(config_)),
          graphs_(*db_, host, settings_.dedup_threshold) {
        limits_.nodes = config_.value("context_nodes", limits_.nodes);
        limits_.match_threshold = settings_.dedup_threshold;
    }

    std::vector<Tool> tools() override {
        const uint32_t ro = AH_TOOL_READ_ONLY | AH_TOOL_IDEMPOTENT;
        return {
            {"list_graphs", "The graphs, their sizes, and which one is active.", object(json::object()), ro},
            {"create_graph", "Create a graph and make it the active one.",
             object({{"name", kName}, {"description", {{"type", "string"}}}}, {"name"}), 0},
            {"set_active_graph", "Make a graph (by name, fuzzy) the active one.", object({{"name", kName}}, {"name"}),
             AH_TOOL_IDEMPOTENT},
            {"describe_graph",
             "Nodes, edges, frames and storylines of a graph (the active one by default); filter by type, name or the "
             "neighbourhood of a node; paged.",
             object({{"graph", kName},
                     {"type", {{"type", "string"}}},
                     {"name", {{"type", "string"}}},
                     {"near", {{"type", "string"}}},
                     {"depth", {{"type", "integer"}, {"minimum", 1}, {"maximum", 3}}},
                     {"page", {{"type", "integer"}, {"minimum", 1}}},
                     {"page_size", {{"type", "integer"}, {"minimum", 1}, {"maximum", 500}}}}),
             ro},
            {"find_nodes", "Find concepts by name, tolerating typos, accents and word order.",
             object({{"query", kName}, {"graph", kName}, {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 100}}}},
                    {"query"}),
             ro},
            {"apply_graph_spec",
             "Add nodes and edges to a graph by meaning only (no coordinates), as {\"spec\": " + std::string(kSpecShape) +
                 "}. Existing concepts are reused, connection types normalised, colours and positions assigned; nothing is "
                 "applied if anything is wrong.",
             object({{"spec", spec_schema()}}, {"spec"}), 0},
            {"update_node", "Change a node's name, description, colour or type.",
             object({{"name", kName},
                     {"graph", kName},
                     {"new_name", kName},
                     {"description", {{"type", "string"}}},
                     {"color", {{"type", "string"}}},
                     {"type", {{"type", "string"}}}},
                    {"name"}),
             AH_TOOL_IDEMPOTENT},
            {"delete_nodes", "Remove nodes (by name, fuzzy) from a graph, with their edges; reports what it removed.",
             object({{"names", kNames}, {"graph", kName}}, {"names"}), AH_TOOL_DESTRUCTIVE},
            {"create_edge", "Connect two nodes, possibly in different graphs.",
             object({{"source", kName},
                     {"target", kName},
                     {"type", kName},
                     {"source_graph", kName},
                     {"target_graph", kName},
                     {"directed", {{"type", "boolean"}}}},
                    {"source", "target", "type"}),
             0},
            {"delete_edge", "Remove the edges between two nodes (of one type, or all).",
             object({{"source", kName}, {"target", kName}, {"type", kName}, {"source_graph", kName}, {"target_graph", kName}},
                    {"source", "target"}),
             AH_TOOL_DESTRUCTIVE},
            {"create_frame", "Group nodes of a graph in a named box.",
             object({{"name", kName}, {"members", kNames}, {"graph", kName}}, {"name", "members"}), 0},
            {"create_storyline", "An ordered path through nodes of a graph.",
             object({{"title", kName}, {"members", kNames}, {"graph", kName}}, {"title", "members"}), 0},
            {"undo_last_change", "Revert the last change to the graphs exactly.", object(json::object()), AH_TOOL_DESTRUCTIVE},
            {"export_graph",
             "A graph as json, graphml, mermaid or dot, with its frames, storylines and the nodes of other graphs it links to.",
             object({{"graph", kName}, {"format", {{"type", "string"}, {"enum", {"json", "graphml", "mermaid", "dot"}}}}},
                    {"format"}),
             ro},
            {"reindex_vault", "Read the Markdown vault back: edits a person made to notes and links.", object(json::object()), 0},
        };
    }

    std::string context(const Call& call) override { return graph::model_context(*db_, graphs_, call, limits_); }

    // A graph's name in a URI: everything but unreserved characters percent-encoded (RFC 3986), so
    // "Solar System" is graph://Solar%20System, a valid URI for MCP clients.
    static std::string uri_name(const std::string& name) {
        static constexpr char kHex[] = "0123456789ABCDEF";
        std::string out;
        for (unsigned char c : name) {
            if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
                out += static_cast<char>(c);
            } else {
                out += '%';
                out += kHex[c >> 4];
                out += kHex[c & 0xF];
            }
        }
        return out;
    }
    // The name again; a raw name (spaces and all, as earlier versions listed it) reads as itself.
    static std::string name_of_uri(const std::string& text) {
        std::string out;
        for (size_t i = 0; i < text.size(); ++i) {
            if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
                std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
                out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
                i += 2;
            } else {
                out += text[i];
            }
        }
        return out;
    }

    // graph://<name> (JSON) and graph://<name>?format=mermaid, for front ends and MCP clients.
    json resources(const Call& call) override {
        json list = json::array();
        auto current = graphs_.active(call.conversation);
        for (const auto& g : db_->query("SELECT id, name, description FROM graphs ORDER BY name")) {
            std::string name = g["name"];
            // MCP's priority annotation marks the active graph (a front end shows it first).
            bool is_active = current && g["id"] == current->id;
            list.push_back({{"uri", "graph://" + uri_name(name)},
                            {"name", name},
                            {"description", g["description"]},
                            {"mimeType", "application/json"},
                            {"annotations", {{"priority", is_active ? 1.0 : 0.5}}}});
            list.push_back({{"uri", "graph://" + uri_name(name) + "?format=mermaid"},
                            {"name", name + " (Mermaid)"},
                            {"mimeType", "text/vnd.mermaid"}});
        }
        return list;
    }

    static std::string ascii_lower(std::string text) {
        for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return text;
    }

    // Every export format as a resource: graph://<name>?format=<format> (JSON without one).
    static constexpr std::pair<const char*, const char*> kFormats[] = {
        {"json", "application/json"},
        {"graphml", "application/graphml+xml"},
        {"mermaid", "text/vnd.mermaid"},
        {"dot", "text/vnd.graphviz"},
    };

    json read_resource(const Call&, const std::string& uri) override {
        const std::string scheme = "graph://";
        if (uri.rfind(scheme, 0) != 0) return nullptr;
        std::string rest = uri.substr(scheme.size()), format = "json";
        if (size_t q = rest.find("?format="); q != std::string::npos) {
            format = rest.substr(q + 8);
            rest.resize(q);
        }
        const auto* known =
            std::find_if(std::begin(kFormats), std::end(kFormats), [&](const auto& f) { return format == f.first; });
        if (known == std::end(kFormats)) return nullptr;
        json g = db_->one("SELECT id FROM graphs WHERE name = ? COLLATE NOCASE", {name_of_uri(rest)});
        if (g.is_null()) return nullptr;
        std::string text = graph::export_graph(*db_, g["id"], format);
        if (text.empty()) return nullptr;
        return {{"contents", json::array({{{"uri", uri}, {"mimeType", known->second}, {"text", text}}})}};
    }

    json resource_templates(const Call&) override {
        return json::array({{{"uriTemplate", "graph://{name}"},
                             {"name", "graph"},
                             {"description", "A graph with its nodes, edges, frames and storylines, as JSON"},
                             {"mimeType", "application/json"}},
                            {{"uriTemplate", "graph://{name}?format={format}"},
                             {"name", "graph export"},
                             {"description", "A graph exported as json, graphml, mermaid or dot"}}});
    }

    // Graph names for {name} (those starting with what was typed first, then those containing it;
    // case ignored), the export formats for {format}, graph names for the graph wizard's "graph".
    json complete(const Call&, const json& request) override {
        const json ref = request.value("ref", json::object());
        const std::string uri = ref.value("uri", ""), prompt = ref.value("name", "");
        const json argument = request.value("argument", json::object());
        const std::string name = argument.value("name", ""), typed = ascii_lower(argument.value("value", ""));
        const bool ours = uri.rfind("graph://{name}", 0) == 0 || prompt == kWizardPrompt;
        if (!ours) return nullptr;
        json values = json::array();
        if (name == "format") {
            for (const auto& [format, mime] : kFormats)
                if (std::string(format).rfind(typed, 0) == 0) values.push_back(format);
        } else if (name == "name" || name == "graph") {
            std::vector<std::string> starts, contains;
            for (const auto& g : db_->query("SELECT name FROM graphs ORDER BY name")) {
                std::string graph_name = g["name"], lower = ascii_lower(graph_name);
                if (lower.rfind(typed, 0) == 0)
                    starts.push_back(graph_name);
                else if (lower.find(typed) != std::string::npos)
                    contains.push_back(graph_name);
            }
            for (auto* list : {&starts, &contains})
                for (auto& n : *list)
                    if (values.size() < 100) values.push_back(n);
        }
        return {{"values", values}, {"total", values.size()}, {"hasMore", false}};
    }

    // The graph wizard's start, for MCP clients' prompt menus.
    static constexpr const char* kWizardPrompt = "graph_wizard";
    json prompts(const Call&) override {
        return json::array({{{"name", kWizardPrompt},
                             {"title", "Build a knowledge graph"},
                             {"description", "Start a graph about a topic: its concepts, their types and how they connect"},
                             {"arguments",
                              {{{"name", "topic"}, {"description", "what the graph is about"}, {"required", true}},
                               {{"name", "graph"}, {"description", "the graph to add to (a new one when absent)"}}}}}});
    }

    json get_prompt(const Call&, const std::string& name, const json& arguments) override {
        if (name != kWizardPrompt) return nullptr;
        std::string topic = arguments.value("topic", ""), graph = arguments.value("graph", "");
        std::string where = graph.empty() ? "Create a graph named after the topic (create_graph), then add to it"
                                          : "Add to the graph '" + graph +
                                                "' (set_active_graph first; create_graph when there is none of that name)";
        std::string text = "Build a knowledge graph about: " + topic + ".\n" + where +
                           ": the main concepts as nodes with a type and a one-line description, and how they connect as "
                           "typed edges, all in one apply_graph_spec call. Reuse nodes that exist (find_nodes) rather than "
                           "adding namesakes. Then describe_graph and say what you added.";
        return {{"description", "Start a graph about " + topic},
                {"messages", json::array({{{"role", "user"}, {"content", {{"type", "text"}, {"text", text}}}}})}};
    }

    ToolResult call(const Call& call) override {
        using Handler = ToolResult (GraphPlugin::*)(const Call&);
        static const std::map<std::string, Handler, std::less<>> handlers{
            {"list_graphs", &GraphPlugin::list_graphs},     {"create_graph", &GraphPlugin::create_graph},
            {"set_active_graph", &GraphPlugin::set_active}, {"describe_graph", &GraphPlugin::describe},
            {"find_nodes", &GraphPlugin::find_nodes},       {"apply_graph_spec", &GraphPlugin::apply},
            {"update_node", &GraphPlugin::update_node},     {"delete_nodes", &GraphPlugin::delete_nodes},
            {"create_edge", &GraphPlugin::create_edge},     {"delete_edge", &GraphPlugin::delete_edge},
            {"create_frame", &GraphPlugin::create_frame},   {"create_storyline", &GraphPlugin::create_storyline},
            {"undo_last_change", &GraphPlugin::undo},       {"export_graph", &GraphPlugin::export_graph},
            {"reindex_vault", &GraphPlugin::reindex_vault},
        };
        auto handler = handlers.find(call.tool);
        if (handler == handlers.end()) return ToolResult::error("unknown_tool", "no tool " + std::string(call.tool));
        try {
            ToolResult result = (this->*handler->second)(call);
            if (!result.body.value("is_error", false)) say_graphs_changed(call);
            return result;
        } catch (const std::exception& e) {
            db_->rollback();
            return ToolResult::error("graph_error", e.what());
        }
    }

    // After a change, MCP clients subscribed to a changed graph's resources hear of it: the graphs
    // the call named and the conversation's active one.
    void say_graphs_changed(const Call& call) {
        static const std::set<std::string, std::less<>> kReading = {"list_graphs", "set_active_graph", "describe_graph",
                                                                    "find_nodes", "export_graph"};
        if (kReading.count(call.tool)) return;
        std::set<std::string> names;
        const json spec = call.arguments.value("spec", json::object());  // apply_graph_spec's {"spec": {"graph": {"name"}}}
        for (const json* args : {&call.arguments, &spec})
            for (const char* key : {"graph", "source_graph", "target_graph"}) {
                const json& named = args->is_object() && args->contains(key) ? (*args)[key] : json();
                if (named.is_string()) names.insert(named.get<std::string>());
                if (named.is_object()) names.insert(named.value("name", ""));
            }
        if (call.tool == "create_graph") names.insert(call.arguments.value("name", ""));
        if (auto active = graphs_.active(call.conversation)) names.insert(active->name);
        for (const auto& name : names) {
            if (name.empty()) continue;
            for (const auto& [format, mime] : kFormats)
                host().resource_updated("graph://" + uri_name(name) +
                                        (std::string(format) == "json" ? "" : "?format=" + std::string(format)));
        }
    }

private:
    // The instance of a graph whose concept is closest to `name`.
    // A name the model refers to may be misspelt more than one that would merge two concepts, but
    // never into another thing: "John Snow" does not find the character Jon Snow (kept_apart).
    json instance(int64_t graph_id, const std::string& name) {
        json best;
        double best_score = kLookupThreshold;
        for (const auto& row : db_->query("SELECT i.id, i.concept_id, c.name, c.type FROM instances i JOIN concepts c ON c.id = "
                                          "i.concept_id WHERE i.graph_id = ?",
                                          {graph_id})) {
            if (graph::kept_apart(name, "", row["name"], row["type"])) continue;
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
        // Instances the change removed are in the log only: a deleted node's neighbours must be
        // found through them, so their notes lose the links to it.
        std::map<int64_t, int64_t> removed_instances;
        for (const auto& e : log)
            if (e["table"] == "instances" && e["before"].is_object() && e["before"].contains("concept_id"))
                removed_instances[e["id"].get<int64_t>()] = e["before"]["concept_id"].get<int64_t>();
        auto concept_of_instance = [&](const json& id) {
            json row = db_->one("SELECT concept_id FROM instances WHERE id = ?", {id});
            if (!row.is_null())
                ids.insert(row["concept_id"].get<int64_t>());
            else if (auto gone = removed_instances.find(id.get<int64_t>()); gone != removed_instances.end())
                ids.insert(gone->second);
        };
        for (const auto& e : log) {
            std::string table = e["table"];
            const json& before = e["before"];
            if (table == "concepts") {
                ids.insert(e["id"].get<int64_t>());
                // A renamed node: its neighbours' notes link to it by name.
                for (const auto& n :
                     db_->query("SELECT DISTINCT o.concept_id FROM instances i JOIN edges x ON x.source = i.id OR x.target = i.id"
                                " JOIN instances o ON o.id = CASE WHEN x.source = i.id THEN x.target ELSE x.source END"
                                " WHERE i.concept_id = ?",
                                {e["id"]}))
                    ids.insert(n["concept_id"].get<int64_t>());
            }
            if (table == "instances")
                before.is_null() ? concept_of_instance(e["id"]) : (void)ids.insert(before["concept_id"].get<int64_t>());
            if (table == "frames" || table == "storylines") {  // members' notes list their frames and storylines
                json row = before.is_null() ? db_->one("SELECT members FROM " + table + " WHERE id = ?", {e["id"]}) : before;
                json members = row.is_null() ? json::array() : json::parse(row["members"].get<std::string>(), nullptr, false);
                for (const auto& name : members.is_array() ? members : json::array())
                    if (json c = db_->one("SELECT id FROM concepts WHERE name = ?", {name}); !c.is_null())
                        ids.insert(c["id"].get<int64_t>());
            }
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

    // The graph a call names in `field`, or the conversation's active one.
    std::optional<graph::GraphRef> graph_of(const Call& call, const char* field, std::string& error) {
        return graphs_.resolve(call.arguments.value(field, ""), call.conversation, error);
    }

    ToolResult list_graphs(const Call& call) {
        json graphs = db_->query(
            "SELECT g.id, g.name, g.description, (SELECT COUNT(*) FROM instances i WHERE i.graph_id = g.id) AS nodes,"
            " (" +
            std::string(graph::kEdgesOfGraph) + ") AS edges FROM graphs g ORDER BY g.name");
        auto current = graphs_.active(call.conversation);
        std::string text;
        for (auto& g : graphs) {
            g["active"] = current && g["id"] == current->id;
            text += "- " + g["name"].get<std::string>() + " (" + g["nodes"].dump() + " nodes, " + g["edges"].dump() + " edges)" +
                    (g["active"].get<bool>() ? " [active]" : "") + "\n";
        }
        ToolResult r = ToolResult::ok(text.empty() ? "There are no graphs yet." : text);
        r.body["structured"] = {{"graphs", graphs}};
        return r;
    }

    ToolResult create_graph(const Call& call) {
        const std::string name = call.arguments["name"], description = call.arguments.value("description", "");
        if (!db_->one("SELECT id FROM graphs WHERE name = ? COLLATE NOCASE", {name}).is_null())
            return ToolResult::error("already_exists", "a graph named '" + name + "' exists; set_active_graph selects it");
        int64_t id = 0;
        change("create_graph", [&] {
            id = db_->insert("graphs", {{"name", name}, {"description", description}});
            return json{{"graph", name}};
        });
        graphs_.set_active(call.conversation, {id, name});
        return ToolResult::ok("Created the graph '" + name + "'; it is now the active graph.");
    }

    ToolResult set_active(const Call& call) {
        std::string error;
        auto g = graph_of(call, "name", error);
        if (!g) return ToolResult::error("not_found", error);
        graphs_.set_active(call.conversation, *g);
        return ToolResult::ok("The active graph is now '" + g->name + "'.");
    }

    ToolResult describe(const Call& call) {
        const json& a = call.arguments;
        std::string error;
        auto g = graph_of(call, "graph", error);
        if (!g) return ToolResult::error("not_found", error);
        json doc = graph::graph_document(*db_, g->id);
        json nodes = json::array();
        std::set<int64_t> keep;
        if (a.contains("near")) {
            json center = instance(g->id, a["near"]);
            if (center.is_null())
                return ToolResult::error("not_found", "no node like '" + a["near"].get<std::string>() + "' in " + g->name);
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
        std::string text = "Graph '" + g->name + "': " + std::to_string(nodes.size()) + " nodes (page " + std::to_string(page) +
                           " of " + std::to_string(pages) + ")\n";
        for (const auto& n : shown)
            text += "- " + n["name"].get<std::string>() +
                    (n["type"].get<std::string>().empty() ? "" : " (" + n["type"].get<std::string>() + ")") + "\n";
        for (const auto& e : edges)
            text += "  " + e["source_name"].get<std::string>() + " —" + e["type"].get<std::string>() +
                    (e["directed"].get<bool>() ? "→ " : "— ") + e["target_name"].get<std::string>() + "\n";
        for (const auto& f : doc["frames"]) text += "Frame " + f["name"].get<std::string>() + ": " + f["members"].dump() + "\n";
        for (const auto& s : doc["storylines"])
            text += "Storyline " + s["title"].get<std::string>() + ": " + s["members"].dump() + "\n";
        ToolResult r = ToolResult::ok(text);
        r.body["structured"] = {
            {"graph", g->name}, {"nodes", shown}, {"edges", edges}, {"frames", doc["frames"]}, {"storylines", doc["storylines"]},
            {"page", page},     {"pages", pages}};
        return r;
    }

    ToolResult find_nodes(const Call& call) {
        const std::string query = call.arguments["query"], graph_name = call.arguments.value("graph", "");
        const int limit = call.arguments.value("limit", 10);
        std::string error;
        std::optional<graph::GraphRef> in;  // the graph to search, resolved as every tool resolves one
        if (!graph_name.empty() && !(in = graph_of(call, "graph", error))) return ToolResult::error("not_found", error);
        std::vector<std::pair<double, json>> scored;
        std::string sql =
            "SELECT c.id, c.name, c.type, c.description, (SELECT GROUP_CONCAT(g.name, ', ') FROM instances i JOIN graphs g ON "
            "g.id = i.graph_id "
            "WHERE i.concept_id = c.id) AS graphs FROM concepts c";
        if (in) sql += " WHERE c.id IN (SELECT concept_id FROM instances WHERE graph_id = " + std::to_string(in->id) + ")";
        for (const auto& c : db_->query(sql)) {
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
            text += "- " + c["name"].get<std::string>() + " (in " +
                    (c["graphs"].is_null() ? std::string("no graph") : c["graphs"].get<std::string>()) + ")\n";
            found.push_back(c);
        }
        ToolResult r = ToolResult::ok(text.empty() ? "No concept looks like '" + query + "'." : text);
        r.body["structured"] = {{"nodes", found}};
        return r;
    }

    ToolResult apply(const Call& call) {
        const json& spec = call.arguments["spec"];
        if (spec.value("nodes", json::array()).empty() && spec.value("edges", json::array()).empty())
            return ToolResult::error(
                "invalid_graph",
                "the spec has no nodes and no edges, so nothing would change; send {\"spec\": " + std::string(kSpecShape) + "}");
        std::string error;
        auto active = graphs_.active(call.conversation);
        graph::Plan plan = graph::execute(*db_, spec, active ? active->id : 0, settings_, error);
        if (!error.empty()) return ToolResult::error("invalid_graph", error);
        auto violations = graph::audit(plan, settings_);
        if (!violations.empty()) {
            std::string text = "Nothing was applied; fix these and send the spec again:";
            for (const auto& v : violations) text += "\n- " + v;
            ToolResult r = ToolResult::error("audit_failed", text);
            r.body["structured"] = {{"violations", violations}};
            return r;
        }
        if (plan.ops.empty()) {  // everything was there already: no change, so no undo step either
            ToolResult r = ToolResult::ok(
                "Nothing changed in '" + plan.graph_name + "': " + std::to_string(plan.reused.size()) + " node(s) already there" +
                (plan.skipped.empty() ? "" : ", " + std::to_string(plan.skipped.size()) + " skipped") + "." + plan_lines(plan));
            r.body["structured"] = {{"graph", plan.graph_name},
                                    {"created", json::array()},
                                    {"reused", plan.reused},
                                    {"linked", json::array()},
                                    {"skipped", plan.skipped}};
            return r;
        }
        json summary = graph::commit(*db_, plan);
        vault_.write(*db_, touched(db_->last_log()));
        std::string text = "Applied to '" + plan.graph_name + "': " + std::to_string(plan.created.size()) + " created, " +
                           std::to_string(plan.reused.size()) + " reused, " + std::to_string(plan.linked.size()) + " linked, " +
                           std::to_string(plan.skipped.size()) + " skipped." + plan_lines(plan);
        ToolResult r = ToolResult::ok(text);
        r.body["structured"] = summary;
        return r;
    }

    ToolResult update_node(const Call& call) {
        const json& a = call.arguments;
        std::string error;
        auto g = graph_of(call, "graph", error);
        if (!g) return ToolResult::error("not_found", error);
        json node = instance(g->id, a["name"]);
        if (node.is_null())
            return ToolResult::error("not_found", "no node like '" + a["name"].get<std::string>() + "' in " + g->name);
        json fields = json::object();
        if (a.contains("new_name")) fields.update({{"name", a["new_name"]}, {"norm", graph::normal_form(a["new_name"])}});
        for (const char* key : {"description", "color", "type"})
            if (a.contains(key)) fields[key] = a[key];
        if (fields.empty())
            return ToolResult::error("validation_failed", "give at least one of new_name, description, color, type");
        change("update_node", [&] {
            db_->update("concepts", node["concept_id"], fields);
            return json{{"node", node["name"]}};
        });
        return ToolResult::ok("Updated '" + node["name"].get<std::string>() + "'.");
    }

    ToolResult delete_nodes(const Call& call) {
        const json& names = call.arguments["names"];
        std::string error;
        auto g = graph_of(call, "graph", error);
        if (!g) return ToolResult::error("not_found", error);
        json removed = json::array(), missing = json::array();
        change("delete_nodes", [&] {
            for (const auto& name : names) {
                json node = instance(g->id, name);
                if (node.is_null()) {
                    missing.push_back(name);
                    continue;
                }
                for (const auto& e : db_->query("SELECT id FROM edges WHERE source = ?1 OR target = ?1", {node["id"]}))
                    db_->remove("edges", e["id"]);
                db_->remove("instances", node["id"]);
                if (db_->one("SELECT id FROM instances WHERE concept_id = ?", {node["concept_id"]}).is_null())
                    db_->remove("concepts", node["concept_id"]);
                removed.push_back(node["name"]);
            }
            return json{{"removed", removed}};
        });
        std::string text = "Removed from '" + g->name + "': " + (removed.empty() ? std::string("nothing") : removed.dump());
        if (!missing.empty()) text += "; not found: " + missing.dump();
        ToolResult r = ToolResult::ok(text);
        r.body["structured"] = {{"removed", removed}, {"not_found", missing}};
        return r;
    }

    std::optional<std::pair<json, json>> endpoints(const Call& call, std::string& error) {
        const json& a = call.arguments;
        auto sg = graph_of(call, "source_graph", error);
        if (!sg) return std::nullopt;
        // A target without its own graph is in the source's graph when that one is named.
        auto tg = a.contains("source_graph") && !a.contains("target_graph") ? sg : graph_of(call, "target_graph", error);
        if (!tg) return std::nullopt;
        json s = instance(sg->id, a["source"]), t = instance(tg->id, a["target"]);
        if (s.is_null() || t.is_null()) {
            error = "no node like '" + (s.is_null() ? a["source"] : a["target"]).get<std::string>() + "' in " +
                    (s.is_null() ? sg->name : tg->name);
            return std::nullopt;
        }
        return std::make_pair(s, t);
    }

    ToolResult create_edge(const Call& call) {
        const json& a = call.arguments;
        std::string error;
        auto ends = endpoints(call, error);
        if (!ends) return ToolResult::error("not_found", error);
        if (ends->first["id"] == ends->second["id"] && !settings_.allow_self_edges)
            return ToolResult::error("audit_failed", "an edge from a node to itself is not allowed");
        std::string type = graph::title_case(a["type"]);
        change("create_edge", [&] {
            json t = db_->one("SELECT id FROM connection_types WHERE name = ? COLLATE NOCASE", {type});
            int64_t type_id = t.is_null() ? db_->insert("connection_types", {{"name", type}}) : t["id"].get<int64_t>();
            if (!db_->one("SELECT id FROM edges WHERE source = ? AND target = ? AND type_id = ?",
                          {ends->first["id"], ends->second["id"], type_id})
                     .is_null())
                throw std::runtime_error("that edge already exists");
            db_->insert("edges", {{"source", ends->first["id"]},
                                  {"target", ends->second["id"]},
                                  {"type_id", type_id},
                                  {"directed", a.value("directed", true) ? 1 : 0}});
            return json{{"edge", ends->first["name"].get<std::string>() + " → " + ends->second["name"].get<std::string>()}};
        });
        return ToolResult::ok("Linked " + ends->first["name"].get<std::string>() + " —" + type + "→ " +
                              ends->second["name"].get<std::string>() + ".");
    }

    ToolResult delete_edge(const Call& call) {
        const json& a = call.arguments;
        std::string error;
        auto ends = endpoints(call, error);
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

    ToolResult create_frame(const Call& call) { return create_group(call, "frames", "name"); }
    ToolResult create_storyline(const Call& call) { return create_group(call, "storylines", "title"); }

    ToolResult create_group(const Call& call, const std::string& table, const std::string& label) {
        const std::string name = call.arguments[label];
        const json& members = call.arguments["members"];
        std::string error;
        auto g = graph_of(call, "graph", error);
        if (!g) return ToolResult::error("not_found", error);
        const std::string kind = table == "frames" ? "frame" : "storyline";
        if (!db_->one("SELECT id FROM " + table + " WHERE graph_id = ? AND " + label + " = ? COLLATE NOCASE", {g->id, name})
                 .is_null())
            return ToolResult::error("already_exists", "'" + g->name + "' has a " + kind + " named '" + name +
                                                           "' already; choose another name (the vault links to " + kind +
                                                           "s by name)");
        json resolved = json::array();
        for (const auto& m : members) {
            json node = instance(g->id, m);
            if (node.is_null())
                return ToolResult::error("not_found", "no node like '" + m.get<std::string>() + "' in " + g->name);
            resolved.push_back(node["name"]);
        }
        change("create_" + kind, [&] {
            db_->insert(table, {{"graph_id", g->id}, {label, name}, {"members", resolved.dump()}});
            return json{{label, name}};
        });
        std::string list;  // "the frame 'Kelce Family' with Travis Kelce, Jason Kelce"
        for (const auto& m : resolved) list += (list.empty() ? "" : ", ") + m.get<std::string>();
        return ToolResult::ok("Created the " + kind + " '" + name + "' in '" + g->name + "' with " + list + ".");
    }

    ToolResult undo(const Call&) {
        json batch = db_->one("SELECT id, summary, log FROM batches ORDER BY id DESC LIMIT 1");
        if (batch.is_null()) return ToolResult::error("nothing_to_undo", "there is no change to undo");
        json log = json::parse(batch["log"].get<std::string>());
        std::set<int64_t> concepts = touched(log);
        std::set<std::string> gone;  // concepts the change created: the undo deletes them
        for (const auto& e : log)
            if (e["table"] == "concepts" && e["before"].is_null())
                if (json c = db_->one("SELECT name FROM concepts WHERE id = ?", {e["id"]}); !c.is_null())
                    gone.insert(c["name"].get<std::string>());
        db_->undo(log);
        db_->run("DELETE FROM batches WHERE id = ?", {batch["id"]});
        for (int64_t id : touched(log)) concepts.insert(id);
        vault_.write(*db_, concepts, gone);
        ToolResult r =
            ToolResult::ok("Undid the last change: " + change_in_words(json::parse(batch["summary"].get<std::string>())) + ".");
        r.body["structured"] = json::parse(batch["summary"].get<std::string>());
        return r;
    }

    // {"change": "create_frames", "name": "Team"} → "create_frames (name: Team)".
    static std::string change_in_words(const json& summary) {
        std::string details;
        for (const auto& [key, value] : summary.items()) {
            if (key == "change") continue;
            std::string shown = value.is_string() ? value.get<std::string>() : value.dump();
            if (value.is_array() && value.empty()) continue;
            details += (details.empty() ? "" : ", ") + key + ": " + shown;
        }
        std::string what = summary.value("change", "a change");
        return details.empty() ? what : what + " (" + details + ")";
    }

    ToolResult export_graph(const Call& call) {
        const std::string format = call.arguments["format"];
        std::string error;
        auto g = graph_of(call, "graph", error);
        if (!g) return ToolResult::error("not_found", error);
        std::string text = graph::export_graph(*db_, g->id, format);
        if (text.empty())
            return ToolResult::error("validation_failed", "unknown format '" + format + "' (json, graphml, mermaid, dot)");
        return ToolResult::ok(text);
    }

    static std::string unresolved_text(const json& links) {
        if (links.empty()) return "";
        std::string text = " Not linked, because no note of a concept has that name (create the node first, or fix the link):";
        for (const auto& l : links) text += "\n- " + l.get<std::string>();
        return text;
    }

    ToolResult reindex_vault(const Call&) {
        json counts = vault_.reindex(*db_);
        ToolResult r = ToolResult::ok("Read the vault back from " + vault_.dir().string() + ": " + counts["updated"].dump() +
                                      " note(s) updated, " + counts["created"].dump() + " created, " + counts["linked"].dump() +
                                      " new link(s)." + unresolved_text(counts["unresolved"]));
        r.body["structured"] = counts;
        return r;
    }

    json config_;
    std::unique_ptr<GraphDb> db_;
    graph::Vault vault_;
    graph::SpecSettings settings_;
    graph::Graphs graphs_;
    graph::ContextLimits limits_;
};
}  // namespace

// Not marked thread-safe: calls are serialised by the host (one SQLite connection, one undo log).
AGENTHOST_PLUGIN(GraphPlugin, "graph", "1.0.0", 0)
